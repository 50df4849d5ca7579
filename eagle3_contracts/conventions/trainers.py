"""What a trainer release trained a drafter on: its probed id resolution, refusals and the
engine release whose captures are its training features (``conventions/data/trainers/``).

``predict_trainer(spec, draft_config, target_config)`` resolves the ids as the trainer does
(its default when the config has none; its refusals as a ``crash``), then asks the pinned
capture engine (``predict.predict_feed(..., explicit_ids=ids)``) which layers it captures for
the target's model file. ``predict.predict_system`` answers any system name: an engine
release's feed, or a trainer release's training features.
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


def predict_trainer(
    spec: TrainerSpec, draft_config: Mapping[str, Any], target_config: TargetLike
) -> Feed:
    """The canonical features a trainer release (``specforge==0.2.0``; ``specforge`` = its
    newest release) trained the drafter ``draft_config`` on, for the target."""
    claim = method_claim(draft_config, target_config)
    if claim is not None:  # SpecForge's DFlash/DSpark recipes capture layer outputs
        return replace(claim, release=spec.release, spec=_answered(spec))
    assumptions: list[str] = []
    if spec.version is None:
        assumptions.append(
            f"unversioned {spec.key!r} = its newest release {spec.release} with its "
            "default (only) backend sglang"
        )
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
