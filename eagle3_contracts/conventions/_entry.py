"""The ``Convention`` entry type: one system's reading of EAGLE-3 layer ids, as data.

Every rule is a small enum so a registry entry reads like a row of a facts table, and the
translation code (``to_canonical``/``from_canonical``/``capture``) is written once, here, for all
entries. Index vocabulary (see ``eagle3_contracts.layer_ids``): canonical ``N`` = output of
layer ``N``; boundary ``b = N + 1`` (``0`` = embedding, ``L`` = last layer's output, pre-norm).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum

from eagle3_contracts.contract import ORDERS, Order
from eagle3_contracts.errors import ContractError
from eagle3_contracts.layer_ids import check_num_layers


class Role(str, Enum):
    """What kind of system a registry entry describes."""

    TRAINER = "trainer"  # trains drafters: its reading decides what the drafter learned
    ENGINE = "engine"  # serves drafters: its reading decides what the drafter is fed
    FORMAT = "format"  # a checkpoint/config format read by others (speculators)
    INDEX = "index"  # an indexing convention, not a system (HF hidden_states[k])
    READING = "reading"  # a bare reading of an id list when nobody says which system wrote it


class Meaning(str, Enum):
    """What one native id names, before any list-level offset rule."""

    OUTPUT = "output"  # native N = output of layer N (= canonical N)
    BOUNDARY = "boundary"  # native b = input of layer b (= canonical b - 1)
    HF_INDEX = "hf-index"  # native k = hidden_states[k] (= canonical k - 1; k = L is post-norm)
    CONDITIONAL = "output or boundary, decided per list"  # SGLang after sglang#25454, gpt_oss.py


class OffsetRule(str, Enum):
    """How a list of explicit native ids becomes capture boundaries (``b = canonical + 1``).

    Rules may look at the whole list (SGLang's ``ids[0] == 1`` test), so they map lists.
    """

    IDENTITY = "identity"  # output meaning: boundary = id + 1
    BOUNDARY = "boundary"  # boundary = id
    HF_INDEX = "hf-index"  # boundary = id, but id L is the post-norm state (no canonical id)
    PLUS_ONE_ALWAYS = "+1 always"  # SGLang <= 0.5.12: loop index = id + 1
    PLUS_ONE_IF_FIRST_IS_ONE = "+1 if ids[0] == 1, else ids are loop indices"  # sglang#25454
    LOOP_IF_MAX_IS_L = "ids are loop indices if max(ids) == L, else +1"  # SGLang gpt_oss.py

    def offset(self, ids: Sequence[int], num_layers: int) -> int:
        """The offset added to every native id of ``ids`` to get its boundary index."""
        if self in (OffsetRule.IDENTITY, OffsetRule.PLUS_ONE_ALWAYS):
            return 1
        if self in (OffsetRule.BOUNDARY, OffsetRule.HF_INDEX):
            return 0
        if self is OffsetRule.PLUS_ONE_IF_FIRST_IS_ONE:
            return 1 if ids and ids[0] == 1 else 0
        return 0 if ids and max(ids) == num_layers else 1  # LOOP_IF_MAX_IS_L


class DefaultRule(str, Enum):
    """What a system uses when the config carries no ids (the value depends on depth L)."""

    REQUIRED = "none: ids are required"
    HARD_CODED = "boundaries (2, L//2, L-3), hard-coded"
    BOUNDARIES_2_MID_LM3 = "boundaries (2, L//2, L-3)"
    BOUNDARIES_3_MIDP1_LM2 = "boundaries (3, L//2+1, L-2)"  # sglang 0.5.23 minimax_m3_vl.py
    OUTPUTS_1_MIDM1_LM4 = "outputs (1, L//2-1, L-4)"
    OUTPUTS_CLAMPED = "outputs (1, max(0, L//2-1), max(0, L-4)), deduplicated"

    def native(self, num_layers: int) -> tuple[int, ...] | None:
        """The native ids the default stands for (``None`` for ``REQUIRED``)."""
        n = num_layers
        if self is DefaultRule.REQUIRED:
            return None
        if self in (DefaultRule.HARD_CODED, DefaultRule.BOUNDARIES_2_MID_LM3):
            return (2, n // 2, n - 3)
        if self is DefaultRule.OUTPUTS_1_MIDM1_LM4:
            return (1, n // 2 - 1, n - 4)
        if self is DefaultRule.BOUNDARIES_3_MIDP1_LM2:
            return (3, n // 2 + 1, n - 2)
        return tuple(sorted({1, max(0, n // 2 - 1), max(0, n - 4)}))

    def boundaries(self, num_layers: int) -> tuple[int, ...] | None:
        """The default as boundary indices (defaults bypass a system's explicit-id offset)."""
        native = self.native(num_layers)
        if native is None:
            return None
        boundary = (
            DefaultRule.HARD_CODED,
            DefaultRule.BOUNDARIES_2_MID_LM3,
            DefaultRule.BOUNDARIES_3_MIDP1_LM2,
        )
        shift = 0 if self in boundary else 1
        return tuple(b + shift for b in native)


class PostNorm(str, Enum):
    """Which native ids (if any) name the final post-norm hidden state (no canonical id)."""

    NONE = "none"
    LAST_INDEX = "L (and -1: Python indexing of hidden_states)"  # HF hidden_states[L] / [-1]
    MINUS_ONE = "-1"  # TensorRT-LLM: -1 = final post-norm state, moved to the end

    def natives(self, num_layers: int) -> frozenset[int]:
        if self is PostNorm.LAST_INDEX:
            return frozenset({num_layers, -1})
        if self is PostNorm.MINUS_ONE:
            return frozenset({-1})
        return frozenset()


class Dedup(str, Enum):
    """What happens to a repeated native id."""

    MEMBERSHIP = "captured once (the layer loop tests `i in ids`)"
    ONE_HOOK = (
        "one hook per layer while fc takes one state per listed id: crashes at the first forward"
    )
    SORTED_SET = "sorted(set(ids)): duplicates silently dropped"
    REJECTED = "refused at load"
    REPEATED = "gathered once per listed id (list-order gather)"


class Validation(str, Enum):
    """What happens to a native id the system cannot capture."""

    SILENT = "ignored silently (never matches the layer loop)"
    REFUSED = "refused at load"
    CRASHES = "no hook for it: fewer states than fc expects, crashes at the first forward"
    UNINITIALISED = (
        "accepted; its buffer slot is never written: the drafter reads uninitialised memory"
    )


class Framework(str, Enum):
    """An engine whose releases are probed (``conventions/data/<engine>-<v>.json``)."""

    SGLANG = "sglang"
    VLLM = "vllm"

    def __str__(self) -> str:  # f-strings and str() give the name a user types
        return self.value

    @property
    def label(self) -> str:
        """The project's own spelling (``SGLang``, ``vLLM``)."""
        return {"sglang": "SGLang", "vllm": "vLLM"}[self.value]


class PipelineParallel(str, Enum):
    """Pipeline-parallel behaviour: is a layer on an earlier stage still fed to the drafter?"""

    CARRIED = "captured on every stage and carried to the drafter's stage"
    LAST_STAGE_ONLY = "only the last stage captures: ids owned by earlier stages are dropped"
    DEPENDS = "depends on release and model runner (see notes)"
    NOT_APPLICABLE = "not applicable (single process / offline data)"


@dataclass(frozen=True)
class Convention:
    """One system's behaviour for EAGLE-3 aux-hidden-state layer ids (a registry row)."""

    # -- identity -----------------------------------------------------------------------
    name: str  # registry name, e.g. "sglang-legacy"
    system: str  # human name, e.g. "SGLang <= 0.5.12 (before sglang#25454)"
    role: Role  # trainer, engine, format, index or reading (see Role)
    # -- what a native id means -----------------------------------------------------------
    meaning: Meaning
    offset_rule: OffsetRule
    post_norm_id: PostNorm = PostNorm.NONE
    # -- where ids are read from (ordered JSON paths; the first present wins) --------------
    id_paths: tuple[str, ...] = ()
    id_setting: str | None = None  # where a user sets ids, when not id_paths[0]
    # -- when absent ----------------------------------------------------------------------
    default: DefaultRule = DefaultRule.REQUIRED
    # -- layout ---------------------------------------------------------------------------
    concat_order: Order = "ascending"
    dedup: Dedup = Dedup.MEMBERSHIP
    validation: Validation = Validation.SILENT
    exact_count: int | None = None  # the system refuses any other number of ids
    # -- reachability (canonical -1 and canonical L-1) --------------------------------------
    embedding_reachable: bool = True
    last_output_reachable: bool = True
    # -- pipeline parallel ----------------------------------------------------------------
    captures_before_layer: bool = False  # True: canonical N is taken entering layer N + 1
    pipeline_parallel: PipelineParallel = PipelineParallel.NOT_APPLICABLE
    pp_split_rule: str = "vllm"  # default layer split (eagle3_contracts.parallel SPLIT_RULES)
    # -- caveats --------------------------------------------------------------------------
    embedding_caveat: str = ""  # what goes wrong when canonical -1 is requested, if anything
    # -- prose ----------------------------------------------------------------------------
    notes: tuple[str, ...] = ()
    assumptions: tuple[str, ...] = ()  # what every answer of this entry assumes (said per row)
    sources: tuple[str, ...] = ()  # repo paths, PRs and issues the facts come from
    release: str | None = field(default=None)  # the release read, when sources cite its lines

    def __post_init__(self) -> None:
        if self.concat_order not in ORDERS:
            raise ContractError(f"concat_order must be one of {ORDERS}", field="concat_order")
        if not self.sources:
            raise ContractError(f"convention {self.name!r} has no sources", field="sources")

    # -- derived --------------------------------------------------------------------------
    @property
    def setting(self) -> str:
        """Where a user writes ids for this system (a JSON path or an API field)."""
        return self.id_setting or (self.id_paths[0] if self.id_paths else "(not configurable)")

    @property
    def configurable(self) -> bool:
        """Whether the system reads ids from a config at all."""
        return self.default is not DefaultRule.HARD_CODED

    def boundary_range(self, num_layers: int) -> range:
        """Boundaries this system can capture: ``0`` only if the embedding is reachable."""
        lo = 0 if self.embedding_reachable else 1
        hi = num_layers if self.last_output_reachable else num_layers - 1
        return range(lo, hi + 1)

    def canonical_range(self, num_layers: int) -> range:
        """Canonical ids this system can feed."""
        r = self.boundary_range(num_layers)
        return range(r.start - 1, r.stop - 1)

    def describe_default(self, num_layers: int) -> str:
        """``"boundaries (2, L//2, L-3) = (2, 30, 58) for L = 61"``."""
        native = self.default.native(num_layers)
        if native is None:
            return self.default.value
        return f"{self.default.value} = {native} for L = {num_layers}"

    def summary(self) -> str:
        """One line: meaning, rule, paths, default."""
        paths = " then ".join(self.id_paths) if self.id_paths else "no config field"
        return (
            f"{self.name}: {self.meaning.value} ids, rule {self.offset_rule.value}; reads "
            f"{paths}; default {self.default.value}; concat {self.concat_order}"
        )

    # -- translation (element-wise; raises on ids the system cannot capture) ----------------
    def to_canonical(self, ids: Sequence[int], num_layers: int) -> tuple[int, ...]:
        """Native explicit ids -> canonical ids, in the given order."""
        num_layers = check_num_layers(num_layers)
        ids = _int_ids(ids)
        post_norm = self.post_norm_id.natives(num_layers)
        offset = self.offset_rule.offset(ids, num_layers)
        reach = self.boundary_range(num_layers)
        out = []
        for i, native in enumerate(ids):
            where = f"ids[{i}]"
            if native in post_norm:
                raise ContractError(
                    f"{where} = {native} in {self.name} names the final post-norm hidden state, "
                    f"which has no canonical id (canonical {num_layers - 1} is the pre-norm output "
                    f"of the last layer)",
                    field=where,
                )
            boundary = native + offset
            if boundary not in reach:
                raise ContractError(
                    f"{where} = {native} in {self.name} ({self.offset_rule.value}) is boundary "
                    f"{boundary}, which {self.system} never captures for a {num_layers}-layer "
                    f"target (it captures canonical {_span(self.canonical_range(num_layers))})",
                    field=where,
                )
            out.append(boundary - 1)
        return tuple(out)

    def from_canonical(self, ids: Sequence[int], num_layers: int) -> tuple[int, ...]:
        """Canonical ids -> native ids this system turns back into exactly those ids.

        Engines concatenate ascending, so the result may be reordered (SGLang's ``ids[0] == 1``
        test can need a different first id); list-order systems keep the order given.
        """
        num_layers = check_num_layers(num_layers)
        ids = _int_ids(ids)
        reach = self.canonical_range(num_layers)
        for i, n in enumerate(ids):
            if n not in reach:
                why = (
                    "the embedding (canonical -1)"
                    if n == -1
                    else f"canonical {n}"
                    if -1 <= n < num_layers
                    else f"{n} (not a canonical id for {num_layers} layers)"
                )
                raise ContractError(
                    f"ids[{i}]: {why} cannot be fed by {self.system}; it captures canonical "
                    f"{_span(reach)}",
                    field=f"ids[{i}]",
                )
        if not ids:
            return ()
        for candidate in self._candidates(ids):
            try:
                back = self.to_canonical(candidate, num_layers)
            except ContractError:
                continue
            if _same_layout(back, ids, self.concat_order):
                return candidate
        raise ContractError(
            f"no native id list makes {self.system} feed canonical {list(ids)} "
            f"(rule: {self.offset_rule.value})",
            field="ids",
        )

    def _candidates(self, ids: tuple[int, ...]) -> list[tuple[int, ...]]:
        ordered = ids if self.concat_order == "as_listed" else tuple(sorted(ids))
        forms = [ordered, tuple(n + 1 for n in ordered)]  # output, boundary
        if self.offset_rule in (OffsetRule.BOUNDARY, OffsetRule.HF_INDEX):
            forms.reverse()
        out = []
        for form in forms:
            out.append(form)
            if self.concat_order == "ascending":  # any first element may do for an engine
                out.extend(form[k:] + form[:k] for k in range(1, len(form)))
        return out


def _int_ids(ids: object) -> tuple[int, ...]:
    if isinstance(ids, (str, bytes)) or not isinstance(ids, Sequence):
        raise ContractError(f"ids must be a list of integers, got {ids!r}", field="ids")
    for i, n in enumerate(ids):
        if isinstance(n, bool) or not isinstance(n, int):
            raise ContractError(
                f"ids[{i}] must be an integer layer id, got {type(n).__name__} {n!r}",
                field=f"ids[{i}]",
            )
    return tuple(ids)


def _span(r: range) -> str:
    return f"{r.start}..{r.stop - 1}" if len(r) else "nothing"


def _same_layout(got: tuple[int, ...], want: tuple[int, ...], order: str) -> bool:
    if order == "as_listed":
        return got == want
    return sorted(got) == sorted(want) and len(set(got)) == len(got)
