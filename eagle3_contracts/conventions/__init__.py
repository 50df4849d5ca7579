"""The convention registry: the system names a user can type, and how each trainer, engine
and format reads EAGLE-3 layer ids.

Names (the one parser and the one alias table): ``parse_system(text, field=...)`` turns ``sglang``, ``sglang==0.5.23``, ``vllm==0.33.0:v1``,
``specforge``, ``specforge-hf``, ``hf-hidden-states``, the older aliases (``vllm-nested`` ...),
the readings ``output``/``boundary``, with any spacing and case, into one frozen value:

* ``EngineSpec``: an engine release (framework, version or ``None`` = the newest probed, vLLM
  runner or ``None`` = the release's default). Its answer depends on the target's model file.
* ``TrainerSpec``: a trainer release (``specforge==0.2.0``; unversioned = its newest release),
  whose training features are what its pinned engine release captures for the target.
* ``FixedReading``: a registry entry (``specforge-hf``, ``trtllm``, ``output``, ...) whose
  reading of ids is the same for every target.

``check``, ``diagnose``, ``stages``, ``stamp``, dumps, the plugins, ``get`` and
``config.plan.resolve`` all resolve names here, so a name means one thing everywhere. Torch-free
and import-light: parsing a name reads no release table.

Meanings: ``get(name, model_type=..., architectures=...)`` returns a frozen ``Convention`` (see ``_entry``)
for a registry entry or reading (the same for every target), and a ``ReleaseReading``
(``release_ids``) for an engine or trainer release: that release simulated for the target's
model file by ``conventions.predict``, the one answer ``check`` gives. ``to_canonical`` /
``from_canonical`` translate explicit ids between a system and canonical ids
(``eagle3_contracts.layer_ids``).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

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
    Framework,
    Meaning,
    OffsetRule,
    PipelineParallel,
    PostNorm,
    Role,
    Validation,
)
from eagle3_contracts.errors import ContractError

if TYPE_CHECKING:
    from eagle3_contracts.conventions.release_ids import ReleaseReading

# -- system names ---------------------------------------------------------------------------------


ENGINES: tuple[str, ...] = tuple(f.value for f in Framework)
"""Engines answered per release from probed tables (``conventions/data/<engine>-<v>.json``)."""

RUNNERS: tuple[str, ...] = ("v1", "v2")
"""vLLM model runners (``vllm/config/vllm.py`` ``use_v2_model_runner``)."""

TRAINER_NEWEST: dict[str, str] = {"specforge": "0.2.0", "zlab-dflash": "0.1.0"}
"""Unversioned trainer names -> their newest read release (``data/trainers/``; z-lab's DFlash
code, github z-lab/dflash pyproject.toml version 0.1.0, is read in ``conventions.trainers``)."""

TRAINER_DEFAULTS: dict[str, str] = {k: f"{k}=={v}" for k, v in TRAINER_NEWEST.items()}
"""Unversioned trainer names -> the release they stand for (``specforge==0.2.0``)."""

ALIASES: dict[str, str] = {
    "sglang-legacy": "sglang==0.5.12",
    "sglang-gpt-oss": "sglang==0.5.17",
    "vllm-nested": "vllm==0.33.0:v1",
    "z-lab-dflash": "zlab-dflash",
}
"""Older names that stand for one release (and runner), and other spellings of a trainer's
name (``z-lab-dflash``). The unversioned engine names are not
aliases of a fixed release: ``sglang``/``vllm`` are the newest probed release, applied to the
target's own model file (and, for vLLM, the release's default runner for it)."""

FIXED: tuple[str, ...] = (
    "hf-hidden-states",
    "specforge-hf",
    "eagle-reference",
    "trtllm",
    "speculators",
    "modelopt",
)
"""Registry entries: one reading of ids for every target (``conventions.REGISTRY``)."""

FIXED_RELEASES: dict[str, str] = {"speculators==0.9.0": "speculators"}
"""Releases whose reading is exactly a registry entry, checked in that wheel (speculators 0.9.0
``speculators/models/utils.py:99-139`` ``resolve_target_layer_ids``: default [2, L//2, L-3],
distinct ids within [0, L], as boundaries)."""

READING_NAMES: tuple[str, ...] = ("output", "boundary")
"""The two readings of an id list when nobody says which trainer wrote it."""

SYSTEM_ORDER: tuple[str, ...] = (
    "hf-hidden-states",
    "specforge-hf",
    "eagle-reference",
    "sglang-legacy",
    "sglang",
    "sglang-gpt-oss",
    "vllm",
    "vllm-nested",
    "trtllm",
    "speculators",
    "modelopt",
)
"""Every unversioned serving or reading name, in the order the registry table lists them."""

CANONICAL = "canonical"
"""The numbering of canonical ids themselves (-1 = embedding, N = output of layer N): a
convention ids can be written in (dumps, ``--ids``), not a system."""

_VERSION = re.compile(r"\d+(\.\d+)*((\.?(post|dev|rc|a|b)\d*)|(\+[a-z0-9.]+))*")
"""A release version as package indexes spell it (``0.5.23``, ``0.5.5.post1``, ``0.9.0rc1``)."""


@dataclass(frozen=True)
class EngineSpec:
    """An engine release: its answer is read from that release's probed table for the target's
    model file (``conventions.predict``)."""

    framework: Framework
    version: str | None  # "0.5.23"; None = the newest probed release
    runner: str | None  # vLLM "v1" / "v2"; None = the release's default for the target
    given: str  # as typed (stripped), for messages

    @property
    def key(self) -> str:
        """The canonical spelling: ``sglang``, ``sglang==0.5.23``, ``vllm==0.33.0:v1``."""
        version = f"=={self.version}" if self.version else ""
        runner = f":{self.runner}" if self.runner else ""
        return f"{self.framework}{version}{runner}"


@dataclass(frozen=True)
class TrainerSpec:
    """A trainer release: its features are what its pinned engine release captures."""

    framework: str  # "specforge"
    version: str | None  # "0.2.0"; None = the newest probed release
    given: str

    @property
    def key(self) -> str:
        """``specforge`` or ``specforge==0.2.0``."""
        return f"{self.framework}=={self.version}" if self.version else self.framework

    @property
    def release_version(self) -> str:
        """The version it stands for: ``0.2.0`` also when unversioned."""
        return self.version or TRAINER_NEWEST[self.framework]

    @property
    def release(self) -> str:
        """The release it stands for: ``specforge==0.2.0`` also when unversioned."""
        return f"{self.framework}=={self.release_version}"


@dataclass(frozen=True)
class FixedReading:
    """A registry entry (or a reading): the same meaning of ids for every target."""

    name: str  # the registry key: "specforge-hf", "output", "speculators"
    given: str

    @property
    def key(self) -> str:
        return self.name


SystemName = EngineSpec | TrainerSpec | FixedReading
SYSTEM_TYPES = (EngineSpec, TrainerSpec, FixedReading)
"""The parsed kinds of ``SystemName`` (for ``isinstance``)."""


def known_names() -> tuple[str, ...]:
    """Every accepted unversioned name (engines, aliases, trainers, registry, readings)."""
    return (*SYSTEM_ORDER, *TRAINER_DEFAULTS, *READING_NAMES)


def needs_target(name: SystemName) -> bool:
    """Whether the name's answer depends on the target's model file."""
    return not isinstance(name, FixedReading)


def parse_system(text: object, *, field: str) -> SystemName:
    """The typed meaning of one system name; ``ContractError(field=field)`` when it has none.

    Spaces are ignored and case folded (``" VLLM == 0.33.0 : V1 "`` = ``vllm==0.33.0:v1``);
    a version of one or two numbers is the release ``.0`` completes (``vllm==0.33`` =
    ``vllm==0.33.0``); a range (``vllm>=0.30``) is refused: each release answers differently.
    A well-formed release that was never probed (``vllm==0.40.0``) parses: answering it is the
    caller's job (an unknown row with the probe command). A version that is not one
    (``vllm==abc``) or an unknown name is refused, with the names it may have meant.
    """
    given = _given(text, field)
    key = _normal_key("".join(given.split()).lower(), given, field)
    key = ALIASES.get(key, key)
    if key in READING_NAMES or key in FIXED:
        return FixedReading(key, given)
    if key in FIXED_RELEASES:
        return FixedReading(FIXED_RELEASES[key], given)
    head, colon, runner = key.partition(":")
    framework, eq, version = head.partition("==")
    if framework in ENGINES or framework in TRAINER_DEFAULTS:
        _check_version(given, eq, version, field)
        if colon:
            _check_runner(given, framework, runner, field)
        if framework in ENGINES:
            return EngineSpec(Framework(framework), version or None, runner or None, given)
        return TrainerSpec(framework, version or None, given)
    if framework in FIXED and eq:
        raise ContractError(_versioned_fixed(given, framework), field=field)
    raise ContractError(_unknown(given, framework), field=field)


def system_name(name: str | SystemName, *, field: str) -> SystemName:
    """``name`` typed: a value already parsed (where the name entered) is passed on as it is, a
    string is parsed here, once (``parse_system``, refusals naming ``field``)."""
    if isinstance(name, SYSTEM_TYPES):
        return name
    return parse_system(name, field=field)


_RANGE = re.compile(r"(~=|!=|>=|<=|===|>|<)")
"""A version specifier other than ``==``: a range of releases, which no table answers."""


def _normal_key(key: str, given: str, field: str) -> str:
    """``vllm==0.33`` as ``vllm==0.33.0`` (a release has three numbers, as its wheel is named);
    a range (``vllm>=0.30``) refused in one line: an answer is for one release."""
    head, colon, runner = key.partition(":")
    framework, eq, version = head.partition("==")
    ranged = _RANGE.search(head)
    if ranged is not None:
        name = head[: ranged.start()]
        raise ContractError(
            f"{given!r}: '{ranged.group()}' names a range of releases and each release "
            f"answers differently; name one, {name or 'NAME'}==VERSION (e.g. 'vllm==0.33.0', "
            "'sglang==0.5.23')",
            field=field,
        )
    if eq and re.fullmatch(r"\d+(\.\d+)?", version):
        version += ".0" * (2 - version.count("."))
        return f"{framework}=={version}{colon}{runner}"
    return key


def _given(text: object, field: str) -> str:
    """The name as typed, stripped; refused unless it is a non-empty string."""
    if not isinstance(text, str) or not text.strip():
        raise ContractError(
            f"a system name is a non-empty string like 'sglang==0.5.23', 'vllm==0.33.0:v1' or "
            f"'specforge', got {text!r}",
            field=field,
        )
    return text.strip()


def _check_runner(given: str, framework: str, runner: str, field: str) -> None:
    """A ``:runner`` suffix is valid only on vLLM, and only ``v1``/``v2``."""
    if framework == Framework.VLLM and runner in RUNNERS:
        return
    raise ContractError(
        f"{given!r}: "
        + (
            f"the runner is 'v1' or 'v2', got {runner!r}"
            if framework == Framework.VLLM
            else "only vLLM has model runners (':v1' or ':v2')"
        ),
        field=field,
    )


def _versioned_fixed(given: str, framework: str) -> str:
    """The refusal of a version on a registry entry (one reading for every release)."""
    checked = [r for r, entry in FIXED_RELEASES.items() if entry == framework]
    return f"{given!r}: {framework} names one reading for every release; " + (
        f"checked releases: {', '.join(checked)} (or the unversioned {framework!r})"
        if checked
        else f"give it unversioned, {framework!r}"
    )


def parse_convention(text: object, *, field: str) -> SystemName | None:
    """The convention ids are written in: ``None`` for ``canonical``, else ``parse_system``."""
    if isinstance(text, str) and text.strip().lower() == CANONICAL:
        return None
    return parse_system(text, field=field)


def _check_version(given: str, eq: str, version: str, field: str) -> None:
    if eq and not version:
        raise ContractError(f"{given!r}: no version after '=='", field=field)
    if version and _VERSION.fullmatch(version) is None:
        raise ContractError(
            f"{given!r}: {version!r} is not a release version (e.g. 'sglang==0.5.23')",
            field=field,
        )


def _unknown(given: str, framework: str) -> str:
    """The refusal of an unknown name, with the known names it is closest to."""
    base = framework.partition("=")[0]  # ``framework`` never holds "==": parse_system split it
    close = difflib.get_close_matches(base, known_names(), n=3)
    hint = f"did you mean {' or '.join(repr(c) for c in close)}? " if close else ""
    if "=" in framework:
        hint = f"a release is named with '==' ({base}==VERSION); " + hint
    return (
        f"unknown system name {given!r}: {hint}known: {', '.join(known_names())} "
        f"(or a release, e.g. 'sglang==0.5.23', 'vllm==0.33.0:v1', 'specforge==0.2.0')"
    )


def engine_spec(text: object, *, field: str) -> EngineSpec:
    """``parse_system`` for a name that must be an engine release (``--serve-with``)."""
    spec = parse_system(text, field=field)
    if not isinstance(spec, EngineSpec):
        raise ContractError(
            f"{spec.given!r}: release answers exist for {', '.join(ENGINES)} "
            f"(e.g. 'sglang==0.5.23', 'vllm==0.33.0:v1')",
            field=field,
        )
    return spec


def engine_name(framework: str, version: str, runner: str | None = None) -> str:
    """``engine_name("vllm", "0.32.0", "v1")`` -> ``"vllm==0.32.0:v1"`` (parsed, so it is one
    the rest of the package reads back); how the plugins label what they observed."""
    spec = parse_system(
        f"{framework}=={version}" + (f":{runner}" if runner else ""), field="release"
    )
    if not isinstance(spec, EngineSpec):
        raise ContractError(f"{framework!r} is not an engine", field="release")
    return spec.key


# -- the registry ---------------------------------------------------------------------------------

_FAMILIES = (hf, specforge, eagle_reference, trtllm, speculators, modelopt)
REGISTRY: dict[str, Convention] = {c.name: c for m in _FAMILIES for c in m.ENTRIES}
"""The readings that are the same for every target (``FIXED``); engines and trainers are
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
    "Framework",
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
    registry table's order; ``known_names()`` adds trainers and the two readings."""
    return SYSTEM_ORDER


def get(
    name: str | SystemName | Convention | ReleaseReading,
    *,
    model_type: str | None = None,
    architectures: Sequence[str] = (),
) -> Convention | ReleaseReading:
    """What a system name (``parse_system``) means for the target.

    A registry entry or reading (``specforge-hf``, ``output``) is a ``Convention``, the same for
    every target. An engine name (``sglang``, ``sglang==0.5.23``, ``vllm-nested``) or a trainer
    (``specforge``) is a ``ReleaseReading``: the release simulated for the target's model file
    (``conventions.predict``, as ``check`` answers it), with ``to_canonical`` /
    ``from_canonical``. Both need ``model_type``/``architectures`` (the target's) and are
    refused without them, never answered with another model file's rule.
    """
    from eagle3_contracts.conventions.release_ids import ReleaseReading

    if isinstance(name, Convention | ReleaseReading):
        return name
    spec = system_name(name, field="convention")
    if isinstance(spec, FixedReading):
        return READINGS[spec.name] if spec.name in READINGS else REGISTRY[spec.name]
    return _release_reading(spec, model_type, tuple(architectures))


def _release_reading(
    spec: EngineSpec | TrainerSpec, model_type: str | None, architectures: tuple[str, ...]
) -> ReleaseReading:
    """An engine or trainer name for the target, refused without the target (whose model file
    picks the rule) and for a runner the release does not have."""
    from eagle3_contracts.conventions import releases
    from eagle3_contracts.conventions.release_ids import ReleaseReading

    if isinstance(spec, TrainerSpec):
        from eagle3_contracts.conventions.trainers import trainer_release

        try:
            engine = trainer_release(spec.release).engine
        except ContractError as exc:  # the name arrived as a convention: say so in the field
            raise ContractError(str(exc), field="convention") from None
        what = (
            f"{spec.release}"
            + (" (the newest probed release)" if spec.version is None else "")
            + f", which captures through {engine}: what its ids mean depends on the target's "
            "model file"
        )
        hint = (
            ". Give the target (--target CONFIG, its config's architectures/model_type), or name "
            "'specforge-hf' for the removed HF backend's reading (ids = layer outputs)"
        )
    else:
        what = spec.key if spec.version else f"the newest probed {spec.framework} release"
        hint = (
            ", whose rule depends on the target's model file: give the target (--target "
            "CONFIG, its config's architectures/model_type)"
        )
        version = spec.version or releases.newest_release(spec.framework)
        runners = releases.load_table(spec.framework, version).runner
        if spec.runner and runners is not None and spec.runner not in runners.available:
            raise ContractError(  # as conventions.predict answers it: unknown, never another rule
                f"{spec.given!r}: {spec.framework}=={version} has no model runner {spec.runner} "
                f"({runners.source})",
                field="convention",
            )
    if not model_type and not architectures:
        raise ContractError(f"{spec.given!r} means {what}{hint}", field="target")
    return ReleaseReading(spec, model_type, architectures)


def to_canonical(
    ids: Sequence[int],
    convention: str | Convention | ReleaseReading,
    num_layers: int,
    *,
    model_type: str | None = None,
    architectures: Sequence[str] = (),
) -> tuple[int, ...]:
    """Native explicit ids of ``convention`` -> canonical ids (same order).

    An engine or trainer name (``vllm``, ``sglang==0.5.23``) needs the target's
    ``model_type``/``architectures``: the release is simulated reading a drafter that holds
    ``ids`` (``get``, ``conventions.predict``). Raises ``ContractError`` for ids the system
    never captures, a release that crashes on them, or ids with no canonical id (e.g.
    TensorRT-LLM's ``-1``, Hugging Face's ``hidden_states[L]``).
    """
    conv = get(convention, model_type=model_type, architectures=architectures)
    return conv.to_canonical(ids, num_layers)


def from_canonical(
    ids: Sequence[int],
    convention: str | Convention | ReleaseReading,
    num_layers: int,
    *,
    model_type: str | None = None,
    architectures: Sequence[str] = (),
) -> tuple[int, ...]:
    """Canonical ids -> the native ids ``convention`` needs to feed exactly those layers.

    An engine or trainer name needs the target, as for ``to_canonical``; its ids are the one
    proven fix (``config.plan.proven_fix``: written where the release reads ids and predicted
    again). Raises ``ContractError`` when no native list can express them (canonical -1 in
    ``trtllm``, canonical L-1 in ``sglang==0.5.23`` for a DeepSeek-V3 target).
    """
    conv = get(convention, model_type=model_type, architectures=architectures)
    return conv.from_canonical(ids, num_layers)
