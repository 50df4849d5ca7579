"""Pipeline-parallel layer partitions: which stage runs which decoder layer.

A ``LayerPartition`` is the list of per-stage layer counts (``sizes``): stage ``s`` runs the
contiguous global layers ``stage_range(s)``. Canonical id ``N >= 0`` (output of layer ``N``) is
owned by the stage that runs layer ``N``; canonical ``-1`` (the residual stream entering layer
0) lives on stage 0, where the embedding runs.

``LayerPartition.even`` reproduces the engines' default split (``get_pp_indices``); the rules
differ between engines and releases, so the rule is a named, reported choice (``SPLIT_RULES``).
``LayerPartition.from_sizes`` / ``parse`` take an explicit partition (``VLLM_PP_LAYER_PARTITION``,
``SGLANG_PP_LAYER_PARTITION``). torch-free.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from itertools import accumulate

from eagle3_contracts.conventions._entry import PipelineParallel
from eagle3_contracts.errors import ContractError
from eagle3_contracts.layer_ids import EMBEDDING, check_layer_id, check_num_layers


# -- the engines' default split rules ----------------------------------------------------------
def _vllm_sizes(num_layers: int, pp_size: int) -> list[int]:
    sizes = [num_layers // pp_size] * pp_size
    for i in range(2, num_layers % pp_size + 2):  # second-to-last stage first, then backwards
        sizes[-i] += 1
    return sizes


def _sglang_sizes(num_layers: int, pp_size: int) -> list[int]:
    base, rem = divmod(num_layers, pp_size)
    return [base] * (pp_size - rem) + [base + 1] * rem  # the last `rem` stages get one more


def _sglang_legacy_sizes(num_layers: int, pp_size: int) -> list[int]:
    base = num_layers // pp_size
    return [base] * (pp_size - 1) + [num_layers - base * (pp_size - 1)]  # last takes the rest


@dataclass(frozen=True)
class SplitRule:
    """One engine's default layer split when no explicit partition is given."""

    # -- identity -----------------------------------------------------------------------
    name: str  # the value of ``LayerPartition.even(..., rule=name)`` and of ``--pp-rule``
    summary: str  # where the remainder layers go
    # -- provenance ---------------------------------------------------------------------
    sources: tuple[str, ...]  # where the rule was read (repo path, PR)
    # -- behaviour ----------------------------------------------------------------------
    sizes: Callable[[int, int], list[int]] = field(repr=False, compare=False)


SPLIT_RULES: dict[str, SplitRule] = {
    rule.name: rule
    for rule in (
        SplitRule(
            "vllm",
            "floor(L/S) each; the L%S extra layers go to stages S-2, S-3, ... (never the last; "
            "the first only when L%S == S-1). 61 over 4 -> 15,15,16,15",
            ("vllm-project/vllm vllm/distributed/utils.py get_pp_indices", "vllm#13839"),
            _vllm_sizes,
        ),
        SplitRule(
            "sglang",
            "floor(L/S) each; the last L%S stages get one extra layer. 61 over 4 -> 15,15,15,16",
            (
                "sgl-project/sglang python/sglang/srt/distributed/utils.py get_pp_indices",
                "sglang#13977",
            ),
            _sglang_sizes,
        ),
        SplitRule(
            "sglang-before-13282",
            "floor(L/S) each; the last stage takes every remainder layer (SGLang before "
            "sglang#13282, 2025-11). 61 over 8 -> 7,7,7,7,7,7,7,12",
            (
                "sgl-project/sglang python/sglang/srt/distributed/utils.py get_pp_indices",
                "sglang#13282",
            ),
            _sglang_legacy_sizes,
        ),
    )
}
"""Default split rules by name. Each engine honours an explicit partition env var instead
(``VLLM_PP_LAYER_PARTITION``, ``SGLANG_PP_LAYER_PARTITION``): pass it to ``from_sizes``."""

EXPLICIT = "explicit"

MAX_PP_SIZE = 4096
"""Most pipeline stages accepted (deployments use a handful); bounds the per-stage work."""
"""``LayerPartition.rule`` of a partition given as sizes rather than computed by a rule."""


def _check_size(value: object, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ContractError(
            f"{where} must be a positive integer (a stage's layer count), got {value!r}",
            field=where,
        )
    if value < 1:
        raise ContractError(
            f"{where} = {value}: every pipeline stage must run at least one layer", field=where
        )
    return value


@dataclass(frozen=True)
class LayerPartition:
    """Per-stage decoder-layer counts of a pipeline-parallel target.

    ``LayerPartition((15, 15, 16, 15))``: stage 0 runs layers 0-14, stage 2 runs 30-45.
    """

    sizes: tuple[int, ...]  # layers per stage, stage 0 first; each >= 1
    rule: str = field(default=EXPLICIT, compare=False)  # how sizes were chosen (report it)

    def __post_init__(self) -> None:
        sizes = self.sizes
        if isinstance(sizes, (str, bytes)) or not isinstance(sizes, Iterable):
            raise ContractError(
                f"sizes must be a list of per-stage layer counts, got {sizes!r}", field="sizes"
            )
        sizes = tuple(sizes)
        if len(sizes) > MAX_PP_SIZE:
            _check_pp_size(len(sizes), "sizes")
        if not sizes:
            raise ContractError(
                "sizes is empty: a partition has one layer count per pipeline stage",
                field="sizes",
            )
        for i, size in enumerate(sizes):
            _check_size(size, f"sizes[{i}]")
        object.__setattr__(self, "sizes", sizes)

    # -- construction -------------------------------------------------------------------
    @classmethod
    def even(cls, num_layers: int, pp_size: int, *, rule: str = "vllm") -> LayerPartition:
        """The engine's default split of ``num_layers`` over ``pp_size`` stages.

        ``rule`` names an entry of ``SPLIT_RULES`` (``"vllm"`` unless given; the result's
        ``.rule`` says which was used, so callers can report it).
        """
        num_layers = check_num_layers(num_layers)
        pp_size = _check_pp_size(pp_size)
        if rule not in SPLIT_RULES:
            raise ContractError(
                f"rule = {rule!r} is not a known split rule; use one of {', '.join(SPLIT_RULES)}",
                field="rule",
            )
        if pp_size > num_layers:
            raise ContractError(
                f"pp_size = {pp_size} exceeds num_layers = {num_layers}: every pipeline stage "
                f"must run at least one decoder layer",
                field="pp_size",
            )
        return cls(tuple(SPLIT_RULES[rule].sizes(num_layers, pp_size)), rule=rule)

    @classmethod
    def from_sizes(
        cls,
        sizes: Sequence[int],
        *,
        num_layers: int | None = None,
        pp_size: int | None = None,
        field_name: str = "pp_partition",
    ) -> LayerPartition:
        """An explicit partition, checked against the target's depth and the stage count.

        Errors name ``field_name`` (``"pp_partition[1]"``, ``"pp_partition"``) so a CLI or
        config reader can point at the user's own option.
        """
        if isinstance(sizes, (str, bytes)) or not isinstance(sizes, Iterable):
            raise ContractError(
                f"{field_name} must be a list of per-stage layer counts, got {sizes!r}",
                field=field_name,
            )
        sizes = tuple(sizes)
        if len(sizes) > MAX_PP_SIZE:
            _check_pp_size(len(sizes), field_name)
        if not sizes:
            raise ContractError(
                f"{field_name} is empty: give one layer count per pipeline stage, e.g. 15,15,16,15",
                field=field_name,
            )
        for i, size in enumerate(sizes):
            _check_size(size, f"{field_name}[{i}]")
        if pp_size is not None and len(sizes) != _check_pp_size(pp_size):
            raise ContractError(
                f"{field_name} has {len(sizes)} stages but pp_size = {pp_size}: give exactly one "
                f"layer count per stage",
                field=field_name,
            )
        if num_layers is not None and sum(sizes) != check_num_layers(num_layers):
            raise ContractError(
                f"{field_name} = {','.join(map(str, sizes))} sums to {sum(sizes)} layers but the "
                f"target has num_layers = {num_layers}; the counts must add up to the depth",
                field=field_name,
            )
        return cls(sizes)

    @classmethod
    def parse(
        cls,
        text: str | Sequence[int],
        *,
        num_layers: int | None = None,
        pp_size: int | None = None,
        field_name: str = "pp_partition",
    ) -> LayerPartition:
        """``"15,15,16,15"`` (the engines' ``*_PP_LAYER_PARTITION`` syntax) -> partition.

        Anything but a string is a sequence of counts, taken as is (``from_sizes``), so callers
        accepting either form (``--pp-partition``, ``pp_partition=``) need no branch.
        """
        if not isinstance(text, str):
            return cls.from_sizes(
                text, num_layers=num_layers, pp_size=pp_size, field_name=field_name
            )
        if text.count(",") >= MAX_PP_SIZE:
            _check_pp_size(text.count(",") + 1, field_name)
        parts = [p.strip() for p in text.split(",")]
        sizes = []
        for i, part in enumerate(parts):
            try:
                sizes.append(int(part))
            except ValueError:
                raise ContractError(
                    f"{field_name}[{i}] = {part!r} is not an integer; write the per-stage layer "
                    f"counts separated by commas, e.g. 15,15,16,15",
                    field=f"{field_name}[{i}]",
                ) from None
        return cls.from_sizes(sizes, num_layers=num_layers, pp_size=pp_size, field_name=field_name)

    # -- derived ------------------------------------------------------------------------
    @cached_property
    def num_layers(self) -> int:
        return sum(self.sizes)

    @property
    def pp_size(self) -> int:
        return len(self.sizes)

    @cached_property
    def starts(self) -> tuple[int, ...]:
        """First global layer of each stage (computed once: O(stages))."""
        return (0, *accumulate(self.sizes[:-1]))

    def stage_range(self, stage: int) -> range:
        """Global layer indices run by ``stage`` (``range(start, end)``)."""
        if isinstance(stage, bool) or not isinstance(stage, int) or not 0 <= stage < self.pp_size:
            raise ContractError(
                f"stage = {stage!r} is outside [0, {self.pp_size - 1}] for a {self.pp_size}-stage "
                f"partition",
                field="stage",
            )
        start = self.starts[stage]
        return range(start, start + self.sizes[stage])

    def stage_of(self, layer_id: int) -> int:
        """The stage owning canonical ``layer_id`` (``-1`` lives on stage 0)."""
        layer_id = check_layer_id(layer_id, self.num_layers)
        if layer_id == EMBEDDING:
            return 0
        return bisect_right(self.starts, layer_id) - 1  # O(log stages)

    def capturing_stage(self, layer_id: int, *, before_layer: bool = False) -> int:
        """The stage that captures canonical ``layer_id``: its owner, or, for an engine that
        takes canonical ``N`` entering layer ``N + 1`` (``before_layer``), the stage running
        layer ``N + 1`` (the last layer's output is still taken on the last stage)."""
        stage = self.stage_of(layer_id)
        if before_layer and layer_id + 1 < self.num_layers:
            return self.stage_of(layer_id + 1)
        return stage

    def captured_before_last_stage(
        self, layer_ids: Sequence[int], *, before_layer: bool = False
    ) -> tuple[int, ...]:
        """The ids captured on a stage before the last, where the drafter runs: lost to an
        engine that captures only on the last stage, and unknown for one whose pipeline code
        was not read (``capturing_stage`` for ``before_layer``)."""
        last = self.pp_size - 1
        return tuple(
            i for i in layer_ids if self.capturing_stage(i, before_layer=before_layer) != last
        )

    def pipeline_fate(
        self, layer_ids: Sequence[int], behaviour: PipelineParallel, *, before_layer: bool = False
    ) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """``(dropped, unread)``: the ids an engine that captures only on the last stage loses,
        and the ids whose fate depends on pipeline code that was not read (never ok)."""
        early = self.captured_before_last_stage(layer_ids, before_layer=before_layer)
        if behaviour is PipelineParallel.LAST_STAGE_ONLY:
            return early, ()
        if behaviour is PipelineParallel.DEPENDS:
            return (), early
        return (), ()

    def local_index(self, layer_id: int) -> int:
        """Index of ``layer_id``'s layer inside its stage (``-1`` stays ``-1``).

        This is what a stage-local loop (``enumerate`` over the stage's own layers) sees; a
        system comparing it with global ids captures the wrong layers (vllm#36151).
        """
        stage = self.stage_of(layer_id)
        return layer_id if layer_id == EMBEDDING else layer_id - self.starts[stage]

    def is_stage_boundary(self, layer_id: int) -> bool:
        """True if ``layer_id`` is the last layer of a non-final stage (its output is sent on)."""
        stage = self.stage_of(layer_id)
        return stage < self.pp_size - 1 and layer_id == self.stage_range(stage)[-1]

    def describe(self) -> str:
        """``"4 stages: 0-14 | 15-29 | 30-45 | 46-60 (vllm rule)"``."""
        spans = " | ".join(
            f"{r.start}-{r.stop - 1}" if len(r) > 1 else f"{r.start}"
            for r in (self.stage_range(s) for s in range(self.pp_size))
        )
        how = "explicit" if self.rule == EXPLICIT else f"{self.rule} rule"
        return f"{self.pp_size} stage{'s' if self.pp_size > 1 else ''}: {spans} ({how})"

    def to_dict(self) -> dict[str, object]:
        return {"sizes": list(self.sizes), "rule": self.rule, "num_layers": self.num_layers}


def _check_pp_size(pp_size: object, field: str = "pp_size") -> int:
    if isinstance(pp_size, bool) or not isinstance(pp_size, int) or pp_size < 1:
        raise ContractError(
            f"{field} must be a positive integer (the number of pipeline stages), got {pp_size!r}",
            field=field,
        )
    if pp_size > MAX_PP_SIZE:
        raise ContractError(
            f"{field} = {pp_size} stages is over the limit of {MAX_PP_SIZE} pipeline stages",
            field=field,
        )
    return pp_size


@dataclass(frozen=True)
class PipelineRisks:
    """What the known pipeline-parallel capture bugs would feed the drafter on a partition.

    Predictions from the partition alone, for engines that concatenate what reaches the last
    stage in arrival order (ascending); ``eagle3_contracts.parallel.faults`` runs the bugs on
    real processes and the tests check these predictions against them.
    """

    ids: tuple[int, ...]  # the canonical ids, ascending (what a correct engine feeds)
    # -- last-stage-only capture (sglang#39644) --------------------------------------------
    last_stage_only_feeds: tuple[int, ...]  # layers the drafter gets, in order
    last_stage_only_lost: tuple[int, ...]  # ids owned by a stage before the last
    # -- aux states dropped at stage boundaries (vllm#45985): the last stage's own ids ------
    dropped_at_boundary: tuple[int, ...]  # captured, then not forwarded (same ids as above)
    # -- stage-local indexing (vllm#36151) --------------------------------------------------
    stage_local_feeds: tuple[int, ...]  # layers the drafter gets, in order
    stage_local_lost: tuple[int, ...]  # ids no stage captures
    stage_local_wrong: tuple[tuple[int, int, int], ...]  # (stage, id claimed, layer captured)

    @property
    def last_stage_only_affected(self) -> bool:
        return self.last_stage_only_feeds != self.ids

    @property
    def stage_local_affected(self) -> bool:
        return self.stage_local_feeds != self.ids

    def to_dict(self) -> dict[str, object]:
        return {
            "last_stage_only_feeds": list(self.last_stage_only_feeds),
            "last_stage_only_lost": list(self.last_stage_only_lost),
            "dropped_at_boundary": list(self.dropped_at_boundary),
            "stage_local_feeds": list(self.stage_local_feeds),
            "stage_local_lost": list(self.stage_local_lost),
            "stage_local_wrong": [
                {"stage": s, "claimed": claimed, "captured_layer": layer}
                for s, claimed, layer in self.stage_local_wrong
            ],
        }


def pipeline_risks(layer_ids: Iterable[int], partition: LayerPartition) -> PipelineRisks:
    """What each known pipeline capture bug feeds the drafter (and loses) on ``partition``."""
    owned = stage_ownership(layer_ids, partition)
    last = partition.pp_size - 1
    ids = tuple(sorted({n for n, _ in owned}))
    on_last = tuple(n for n in ids if partition.stage_of(n) == last)
    early = tuple(n for n in ids if partition.stage_of(n) < last)
    # a stage-local loop: stage 0 is right (local == global); stage s > 0 captures layer
    # start+j under the label j whenever j is an id -- sometimes an id by coincidence
    local_feeds = [n for n in ids if partition.stage_of(n) == 0]
    wrong = []
    local = [j for j in ids if j >= 0]  # ascending; O(stages x ids), never O(layers)
    for stage in range(1, partition.pp_size):
        start, size = partition.starts[stage], partition.sizes[stage]
        for j in local:
            if j >= size:
                break
            local_feeds.append(start + j)
            wrong.append((stage, j, start + j))
    fed = set(local_feeds)
    lost = tuple(n for n in ids if n not in fed)
    return PipelineRisks(ids, on_last, early, early, tuple(local_feeds), lost, tuple(wrong))


def stage_ownership(
    layer_ids: Iterable[int], partition: LayerPartition
) -> tuple[tuple[int, int], ...]:
    """``((layer_id, stage), ...)`` in the order given; ``-1`` is owned by stage 0."""
    out = []
    for i, layer_id in enumerate(layer_ids):
        check_layer_id(layer_id, partition.num_layers, field=f"layer_ids[{i}]")
        out.append((layer_id, partition.stage_of(layer_id)))
    return tuple(out)
