"""Resolution (what a system will feed a drafter) and comparison (trained vs served).

``resolve(draft, target, system)`` simulates one system reading one drafter config: where it
reads ids, what it does when they are absent, its offset rule, which ids it can never capture,
duplicates, concatenation order and (given a partition) pipeline-parallel drops. The result, a
``CapturePlan``, holds canonical ids in concatenation order plus a note for every default or
drop that applied. ``compare(trained, served)`` says how two plans differ and which native ids
would make the serving system feed what the drafter was trained on.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
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
    PipelineParallel,
    Validation,
)
from eagle3_contracts.errors import ContractError
from eagle3_contracts.layer_ids import describe, uniform_shift

if TYPE_CHECKING:
    from eagle3_contracts.parallel.partition import LayerPartition

DraftLike = DraftConfig | Mapping[str, Any] | str | os.PathLike[str]
TargetLike = TargetConfig | Mapping[str, Any] | str | os.PathLike[str]


@dataclass(frozen=True)
class CapturePlan:
    """What one system feeds the drafter, in canonical ids and concatenation order."""

    # -- who and what ---------------------------------------------------------------------
    system: str  # convention name
    layer_ids: tuple[int, ...]  # canonical ids fed, in concatenation order
    num_layers: int
    hidden_size: int
    order: Order  # how the system concatenates ("ascending" or "as_listed")
    # -- how it got there -------------------------------------------------------------------
    native_ids: tuple[int, ...] | None  # explicit ids the system read (None: default applied)
    ids_source: str  # JSON path read, "default" or "hard-coded"
    notes: tuple[str, ...] = ()
    non_canonical: tuple[str, ...] = ()  # states fed that no canonical id names (post-norm)
    refused: str | None = None  # the system refuses this config at load (why)
    pp_dropped: tuple[int, ...] = ()  # canonical ids lost to pipeline parallelism
    convention: Convention | None = field(default=None, repr=False, compare=False)

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

    def to_dict(self) -> dict[str, Any]:
        return {
            "system": self.system,
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


class FindingKind(str, Enum):
    """How a served plan differs from the trained one."""

    REFUSED = "refused"
    SHIFTED = "shifted"
    EMBEDDING_INSERTED = "embedding-inserted"
    LAYER_MISSING = "layer-missing"
    EXTRA_LAYER = "extra-layer"
    ORDER_DIFFERS = "order-differs"
    POST_NORM_FED = "post-norm-fed"
    WIDTH_DIFFERS = "width-differs"
    TARGET_DIFFERS = "target-differs"


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
    system: str | Convention,
    *,
    partition: LayerPartition | None = None,
) -> CapturePlan:
    """The canonical ids ``system`` will actually feed this drafter on this target."""
    draft = (
        draft_config if isinstance(draft_config, DraftConfig) else read_draft_config(draft_config)
    )
    target = (
        target_config
        if isinstance(target_config, TargetConfig)
        else read_target_config(target_config)
    )
    conv = conventions.get(system, model_type=target.model_type, architectures=target.architectures)
    n = target.num_layers
    notes: list[str] = []

    native, source = _read_ids(draft, conv, n, notes)
    if native is None:
        boundaries = conv.default.boundaries(n)
        if boundaries is None:
            where = " or ".join(conv.id_paths) or "the config"
            raise ContractError(
                f"{conv.name} needs explicit ids and the draft config has none at {where}",
                field="layer_ids",
            )
        refused = None
        non_canonical: tuple[str, ...] = ()
        ids = _capture(conv, [(None, b) for b in boundaries], n, notes, default=True)
    else:
        refused = _refusal(conv, native, n)
        non_canonical, pairs = _split_post_norm(conv, native, n, notes)
        ids = _capture(conv, pairs, n, notes, default=False) if not refused else ()
        if refused:
            notes.append(f"{conv.system} refuses this config at load: {refused}")
            non_canonical = ()

    if -1 in ids and conv.embedding_caveat:
        notes.append(f"embedding requested: {conv.embedding_caveat}")
    ids, pp_dropped = _pipeline(conv, ids, n, partition, notes)
    return CapturePlan(
        system=conv.name,
        layer_ids=ids,
        num_layers=n,
        hidden_size=target.hidden_size,
        order=conv.concat_order,
        native_ids=native,
        ids_source=source,
        notes=tuple(notes),
        non_canonical=non_canonical,
        refused=refused,
        pp_dropped=pp_dropped,
        convention=conv,
    )


def _read_ids(
    draft: DraftConfig, conv: Convention, n: int, notes: list[str]
) -> tuple[tuple[int, ...] | None, str]:
    written = [(p, draft.ids_at(p)) for p in (conventions.hf.NESTED, conventions.hf.TOP_LEVEL)]
    written = [(p, ids) for p, ids in written if ids is not None]
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
            f"no ids at {' or '.join(conv.id_paths)}: fell back to the default "
            f"{conv.describe_default(n)}{ignored}"
        )
    return None, "default"


def _refusal(conv: Convention, native: tuple[int, ...], n: int) -> str | None:
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
        canonical = b - 1
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


def _pipeline(
    conv: Convention,
    ids: tuple[int, ...],
    n: int,
    partition: LayerPartition | None,
    notes: list[str],
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    if partition is None:
        return ids, ()
    if partition.num_layers != n:
        raise ContractError(
            f"the pipeline partition covers {partition.num_layers} layers but the target has {n}",
            field="partition",
        )
    if partition.pp_size == 1:
        return ids, ()
    behaviour = conv.pipeline_parallel
    last = partition.pp_size - 1
    before = conv.captures_before_layer
    early = tuple(i for i in ids if partition.capturing_stage(i, before_layer=before) != last)
    if behaviour is PipelineParallel.LAST_STAGE_ONLY:
        if early:
            notes.append(
                f"pipeline parallel ({partition.describe()}): {conv.system} captures only on the "
                f"last stage; {', '.join(describe(i, n) for i in early)} "
                f"are captured on earlier stages and dropped"
            )
        return tuple(i for i in ids if i not in early), early
    if behaviour is PipelineParallel.DEPENDS and early:
        notes.append(
            f"pipeline parallel ({partition.describe()}): "
            f"{', '.join(describe(i, n) for i in early)} are captured on "
            f"earlier stages; whether they reach the drafter depends on the release (see the "
            f"registry notes for {conv.name})"
        )
    return ids, ()


# -- compare ----------------------------------------------------------------------------
def compare(trained: CapturePlan, served: CapturePlan) -> tuple[Finding, ...]:
    """How ``served`` differs from ``trained`` (empty when the drafter is fed what it learned)."""
    t, s = trained.layer_ids, served.layer_ids
    h_t, h_s = trained.hidden_size, served.hidden_size
    raw: list[tuple[FindingKind, str, tuple[int, ...], int | None]] = []
    if trained.refused:
        raw.append(
            (FindingKind.REFUSED, f"{trained.system} refuses it: {trained.refused}", (), None)
        )
    elif served.refused:
        raw.append((FindingKind.REFUSED, f"{served.system} refuses it: {served.refused}", (), None))
    elif (trained.num_layers, h_t) != (served.num_layers, h_s):
        raw.append(
            (
                FindingKind.TARGET_DIFFERS,
                f"trained on a {trained.num_layers} x {h_t} target, served on "
                f"{served.num_layers} x {h_s}",
                (),
                None,
            )
        )
    else:
        raw.extend(_layer_findings(t, s, trained.num_layers))
        new_post = [x for x in served.non_canonical if x not in trained.non_canonical]
        if new_post:
            raw.append(
                (
                    FindingKind.POST_NORM_FED,
                    f"{served.system} feeds the {new_post[0]}, which the drafter never saw",
                    (),
                    None,
                )
            )
        if trained.width != served.width:
            raw.append(
                (
                    FindingKind.WIDTH_DIFFERS,
                    f"width differs: the drafter's fc takes {trained.width} "
                    f"({trained.width // h_t} x {h_t}), {served.system} feeds {served.width} "
                    f"({served.width // h_s} x {h_s})",
                    (),
                    None,
                )
            )
    if not raw:
        return ()
    fix_ids, fix = _fix(trained, served)
    return tuple(
        Finding(kind, msg, layers, shift, fix_ids, fix) for kind, msg, layers, shift in raw
    )


def _layer_findings(
    t: tuple[int, ...], s: tuple[int, ...], n: int
) -> list[tuple[FindingKind, str, tuple[int, ...], int | None]]:
    out: list[tuple[FindingKind, str, tuple[int, ...], int | None]] = []
    if t == s:
        return out
    names = lambda ids: ", ".join(describe(i, n) for i in ids)  # noqa: E731
    if sorted(t) == sorted(s):
        out.append(
            (
                FindingKind.ORDER_DIFFERS,
                f"same layers, different concatenation order: trained [{', '.join(map(str, t))}]"
                f", served [{', '.join(map(str, s))}]",
                t,
                None,
            )
        )
        return out
    k = uniform_shift(t, s)
    if k is not None:
        way = "late" if k > 0 else "early"
        out.append(
            (
                FindingKind.SHIFTED,
                f"shifted by {k:+d}: every state is {abs(k)} layer{'s' * (abs(k) != 1)} "
                f"{way} ([{', '.join(map(str, s))}] instead of [{', '.join(map(str, t))}])",
                s,
                k,
            )
        )
        return out
    if -1 in s and -1 not in t:
        out.append(
            (
                FindingKind.EMBEDDING_INSERTED,
                "the embedding (canonical -1) is fed; the drafter was not trained on it",
                (-1,),
                None,
            )
        )
    missing = tuple(i for i in t if i not in s)
    if missing:
        out.append((FindingKind.LAYER_MISSING, f"not fed: {names(missing)}", missing, None))
    extra = tuple(i for i in s if i not in t and i != -1)
    if extra:
        out.append(
            (FindingKind.EXTRA_LAYER, f"fed but not trained on: {names(extra)}", extra, None)
        )
    common_t = [i for i in t if i in s]
    common_s = [i for i in s if i in t]
    if common_t != common_s:
        out.append(
            (
                FindingKind.ORDER_DIFFERS,
                f"shared layers are concatenated in a different order: trained {common_t}, "
                f"served {common_s}",
                tuple(common_t),
                None,
            )
        )
    return out


def _fix(trained: CapturePlan, served: CapturePlan) -> tuple[tuple[int, ...] | None, str]:
    conv = served.convention or conventions.get(served.system)
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
    if served.pp_dropped:
        return native, (
            f"set {conv.setting} = {list(native)}, and put every captured layer on the last "
            f"pipeline stage (--pp-partition) or serve without pipeline parallelism: "
            f"{conv.system} drops states captured on earlier stages"
        )
    return native, f"set {conv.setting} = {list(native)}"
