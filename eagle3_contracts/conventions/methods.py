"""Drafter methods beyond EAGLE-3 that tap the target's hidden states: which method a drafter
config is, which fields name its taps, and what each probed engine release does with them.

What each engine release does with a method is read from its wheel by the probe
(``probe/methods.py``) into the release table (``engine_method``); the SGLang reader and
fallback modelled here are sglang 0.5.23's (file:line below). The EAGLE-3
family (EAGLE-3, EAGLE-3.1, P-EAGLE) names its taps with the EAGLE-3 fields and is answered by
the release tables (``conventions.predict``); the block-draft family (DFlash, DFlash2, Domino,
DSpark, Nemotron-3.5 drafts) names them with ``target_layer_ids`` (canonical: the output of
layer N, HF ``hidden_states[N + 1]``) and is answered here for SGLang (its own reader, fallback
and setter) and by the table's reader for vLLM, with the DFlash fc sizing of each release.

``detect(draft_config)`` is the one place a method is told from a config.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from eagle3_contracts.errors import ContractError

if TYPE_CHECKING:  # releases imports nothing from here; the tables are read at run time
    from eagle3_contracts.conventions.releases import ReleaseTable

# -- the methods ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Method:
    """One drafter method: how a config names it and which fields name its taps."""

    name: str  # "dflash": the key the reports print
    label: str  # "DFlash"
    block: bool  # True: taps named by target_layer_ids (the block-draft family)
    architectures: tuple[str, ...]  # drafter architectures that name this method
    fields: tuple[str, ...]  # fields that name the taps, in the engines' precedence
    meaning: str  # what an id means in training
    trainers: tuple[str, ...]  # how drafters of this method are trained (code, file)


_OUTPUT = "output of target layer N (HF hidden_states[N + 1]); canonical id N"
_EAGLE3_FIELDS = (
    "eagle_aux_hidden_state_layer_ids",
    "eagle_config.eagle_aux_hidden_state_layer_ids",
)
_BLOCK_FIELDS = ("dflash_config.target_layer_ids", "target_layer_ids")

EAGLE3 = Method(
    name="eagle3",
    label="EAGLE-3",
    block=False,
    architectures=("LlamaForCausalLMEagle3", "Eagle3LlamaForCausalLM"),
    fields=_EAGLE3_FIELDS,
    meaning="per trainer (see conventions): output or boundary",
    trainers=("SpecForge, speculators, ModelOpt, original EAGLE (conventions/*.py)",),
)
EAGLE31 = Method(
    name="eagle3.1",
    label="EAGLE-3.1",
    block=False,
    architectures=(),
    fields=_EAGLE3_FIELDS,
    meaning="as EAGLE-3, plus the norm flags fc_norm / norm_before_fc / norm_output",
    trainers=(
        "speculators (models/eagle3 config: fc_norm, norm_before_fc, norm_output default false)",
    ),
)
PEAGLE = Method(
    name="p-eagle",
    label="P-EAGLE",
    block=False,
    architectures=("PEagleDraftModel", "PeagleLlamaForCausalLM", "PeagleQwen3ForCausalLM"),
    fields=_EAGLE3_FIELDS,
    meaning="as EAGLE-3 (parallel drafting: several tokens per step from the same taps)",
    trainers=("speculators P-EAGLE recipe (EAGLE-3 ids, parallel-drafting flags)",),
)
DFLASH = Method(
    name="dflash",
    label="DFlash",
    block=True,
    architectures=("DFlashDraftModel", "MuseGlimmerAssistantModel", "DFlashLagunaForCausalLM"),
    fields=_BLOCK_FIELDS,
    meaning=_OUTPUT,
    trainers=(
        "z-lab dflash model/utils.py extract_context_feature: hidden_states[i + 1]; default "
        "build_target_layer_ids(num_target_layers, num_hidden_layers)",
        "SpecForge specforge/modeling/draft/dflash.py (same helpers)",
    ),
)
DFLASH2 = replace(
    DFLASH,
    name="dflash2",
    label="DFlash2",
    architectures=("DFlash2DraftModel", "DFlash2BeamDraftModel", "MiniMaxDFlash2DraftModel"),
)
DOMINO = replace(  # a DFlash drafter with dflash_config.projector_type == "domino"
    DFLASH, name="domino", label="Domino", architectures=()
)
DSPARK = Method(
    name="dspark",
    label="DSpark",
    block=True,
    architectures=(
        "Qwen3DSparkModel",
        "DSparkDraftModel",
        "LingDSparkModel",
        "Gemma4DSparkModel",
        "Qwen3OmniDSparkModel",
    ),
    fields=("dspark_target_layer_ids", *_BLOCK_FIELDS),
    meaning=_OUTPUT,
    trainers=("SpecForge DSpark recipe (DFlash helpers, markov head)",),
)
NEMOTRON35 = Method(
    name="nemotron-3.5",
    label="Nemotron-3.5 draft",
    block=True,
    architectures=(),  # DFlash/DSpark drafters shipping both encodings
    fields=(*_BLOCK_FIELDS, "eagle_aux_hidden_state_layer_ids"),
    meaning=_OUTPUT + "; eagle_aux_hidden_state_layer_ids[i] == target_layer_ids[i] + 1",
    trainers=("NVIDIA Nemotron-3.5 DFlash/DSpark drafts (both encodings in one config)",),
)

METHODS: tuple[Method, ...] = (EAGLE3, EAGLE31, PEAGLE, DFLASH, DFLASH2, DOMINO, DSPARK, NEMOTRON35)
"""Every method ``detect`` can answer, EAGLE-3 first."""

_EAGLE31_FLAGS = ("fc_norm", "norm_output")


def at_path(data: Mapping[str, Any], path: str) -> Any:
    """The value at a dotted JSON path (``dflash_config.target_layer_ids``), ``None`` when any
    step is absent or not an object."""
    node: Any = data
    for part in path.split("."):
        if not isinstance(node, Mapping):
            return None
        node = node.get(part)
    return node


_get = at_path


def _archs(draft: Mapping[str, Any]) -> tuple[str, ...]:
    archs = draft.get("architectures")
    if isinstance(archs, list):
        return tuple(a for a in archs if isinstance(a, str))
    return ()


def detect(draft: Mapping[str, Any]) -> Method:
    """The method of a drafter config (EAGLE-3 when nothing names another one).

    Block-draft drafters are told by their architecture or by a DFlash/DSpark field
    (``dflash_config``, ``dspark_target_layer_ids``, top-level ``target_layer_ids`` without
    EAGLE-3 ids); a Nemotron-3.5 draft ships both encodings; Domino is a DFlash drafter with
    ``dflash_config.projector_type == "domino"`` (sglang 0.5.23 dflash_utils.py:542-543)."""
    if not isinstance(draft, Mapping):
        raise ContractError("the draft config must be a JSON object", field="draft_config")
    archs = set(_archs(draft))
    if _is_block(draft, archs):
        return _block_method(draft, archs)
    if archs & set(PEAGLE.architectures) or draft.get("speculators_model_type") == "peagle":
        return PEAGLE
    eagle = draft.get("eagle_config")
    nested = eagle if isinstance(eagle, Mapping) else {}
    if any(draft.get(f) is True or nested.get(f) is True for f in _EAGLE31_FLAGS):
        return EAGLE31
    return EAGLE3


def _is_block(draft: Mapping[str, Any], archs: set[str]) -> bool:
    """A block-draft drafter: a DFlash/DSpark field or class, or top-level
    ``target_layer_ids`` with no EAGLE-3 id, section or class (an EAGLE-3 class wins)."""
    if isinstance(draft.get("dflash_config"), Mapping):
        return True
    if draft.get("dspark_target_layer_ids") is not None:
        return True
    if any(a in archs for m in METHODS if m.block for a in m.architectures):
        return True
    return (
        block_ids_in(draft) is not None
        and draft.get("eagle_aux_hidden_state_layer_ids") is None
        and draft.get("eagle_config") is None
        and not any("eagle3" in a.lower() for a in archs)
    )


def _block_method(draft: Mapping[str, Any], archs: set[str]) -> Method:
    """Which block-draft method: both encodings (Nemotron-3.5), the Domino projector, a DSpark
    class or field, a DFlash2 class, else DFlash."""
    if (
        block_ids_in(draft) is not None
        and draft.get("eagle_aux_hidden_state_layer_ids") is not None
    ):
        return NEMOTRON35
    dflash_cfg = draft.get("dflash_config")
    section = dflash_cfg if isinstance(dflash_cfg, Mapping) else {}
    if section.get("projector_type", draft.get("projector_type")) == "domino":
        return DOMINO
    if archs & set(DSPARK.architectures) or draft.get("dspark_target_layer_ids") is not None:
        return DSPARK
    if archs & set(DFLASH2.architectures):
        return DFLASH2
    return DFLASH


def block_ids_in(draft: Mapping[str, Any]) -> tuple[int, ...] | None:
    """The DFlash-family ids as written (``dflash_config.target_layer_ids``, else the top-level
    ``target_layer_ids``: sglang 0.5.23 dflash_utils.py:656-660), ``None`` when absent."""
    for path in _BLOCK_FIELDS:
        value = _get(draft, path)
        if value is not None:
            return _int_ids(value, path)
    return None


def block_ids_path(draft: Mapping[str, Any]) -> str | None:
    """Where the DFlash-family ids are written (``None`` when absent)."""
    return next((p for p in _BLOCK_FIELDS if _get(draft, p) is not None), None)


def int_ids(value: Any, path: str) -> tuple[int, ...]:
    """A list of integer layer ids read at ``path`` (``ContractError`` naming it otherwise)."""
    if not isinstance(value, (list, tuple)) or any(
        isinstance(v, bool) or not isinstance(v, int) for v in value
    ):
        raise ContractError(
            f"{path} must be a list of integer layer ids, got {value!r}", field=path
        )
    return tuple(value)


_int_ids = int_ids


def draft_layers(draft: Mapping[str, Any]) -> int | None:
    """The drafter's own layer count (``num_hidden_layers``, or its ``text_config``'s)."""
    text = draft.get("text_config")
    section = text if isinstance(text, Mapping) else draft
    value = section.get("num_hidden_layers", draft.get("num_hidden_layers"))
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


def build_target_layer_ids(num_target_layers: int, num_draft_layers: int) -> list[int]:
    """SGLang's (and z-lab's) guess of the taps when a config names none: sglang 0.5.23
    speculative/dflash_utils.py:348-385 (``ValueError`` for fewer than 4 target layers)."""
    if num_target_layers <= 0 or num_draft_layers <= 0:
        raise ContractError(
            f"build_target_layer_ids needs positive counts, got ({num_target_layers}, "
            f"{num_draft_layers})",
            field="num_hidden_layers",
        )
    if num_draft_layers == 1:
        return [num_target_layers // 2]
    start, end = 1, num_target_layers - 3
    if end < start:
        raise ContractError(
            f"DFlash layer selection requires num_target_layers >= 4, got {num_target_layers}",
            field="num_hidden_layers",
        )
    span = end - start
    return [round(start + (i * span) / (num_draft_layers - 1)) for i in range(num_draft_layers)]


# -- what each engine release does with a method ------------------------------------------


@dataclass(frozen=True)
class EngineMethod:
    """One method on one engine release, as the probe read it from the release's code
    (``probe/methods.py``, the table's ``methods`` section): whether its drafter loads, where
    the taps are read, what happens without them, how the drafter's fc is sized, the release's
    own checks, and what the probe could not find (``unknown``: the row cannot be answered)."""

    method: str  # Method.name
    release: str  # "sglang==0.5.23"
    loads: bool  # the release registers a drafter class for this method
    drafter: str  # the drafter class and its file:line, or why none loads
    reads: tuple[str, ...]  # capture ids, in precedence, "+ 1" = converted to a boundary
    fallback: str  # what the release captures when no ids are read
    fc: str  # how the drafter's fc is sized (states x width)
    setter: str  # the target hook the ids go through
    checks: tuple[str, ...] = ()  # what the release refuses at start
    only_format: tuple[str, str] | None = None  # (field, value): the one config format it loads
    unknown: tuple[str, ...] = ()  # statements the probe looked for and did not find


def engine_method(method: Method, table: ReleaseTable) -> EngineMethod | None:
    """The row for ``method`` on the release ``table`` describes; ``None`` for EAGLE-3 and
    EAGLE-3.1 (the release tables' own rows) and for a table probed before method rows."""
    row = table.methods.get("rows", {}).get(method.name)
    if row is None:
        return None
    fmt = row.get("only_format")
    return EngineMethod(
        method=method.name,
        release=table.release,
        loads=bool(row["loads"]),
        drafter=row["drafter"],
        reads=tuple(row.get("reads", ())),
        fallback=row.get("fallback", ""),
        fc=row.get("fc", ""),
        setter=row.get("setter", ""),
        checks=tuple(row.get("checks", ())),
        only_format=(fmt[0], fmt[1]) if fmt else None,
        unknown=tuple(row.get("unknown", ())),
    )


def sglang_setter_files(table: ReleaseTable, method: str) -> frozenset[str]:
    """SGLang model files defining ``set_<method>_layers_to_capture`` (``"dflash"``: each adds
    +1, the loop index before layer id + 1 = the output of layer id; ``"dspark"``: each stores
    and places the capture its own way, e.g. sglang 0.5.23 bailing_moe_v3.py:1731-1740 captures
    after layer i with no +1, deepseek_v4.py:4853-4861 a separate dspark_layers_to_capture; not
    read, so a DSpark drafter on them is answered unknown). Read per release by the probe."""
    return frozenset(table.methods.get(f"{method}_setters", ()))


def vllm_v1_reader(table: ReleaseTable) -> str:
    """The V1 runner's reader with its DFlash branch, cited ("" when the release's V1 reader
    has none: it reads only the EAGLE-3 fields of the table's precedence)."""
    return str(table.methods.get("v1_reader", ""))


NEMOTRON_H_FORWARD = (
    "nemotron_h.py NemotronHModel.forward (sglang 0.5.23 lines 876-897): loop index i captured "
    "before layer i for i in [start, end), and end_layer after the stack"
)
"""NemotronH has no EAGLE-3 setter (the release table calls it unsupported) but a DFlash one."""


@dataclass(frozen=True)
class BlockRead:
    """What SGLang resolves for a block-draft drafter before its target captures anything."""

    elements: tuple[int, ...]  # loop indices the setter stores (id + 1), in the read order
    native: tuple[int, ...] | None  # the ids read (None: the fallback guess)
    ids_source: str  # the JSON path read, or "fallback"
    fc_states: int | None  # states the drafter's fc is built for
    crash: str | None  # a refusal at start ("dflash-ids-out-of-range", ...)
    notes: tuple[str, ...]
    source: str


def sglang_block_read(
    method: Method, draft: Mapping[str, Any], num_layers: int, rules: EngineMethod
) -> BlockRead:
    """SGLang's taps for a block-draft drafter on an ``num_layers``-layer target: the reader,
    fallback and checks as sglang 0.5.23 has them, each note citing the release row ``rules``
    (the probe found the same statements in that release's code, in its own lines)."""
    notes: list[str] = []
    source = f"{rules.release} {'; '.join(rules.reads)}"
    ids, path = _sglang_ids(method, draft)
    if method is DSPARK:
        rank = _markov_rank(draft)
        if not isinstance(rank, int) or rank <= 0:
            notes.append(
                f"markov_rank = {rank!r}: SGLang refuses a DSpark drafter without a markov head "
                f"({_check(rules, 'markov_rank')})"
            )
            return BlockRead(
                (), ids, path or "fallback", None, "dspark-markov-rank", tuple(notes), source
            )
    if method is NEMOTRON35:
        notes.extend(_nemotron_split(draft, ids, rules))
    if ids is None:
        return _sglang_fallback(draft, num_layers, notes, rules)
    return _sglang_explicit(draft, ids, path or "", num_layers, notes, rules)


def _check(rules: EngineMethod, word: str) -> str:
    """The release's check naming ``word``, cited as its row has it."""
    return f"{rules.release}: " + next((c for c in rules.checks if word in c), rules.fallback)


def _sglang_ids(method: Method, draft: Mapping[str, Any]) -> tuple[tuple[int, ...] | None, str]:
    """The ids SGLang reads (a DSpark drafter's own field first) and their JSON path."""
    if method is DSPARK and draft.get("dspark_target_layer_ids") is not None:
        spark = _int_ids(draft["dspark_target_layer_ids"], "dspark_target_layer_ids")
        return spark, "dspark_target_layer_ids"
    found = block_ids_in(draft)
    return found, (block_ids_path(draft) or "") if found is not None else ""


def _nemotron_split(
    draft: Mapping[str, Any], ids: tuple[int, ...] | None, rules: EngineMethod
) -> list[str]:
    """A note when a Nemotron-3.5 draft's two encodings disagree (the engines then differ)."""
    aux = _int_ids(draft["eagle_aux_hidden_state_layer_ids"], "eagle_aux_hidden_state_layer_ids")
    if ids is None or (
        len(aux) == len(ids) and all(a == t + 1 for a, t in zip(aux, ids, strict=True))
    ):
        return []
    return [
        f"eagle_aux_hidden_state_layer_ids {list(aux)} != target_layer_ids + 1 "
        f"{[t + 1 for t in ids]}: SGLang does not take it for the Nemotron-3.5 layout "
        f"({_check(rules, 'Nemotron-3.5')}) and reads target_layer_ids; vLLM's eagle3_utils "
        "reader takes the eagle_aux ids first: the two engines feed different layers"
    ]


def _sglang_fallback(
    draft: Mapping[str, Any], n: int, notes: list[str], rules: EngineMethod
) -> BlockRead:
    """No ids: SGLang's ``build_target_layer_ids`` guess, or its refusal."""
    source = f"{rules.release} {'; '.join(rules.reads)}"
    layers = draft_layers(draft)
    if layers is None:
        notes.append(
            f"the draft config has no num_hidden_layers ({_check(rules, 'num_hidden_layers')})"
        )
        return BlockRead((), None, "fallback", None, "dflash-no-draft-layers", tuple(notes), source)
    try:
        guess = build_target_layer_ids(n, layers)
    except ContractError as exc:
        notes.append(f"{exc} (ValueError in {rules.release}'s {rules.fallback})")
        return BlockRead((), None, "fallback", None, "dflash-fallback-error", tuple(notes), source)
    notes.append(
        f"no target_layer_ids: SGLang guesses build_target_layer_ids(L={n}, draft layers="
        f"{layers}) = {guess}, silently ({rules.release}: {rules.fallback})"
    )
    return BlockRead(
        tuple(g + 1 for g in guess), None, "fallback", len(guess), None, tuple(notes), source
    )


def _sglang_explicit(
    draft: Mapping[str, Any],
    ids: tuple[int, ...],
    path: str,
    n: int,
    notes: list[str],
    rules: EngineMethod,
) -> BlockRead:
    """Ids read: the range check, the trained-depth warning, and the fc's state count."""
    source = f"{rules.release} {'; '.join(rules.reads)}"
    bad = [i for i in ids if i < 0 or i >= n]
    if bad:
        notes.append(
            f"ids {bad} are outside [0, {n}): SGLang refuses the drafter at start "
            f"({_check(rules, '[0, L)')})"
        )
        return BlockRead((), ids, path, len(ids), "dflash-ids-out-of-range", tuple(notes), source)
    trained = draft.get("num_target_layers", _get(draft, "dflash_config.num_target_layers"))
    if isinstance(trained, int) and trained != n:
        notes.append(
            f"num_target_layers = {trained} but the target has {n} layers: SGLang only warns "
            f"({_check(rules, 'warning')})"
        )
    states = len(ids)
    if path == "dspark_target_layer_ids":
        # the DSpark drafter is a DFlashDraftModel (sglang 0.5.23 models/dspark.py:513-519,
        # 967): its fc counts the DFlash ids, else its layers (rules.fc), not the DSpark ones
        dflash_ids = block_ids_in(draft)
        states = len(dflash_ids) if dflash_ids is not None else (draft_layers(draft) or len(ids))
        if states != len(ids):
            notes.append(
                f"dspark_target_layer_ids captures {len(ids)} states; the drafter's fc is built "
                f"for {states} (the DFlash ids or its layers: {rules.release} {rules.fc})"
            )
    return BlockRead(tuple(i + 1 for i in ids), ids, path, states, None, tuple(notes), source)


def _markov_rank(draft: Mapping[str, Any]) -> Any:
    """DSpark's markov_rank as SGLang reads it: ``dspark_markov_rank``, else ``dspark_config`` /
    ``dflash_config`` (published drafts nest it there), else the text config's or the top
    level's, else 0 (speculative/dspark_components/dspark_config.py:205-249)."""
    if draft.get("dspark_markov_rank") is not None:
        return draft["dspark_markov_rank"]
    for section in ("dspark_config", "dflash_config"):
        nested = draft.get(section)
        if isinstance(nested, Mapping) and "markov_rank" in nested:
            return nested["markov_rank"]
    text = draft.get("text_config")
    if isinstance(text, Mapping) and "markov_rank" in text:
        return text["markov_rank"]
    return draft.get("markov_rank", 0)


def vllm_v1_ids(draft: Mapping[str, Any]) -> tuple[tuple[int, ...] | None, str]:
    """The boundaries vLLM's V1 runner reads for a drafter where it has a DFlash branch
    (``None``: its default), and the JSON path they came from (``vllm_v1_reader``)."""
    top = draft.get("eagle_aux_hidden_state_layer_ids")
    if top:
        return int_ids(top, "eagle_aux_hidden_state_layer_ids"), "eagle_aux_hidden_state_layer_ids"
    found: Any = None
    path = "default"
    dflash = draft.get("dflash_config")
    if isinstance(dflash, Mapping) and dflash:
        ids = int_ids(dflash.get("target_layer_ids") or [], "dflash_config.target_layer_ids")
        found, path = [i + 1 for i in ids], "dflash_config.target_layer_ids"
    eagle = draft.get("eagle_config")
    if isinstance(eagle, Mapping) and eagle:
        found = eagle.get("eagle_aux_hidden_state_layer_ids")
        path = "eagle_config.eagle_aux_hidden_state_layer_ids"
    if not found:
        return None, "default"
    return int_ids(found, path), path


def vllm_fc_states(draft: Mapping[str, Any], fc: str) -> tuple[int | None, str]:
    """States vLLM's DFlash-family fc is built for: the count of the V2 reader's ids, else the
    draft's num_hidden_layers (vllm 0.33.0 qwen3_dflash.py:84-93; ``fc``: the release row's
    sizing, cited in its own lines)."""
    for path, _offset in (
        ("eagle_aux_hidden_state_layer_ids", 0),
        ("dflash_config.target_layer_ids", 1),
        ("dspark_target_layer_ids", 1),
        ("target_layer_ids", 1),
        ("dflash_config.layer_ids", 0),
        ("eagle_config.layer_ids", 0),
    ):
        value = _get(draft, path)
        if value:
            return len(_int_ids(value, path)), f"len({path}): {fc}"
    return draft_layers(draft), f"no ids: draft num_hidden_layers: {fc}"


# -- the trained claim ----------------------------------------------------------------------


@dataclass(frozen=True)
class TrainedTaps:
    """The canonical taps a block-draft drafter was trained on, or why they are not known."""

    method: Method

    canonical: tuple[int, ...] | None  # None: unknown
    source: str
    assumptions: tuple[str, ...] = ()
    native: tuple[int, ...] | None = None
    ids_source: str = ""


def trained_taps(draft: Mapping[str, Any], num_layers: int) -> TrainedTaps | None:
    """What a block-draft drafter was trained on (``None`` for the EAGLE-3 family): its ids as
    layer outputs (z-lab dflash and SpecForge capture ``hidden_states[i + 1]``), else the
    trainer's default ``build_target_layer_ids(num_target_layers, draft layers)``."""
    method = detect(draft)
    if not method.block:
        return None
    trainers = "; ".join(method.trainers)
    if method is DSPARK and draft.get("dspark_target_layer_ids") is not None:
        spark = _int_ids(draft["dspark_target_layer_ids"], "dspark_target_layer_ids")
        return TrainedTaps(
            method, spark, f"{method.label}: {trainers}", (), spark, "dspark_target_layer_ids"
        )
    ids = block_ids_in(draft)
    if ids is not None:
        return TrainedTaps(
            method, ids, f"{method.label}: {trainers}", (), ids, block_ids_path(draft) or ""
        )
    trained_n = draft.get("num_target_layers", _get(draft, "dflash_config.num_target_layers"))
    layers = draft_layers(draft)
    if not isinstance(trained_n, int) or layers is None:
        return TrainedTaps(
            method,
            None,
            f"{method.label}: the config records neither target_layer_ids nor num_target_layers: "
            "the trained taps are not recorded",
        )
    guess = tuple(build_target_layer_ids(trained_n, layers))
    return TrainedTaps(
        method,
        guess,
        f"{method.label}: {trainers}",
        (
            f"no target_layer_ids: the trainer's default build_target_layer_ids("
            f"num_target_layers={trained_n}, draft layers={layers}) = {list(guess)}",
        ),
        None,
        "default",
    )


def describe(method: Method) -> str:
    """``DFlash (target_layer_ids: output of target layer N ...)`` for reports."""
    return f"{method.label} (taps: {' then '.join(method.fields)}; {method.meaning})"


def all_fields(methods: Sequence[Method] = METHODS) -> tuple[str, ...]:
    """Every field some method names its taps with (for readers that list what they skip)."""
    seen: dict[str, None] = {}
    for m in methods:
        for f in m.fields:
            seen.setdefault(f, None)
    return tuple(seen)
