"""Resolution (what a system will feed a drafter) and comparison (trained vs served).

``resolve(draft, target, system)`` simulates one system reading one drafter config: where it
reads ids, what it does when they are absent, its offset rule, which ids it can never capture,
duplicates, concatenation order and (given a partition) pipeline-parallel drops. The result, a
``CapturePlan``, holds canonical ids in concatenation order plus a note for every default or
drop that applied. ``compare(trained, served)`` says how two plans differ and which native ids
would make the serving system feed what the drafter was trained on; for an engine release
``proven_fix`` writes each candidate id list where that release reads ids, predicts again
(``conventions.predict``) and keeps the first that feeds exactly the trained layers, so a
printed fix is never a guess (``apply_fix`` writes it into a copy of the config).
"""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from eagle3_contracts import conventions
from eagle3_contracts.config.readers import (
    DraftConfig,
    TargetConfig,
    read_draft_config,
    read_target_config,
)
from eagle3_contracts.contract import CaptureContract, Order
from eagle3_contracts.conventions import (
    Convention,
    Dedup,
    DefaultRule,
    EngineSpec,
    Framework,
    PipelineParallel,
    Role,
    SystemName,
    TrainerSpec,
    Validation,
    engine_spec,
    methods,
    predict,
    releases,
    system_name,
)
from eagle3_contracts.conventions.predict import Feed, Kind, fixed_feed
from eagle3_contracts.differences import WORDING, Difference, FindingKind, classify, say, width_text
from eagle3_contracts.errors import ContractError
from eagle3_contracts.layer_ids import describe, from_boundary

if TYPE_CHECKING:
    from eagle3_contracts.parallel.partition import LayerPartition

DraftLike = DraftConfig | Mapping[str, Any] | str | os.PathLike[str]
TargetLike = TargetConfig | Mapping[str, Any] | str | os.PathLike[str]


@dataclass(frozen=True)
class CapturePlan:
    """What one system feeds the drafter, in canonical ids and concatenation order."""

    # -- who and what ---------------------------------------------------------------------
    system: str  # convention name
    num_layers: int
    hidden_size: int
    order: Order  # how the system concatenates ("ascending" or "as_listed")
    # the system's answer: what it reads and feeds, why, and from which code. A release's
    # (``conventions.predict``), or a fixed reading's own (``release`` "")
    feed: Feed
    # -- what this deployment does to the answer ---------------------------------------------
    non_canonical: tuple[str, ...] = ()  # states fed that no canonical id names (post-norm)
    refused: str | None = None  # the system refuses this config at load (why)
    pp_dropped: tuple[int, ...] = ()  # canonical ids lost to pipeline parallelism
    pp_unread: bool = False  # ids on earlier stages whose fate no code read: the plan is unknown
    pp_notes: tuple[str, ...] = ()  # what the pipeline partition did, in words
    convention: Convention | None = field(default=None, repr=False, compare=False)
    inputs: tuple[DraftConfig, TargetConfig] | None = field(default=None, repr=False, compare=False)
    # the release named, typed as parsed where the name entered (None: a fixed reading); what
    # the fix search predicts again with
    spec: EngineSpec | TrainerSpec | None = field(default=None, repr=False, compare=False)

    # -- read through the answer ---------------------------------------------------------------
    @property
    def layer_ids(self) -> tuple[int, ...]:
        """Canonical ids fed, in concatenation order (those pipeline parallelism drops left out)."""
        return tuple(i for i in self.feed.canonical if i not in self.pp_dropped)

    @property
    def native_ids(self) -> tuple[int, ...] | None:
        """Explicit ids the system read (None: its default applied)."""
        return self.feed.native_ids

    @property
    def ids_source(self) -> str:
        """The JSON path read, ``default``, ``hard-coded`` or ``stamp``."""
        return self.feed.ids_source or "default"

    @property
    def notes(self) -> tuple[str, ...]:
        return (*self.feed.notes, *self.pp_notes)

    @property
    def kind(self) -> str:
        """``segments``, ``crash``, ``unsupported`` or ``unknown`` (a feed of segments whose
        pipeline fate no code read is unknown; a crash stays one)."""
        return "unknown" if self.pp_unread and self.feed.kind == "segments" else self.feed.kind

    @property
    def crash(self) -> str | None:
        """Crash class (``fc-width-mismatch``, ``embedding-residual-none``, ...)."""
        return self.feed.crash if self.kind == self.feed.kind else None

    @property
    def source(self) -> str:
        """file:line of the code the answer comes from."""
        return self.feed.source

    @property
    def assumptions(self) -> tuple[str, ...]:
        """What the answer assumed (unversioned name, runner)."""
        return self.feed.assumptions

    @property
    def release(self) -> str | None:
        """``sglang==0.5.23``: the release answered for (None: a fixed reading)."""
        return self.feed.release or None

    @property
    def runner(self) -> str | None:
        """vLLM model runner ``v1`` / ``v2``."""
        return self.feed.runner

    @property
    def model_file(self) -> str | None:
        """The target's model file in that release (None when not found)."""
        return self.feed.model_file or None

    @property
    def width_states(self) -> int | None:
        """States the release builds the drafter's fc for."""
        return self.feed.width_states

    @property
    def state(self) -> str:
        """What each segment holds."""
        return self.feed.state

    @property
    def read_path(self) -> str | None:
        """Where that release reads ids (where a fix writes them)."""
        return self.feed.read_path

    @property
    def width(self) -> int:
        """Width of what is fed: one ``hidden_size`` segment per state (post-norm included)."""
        return (len(self.layer_ids) + len(self.non_canonical)) * self.hidden_size

    @property
    def contract(self) -> CaptureContract:
        """The ``CaptureContract`` of this plan (``ContractError`` if nothing is fed)."""
        if self.refused:
            raise ContractError(f"{self.system} refuses this config: {self.refused}")
        return CaptureContract(self.layer_ids, self.num_layers, self.hidden_size, self.order)

    def describe(self) -> str:
        ids = ", ".join(describe(n, self.num_layers) for n in self.layer_ids) or "nothing"
        extra = "".join(f", {s}" for s in self.non_canonical)
        return f"{self.system}: [{ids}{extra}]"

    @property
    def key(self) -> str:
        """``sglang==0.5.23 deepseek_v2.py``, ``vllm==0.33.0:v2 llama.py``, or the name."""
        if self.release is None:
            return self.system
        runner = f":{self.runner}" if self.runner else ""
        file = f" {self.model_file}" if self.model_file else ""
        return f"{self.release}{runner}{file}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "system": self.system,
            "kind": self.kind,
            "crash": self.crash,
            "release": self.release,
            "runner": self.runner,
            "model_file": self.model_file,
            "source": self.source,
            "assumptions": list(self.assumptions),
            "width_states": self.width_states,
            "state": self.state,
            "layer_ids": list(self.layer_ids),
            "order": self.order,
            "native_ids": None if self.native_ids is None else list(self.native_ids),
            "ids_source": self.ids_source,
            "width": self.width,
            "non_canonical": list(self.non_canonical),
            "refused": self.refused,
            "pp_dropped": list(self.pp_dropped),
            "notes": list(self.notes),
        }


@dataclass(frozen=True)
class Finding:
    """One difference, with what would fix it for the serving system."""

    kind: FindingKind
    message: str
    layers: tuple[int, ...] = ()  # canonical ids concerned
    shift: int | None = None  # for SHIFTED: served = trained + shift
    fix_native_ids: tuple[int, ...] | None = None  # ids to give the serving system, if any
    fix: str = ""  # the fix in words (or why no native ids can express it)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind.value,
            "message": self.message,
            "layers": list(self.layers),
            "shift": self.shift,
            "fix_native_ids": None if self.fix_native_ids is None else list(self.fix_native_ids),
            "fix": self.fix,
        }


# -- resolve ----------------------------------------------------------------------------
def resolve(
    draft_config: DraftLike,
    target_config: TargetLike,
    system: str | SystemName | Convention,
    *,
    partition: LayerPartition | None = None,
) -> CapturePlan:
    """The canonical ids ``system`` will actually feed this drafter on this target.

    Engine names (``sglang``, ``vllm==0.33.0:v1``) and trainer releases (``specforge``,
    ``specforge==0.2.0``: what it trained the drafter on) are answered per release through
    ``conventions.predict.predict_system``. ``system`` is best given typed, as parsed where the
    name entered (``conventions.parse_system``); a string is parsed here.
    """
    draft = (
        draft_config if isinstance(draft_config, DraftConfig) else read_draft_config(draft_config)
    )
    target = (
        target_config
        if isinstance(target_config, TargetConfig)
        else read_target_config(target_config)
    )
    spec = system if isinstance(system, Convention) else system_name(system, field="system")
    if isinstance(spec, (EngineSpec, TrainerSpec)):
        return _release_plan(draft, target, spec, partition)  # answered per release
    conv = conventions.get(spec, model_type=target.model_type, architectures=target.architectures)
    assert isinstance(conv, Convention)  # engine and trainer names were answered above
    method = _method_plan(draft, target, conv)
    if method is not None:
        return method
    n = target.num_layers
    notes: list[str] = []

    native, source = _read_ids(draft, conv, n, notes)
    cited = "; ".join(conv.sources) if conv.release else ""
    kind: Kind = "segments"
    crash: str | None = None
    unwritten = _unwritten(conv, native, n)
    if unwritten:  # the whole feed is unreliable: no layers are claimed
        notes.append(unwritten)
        kind, crash = "crash", "uninitialised-aux-slots"
    if native is None:
        boundaries = conv.default.boundaries(n)
        if boundaries is None:
            raise ContractError(
                f"{conv.name} needs explicit ids and the draft config has none {_where(conv)}"
                + (f" (they are set with {conv.id_setting})" if conv.id_setting else ""),
                field="layer_ids",
            )
        refused = None
        non_canonical: tuple[str, ...] = ()
        ids = _capture(conv, [(None, b) for b in boundaries], n, notes, default=True)
    else:
        refused = _refusal(conv, native, n)
        non_canonical, pairs = _split_post_norm(conv, native, n, notes)
        ids = _capture(conv, pairs, n, notes, default=False) if not (refused or crash) else ()
        if crash:
            non_canonical = ()
        if refused:
            if conv.validation is Validation.CRASHES:
                notes.append(f"{conv.system} cannot train on this config: {refused}")
            else:
                notes.append(f"{conv.system} refuses this config at load: {refused}")
            non_canonical = ()

    feed = fixed_feed(
        ids,
        kind=kind,
        crash=crash,
        source=cited,
        assumptions=conv.assumptions,
        native_ids=native,
        ids_source=source,
        notes=tuple(notes),
    )
    pp = _Pipeline(conv.pipeline_parallel, conv.captures_before_layer, conv.system)
    pp_dropped, unread, pp_notes = _pipeline(pp, ids, n, partition)
    return CapturePlan(
        system=conv.name,
        num_layers=n,
        hidden_size=target.hidden_size,
        order=conv.concat_order,
        feed=feed,
        non_canonical=non_canonical,
        refused=refused,
        pp_dropped=pp_dropped,
        pp_unread=unread,
        pp_notes=pp_notes,
        convention=conv,
        inputs=(draft, target),
    )


def _method_plan(draft: DraftConfig, target: TargetConfig, conv: Convention) -> CapturePlan | None:
    """A block-draft drafter (``conventions.methods``): its ids mean layer outputs whichever
    reading is asked (the trained claim, ``trainers.method_claim``); a fixed serving system
    whose handling of the method was never read is unknown. ``None`` for EAGLE-3 drafters."""
    if not methods.detect(draft.raw).block:
        return None
    from eagle3_contracts.conventions.trainers import method_claim

    claim = method_claim(dict(draft.raw), target)
    if claim is None:
        return None
    if conv.role is not Role.READING and conv.role is not Role.TRAINER:
        why = f"{conv.system}: how it serves this drafter method was not read"
        claim = fixed_feed((), kind="unknown", source=why, notes=(why,))
    return CapturePlan(
        system=conv.name,
        num_layers=target.num_layers,
        hidden_size=target.hidden_size,
        order="ascending",
        feed=claim,
        convention=conv,
        inputs=(draft, target),
    )


def _unwritten(conv: Convention, native: tuple[int, ...] | None, n: int) -> str:
    """For a system that accepts any id (``Validation.UNINITIALISED``): why the drafter reads
    buffer slots no layer writes ("" when every id is a layer or a post-norm id)."""
    if native is None or conv.validation is not Validation.UNINITIALISED:
        return ""
    post_norm = conv.post_norm_id.natives(n)
    offset = conv.offset_rule.offset(native, n)
    reach = conv.boundary_range(n)
    bad = [i for i in native if i not in post_norm and i + offset not in reach]
    if not bad:
        return ""
    return (
        f"ids {bad} are no layer of a {n}-layer target: {conv.system} accepts them, sizes its "
        f"hidden-state buffer for {len(native)} states and never writes their slots, so the "
        "drafter silently reads uninitialised memory there"
    )


def _release_plan(
    draft: DraftConfig,
    target: TargetConfig,
    spec: EngineSpec | TrainerSpec,
    partition: LayerPartition | None,
) -> CapturePlan:
    feed = predict.predict_system(spec, dict(draft.raw), target)
    # an unsupported or unknown row collects nothing: the partition is still checked
    pp = _release_pipeline(feed)
    pp_dropped, unread, pp_notes = _pipeline(pp, feed.canonical, target.num_layers, partition)
    return CapturePlan(
        system=spec.given,
        num_layers=target.num_layers,
        hidden_size=target.hidden_size,
        order="ascending",
        feed=feed,
        non_canonical=("final post-norm state",) if feed.final_state else (),
        refused=feed.notes[-1] if feed.crash == "trainer-refused" else None,
        pp_dropped=pp_dropped,
        pp_unread=unread,
        pp_notes=pp_notes,
        inputs=(draft, target),
        spec=spec,
    )


def _read_ids(
    draft: DraftConfig, conv: Convention, n: int, notes: list[str]
) -> tuple[tuple[int, ...] | None, str]:
    written = [
        (p, ids)
        for p in (conventions.hf.NESTED, conventions.hf.TOP_LEVEL)
        if (ids := draft.ids_at(p)) is not None
    ]
    if not conv.configurable:
        if written:
            notes.append(
                f"{conv.system} reads no config field: the config's ids {list(written[0][1])} "
                f"are ignored; it uses {conv.describe_default(n)}"
            )
        else:
            notes.append(f"{conv.system} uses {conv.describe_default(n)}")
        return None, "hard-coded"
    for path in conv.id_paths:
        ids = draft.ids_at(path)
        if ids is not None:
            if conv.id_setting:
                notes.append(
                    f"{conv.system} takes ids from {conv.id_setting}, not the draft config: "
                    f"assumed to be the config's {path} = {list(ids)}"
                )
            return ids, path
    if conv.default is not DefaultRule.REQUIRED:
        ignored = "".join(
            f"; the ids {list(ids)} at {p} are ignored by {conv.system}" for p, ids in written
        )
        notes.append(
            f"no ids {_where(conv)}: fell back to the default {conv.describe_default(n)}{ignored}"
        )
    return None, "default"


def _where(conv: Convention) -> str:
    """Where ``conv`` reads ids: ``at a or b``, or ``in the config`` (ids set elsewhere)."""
    return f"at {' or '.join(conv.id_paths)}" if conv.id_paths else "in the config"


def _refusal(conv: Convention, native: tuple[int, ...], n: int) -> str | None:
    if conv.validation is Validation.CRASHES:
        reach = conv.boundary_range(n)
        offset = conv.offset_rule.offset(native, n)
        bad = [i for i in native if i + offset not in reach]
        dupes = sorted({i for i in native if native.count(i) > 1})
        if bad or dupes:
            why = "; ".join(
                part
                for part in (
                    f"ids {bad} are no layer of a {n}-layer target" if bad else "",
                    f"ids {dupes} are listed twice" if dupes else "",
                )
                if part
            )
            hooks = len(set(native) - set(bad))
            return (
                f"{why}: {hooks} hook(s) for an fc built for {len(native)} states, training "
                "crashes at its first forward (no drafter can have been trained on this config)"
            )
        return None
    if conv.exact_count is not None and len(native) != conv.exact_count:
        return f"it requires exactly {conv.exact_count} ids, got {len(native)}"
    if conv.dedup is Dedup.REJECTED and len(set(native)) != len(native):
        return f"duplicate ids in {list(native)}"
    if conv.validation is Validation.REFUSED:
        offset = conv.offset_rule.offset(native, n)
        reach = conv.boundary_range(n)
        bad = [i for i in native if i + offset not in reach]
        if bad:
            lo, hi = reach.start - offset, reach.stop - 1 - offset
            return f"ids {bad} are outside the accepted range {lo}..{hi} for {n} layers"
    return None


def _split_post_norm(
    conv: Convention, native: tuple[int, ...], n: int, notes: list[str]
) -> tuple[tuple[str, ...], list[tuple[int | None, int]]]:
    post = conv.post_norm_id.natives(n)
    offset = conv.offset_rule.offset(native, n)
    extra: list[str] = []
    pairs: list[tuple[int | None, int]] = []
    for i in native:
        if i in post:
            extra.append("final post-norm state")
            notes.append(
                f"native id {i} is the final post-norm hidden state in {conv.system}: it is fed, "
                f"but no canonical id names it (canonical {n - 1} is the pre-norm output)"
            )
        else:
            pairs.append((i, i + offset))
    return tuple(extra), pairs


def _capture(
    conv: Convention,
    pairs: Sequence[tuple[int | None, int]],
    n: int,
    notes: list[str],
    *,
    default: bool,
) -> tuple[int, ...]:
    reach = conv.boundary_range(n)
    kept: list[int] = []
    for native, b in pairs:
        label = "default boundary" if default else f"native id {native} (boundary {b})"
        if b not in reach:
            why = (
                f"canonical {n - 1}, the last layer's output, which it cannot reach"
                if b == n
                else "outside its layer loop"
                if not 0 <= b <= n
                else "the embedding, which it cannot reach"
                + (f" ({conv.embedding_caveat})" if conv.embedding_caveat else "")
            )
            if default and not 0 <= b <= n:
                notes.append(f"default boundary {b} is not a layer of a {n}-layer target: dropped")
            else:
                notes.append(f"{label} is never captured by {conv.system}: {why}")
            continue
        canonical = from_boundary(b, n)
        if canonical in kept:
            if conv.dedup is Dedup.REPEATED:
                notes.append(
                    f"{describe(canonical, n)} is listed twice: {conv.system} gathers it twice; "
                    f"the plan keeps one"
                )
            else:
                notes.append(f"{describe(canonical, n)} is listed twice: captured once")
            continue
        kept.append(canonical)
    if conv.concat_order == "ascending":
        if kept != sorted(kept):
            notes.append(
                f"{conv.system} concatenates in ascending layer order, not the listed order"
            )
        kept.sort()
    return tuple(kept)


@dataclass(frozen=True)
class _Pipeline:
    """What a system does with states captured on earlier pipeline stages."""

    behaviour: PipelineParallel
    before_layer: bool  # captures layer N as layer N + 1 starts (on N + 1's stage)
    system: str  # for notes: "vllm==0.21.0:v1 llama.py", "TensorRT-LLM"


def _release_pipeline(feed: Feed) -> _Pipeline:
    """The release's pipeline behaviour for the target's entry class, as probed: last-stage-only
    when its setter reads ``self.pp_group.is_last_rank``; otherwise nothing was read that says
    whether earlier stages' states reach the drafter."""
    last_only = (
        releases.last_stage_only(feed.spec, feed.entry_class)
        if feed.entry_class and feed.spec is not None
        else None
    )
    return _Pipeline(
        PipelineParallel.LAST_STAGE_ONLY if last_only else PipelineParallel.DEPENDS,
        _captures_before_layer(feed.spec),
        feed.system,
    )


def _captures_before_layer(spec: SystemName | None) -> bool:
    """SGLang's loops capture layer N as layer N + 1 starts (``if i in self.layers_to_capture``
    before layer i); vLLM's mixin records boundary idx + 1 after layer idx."""
    # a trainer captures through its pinned SGLang release (``trainers.trainer_release``)
    return isinstance(spec, TrainerSpec) or (
        isinstance(spec, EngineSpec) and spec.framework is not Framework.VLLM
    )


def _pipeline(
    pp: _Pipeline,
    ids: tuple[int, ...],
    n: int,
    partition: LayerPartition | None,
) -> tuple[tuple[int, ...], bool, tuple[str, ...]]:
    """The ids pipeline parallelism drops, whether the rest depends on unread code (an id on an
    earlier stage whose fate no code read decides: the row is unknown, never ok), and the note
    saying so."""
    if partition is None:
        return (), False, ()
    if partition.num_layers != n:
        raise ContractError(
            f"the pipeline partition covers {partition.num_layers} layers but the target has {n}",
            field="partition",
        )
    if partition.pp_size == 1:
        return (), False, ()
    dropped, unread = partition.pipeline_fate(ids, pp.behaviour, before_layer=pp.before_layer)
    where = f"pipeline parallel ({partition.describe()})"
    if dropped:
        names = ", ".join(describe(i, n) for i in dropped)
        return (
            dropped,
            False,
            (
                f"{where}: {pp.system} captures only on the last stage; {names} are captured on "
                "earlier stages and dropped",
            ),
        )
    if unread:
        names = ", ".join(describe(i, n) for i in unread)
        return (
            (),
            True,
            (
                f"{where}: {names} are captured on earlier stages; no code read says whether "
                f"{pp.system} carries them to the drafter's stage: unknown, not ok",
            ),
        )
    return (), False, ()


# -- compare ----------------------------------------------------------------------------
_Raw = tuple[FindingKind, str, tuple[int, ...], int | None]
"""A finding before its fix: kind, message, layers, shift."""


def compare(trained: CapturePlan, served: CapturePlan) -> tuple[Finding, ...]:
    """How ``served`` differs from ``trained`` (empty when the drafter is fed what it learned)."""
    h_t, h_s = trained.hidden_size, served.hidden_size
    raw: list[_Raw] = []
    verdict = _release_verdict(trained, served)
    if verdict is not None:
        raw.append(verdict)
    elif trained.refused:
        raw.append((FindingKind.REFUSED, _refused(trained), (), None))
    elif served.refused:
        raw.append((FindingKind.REFUSED, _refused(served), (), None))
    elif (trained.num_layers, h_t) != (served.num_layers, h_s):
        raw.append(
            (
                FindingKind.TARGET_DIFFERS,
                WORDING[FindingKind.TARGET_DIFFERS].sentence.format(
                    want_target=f"{trained.num_layers} x {h_t}",
                    got_target=f"{served.num_layers} x {h_s}",
                ),
                (),
                None,
            )
        )
    else:
        raw.extend(_fed_findings(trained, served))
    if not raw:
        return ()
    fix_ids, fix = _finding_fix(trained, served, verdict)
    return tuple(
        Finding(kind, msg, layers, shift, fix_ids, fix) for kind, msg, layers, shift in raw
    )


def _refused(plan: CapturePlan) -> str:
    return WORDING[FindingKind.REFUSED].sentence.format(got=plan.system, reason=plan.refused)


def _fed_findings(trained: CapturePlan, served: CapturePlan) -> list[_Raw]:
    """How what ``served`` feeds differs from the training, on the same target."""
    t, s = trained.layer_ids, served.layer_ids
    h_t, h_s = trained.hidden_size, served.hidden_size
    raw: list[_Raw] = list(_layer_findings(t, s, trained.num_layers))
    if served.state != trained.state:
        raw.append(
            (
                FindingKind.WRONG_STATE,
                f"{served.key} feeds the {served.state}; the drafter was trained on the "
                f"{trained.state} ({served.notes[-1] if served.notes else served.source})",
                (),
                None,
            )
        )
    if served.feed.ignored_flags:
        said = [n for n in served.notes if n.startswith(predict.IGNORED_FLAG)]
        raw.append((FindingKind.FLAG_IGNORED, "; ".join(said), (), None))
    new_post = [x for x in served.non_canonical if x not in trained.non_canonical]
    if new_post:
        raw.append(
            (
                FindingKind.POST_NORM_FED,
                WORDING[FindingKind.POST_NORM_FED].sentence.format(got=served.system),
                (),
                None,
            )
        )
    if trained.width != served.width:
        raw.append(
            (
                FindingKind.WIDTH_DIFFERS,
                WORDING[FindingKind.WIDTH_DIFFERS].sentence.format(
                    got=served.system,
                    want_width=width_text(trained.width // h_t, h_t),
                    got_width=width_text(served.width // h_s, h_s),
                ),
                (),
                None,
            )
        )
    return raw


def _finding_fix(
    trained: CapturePlan, served: CapturePlan, verdict: _Raw | None
) -> tuple[tuple[int, ...] | None, str]:
    """The native ids (and words) that fix a row's findings, or why none can."""
    if verdict is not None and (
        verdict[0] in (FindingKind.UNKNOWN, FindingKind.UNSUPPORTED) or trained.kind != "segments"
    ):
        return None, f"none: the row is {verdict[0].value}"
    if served.release is not None:
        fix_ids, fix = _release_fix(trained, served)
    else:
        fix_ids, fix = _fix(trained, served)
    if fix_ids == ():  # nothing to feed is never a fix
        return None, "no native ids can express it: the drafter was trained on no layer"
    return fix_ids, fix


def _trained_count(plan: CapturePlan) -> int:
    return len(plan.layer_ids) + len(plan.non_canonical)


def _why(plan: CapturePlan) -> str:
    """A plan's last note, else its source: what a verdict cites."""
    return "; ".join(plan.notes[-1:]) or plan.source


def _trained_verdict(trained: CapturePlan) -> _Raw | None:
    """The training side unknown, unsupported or crashing: no comparison is possible."""
    if trained.kind == "unknown":
        return (
            FindingKind.UNKNOWN,
            f"unknown: what {trained.key} trained on: {_why(trained)}",
            (),
            None,
        )
    if trained.kind == "unsupported":
        return (
            FindingKind.UNSUPPORTED,
            f"unsupported: {trained.key} cannot capture training features for this target "
            f"({trained.source})",
            (),
            None,
        )
    if trained.kind == "crash" and not trained.refused:
        return (
            FindingKind.CRASHES,
            f"{trained.key} crashes ({trained.crash}) when capturing the training features: "
            f"{_why(trained)}",
            (),
            None,
        )
    return None


def _release_verdict(
    trained: CapturePlan, served: CapturePlan
) -> tuple[FindingKind, str, tuple[int, ...], int | None] | None:
    """The finding that replaces the layer comparison: an unknown, unsupported or crashing
    release, or an fc the served release builds for another number of states."""
    verdict = _trained_verdict(trained)
    if verdict is not None:
        return verdict
    if served.kind == "unsupported":
        return (FindingKind.UNSUPPORTED, f"unsupported: {served.source}", (), None)
    if served.kind == "unknown":
        if served.feed.kind != "unknown":  # the answer was read: its pipeline fate was not
            return (
                FindingKind.UNKNOWN,
                f"unknown: no code read says whether {served.key} carries states captured on "
                "earlier pipeline stages to the drafter",
                (),
                None,
            )
        if served.feed.unprobed:  # the reason and the probe command, once
            return (FindingKind.UNKNOWN, f"unknown: {served.source}", (), None)
        return (FindingKind.UNKNOWN, f"unknown: needs reading at {served.source}", (), None)
    if served.kind == "crash" and served.release is None and not trained.refused:
        return (  # a registry entry's crash (TensorRT-LLM's unwritten buffer slots)
            FindingKind.CRASHES,
            f"{served.key} {served.crash}: {_why(served)}",
            (),
            None,
        )
    # past _trained_verdict, a training side that is not segments is a refused one
    if trained.refused or served.refused or served.release is None:
        return None
    if served.kind == "crash":
        return (
            FindingKind.CRASHES,
            f"{served.key} crashes ({served.crash}): {_why(served)}",
            served.layer_ids,
            None,
        )
    count = _trained_count(trained)
    if (
        served.width_states is not None
        and not served.non_canonical
        and served.width_states != count
    ):
        return (
            FindingKind.CRASHES,
            f"{served.key} builds the drafter's fc for {served.width_states} states "
            f"({served.width_states * served.hidden_size} wide), the checkpoint's fc was trained "
            f"on {count}: weight-load error at startup",
            (),
            None,
        )
    return None


def _release_fix(trained: CapturePlan, served: CapturePlan) -> tuple[tuple[int, ...] | None, str]:
    assert served.release is not None and served.inputs is not None
    if trained.kind != "segments" or trained.refused:
        return None, f"no fix: the trained side is {trained.kind} ({trained.key})"
    serve = served.spec or served.feed.spec
    if not isinstance(serve, EngineSpec):
        return None, f"no fix: {served.key} is a trainer release, not a serving engine"
    if trained.non_canonical or served.non_canonical:
        return None, (
            "no native ids can express it: the drafter was trained on (or is served) the final "
            "post-norm state instead of aux states (eagle_config.use_aux_hidden_state)"
        )
    draft, target = served.inputs
    fix = proven_fix(
        trained.layer_ids,
        _trained_count(trained),
        serve,
        served.feed,
        draft,
        target,
        state=trained.state,
    )
    remedy = _remedy(trained, served)
    if fix.native_ids is None and remedy:
        return None, f"{fix.why}; {remedy}"
    if fix.native_ids is not None and remedy:
        return fix.native_ids, f"{fix.why}, and {remedy}"
    return fix.native_ids, fix.why


def _remedy(trained: CapturePlan, served: CapturePlan) -> str:
    """What besides the ids a row needs (``""``: nothing): a pipeline partition that keeps the
    trained layers on the last stage, or norm flags the release never reads."""
    if served.pp_dropped:
        return _partition_remedy(trained.layer_ids, served)
    if served.feed.ignored_flags:
        flags = ", ".join(served.feed.ignored_flags)
        return (
            f"serve with a release that reads {flags} (or retrain without them): {served.key} "
            "never reads them"
        )
    return ""


def _partition_remedy(want: Sequence[int], served: CapturePlan) -> str:
    """The partition that keeps every trained layer on the last stage, where ``served``
    captures (``LayerPartition.capturing_stage``: SGLang takes canonical N entering N + 1)."""
    n = served.num_layers
    if served.convention is not None:
        before = served.convention.captures_before_layer
    else:
        before = _captures_before_layer(served.feed.spec)
    start = min(i + 1 if before and i + 1 < n else max(i, 0) for i in want)
    where = (
        "serve without pipeline parallelism (the first trained layer is captured on stage 0)"
        if start == 0
        else f"serve without pipeline parallelism, or with a --pp-partition whose last stage "
        f"starts at layer {start} or earlier"
    )
    return (
        f"keep every trained layer on the last pipeline stage, the only one {served.key} "
        f"captures on: {where}"
    )


def _layer_findings(
    t: tuple[int, ...], s: tuple[int, ...], n: int
) -> list[tuple[FindingKind, str, tuple[int, ...], int | None]]:
    """``classify``'s differences in the plan's words (the width is the plans' own finding)."""
    return [
        (d.kind, _layer_message(d, t, s, n), d.layers, d.shift)
        for d in classify(t, s)
        if d.kind not in (FindingKind.WIDTH_DIFFERS, FindingKind.SEGMENT)
    ]


def _layer_message(d: Difference, t: tuple[int, ...], s: tuple[int, ...], n: int) -> str:
    return say(d, t, s, n, names=("trained", "served"))


def _fix(trained: CapturePlan, served: CapturePlan) -> tuple[tuple[int, ...] | None, str]:
    conv = served.convention or conventions.get(served.system)
    assert isinstance(conv, Convention)  # a release's row is fixed by _release_fix
    if trained.refused:
        return None, f"the trained config is refused by {trained.system}: {trained.refused}"
    if (trained.num_layers, trained.hidden_size) != (served.num_layers, served.hidden_size):
        return None, "serve the drafter on the target it was trained on"
    want = trained.layer_ids
    if trained.non_canonical:
        return None, (
            f"no native ids can express it: the drafter was trained on the "
            f"{trained.non_canonical[0]}, which {conv.system} cannot feed as a layer"
        )
    if conv.concat_order == "ascending" and list(want) != sorted(want):
        return None, (
            f"no native ids can express it: {conv.system} concatenates ascending, the drafter "
            f"was trained in list order [{', '.join(map(str, want))}]; retrain with a sorted list"
        )
    if not conv.configurable:
        return None, (
            f"no native ids can express it: {conv.system} reads no config field "
            f"({conv.describe_default(served.num_layers)}); edit its code"
        )
    try:
        native = conv.from_canonical(want, served.num_layers)
    except ContractError as exc:
        return None, f"no native ids can express it: {exc}"
    unproven = _unproven(conv, native, want, served)
    if unproven:
        return None, unproven
    if served.pp_dropped and native == served.native_ids:  # the ids are not what is wrong
        return None, (
            f"no id list changes it: {conv.system} already reads {list(native)} at "
            f"{served.ids_source}; {_partition_remedy(want, served)}"
        )
    if served.pp_dropped:
        return native, f"set {conv.setting} = {list(native)}, and {_partition_remedy(want, served)}"
    return native, f"set {conv.setting} = {list(native)}"


def _unproven(
    conv: Convention, native: tuple[int, ...], want: Sequence[int], served: CapturePlan
) -> str:
    """Why ``native``, written where ``conv`` reads ids, does not make it feed ``want`` when
    resolved again ("" when it does): a registry entry's fix is proven as a release's is."""
    if served.inputs is None or not conv.id_paths or not native:
        return ""  # no list to prove (the caller says a drafter trained on no layer has none)
    draft, target = served.inputs
    again = resolve(_with_ids(draft.raw, conv.id_paths[0], native), target, conv)
    if not again.refused and again.kind == "segments" and again.feed.canonical == tuple(want):
        return ""
    return (
        f"no native ids can express it: {conv.system} given {list(native)} at "
        f"{conv.id_paths[0]} feeds {again.describe()}"
    )


# -- proven fixes: the id list a release must read, checked by predicting again ----------


@dataclass(frozen=True)
class Fix:
    """Native ids proven to make a release feed the trained layers, or why none exist."""

    native_ids: tuple[int, ...] | None
    path: str | None  # the JSON path to write them at
    why: str  # the fix in words

    @property
    def label(self) -> str:
        if self.native_ids is None or self.path is None:
            return "no native ids can fix it (see details)"
        return f"{self.path} = [{', '.join(map(str, self.native_ids))}]"


def proven_fix(
    want: Sequence[int],
    trained_count: int,
    system: str | EngineSpec,
    feed: Feed,
    draft: DraftConfig,
    target: predict.TargetFacts,
    *,
    state: str = "residual stream",
) -> Fix:
    """The id list to write where ``system`` reads ids so that it feeds exactly ``want``
    (canonical, trained order), checked by predicting again; else why no list does. A string
    ``system`` is parsed here, once, not once per candidate."""
    serve = system if isinstance(system, EngineSpec) else engine_spec(system, field="serve_with")
    if feed.kind == "unsupported":
        return Fix(None, None, f"no native ids can fix it: {feed.source}")
    if feed.kind == "unknown":
        return Fix(None, None, "no fix is printed for an unknown answer: " + "; ".join(feed.notes))
    if feed.final_state:
        return Fix(
            None,
            None,
            "no native ids can fix it: eagle_config.use_aux_hidden_state is false, so no aux "
            "states are captured; remove it (or set it true) to serve an EAGLE-3 drafter",
        )
    if list(want) != sorted(want) or len(set(want)) != len(want):
        return Fix(
            None,
            None,
            f"no native ids can express it: {feed.release} concatenates each layer once in "
            f"ascending order, the drafter was trained on [{', '.join(map(str, want))}]; "
            "retrain with a sorted list of distinct ids",
        )
    if feed.state == predict.DELTA and state != predict.DELTA:
        return Fix(
            None,
            None,
            f"no native ids can fix it: {feed.system} feeds the {feed.state} "
            f"({feed.notes[-1] if feed.notes else feed.source}); serve with a release that "
            "captures the residual stream",
        )
    if feed.read_path is None:
        return Fix(None, None, f"no native ids can fix it: {feed.release} reads no config field")
    base = tuple(want)
    if _feeds_exactly(feed, base, trained_count, state):  # what is wrong is not the ids
        return Fix(
            None,
            None,
            f"no id list changes it: {feed.system} already feeds canonical {list(base)} "
            + (
                "from its default (no ids where it reads them)"
                if feed.native_ids is None
                else f"from {feed.ids_source} = {list(feed.native_ids)}"
            ),
        )
    seen: set[tuple[int, ...]] = set()
    for form in (base, tuple(i + 1 for i in base)):
        for k in range(len(form)):
            cand = form[k:] + form[:k]
            if cand in seen:
                continue
            seen.add(cand)
            again = predict.predict_feed(serve, _with_ids(draft.raw, feed.read_path, cand), target)
            if _feeds_exactly(again, base, trained_count, state):
                why = f"set {feed.read_path} = [{', '.join(map(str, cand))}]"
                return Fix(cand, feed.read_path, why + f": {again.system} then feeds them")
    reason = (
        f"no id list written at {feed.read_path} makes {feed.system} feed canonical {list(base)}"
    )
    if feed.width_states is not None and feed.width_states != trained_count:
        reason += (
            f"; its fc takes {feed.width_states} states, the drafter has {trained_count}: set "
            f"num_aux_hidden_states = {trained_count}"
        )
    return Fix(None, None, reason)


def release_fix(
    want: Sequence[int], system: str | EngineSpec, draft: DraftLike, target: TargetLike
) -> Fix:
    """``proven_fix`` for a caller that holds only the trained ids (the engine guards): what
    ``system`` feeds this drafter now, then the one search for the ids that make it feed
    exactly ``want`` with an fc of ``len(want)`` states."""
    d = draft if isinstance(draft, DraftConfig) else read_draft_config(draft)
    t = target if isinstance(target, TargetConfig) else read_target_config(target)
    serve = system if isinstance(system, EngineSpec) else engine_spec(system, field="serve_with")
    feed = predict.predict_feed(serve, dict(d.raw), t)
    return proven_fix(tuple(want), len(want), serve, feed, d, t)


def _feeds_exactly(feed: Feed, want: tuple[int, ...], trained_count: int, state: str) -> bool:
    """Whether ``feed`` gives the drafter exactly what it was trained on: the layers ``want``
    in order, an fc for ``trained_count`` states, the same kind of state."""
    return (
        feed.kind == "segments"
        and feed.canonical == want
        and feed.width_states == trained_count
        and feed.state == state
    )


def _with_ids(raw: Mapping[str, Any], path: str, ids: Sequence[int]) -> dict[str, Any]:
    out = copy.deepcopy(dict(raw))
    node = out
    *heads, last = path.split(".")
    for head in heads:
        child = node.get(head)
        if not isinstance(child, dict):
            child = {}
            node[head] = child
        node = child
    node[last] = list(ids)
    return out


def apply_fix(raw: Mapping[str, Any], fix: Fix) -> dict[str, Any]:
    """A copy of the drafter's config with ``fix`` applied (for tests and ``--json`` users)."""
    if fix.native_ids is None or fix.path is None:
        raise ValueError("this fix has no native ids to apply")
    return _with_ids(raw, fix.path, fix.native_ids)
