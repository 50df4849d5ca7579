"""Diagnose dumps: which layer is each captured segment really, and is that what was claimed?

``diagnose(dumps, target)`` re-runs the target on each dump's input ids, identifies every
segment with ``identify_segments`` (streaming: the k captured states plus O(1) full-width
states, never all L+1), and compares the result with what the dump claims (its metadata, an
explicit ``Claim`` or a ``CaptureContract``). With two dumps (training, then serving) it also
says whether both feed the drafter the same layers in the same order, and how they differ.

The difference vocabulary (``describe_difference``) names the failure classes seen in real
reports: every segment one layer early/late (sglang#25454, vllm#43671), the embedding inserted
(EAGLE#239), the post-norm state used as the last layer (TorchSpec#87), same layers in another
order (config-list vs ascending concatenation), layers dropped or added.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from eagle3_contracts.contract import CaptureContract
from eagle3_contracts.conventions import CANONICAL, needs_target, parse_convention, release_ids
from eagle3_contracts.differences import Difference, FindingKind, classify, say, text_table
from eagle3_contracts.differences import ids_text as _ids
from eagle3_contracts.errors import ContractError, DumpError
from eagle3_contracts.layer_ids import check_layer_id, describe, uniform_shift

if TYPE_CHECKING:
    import torch

    from eagle3_contracts.capture.identify import MatchKind, SegmentIdentification
    from eagle3_contracts.capture.targets import Target
    from eagle3_contracts.dumps.format import Dump

"""Convention name for ids that are already canonical and listed in concatenation order."""

ROLES: tuple[str, str] = ("training", "serving")
"""With two dumps, the first is read as the training feed, the second as the serving feed."""

SCHEMA_VERSION = 1
"""Version of ``DiagnoseReport.to_dict()``; fields are only added without a bump."""


# -- the claim ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Claim:
    """What a dump is supposed to hold, resolved to canonical ids in concatenation order."""

    ids: tuple[int, ...]  # the ids as written (dump metadata, --ids, or contract)
    convention: str  # their convention ("canonical", "sglang", "hf-hidden-states", ...)
    expected: tuple[int, ...]  # canonical ids, one per segment, in concatenation order
    order: str  # "ascending" or "as_listed": how `expected` was ordered
    basis: str  # where the claim comes from: "dump metadata", "--ids", "contract <path>"

    def to_dict(self) -> dict[str, Any]:
        return {
            "ids": list(self.ids),
            "convention": self.convention,
            "expected": list(self.expected),
            "order": self.order,
            "basis": self.basis,
        }

    def describe(self) -> str:
        return (
            f"{list(self.ids)} in {self.convention} ({self.basis}) -> canonical "
            f"{list(self.expected)} ({self.order})"
        )


def resolve_claim(
    ids: Sequence[int],
    convention: str,
    num_layers: int,
    *,
    basis: str,
    model_type: str | None = None,
    architectures: Sequence[str] = (),
) -> Claim:
    """Translate claimed ``ids`` in ``convention`` to the canonical segment layout expected.

    ``"canonical"`` ids are taken as they are, in the order given; registry conventions
    (``eagle3_contracts.conventions``) translate them and order them as the system
    concatenates (list order for list-gathering trainers); an engine or trainer release is
    simulated reading a drafter that holds the ids (``conventions.predict``, as ``check``
    answers it): what its target collects, ascending, or a ``ContractError`` naming the crash.
    """
    ids = tuple(ids)
    spec = parse_convention(convention, field="convention")
    if spec is None:
        expected = tuple(
            check_layer_id(n, num_layers, field=f"layer_ids[{i}]") for i, n in enumerate(ids)
        )
        return Claim(ids, convention, expected, "as_listed", basis)
    from eagle3_contracts import conventions

    conv = conventions.get(convention, model_type=model_type, architectures=architectures)
    if isinstance(conv, conventions.Convention):
        canonical = conv.to_canonical(ids, num_layers)
        order = conv.concat_order
        expected = tuple(sorted(canonical)) if order == "ascending" else canonical
        return Claim(ids, convention, expected, order, basis)
    feed = conv.feed(ids, num_layers)
    release_ids.canonical_of(conv.spec, ids, feed, "layer_ids")  # a crash or an unfed id
    return Claim(ids, convention, feed.canonical, "ascending", basis)


def claim_from_contract(contract: CaptureContract, *, basis: str = "contract") -> Claim:
    return Claim(contract.layer_ids, CANONICAL, contract.concat_ids, contract.order, basis)


# -- differences ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class DumpFinding:
    """One way a feed differs from another, in words (``differences.classify`` decides)."""

    kind: FindingKind
    message: str
    layers: tuple[int, ...] = ()  # canonical ids concerned

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind.value, "message": self.message, "layers": list(self.layers)}


def describe_difference(
    want: Sequence[int | None],
    got: Sequence[int | None],
    num_layers: int,
    *,
    want_name: str = "expected",
    got_name: str = "found",
    got_labels: Sequence[str] | None = None,
    post_norm: Sequence[int] = (),
    hidden_size: int | None = None,
) -> tuple[DumpFinding, ...]:
    """How ``got`` differs from ``want`` (``differences.classify``), in the diagnosis's words.

    Both are canonical ids per segment in concatenation order; ``None`` = no layer identified
    (``got_labels`` then says what it is; ``post_norm`` lists the segments that are the final
    post-norm state). Empty when identical and fully identified.
    """
    names = (want_name, got_name)
    return tuple(
        DumpFinding(
            d.kind,
            say(
                d,
                want,
                got,
                num_layers,
                names=names,
                got_labels=got_labels,
                hidden_size=hidden_size,
                cause=True,
            ),
            _layers(d),
        )
        for d in classify(want, got, post_norm=post_norm)
    )


def _layers(d: Difference) -> tuple[int, ...]:
    kinds = (FindingKind.WIDTH_DIFFERS, FindingKind.POST_NORM_FED, FindingKind.SEGMENT)
    return () if d.kind in kinds else d.layers


# -- results -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class SegmentVerdict:
    """One segment: what it should be, what it is, and the evidence."""

    position: int  # index in the concatenation
    name: str  # tensor name in the dump ("layer3", "hidden_states[0:16]", ...)
    expected: int | None  # canonical id the claim puts here (None: claim has fewer ids)
    found: int | None  # canonical id identified (None: no layer)
    kind: MatchKind  # layer, embedding, post-norm, near miss, ambiguous, nothing
    label: str  # identify's human label
    closest: int  # closest canonical state
    similarity: float  # cosine with the closest state
    rel_error: float  # ||seg - closest|| / ||closest||

    @property
    def ok(self) -> bool:
        return self.found is not None and self.found == self.expected

    def short(self, num_layers: int) -> str:
        """The table cell: the layer, or what it is instead, briefly."""
        from eagle3_contracts.capture.identify import MatchKind

        if self.kind not in (MatchKind.AMBIGUOUS, MatchKind.NOTHING):
            return self.label.removeprefix("no layer: ")
        return f"no layer (closest: {describe(self.closest, num_layers)})"

    def to_dict(self) -> dict[str, Any]:
        return {
            "position": self.position,
            "name": self.name,
            "expected": self.expected,
            "found": self.found,
            "kind": self.kind.value,
            "label": self.label,
            "closest": self.closest,
            "similarity": round(self.similarity, 6),
            "rel_error": self.rel_error,
            "ok": self.ok,
        }


@dataclass(frozen=True)
class DumpDiagnosis:
    """One dump diagnosed against the target."""

    source: str
    role: str | None  # "training" / "serving" with two dumps, else None
    system: str  # the dump's system metadata
    shape: str  # Dump.describe()
    # -- expectation -------------------------------------------------------------------------
    claim: Claim  # what the segments are checked against
    own_claim: Claim | None  # the dump's metadata claim, when `claim` comes from elsewhere
    # -- evidence and verdict -------------------------------------------------------------------
    segments: tuple[SegmentVerdict, ...]
    findings: tuple[DumpFinding, ...]  # how the found layers differ from `claim` (empty: ok)
    cause: str | None  # where the fault lies: the ids' reading, or the capture code
    fix: str | None  # native ids that would feed `claim`, when the ids are the fault
    fix_setting: dict[str, Any] | None  # the same fix as data: system, field, ids
    # -- identification settings ----------------------------------------------------------------
    rtol: float
    rtol_source: str
    num_layers: int

    @property
    def found(self) -> tuple[int | None, ...]:
        return tuple(s.found for s in self.segments)

    @property
    def ok(self) -> bool:
        return not self.findings

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "role": self.role,
            "system": self.system,
            "shape": self.shape,
            "claim": self.claim.to_dict(),
            "own_claim": None if self.own_claim is None else self.own_claim.to_dict(),
            "found": list(self.found),
            "segments": [s.to_dict() for s in self.segments],
            "findings": [f.to_dict() for f in self.findings],
            "cause": self.cause,
            "fix": self.fix,
            "fix_setting": self.fix_setting,
            "rtol": self.rtol,
            "rtol_source": self.rtol_source,
            "ok": self.ok,
        }


@dataclass(frozen=True)
class FeedComparison:
    """Training dump vs serving dump: the same layers in the same order?"""

    training: tuple[int | None, ...]
    serving: tuple[int | None, ...]
    findings: tuple[DumpFinding, ...]

    @property
    def same(self) -> bool:
        return not self.findings

    def to_dict(self) -> dict[str, Any]:
        return {
            "training": list(self.training),
            "serving": list(self.serving),
            "same": self.same,
            "findings": [f.to_dict() for f in self.findings],
        }


@dataclass(frozen=True)
class DiagnoseReport:
    """Everything ``diagnose`` found; ``exit_code`` 0 (all as claimed) or 1 (a mismatch)."""

    target: str  # Target.describe()
    random_init: bool
    dumps: tuple[DumpDiagnosis, ...]
    comparison: FeedComparison | None
    notes: tuple[str, ...] = ()  # defaults that applied, caveats

    @property
    def ok(self) -> bool:
        return all(d.ok for d in self.dumps) and (self.comparison is None or self.comparison.same)

    @property
    def exit_code(self) -> int:
        return 0 if self.ok else 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "target": self.target,
            "random_init": self.random_init,
            "notes": list(self.notes),
            "dumps": [d.to_dict() for d in self.dumps],
            "comparison": None if self.comparison is None else self.comparison.to_dict(),
            "ok": self.ok,
            "exit_code": self.exit_code,
        }

    def render_text(self, *, brief: bool = False) -> str:
        """The report; ``brief`` drops the target lines and shows OK dumps in one line."""
        lines = [] if brief else [f"target: {self.target}", *(f"note: {n}" for n in self.notes)]
        for i, d in enumerate(self.dumps, 1):
            role = f" ({d.role})" if d.role else ""
            if brief and d.ok:
                lines += ["", f"dump {i}{role}: {d.source}: OK, canonical {_ids(d.found)}"]
                continue
            lines += ["", f"dump {i}{role}: {d.source}", f"  {d.shape}"]
            if d.own_claim is not None:
                lines.append(f"  its metadata: {d.own_claim.describe()}")
            lines += [
                f"  checked against: {d.claim.describe()}",
                f"  identified by a reference forward on its tokens, rtol {d.rtol:g} "
                f"({d.rtol_source})",
            ]
            rows = [("seg", "tensor", "expected", "found", "cosine", "rel.err")]
            for s in d.segments:
                rows.append(
                    (
                        str(s.position),
                        s.name,
                        "-" if s.expected is None else describe(s.expected, d.num_layers),
                        s.short(d.num_layers),
                        f"{s.similarity:.4f}",
                        f"{s.rel_error:.2g}",
                    )
                )
            lines += text_table(rows, indent="  ")
            if d.ok:
                lines.append("  verdict: OK, every segment is the layer expected")
            else:
                lines.append("  verdict: MISMATCH")
                lines += [f"    - {f.message}" for f in d.findings]
                if d.cause:
                    lines.append(f"  cause: {d.cause}")
                if d.fix:
                    lines.append(f"  fix: {d.fix}")
        if self.comparison is not None:
            c = self.comparison
            lines += ["", "training vs serving:"]
            if c.same:
                lines.append(f"  SAME: both feed canonical {_ids(c.training)} in the same order")
            else:
                lines.append(
                    f"  DIFFERENT: training feeds {_ids(c.training)}, serving {_ids(c.serving)}"
                )
                lines += [f"    - {f.message}" for f in c.findings]
        lines += ["", f"result: {'OK' if self.ok else 'MISMATCH'} (exit {self.exit_code})"]
        return "\n".join(lines)


# -- the diagnosis -----------------------------------------------------------------------------


def check_dump_against_target(dump: Dump, target: Target) -> None:
    """``DumpError`` when the dump cannot come from ``target`` (width, vocabulary)."""
    if dump.hidden_size != target.hidden_size:
        raise DumpError(
            f"dump hidden_size {dump.hidden_size} != target hidden size {target.hidden_size} "
            f"({target.model_type}, {target.num_layers} layers): wrong target, or wrong "
            f"hidden_size in the dump metadata",
            source=dump.source,
        )
    top = int(dump.input_ids.max())
    if top >= target.vocab_size:
        raise DumpError(
            f"input_ids holds token id {top}, outside the target's vocabulary of "
            f"{target.vocab_size}: wrong target or wrong tokenizer",
            source=dump.source,
        )


MAX_TOKENS = 1024
"""Tokens per sequence a dump is identified on: its first ones (a causal model's state at a
token depends only on the tokens up to it, so a prefix identifies exactly as the whole does)."""
MAX_SEQUENCES = 8
"""Sequences (batch rows) of a dump identified on: its first ones."""


def _bounded(dump: Dump) -> tuple[torch.Tensor, torch.Tensor]:
    """The first ``MAX_SEQUENCES`` x ``MAX_TOKENS`` of ``dump``'s concatenation and token ids:
    the forward that identifies it is bounded whatever the dump's length."""
    import torch

    rows, tokens = MAX_SEQUENCES, MAX_TOKENS
    captured = torch.cat([s[:rows, :tokens] for s in dump.segments], dim=-1)
    return captured, dump.input_ids[:rows, :tokens]


def bound_note(dump: Dump) -> str | None:
    """What ``_bounded`` left out of ``dump``, as a report note (``None``: nothing)."""
    rows, tokens = (int(n) for n in dump.input_ids.shape)
    if rows <= MAX_SEQUENCES and tokens <= MAX_TOKENS:
        return None
    return (
        f"{dump.source}: identified on its first {min(tokens, MAX_TOKENS)} of {tokens} tokens"
        f" in {min(rows, MAX_SEQUENCES)} of {rows} sequences (a causal model's state at a token "
        f"depends only on the tokens up to it)"
    )


def diagnose_dump(
    dump: Dump,
    target: Target,
    *,
    claim: Claim | None = None,
    role: str | None = None,
    rtol: float | None = None,
) -> DumpDiagnosis:
    """Identify every segment of ``dump`` on ``target`` and compare with ``claim``.

    ``claim`` defaults to the dump's own metadata (ids + convention). When it comes from
    elsewhere (a contract, the drafter's ids), the dump's own claim tells where a mismatch
    lies: a dump holding exactly what its system makes of its ids points at the ids (``fix``
    gives native ids that would work); one that does not points at the capture code.
    """
    from eagle3_contracts.capture.identify import identify_segments

    check_dump_against_target(dump, target)
    own: Claim | None
    try:
        own = resolve_claim(
            dump.layer_ids,
            dump.convention,
            target.num_layers,
            basis="dump metadata",
            model_type=target.model_type,
            architectures=target.architectures,
        )
    except ContractError as exc:
        if claim is None:
            raise ContractError(
                f"{dump.source}: its claim {list(dump.layer_ids)} in {dump.convention} names no "
                f"canonical layers ({exc}); check it against --ids/--convention or --contract",
                field="layer_ids",
            ) from None
        own = None
    expected = claim if claim is not None else own
    assert expected is not None
    device = next(target.model.parameters()).device  # a model the caller put on a GPU
    captured, input_ids = _bounded(dump)
    ident: SegmentIdentification = identify_segments(
        captured.to(device),
        target.model,
        input_ids.to(device),
        hidden_size=dump.hidden_size,
        rtol=rtol,
        layers_path=target.layers_path,
    )
    segments = tuple(
        SegmentVerdict(
            position=m.position,
            name=dump.names[m.position],
            expected=expected.expected[m.position] if m.position < len(expected.expected) else None,
            found=m.layer_id,
            kind=m.kind,
            label=m.label,
            closest=m.closest,
            similarity=m.similarity,
            rel_error=m.rel_error,
        )
        for m in ident
    )
    found = tuple(s.found for s in segments)
    findings = describe_difference(
        expected.expected,
        found,
        target.num_layers,
        want_name="expected",
        got_name="dump",
        got_labels=[s.label for s in segments],
        post_norm=_post_norm(segments),
        hidden_size=target.hidden_size,
    )
    cause: str | None = None
    fix: str | None = None
    fix_setting: dict[str, Any] | None = None
    if findings and all(n is None for n in found) and not _post_norm(segments):
        best = max(s.similarity for s in segments)
        findings = (
            DumpFinding(
                FindingKind.UNIDENTIFIED,
                f"no segment equals any state of this target (best cosine {best:.2f}): the "
                f"dump was not captured from this model on these tokens",
            ),
            *findings,
        )
        cause = (
            "wrong target: a different checkpoint, a different random-init seed, or input_ids "
            "that are not the tokens the states came from"
        )
    elif findings and own is None:
        cause = (
            f"its own claim {list(dump.layer_ids)} in {dump.convention} names no canonical "
            f"layer, so the capture cannot be what {expected.basis} expects"
        )
    elif findings and own is not None:
        cause, fix, fix_setting = _cause_and_fix(own, expected, found, target)
    return DumpDiagnosis(
        source=dump.source,
        role=role,
        system=dump.system,
        shape=dump.describe(),
        claim=expected,
        own_claim=None if claim is None else own,
        segments=segments,
        findings=findings,
        cause=cause,
        fix=fix,
        fix_setting=fix_setting,
        rtol=ident.rtol,
        rtol_source=ident.rtol_source,
        num_layers=target.num_layers,
    )


def _cause_and_fix(
    own: Claim,
    expected: Claim,
    found: tuple[int | None, ...],
    target: Target,
) -> tuple[str, str | None, dict[str, Any] | None]:
    """Is the fault in the reading of the ids (fixable by other ids) or in the capture code?
    The cause, the fix in words, and the fix as data (``system``, ``field``, ``ids``)."""
    ids = list(own.ids)
    if found != own.expected:
        return (
            f"the capture does not hold what {own.convention} makes of its ids {ids} "
            f"(canonical {list(own.expected)}): the capture code itself deviates from the "
            f"system's rule (a patch, a misplaced hook, a loop bug), not the ids",
            None,
            None,
        )
    cause = (
        f"the dump holds exactly what {own.convention} makes of ids {ids} (canonical "
        f"{list(own.expected)}), but {expected.basis} expects {list(expected.expected)}: the "
        f"two systems read these ids differently"
    )
    spec = parse_convention(own.convention, field="convention")
    if spec is None:
        return cause, None, None
    if needs_target(spec):
        return (cause, *_release_fix(own, expected, target))
    from eagle3_contracts import conventions

    conv = conventions.get(
        own.convention, model_type=target.model_type, architectures=target.architectures
    )
    assert isinstance(conv, conventions.Convention)  # a release's fix is _release_fix's
    try:
        native = conv.from_canonical(expected.expected, target.num_layers)
    except ContractError as exc:
        return cause, f"no ids make {own.convention} feed {list(expected.expected)}: {exc}", None
    setting = {"system": own.convention, "field": conv.setting, "ids": list(native)}
    return (
        cause,
        f"give {own.convention} the ids {list(native)} (they feed canonical "
        f"{list(expected.expected)})",
        setting,
    )


def _release_fix(
    own: Claim, expected: Claim, target: Target
) -> tuple[str | None, dict[str, Any] | None]:
    """The one proven fix (``config.plan.release_fix``) for the release the dump names: the ids
    it read at every field it may read them from, searched and predicted again."""
    from eagle3_contracts.config.plan import release_fix
    from eagle3_contracts.conventions.hf import NESTED, TOP_LEVEL

    ids = list(own.ids)
    draft = {NESTED.split(".")[0]: {TOP_LEVEL: ids}, TOP_LEVEL: ids}
    config = {
        "model_type": target.model_type,
        "architectures": list(target.architectures),
        "num_hidden_layers": target.num_layers,
        "hidden_size": target.hidden_size,
    }
    fix = release_fix(expected.expected, own.convention, draft, config)
    if fix.native_ids is None or fix.path is None:
        return f"no ids make {own.convention} feed {list(expected.expected)}: {fix.why}", None
    native = list(fix.native_ids)
    setting = {"system": own.convention, "field": fix.path, "ids": native}
    return (
        f"give {own.convention} the ids {native} (they feed canonical {list(expected.expected)})",
        setting,
    )


def _post_norm(segments: Sequence[SegmentVerdict]) -> tuple[int, ...]:
    """Positions of the segments that are the final post-norm state."""
    from eagle3_contracts.capture.identify import MatchKind

    return tuple(s.position for s in segments if s.kind is MatchKind.POST_NORM)


def compare_feeds(training: DumpDiagnosis, serving: DumpDiagnosis) -> FeedComparison:
    """Do both dumps feed the drafter the same layers in the same order?"""
    findings = list(
        describe_difference(
            training.found,
            serving.found,
            training.num_layers,
            want_name="training",
            got_name="serving",
            got_labels=[s.label for s in serving.segments],
            post_norm=_post_norm(serving.segments),
        )
    )
    unknown = [s.position for s in training.segments if s.found is None]
    if unknown:
        findings.insert(
            0,
            DumpFinding(
                FindingKind.UNIDENTIFIED,
                f"training segment(s) {unknown} match no layer, so the comparison there is "
                f"undetermined",
            ),
        )
    return FeedComparison(training.found, serving.found, tuple(findings))


def diagnose(
    dumps: Sequence[Dump],
    target: Target,
    *,
    contract: CaptureContract | None = None,
    claim_ids: Sequence[int] | None = None,
    claim_convention: str | None = None,
    contract_source: str = "contract",
    claim_source: str = "claimed ids",
    rtol: float | None = None,
    notes: Sequence[str] = (),
    progress: Callable[[str], None] | None = None,
) -> DiagnoseReport:
    """Diagnose one dump, or two (training then serving), against ``target``.

    The expectation is ``contract`` if given, else ``claim_ids`` in ``claim_convention`` if
    given, else each dump's own metadata claim; with two dumps and none of those, the layers
    identified in the training dump (what the drafter learned). ``progress`` is told which
    dump is being identified.
    """

    def step(text: str) -> None:
        if progress is not None:
            progress(text)

    if not 1 <= len(dumps) <= 2:
        raise ContractError(
            f"diagnose takes one dump, or two (training, serving); got {len(dumps)}",
            field="dumps",
        )
    if contract is not None and claim_ids is not None:
        raise ContractError("give a contract or claimed ids, not both", field="contract")
    claim: Claim | None = None
    if contract is not None:
        if (contract.num_layers, contract.hidden_size) != (target.num_layers, target.hidden_size):
            raise ContractError(
                f"the contract is for {contract.num_layers} x {contract.hidden_size}, the target "
                f"is {target.num_layers} x {target.hidden_size}",
                field="contract",
            )
        claim = claim_from_contract(contract, basis=contract_source)
    elif claim_ids is not None:
        if not claim_convention:
            raise ContractError(
                "claimed ids need their convention (e.g. canonical, sglang, specforge)",
                field="convention",
            )
        claim = resolve_claim(
            claim_ids,
            claim_convention,
            target.num_layers,
            basis=claim_source,
            model_type=target.model_type,
            architectures=target.architectures,
        )
    notes = [*notes, *filter(None, map(bound_note, dumps))]
    if len(dumps) == 1:
        step(f"identifying the segments of {dumps[0].source}")
        results: tuple[DumpDiagnosis, ...] = (
            diagnose_dump(dumps[0], target, claim=claim, rtol=rtol),
        )
    else:
        step(f"identifying the segments of the training dump {dumps[0].source}")
        training = diagnose_dump(dumps[0], target, claim=claim, role=ROLES[0], rtol=rtol)
        reference = claim
        if claim is None and all(n is not None for n in training.found):
            # no claim: what training fed is what the drafter learned, so it is the reference
            found = tuple(n for n in training.found if n is not None)
            reference = Claim(found, CANONICAL, found, "as_listed", "the training dump")
            notes.append(
                f"no training claim (stamp, --contract or --ids): the layers identified in the "
                f"training dump, canonical {list(found)}, are the reference for the serving dump"
            )
        step(f"identifying the segments of the serving dump {dumps[1].source}")
        serving = diagnose_dump(dumps[1], target, claim=reference, role=ROLES[1], rtol=rtol)
        results = (training, serving)
    comparison = compare_feeds(*results) if len(results) == 2 else None
    if target.random_init:
        notes.append(
            f"the target is a RANDOM INIT (seed {target.seed}): only dumps captured from this "
            f"same random model can be identified"
        )
    return DiagnoseReport(target.describe(), target.random_init, results, comparison, tuple(notes))


__all__ = [
    "CANONICAL",
    "SCHEMA_VERSION",
    "Claim",
    "DiagnoseReport",
    "DumpDiagnosis",
    "DumpFinding",
    "FeedComparison",
    "SegmentVerdict",
    "claim_from_contract",
    "compare_feeds",
    "describe_difference",
    "diagnose",
    "diagnose_dump",
    "resolve_claim",
    "uniform_shift",
]
