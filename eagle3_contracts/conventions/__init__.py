"""The convention registry: how each trainer, engine and format reads EAGLE-3 layer ids.

``get(name)`` returns a frozen ``Convention`` (see ``_entry``); ``names()`` lists the registry.
A name may carry a release, ``"sglang==0.5.23"``: it is resolved by
``eagle3_contracts.conventions.releases.release_convention``. ``to_canonical``/``from_canonical``
translate explicit ids between a convention and canonical ids (``eagle3_contracts.layer_ids``).
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Sequence

from eagle3_contracts.conventions import (
    eagle_reference,
    hf,
    modelopt,
    sglang,
    specforge,
    speculators,
    trtllm,
    vllm,
)
from eagle3_contracts.conventions._entry import (
    Convention,
    Dedup,
    DefaultRule,
    Meaning,
    OffsetRule,
    PipelineParallel,
    PostNorm,
    Role,
    Validation,
)
from eagle3_contracts.errors import ContractError

_FAMILIES = (hf, specforge, eagle_reference, sglang, vllm, trtllm, speculators, modelopt)
REGISTRY: dict[str, Convention] = {c.name: c for m in _FAMILIES for c in m.ENTRIES}

SERVING: tuple[str, ...] = ("sglang", "vllm", "trtllm")
"""Engines ``check`` serves with when no ``--serve-with`` is given: ``sglang`` and ``vllm`` are
their newest probed releases (``conventions.predict``), answered for the target's model file
and, for vLLM, the release's default model runner."""

CONVENTION_RELEASES: dict[str, str] = {"speculators==0.9.0": "speculators"}
"""Releases whose reading is exactly a registry entry, checked in that wheel (speculators 0.9.0
``speculators/models/utils.py:99-139`` ``resolve_target_layer_ids``: default [2, L//2, L-3],
distinct ids within [0, L], as boundaries)."""


# The two readings of an id list when nobody says which trainer wrote it.
READINGS: dict[str, Convention] = {
    "output": Convention(
        name="output",
        system="ids read as layer outputs (SpecForge, ModelOpt, TensorRT-LLM)",
        role=Role.READING,
        meaning=Meaning.OUTPUT,
        offset_rule=OffsetRule.IDENTITY,
        id_paths=(hf.NESTED, hf.TOP_LEVEL),
        default=DefaultRule.OUTPUTS_1_MIDM1_LM4,
        validation=Validation.REFUSED,
        notes=("The reading of trainers that hook layer outputs.",),
        sources=("eagle3_contracts registry: specforge, modelopt, trtllm",),
    ),
    "boundary": Convention(
        name="boundary",
        system="ids read as layer inputs / boundaries (vLLM, speculators, original EAGLE)",
        role=Role.READING,
        meaning=Meaning.BOUNDARY,
        offset_rule=OffsetRule.BOUNDARY,
        id_paths=(hf.TOP_LEVEL, hf.NESTED),
        default=DefaultRule.BOUNDARIES_2_MID_LM3,
        validation=Validation.REFUSED,  # an id naming no state is no reading of the training
        notes=("The reading of systems that capture the input of layer b.",),
        sources=("eagle3_contracts registry: vllm, speculators, eagle-reference",),
    ),
}

__all__ = [
    "CONVENTION_RELEASES",
    "READINGS",
    "REGISTRY",
    "SERVING",
    "Convention",
    "Dedup",
    "DefaultRule",
    "Meaning",
    "OffsetRule",
    "PipelineParallel",
    "PostNorm",
    "Role",
    "Validation",
    "from_canonical",
    "get",
    "names",
    "to_canonical",
]


def names() -> tuple[str, ...]:
    """Registry names, in registry order."""
    return tuple(REGISTRY)


def get(
    name: str | Convention,
    *,
    model_type: str | None = None,
    architectures: Sequence[str] = (),
) -> Convention:
    """The ``Convention`` called ``name``; ``"framework==version"`` resolves a release.

    ``model_type``/``architectures`` (the target's) matter only for release names: SGLang's
    rule depends on the target's model file.
    """
    if isinstance(name, Convention):
        return name
    if not isinstance(name, str):
        raise ContractError(
            f"a convention is a name or a Convention, got {type(name).__name__}",
            field="convention",
        )
    key = name.strip()
    from eagle3_contracts.conventions import predict  # lazy: predict imports this package

    trainer = predict.trainer_name(key)
    if trainer is not None:
        return _trainer_capture(trainer, model_type, tuple(architectures))
    key = CONVENTION_RELEASES.get(key.replace(" ", ""), key)
    if key.split("==", 1)[0] in {v for v in CONVENTION_RELEASES.values()} and "==" in key:
        known = ", ".join(CONVENTION_RELEASES)
        raise ContractError(
            f"{key!r} has not been checked; checked releases: {known} (or the unversioned "
            f"{key.split('==', 1)[0]!r} entry)",
            field="convention",
        )
    if key in REGISTRY:
        return REGISTRY[key]
    if key in READINGS:
        return READINGS[key]
    if "==" in key:
        framework, _, version = (s.strip() for s in key.partition("=="))
        # "vllm==0.32.0:v1" (the convention vLLM plugin dumps carry): the model runner changes
        # which config field is read, not what an id means, so the release's rule applies
        version = version.partition(":")[0].strip()
        try:
            releases = importlib.import_module(f"{__name__}.releases")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.releases":
                raise
            raise ContractError(
                f"release-specific conventions ({key!r}) are not available in this install; "
                f"use one of: {', '.join(REGISTRY)}",
                field="convention",
            ) from None
        found: Convention = releases.release_convention(
            framework, version, model_type=model_type, architectures=tuple(architectures)
        )
        return found
    raise ContractError(
        f"unknown convention {name!r}; known: {', '.join(REGISTRY)} "
        f"(or 'framework==version', e.g. 'sglang==0.5.23')",
        field="convention",
    )


def _trainer_capture(
    key: str, model_type: str | None, architectures: tuple[str, ...]
) -> Convention:
    """A trainer release whose training features are what an engine release captures (SpecForge
    0.2.0 pins ``sglang==0.5.14`` and hands its ids to that release's setter, per its probed
    table), so its ids mean what that release makes of them for the target's model file. The
    removed HF backend's element-wise reading is ``specforge-hf``."""
    from eagle3_contracts.conventions.predict import TRAINER_DEFAULTS
    from eagle3_contracts.conventions.trainers import trainer_release

    trainer = TRAINER_DEFAULTS.get(key, key)
    try:
        engine = trainer_release(trainer).engine
    except ContractError as exc:  # the name arrived as a convention: say so in the field
        raise ContractError(str(exc), field="convention") from None
    if not model_type and not architectures:
        raise ContractError(
            f"{key!r} means {trainer}"
            + (" (the newest probed release)" if "==" not in key else "")
            + f", which captures through {engine}: what its ids mean depends on the target's "
            f"model file. Pass the target (its config's model_type/architectures), or name "
            f"'specforge-hf' for the removed HF backend's reading (ids = layer outputs)",
            field="convention",
        )
    convention = get(engine, model_type=model_type, architectures=architectures)
    assumed = (
        f"{key} = {trainer}"
        + (" (unversioned: the newest probed release)" if "==" not in key else "")
        + f", whose training features are what {engine} captures for this target"
    )
    return dataclasses.replace(
        convention,
        system=f"{trainer} via {convention.system}",
        notes=(assumed, *convention.notes),
    )


def to_canonical(
    ids: Sequence[int], convention: str | Convention, num_layers: int
) -> tuple[int, ...]:
    """Native explicit ids of ``convention`` -> canonical ids (same order).

    Raises ``ContractError`` for ids the system never captures or that have no canonical id
    (e.g. TensorRT-LLM's ``-1``, Hugging Face's ``hidden_states[L]``).
    """
    return get(convention).to_canonical(ids, num_layers)


def from_canonical(
    ids: Sequence[int], convention: str | Convention, num_layers: int
) -> tuple[int, ...]:
    """Canonical ids -> the native ids ``convention`` needs to feed exactly those layers.

    Raises ``ContractError`` when no native list can express them (canonical -1 in
    ``trtllm``, canonical L-1 in ``sglang``).
    """
    return get(convention).from_canonical(ids, num_layers)
