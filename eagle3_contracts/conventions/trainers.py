"""What a trainer release trained a drafter on: its probed id resolution, refusals and the
engine release whose captures are its training features (``conventions/data/trainers/``).

``predict_trainer(spec, draft_config, target_config)`` resolves the ids as the trainer does
(its default when the config has none; its refusals as a ``crash``), then asks the pinned
capture engine (``predict.predict_feed(..., explicit_ids=ids)``) which layers it captures for
the target's model file. ``predict.predict_system`` answers any system name: an engine
release's feed, or a trainer release's training features.

Block-draft drafters (DFlash, Domino, DSpark, Nemotron-3.5) are answered by
``predict_block_trainer`` from ``BLOCK_TRAINERS``: SpecForge 0.2.0's DFlash-family recipes and
z-lab's DFlash code (``zlab-dflash``), each read from its source (file:line in the entries):
which field holds the ids, the default without them, the offset (id N = HF
``hidden_states[N + 1]``, the output of layer N) and its refusals.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import cache
from typing import Any

from eagle3_contracts.conventions import (
    EngineSpec,
    TrainerSpec,
    engine_spec,
    methods,
    parse_system,
    releases,
)
from eagle3_contracts.conventions.hf import NESTED
from eagle3_contracts.conventions.hf import TOP_LEVEL as TOP
from eagle3_contracts.conventions.predict import (
    Feed,
    TargetLike,
    fixed_feed,
    int_tuple,
    predict_feed,
    target_facts,
)
from eagle3_contracts.conventions.releases import DefaultSelection
from eagle3_contracts.errors import ContractError


@dataclass(frozen=True)
class TrainerRelease:
    """How one trainer release resolves ids and which engine captures its training features,
    as probed from its wheel (``conventions/data/trainers/<name>-<version>.json``)."""

    name: str  # "specforge==0.2.0"
    backend: str  # "sglang"
    engine: str  # the pinned capture engine, "sglang==0.5.14"
    count: int  # exactly this many ids
    distinct: bool  # duplicates refused
    below_depth: bool  # ids >= num_hidden_layers refused
    default: DefaultSelection  # its ids when the config has none (native: layer outputs)
    sources: tuple[str, ...]


ONLINE_CAPTURE = (
    "Only offline capture runs on a stock install: SpecForge 0.2.0's online capture launches "
    "SGLang with --enable-spec-capture --spec-capture-aux-layer-ids (specforge/launch_plan.py:"
    "492-495), flags its pinned sglang 0.5.14 does not have (sglang/srt/server_args.py defines "
    "no spec capture option)"
)
"""What a SpecForge 0.2.0 answer assumes about how its training features were captured."""


def trainer_release(name: str | TrainerSpec) -> TrainerRelease:
    """The probed trainer release ``specforge==0.2.0`` (``ContractError`` if not probed); a
    string is parsed here, a ``TrainerSpec`` parsed where the name entered is used as it is."""
    spec = name if isinstance(name, TrainerSpec) else parse_system(name, field="trained_with")
    if not isinstance(spec, TrainerSpec):
        raise ContractError(f"{spec.given!r} is not a trainer release", field="trained_with")
    name = spec.release
    table = releases.load_trainer_table(spec.framework, spec.release_version)
    if table.resolver_needs_reading or table.engine is None or table.default is None:
        raise ContractError(
            f"{name}: the probed table cannot back a prediction "
            f"({table.resolver_needs_reading or table.engine_source or table.default_name})",
            field="trained_with",
        )
    count = 3 if {"two", "four"} <= table.refuses else 0
    return TrainerRelease(
        name=name,
        backend=table.backend,
        engine=table.engine,
        count=count,
        distinct="distinct" in table.offline_checks,
        below_depth="below_depth" in table.offline_checks,
        default=table.default,
        sources=(
            f"{table.backends_source} target_backend: {list(table.backends)}",
            table.engine_source,
            f"{table.resolver_source} {table.resolver_function}: reads {table.reads}, default "
            f"{table.default.value}, refuses {sorted(table.refuses)} (evaluated on the probe "
            "grid)",
            *(f"{v} ({k})" for k, v in sorted(table.offline_checks.items())),
            f"{table.setter_source}: set_eagle3_layers_to_capture(explicit ids)",
        ),
    )


def method_claim(draft_config: Mapping[str, Any], target_config: TargetLike) -> Feed | None:
    """What a block-draft drafter (DFlash, DFlash2, Domino, DSpark, Nemotron-3.5) was trained
    on, whoever trained it: its ids are layer outputs (``methods.trained_taps``); ``None`` for
    the EAGLE-3 family, whose ids are read per trainer."""
    taps = methods.trained_taps(draft_config, target_facts(target_config).num_layers)
    if taps is None:
        return None
    said = (f"drafter method {methods.describe(taps.method)}, whoever trained it",)
    if taps.canonical is None:
        return fixed_feed(
            (), kind="unknown", source=taps.source, assumptions=said, notes=(taps.source,)
        )
    return fixed_feed(
        taps.canonical,
        source=taps.source,
        assumptions=(*said, *taps.assumptions),
        native_ids=taps.native,
        ids_source=taps.ids_source,
    )


EAGLE3_TRAINERS: frozenset[str] = frozenset({"specforge==0.2.0"})
"""Trainer releases with a probed EAGLE-3 table (``data/trainers/``)."""


def predict_trainer(
    spec: TrainerSpec, draft_config: Mapping[str, Any], target_config: TargetLike
) -> Feed:
    """The canonical features a trainer release (``specforge==0.2.0``; ``specforge`` = its
    newest release) trained the drafter ``draft_config`` on, for the target."""
    assumptions: list[str] = []
    if spec.version is None:
        assumptions.append(f"unversioned {spec.key!r} = its newest release {spec.release}")
    method = methods.detect(draft_config)
    block = BLOCK_TRAINERS.get(spec.release)
    if method.block and block is not None:
        feed = predict_block_trainer(block, method, draft_config, target_config, tuple(assumptions))
        return replace(feed, spec=_answered(spec))
    if spec.release not in EAGLE3_TRAINERS:
        raise ContractError(
            f"{spec.release} trains {', '.join(block.methods) if block else 'no'} drafters; "
            f"this config is {methods.describe(method)}: name the trainer that trained it",
            field="trained_with",
        )
    if spec.version is None:
        assumptions[-1] += " with its default (only) backend sglang"
    trainer = trainer_release(spec)
    n = target_facts(target_config).num_layers
    eagle = draft_config.get("eagle_config")
    given = eagle.get(TOP) if isinstance(eagle, Mapping) else None
    ids = _resolved_ids(trainer, given, n, assumptions)
    source = "; ".join(trainer.sources)
    refused = _refusals(trainer, ids, n)
    if refused:
        return Feed(
            kind="crash",
            canonical=(),
            width_states=None,
            crash="trainer-refused",
            release=trainer.name,
            runner=None,
            model_file="",
            source=source,
            assumptions=tuple(assumptions),
            notes=(f"{trainer.name} refuses this config: {'; '.join(refused)}",),
            native_ids=tuple(ids),  # what was refused: the drafter's files are still checked
            ids_source=NESTED if given is not None else "default",
            spec=_answered(spec),
        )
    captured = predict_feed(
        _capture_engine(trainer.engine), draft_config, target_config, explicit_ids=ids
    )
    kind, crash = captured.kind, captured.crash
    # the engine sized its fc from the draft config; the trainer builds it for len(ids) states,
    # so training crashes only when the capture holds another number of states
    if crash == "fc-width-mismatch" and len(captured.canonical) == len(ids):
        kind, crash = "segments", None
    return Feed(
        kind=kind,
        canonical=captured.canonical,
        width_states=len(ids) if captured.kind != "unknown" else None,
        crash=crash,
        release=trainer.name,
        runner=None,
        model_file=captured.model_file,
        source=f"{source}; features captured by {captured.system}: {captured.source}",
        assumptions=(
            *assumptions,
            f"training features = what {trainer.engine} captures for "
            f"{captured.model_file or 'this target'} (offline capture). {ONLINE_CAPTURE}",
            *captured.assumptions,
        ),
        native_ids=tuple(ids),
        ids_source=NESTED if given is not None else "default",
        entry_class=captured.entry_class,
        notes=captured.notes,
        state=captured.state,
        read_path=NESTED,
        spec=_answered(spec),
    )


@cache
def _capture_engine(name: str) -> EngineSpec:
    """The pinned capture engine a trainer table names (``sglang==0.5.14``), parsed once."""
    return engine_spec(name, field="trained_with")


def _answered(spec: TrainerSpec) -> TrainerSpec:
    """The trainer release a feed answers for, its version resolved (``specforge`` = 0.2.0)."""
    return replace(spec, version=spec.release_version)


def _resolved_ids(
    trainer: TrainerRelease, given: Any, num_layers: int, assumptions: list[str]
) -> list[int]:
    """The ids the trainer resolves: the config's, else its probed default."""
    if given is None:
        given = trainer.default.elements(num_layers)
        assumptions.append(
            f"no {NESTED}: {trainer.name}'s default [{trainer.default.value.replace(',', ', ')}]"
            f" = {given}"
        )
    return list(int_tuple(given, NESTED))


def _refusals(trainer: TrainerRelease, ids: list[int], num_layers: int) -> list[str]:
    """Why the trainer refuses these ids (its resolver and offline checks), if it does."""
    n = num_layers
    refused = []
    if (trainer.count and len(ids) != trainer.count) or any(i < 0 for i in ids):
        refused.append(f"needs exactly {trainer.count} non-negative ids, got {ids}")
    if trainer.distinct and len(set(ids)) != len(ids):
        refused.append(f"duplicate ids in {ids}")
    if trainer.below_depth and any(i >= n for i in ids):
        refused.append(f"ids {[i for i in ids if i >= n]} exceed the target depth {n}")
    return refused


# -- the block-draft family (DFlash, DFlash2, Domino, DSpark, Nemotron-3.5 drafts) ---------


@dataclass(frozen=True)
class BlockTrainer:
    """How one trainer reads a block-draft drafter's taps, read from its code (file:line)."""

    release: str  # "zlab-dflash==0.1.0"
    methods: tuple[str, ...]  # ``methods.Method.name`` values it trains
    trains: str  # where the methods are registered
    reads: str  # the one field it reads the ids from
    needs_section: bool  # the drafter does not load without a ``dflash_config`` object
    loads: str  # where its drafter reads num_target_layers and block_size at load
    default: str  # where its default (build_target_layer_ids) is
    offset: str  # where id N becomes HF hidden_states[N + 1] (the output of layer N)
    writes: str  # which fields its checkpoints carry
    refuses: str  # its refusals of the resolved ids ("" = none)
    capture: str  # how its training features are captured
    engine: str | None  # the pinned capture engine ("sglang==0.5.14"), None: the HF forward


_SF = "specforge 0.2.0 specforge/"
_ZL = "z-lab/dflash@44947fb dflash/model.py"

SPECFORGE_DFLASH_FILES: frozenset[str] = frozenset(
    {
        "deepseek_v2.py",
        "gemma4_causal.py",
        "gemma4_mm.py",
        "glm4_moe_lite.py",
        "gpt_oss.py",
        "kimi_k25.py",
        "llama.py",
        "qwen3.py",
        "qwen3_5.py",  # its entry classes inherit qwen3_vl.py:1301
        "qwen3_moe.py",
        "qwen3_next.py",
        "qwen3_vl.py",
    }
)
"""sglang 0.5.14 model files (SpecForge 0.2.0's pinned capture engine) whose model class has
``set_dflash_layers_to_capture``; each stores id + 1 before layer id + 1, the output of layer
id (qwen3.py:717-719, llama.py:836). No 0.5.14 file defines ``set_dspark_layers_to_capture``."""

BLOCK_TRAINERS: dict[str, BlockTrainer] = {
    "specforge==0.2.0": BlockTrainer(
        release="specforge==0.2.0",
        methods=("dflash", "domino", "dspark", "nemotron-3.5"),
        trains=f"{_SF}algorithms/builtin.py:16 (eagle3, peagle, dflash, domino, dspark; no DFlash2)",
        reads="dflash_config.target_layer_ids",
        needs_section=False,
        loads=f"{_SF}modeling/draft/dflash.py:358, 370",
        default=(
            f"{_SF}modeling/draft/dflash.py:355-359 (dflash_config.target_layer_ids, else "
            "build_target_layer_ids(num_target_layers, num_hidden_layers)); its offline capture "
            "reads only the ids and raises without them (algorithms/model_providers.py:230-241), "
            "unless model.draft_num_hidden_layers writes them (model_providers.py:491-501)"
        ),
        offset=(
            f"{_SF}modeling/draft/dflash.py:284-293 extract_context_feature: hidden_states["
            "layer_id + 1]; the capture engine's set_dflash_layers_to_capture stores id + 1 "
            "(sglang 0.5.14 qwen3.py:717-719)"
        ),
        writes=(
            f"dflash_config.target_layer_ids = the resolved ids ({_SF}algorithms/"
            "model_providers.py:345); DSpark and Domino read the same ids (algorithms/dspark/"
            "providers.py:89-92, domino/providers.py:102-105): top-level target_layer_ids and "
            "dspark_target_layer_ids are never read"
        ),
        refuses=(
            f"{_SF}application/composition.py:93-114 (offline capture): ids must be distinct, "
            "non-negative and below the target depth"
        ),
        capture=(
            f"{_SF}offline_capture/sglang_backend/capture.py:97-113: the target's "
            "set_dflash_layers_to_capture (DSpark: set_dspark_layers_to_capture) in the pinned "
            "sglang 0.5.14, else RuntimeError"
        ),
        engine="sglang==0.5.14",
    ),
    "zlab-dflash==0.1.0": BlockTrainer(
        release="zlab-dflash==0.1.0",
        methods=("dflash", "nemotron-3.5"),
        trains=(
            f"{_ZL}:302-317 DFlashDraftModel (the repository ships the drafter's model code; "
            "README.md:32: the training recipe is not published)"
        ),
        reads="dflash_config.target_layer_ids",
        needs_section=True,
        loads=f"{_ZL}:313, 319",
        default=(
            f"{_ZL}:312-314 (self.config.dflash_config.get('target_layer_ids', "
            "build_target_layer_ids(config.num_target_layers, config.num_hidden_layers)))"
        ),
        offset=f"{_ZL}:39-45 extract_context_feature: offset = 1, hidden_states[layer_id + 1]",
        writes=(
            "nothing: it reads dflash_config.target_layer_ids and num_target_layers from the "
            "checkpoint's config (model.py:312-314); top-level target_layer_ids is never read"
        ),
        refuses="",
        capture=f"the HF forward with output_hidden_states ({_ZL}:93, 99)",
        engine=None,
    ),
}
"""The trainers of block-draft drafters; ``--trained-with`` resolves to one of these."""


def block_trainer(spec: TrainerSpec) -> BlockTrainer | None:
    """How ``spec`` trains block-draft drafters (``None``: it trains none)."""
    return BLOCK_TRAINERS.get(spec.release)


def predict_block_trainer(
    trainer: BlockTrainer,
    method: methods.Method,
    draft_config: Mapping[str, Any],
    target_config: TargetLike,
    assumptions: tuple[str, ...] = (),
) -> Feed:
    """The canonical features ``trainer`` trained the block-draft drafter on: its ids read as
    ``trainer.reads`` says, as layer outputs; its refusals as a ``crash``."""
    if method.name not in trainer.methods:
        raise ContractError(
            f"{trainer.release} trains {', '.join(trainer.methods)} drafters ({trainer.trains}); "
            f"this config is {method.label}: name the trainer that trained it",
            field="trained_with",
        )
    target = target_facts(target_config)
    notes: list[str] = []
    said = [
        *assumptions,
        f"{method.label} drafter trained by {trainer.release}: {trainer.offset}",
        *_unread_fields(trainer, draft_config),  # printed with the claim (an engine reads them)
    ]
    native = _block_native(trainer, draft_config)
    refused = _block_refusal(trainer, method, draft_config, target, native)
    ids = native if native is not None else _block_default(draft_config)
    if refused is None and ids is None:
        refused = (
            f"no {trainer.reads} and no num_target_layers / num_hidden_layers to build its "
            f"default from ({trainer.default})"
        )
    feed = Feed(
        kind="segments",
        canonical=(),
        width_states=None,
        crash=None,
        release=trainer.release,
        runner=None,
        model_file="",
        source=f"{trainer.trains}; reads {trainer.reads}: {trainer.default}; {trainer.capture}",
        native_ids=native,
        ids_source=trainer.reads if native is not None else "default",
        read_path=trainer.reads,
    )
    if refused is not None:
        notes.append(f"{trainer.release} refuses this config: {refused}")
        return replace(
            feed, kind="crash", crash="trainer-refused", notes=tuple(notes), assumptions=tuple(said)
        )
    assert ids is not None
    if native is None:
        layers = methods.draft_layers(draft_config)
        said.append(
            f"no {trainer.reads}: {trainer.release}'s default build_target_layer_ids("
            f"num_target_layers={_trained_depth(draft_config)}, draft layers={layers}) = "
            f"{list(ids)} ({trainer.default})"
        )
    if trainer.engine and method is not methods.DSPARK and _capture_file(target) is None:
        said.append(
            "the target's sglang 0.5.14 model file is not in its table: assumed its model class "
            "has set_dflash_layers_to_capture (id + 1, qwen3.py:717-719)"
        )
    if method is methods.DSPARK and trainer.engine:
        said.append(
            "DSpark features captured through set_dspark_layers_to_capture, which no sglang "
            "0.5.14 model file defines (capture.py:107-112 raises there): assumed captured as "
            "its set_dflash_layers_to_capture does, the output of layer id"
        )
    return replace(
        feed,
        canonical=tuple(ids),
        width_states=len(ids),  # its fc takes len(target_layer_ids) states (dflash.py:361-365)
        notes=tuple(notes),
        assumptions=tuple(said),
    )


def _block_native(trainer: BlockTrainer, draft: Mapping[str, Any]) -> tuple[int, ...] | None:
    value = methods.at_path(draft, trainer.reads)
    return None if value is None else methods.int_ids(value, trainer.reads)


def _trained_depth(draft: Mapping[str, Any]) -> Any:
    """``num_target_layers`` as the trainers read it: the top level (``config.num_target_layers``;
    SGLang also reads it nested)."""
    return draft.get("num_target_layers")


_LOAD_FIELDS = ("num_target_layers", "block_size")


def _load_refusal(trainer: BlockTrainer, draft: Mapping[str, Any]) -> str | None:
    """The fields its drafter reads as attributes when it is built: the ``.get`` default
    ``build_target_layer_ids(config.num_target_layers, ...)`` is evaluated even when the ids are
    given, and ``config.block_size`` is read after it; a config without them does not load."""
    absent = [
        f
        for f in _LOAD_FIELDS
        if not isinstance(draft.get(f), int) or isinstance(draft.get(f), bool)
    ]
    if not absent:
        return None
    return (
        f"no integer top-level {' / '.join(absent)}, which its drafter reads as attributes when "
        f"it is built ({trainer.loads}; the num_target_layers default is evaluated even when "
        "target_layer_ids are given): the config does not load"
    )


def _block_default(draft: Mapping[str, Any]) -> tuple[int, ...] | None:
    depth, layers = _trained_depth(draft), methods.draft_layers(draft)
    if not isinstance(depth, int) or isinstance(depth, bool) or depth <= 0 or layers is None:
        return None
    return tuple(_trainer_default(depth, layers))


def _unread_fields(trainer: BlockTrainer, draft: Mapping[str, Any]) -> list[str]:
    """Tap fields the config carries that the trainer never reads (engines may read them)."""
    return [
        f"{path} = {methods.at_path(draft, path)} is not read by {trainer.release} ({trainer.writes})"
        for path in ("target_layer_ids", "dspark_target_layer_ids")
        if path != trainer.reads and methods.at_path(draft, path) is not None
    ]


def _trainer_default(num_target_layers: int, num_draft_layers: int) -> list[int]:
    """The trainers' build_target_layer_ids (z-lab model.py:27-37, specforge 0.2.0
    modeling/draft/dflash.py:271-281): SGLang's helper without its depth check."""
    if num_draft_layers == 1:
        return [num_target_layers // 2]
    span = num_target_layers - 3 - 1
    return [round(1 + (i * span) / (num_draft_layers - 1)) for i in range(num_draft_layers)]


def _block_refusal(
    trainer: BlockTrainer,
    method: methods.Method,
    draft: Mapping[str, Any],
    target: Any,
    native: tuple[int, ...] | None,
) -> str | None:
    """Why the trainer cannot train this drafter on this target (``None``: it can)."""
    n = target.num_layers
    if trainer.needs_section and not isinstance(draft.get("dflash_config"), Mapping):
        return f"no dflash_config object, which its drafter reads at load ({trainer.default})"
    unloadable = _load_refusal(trainer, draft)
    if unloadable is not None:
        return unloadable
    ids = native if native is not None else _block_default(draft) or ()
    if not trainer.refuses:
        if any(i < -1 or i >= n for i in ids):
            return (
                f"ids {list(ids)} on a {n}-layer target: hidden_states[id + 1] ({trainer.offset})"
                " is past the tuple or wraps to its end, which no canonical id names"
            )
        return None
    if len(set(ids)) != len(ids) or any(i < 0 or i >= n for i in ids):
        return f"ids {list(ids)} on a {n}-layer target ({trainer.refuses})"
    if trainer.engine is None or method is methods.DSPARK:
        return None
    return _capture_refusal(target)


def _capture_file(target: Any) -> str | None:
    """The target's model file in sglang 0.5.14 (``None`` when its table has none)."""
    try:
        key = releases.model_file_for(
            releases.load_table("sglang", "0.5.14"),
            model_type=target.model_type,
            architectures=target.architectures,
        )
    except ContractError:
        return None
    return key.split(":", 1)[0]


def _capture_refusal(target: Any) -> str | None:
    """SpecForge 0.2.0's capture refusal of a target whose sglang 0.5.14 model class has no
    ``set_dflash_layers_to_capture`` (``None`` when it has one or the file is not known: the
    feed's assumptions say which)."""
    file = _capture_file(target)
    if file is None or file in SPECFORGE_DFLASH_FILES:
        return None
    return (
        f"sglang 0.5.14 {file} has no set_dflash_layers_to_capture, so its offline capture "
        "raises RuntimeError (specforge/offline_capture/sglang_backend/capture.py:107-112)"
    )
