"""The convention registry: how each trainer, engine and format reads EAGLE-3 layer ids.

``get(name, model_type=..., architectures=...)`` returns a frozen ``Convention`` (see
``_entry``) for any system name (``names.parse_system``): a registry entry (``REGISTRY``, the
same for every target), or an engine or trainer release, answered with that release's probed
rule for the target's model file (``releases.release_convention``). ``to_canonical`` /
``from_canonical`` translate explicit ids between a convention and canonical ids
(``eagle3_contracts.layer_ids``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from eagle3_contracts.conventions import (
    eagle_reference,
    hf,
    modelopt,
    specforge,
    speculators,
    trtllm,
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
from eagle3_contracts.conventions.names import (
    SYSTEM_ORDER,
    FixedReading,
    TrainerSpec,
    parse_system,
)
from eagle3_contracts.errors import ContractError

_FAMILIES = (hf, specforge, eagle_reference, trtllm, speculators, modelopt)
REGISTRY: dict[str, Convention] = {c.name: c for m in _FAMILIES for c in m.ENTRIES}
"""The readings that are the same for every target (``names.FIXED``); engines and trainers are
answered per release and model file (``releases``, ``predict``)."""

SERVING: tuple[str, ...] = ("sglang", "vllm", "trtllm")
"""Engines ``check`` serves with when no ``--serve-with`` is given: ``sglang`` and ``vllm`` are
their newest probed releases (``conventions.predict``), answered for the target's model file
and, for vLLM, the release's default model runner."""


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
    """Every unversioned serving or reading name (registry entries and engine names), in the
    registry table's order; ``names.known_names()`` adds trainers and the two readings."""
    return SYSTEM_ORDER


def get(
    name: str | Convention,
    *,
    model_type: str | None = None,
    architectures: Sequence[str] = (),
) -> Convention:
    """The ``Convention`` a system name means (``names.parse_system``) for the target.

    A registry entry or reading (``specforge-hf``, ``output``) is the same for every target.
    An engine name (``sglang``, ``sglang==0.5.23``, ``vllm-nested``) is its release's rule for
    the target's model file, and a trainer (``specforge``) what its pinned engine release
    captures for it: both need ``model_type``/``architectures`` (the target's) and are refused
    without them, never answered with another model file's rule.
    """
    if isinstance(name, Convention):
        return name
    spec = parse_system(name, field="convention")
    if isinstance(spec, FixedReading):
        return READINGS[spec.name] if spec.name in READINGS else REGISTRY[spec.name]
    if isinstance(spec, TrainerSpec):
        return _trainer_capture(spec, model_type, tuple(architectures))
    if not model_type and not architectures:
        raise ContractError(
            f"{spec.given!r} means "
            + (spec.key if spec.version else f"the newest probed {spec.framework} release")
            + ", whose rule depends on the target's model file: give the target (--target "
            "CONFIG, its config's architectures/model_type)",
            field="target",
        )
    from eagle3_contracts.conventions import releases

    version = spec.version or releases.newest_release(spec.framework)
    # the vLLM model runner changes which config field is read, not what an id means
    return releases.release_convention(
        spec.framework, version, model_type=model_type, architectures=tuple(architectures)
    )


def _trainer_capture(
    spec: TrainerSpec, model_type: str | None, architectures: tuple[str, ...]
) -> Convention:
    """A trainer release whose training features are what an engine release captures (SpecForge
    0.2.0 pins ``sglang==0.5.14`` and hands its ids to that release's setter, per its probed
    table), so its ids mean what that release makes of them for the target's model file. The
    removed HF backend's element-wise reading is ``specforge-hf``."""
    from eagle3_contracts.conventions.trainers import trainer_release

    trainer = spec.release
    try:
        engine = trainer_release(trainer).engine
    except ContractError as exc:  # the name arrived as a convention: say so in the field
        raise ContractError(str(exc), field="convention") from None
    if not model_type and not architectures:
        raise ContractError(
            f"{spec.given!r} means {trainer}"
            + (" (the newest probed release)" if spec.version is None else "")
            + f", which captures through {engine}: what its ids mean depends on the target's "
            f"model file. Give the target (--target CONFIG, its config's "
            f"architectures/model_type), or name 'specforge-hf' for the removed HF backend's "
            f"reading (ids = layer outputs)",
            field="target",
        )
    convention = get(engine, model_type=model_type, architectures=architectures)
    assumed = (
        f"{spec.key} = {trainer}"
        + (" (unversioned: the newest probed release)" if spec.version is None else "")
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
