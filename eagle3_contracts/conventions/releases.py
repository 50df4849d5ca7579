"""The probed release tables as one typed model, and the model file a target picks in a release.
What a release feeds a drafter is ``conventions.predict``'s simulation of these tables, the one
reading of them (no table is translated into a registry ``Convention``).

``python -m eagle3_contracts.probe`` writes the tables (``conventions/data/<framework>-<version>
.json``, ``data/trainers/...``, shipped as package data); the predictor (``conventions.predict``)
reads them only through this module. What a name means (``sglang`` = the newest probed release, ``vllm-nested`` =
``vllm==0.33.0:v1``) is decided once, in ``conventions.parse_system``.

A table is read once into frozen dataclasses whose vocabulary is enums:

- ``SelectionRule``: how a release's setter turns explicit ids into capture-set elements
  (loop indices / boundaries), classified by the probe on its grid;
- ``DefaultSelection``: the elements a release (or a trainer's resolver) selects with no ids;
- ``Placement``: where a model file's forward stores the states, as boundary spans;
- ``Reader``: a draft-config reader and the JSON paths it reads, in precedence;
- ``RunnerRule``: vLLM's default model runner;
- ``EntryClass`` (one per class a release registers) and ``ReleaseTable`` (one per release);
  ``TrainerTable`` (one per trainer release).

Nothing outside this module indexes a table's JSON. The JSON format is the probe's
(``probe.tables.PROBE_FORMAT``); keys this model does not name are ignored, so a newer probe may
add keys freely. A new probed rule or default is a new enum member (the probe's classifier
offers every member); a rule or default the model does not know reads as ``None`` with its
name kept (``rule_name``, ``default_name``), which the predictor answers ``unknown``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from eagle3_contracts._io import user_cache_dir
from eagle3_contracts.conventions import EngineSpec, SystemName, system_name
from eagle3_contracts.conventions._entry import Framework
from eagle3_contracts.errors import ContractError

DATA_PACKAGE = "eagle3_contracts.conventions"
DATA_DIR = "eagle3_contracts/conventions/data"
"""Where the tables live, as an installed wheel has them (cited in sources and messages)."""


class SelectionRule(str, Enum):
    """Explicit ids -> capture-set elements, as the probe classifies a setter on its grid
    (``probe.selection.classify_set_rule``)."""

    IDENTITY = "identity"  # elements = ids
    PLUS_ONE = "plus_one"  # elements = ids + 1 (SGLang <= 0.5.12 and most model files)
    PLUS_ONE_IF_FIRST_IS_ONE = "plus_one_if_first_is_one"  # sglang#25454 (deepseek_v2.py)
    IDENTITY_IF_MAX_IS_L_ELSE_PLUS_ONE = "identity_if_max_is_L_else_plus_one"  # gpt_oss.py
    SORTED_SET = "sorted_set"  # sorted(set(ids)) (vLLM's EagleModelMixin)

    def elements(self, ids: list[int], num_layers: int) -> list[int]:
        """The capture-set elements the setter stores for ``ids`` on a ``num_layers`` target."""
        plus_one = [v + 1 for v in ids]
        if self is SelectionRule.PLUS_ONE:
            return plus_one
        if self is SelectionRule.PLUS_ONE_IF_FIRST_IS_ONE:
            return plus_one if ids and ids[0] == 1 else list(ids)
        if self is SelectionRule.IDENTITY_IF_MAX_IS_L_ELSE_PLUS_ONE:
            return list(ids) if ids and max(ids) == num_layers else plus_one
        if self is SelectionRule.SORTED_SET:
            return sorted(set(ids))
        return list(ids)  # IDENTITY


class DefaultSelection(str, Enum):
    """The elements selected with no ids, as a function of the depth ``L``
    (``probe.selection.classify_default``; a trainer's resolver default, as native ids)."""

    TWO_MID_LM3 = "2,L//2,L-3"  # EAGLE's default; [2, 30, 58] at L = 61
    ONE_MIDM1_LM4 = "1,L//2-1,L-4"  # SpecForge's default; [1, 15, 28] at L = 32
    THREE_MIDP1_LM2 = "3,L//2+1,L-2"

    def elements(self, num_layers: int) -> list[int]:
        n = num_layers
        if self is DefaultSelection.TWO_MID_LM3:
            return [2, n // 2, n - 3]
        if self is DefaultSelection.ONE_MIDM1_LM4:
            return [1, n // 2 - 1, n - 4]
        return [3, n // 2 + 1, n - 2]  # THREE_MIDP1_LM2


def _malformed(kind: str, exc: Exception) -> ContractError:
    return ContractError(
        f"a {kind} table is malformed ({type(exc).__name__}: {exc}); re-probe it with "
        "`python -m eagle3_contracts.probe refresh`",
        field="release_table",
    )


def _enum_or_none(kind: type[Any], value: Any) -> Any:
    try:
        return kind(value)
    except ValueError:
        return None


# -- placement --------------------------------------------------------------------------------


@dataclass(frozen=True)
class CaptureSite:
    """One place a forward stores a state (``probe.placement``)."""

    where: str  # "before stack", "after layer", "into layer", "after stack"
    index: str  # the loop expression tested ("i", "i+1", "num_layers")
    value: str  # what is stored ("hidden+residual", "hidden")
    line: int
    reads: str = ""  # the state its guard tests ("layers_to_capture", "flag _is_layer_to_capture")


@dataclass(frozen=True)
class Placement:
    """Where one model file's decoder-stack forward captures states."""

    # -- which forward ----------------------------------------------------------------------
    file: str  # "llama.py"
    forward: str  # "LlamaModel.forward"
    line: int
    sites: tuple[CaptureSite, ...]
    # -- the mapping element -> boundary (absent when the sites could not be read exactly) --
    boundary_minus_element: int | None  # 0: element e is boundary e
    elements: tuple[str, ...]  # reachable element spans: "0", "1..L", "0..L-1"
    embedding: str  # "captured", or "raises ..." when element 0 crashes
    last_output: bool  # boundary L (the last layer's output) is reachable
    ambiguous: tuple[str, ...] = ()  # sites the probe could not map (then nothing above)
    # -- what the stored state is -----------------------------------------------------------
    residual_dropped: bool = False  # stores hidden_states alone in a fused-residual loop
    count_checked_line: int | None = None  # the collector is sized by len(layers_to_capture)

    @property
    def boundary_exact(self) -> bool:
        """Element ``e`` is boundary ``e``: the selection's elements are the boundaries fed."""
        return self.boundary_minus_element == 0

    @property
    def embedding_raises(self) -> bool:
        return self.embedding.startswith("raises")

    def spans(self, num_layers: int) -> list[tuple[int, int]]:
        """The reachable element spans for a ``num_layers`` target, as inclusive ranges."""
        return [_span(s, num_layers) for s in self.elements]

    def reaches(self, element: int, num_layers: int) -> bool:
        return any(lo <= element <= hi for lo, hi in self.spans(num_layers))

    def describe(self) -> str:
        """``capture in llama.py LlamaModel.forward (lines 404, 410)``."""
        lines = ", ".join(str(s.line) for s in self.sites)
        return f"capture in {self.file} {self.forward} (lines {lines})"

    def digest(self) -> dict[str, Any]:
        """The facts users feel (no line numbers), for release-to-release comparison."""
        return {
            "elements": list(self.elements) if self.elements else None,
            "embedding": self.embedding or None,
            "last_output": self.last_output if self.boundary_minus_element is not None else None,
            "stores": sorted({s.value for s in self.sites}),
        }

    @classmethod
    def from_json(cls, file: str, forward: str, data: Mapping[str, Any]) -> Placement:
        return cls(
            file=file,
            forward=forward,
            line=int(data.get("line", 0)),
            sites=tuple(
                CaptureSite(s["where"], s["index"], s["value"], s["line"], s.get("reads", ""))
                for s in data.get("sites", ())
            ),
            boundary_minus_element=data.get("boundary_minus_element"),
            elements=tuple(data.get("elements", ())),
            embedding=data.get("embedding", ""),
            last_output=bool(data.get("last_output", False)),
            ambiguous=tuple(data.get("ambiguous", ())),
            residual_dropped=bool(data.get("residual_dropped", False)),
            count_checked_line=data.get("count_checked_line"),
        )


def bound(text: str, num_layers: int) -> int:
    """``"L-1"`` -> ``num_layers - 1`` (the placement vocabulary: ints, ``L``, ``L-k``)."""
    text = text.strip()
    if text.startswith("L"):
        return num_layers - int(text[2:] or 0) if "-" in text else num_layers
    return int(text)


def _span(text: str, num_layers: int) -> tuple[int, int]:
    lo, _, hi = text.partition("..")
    return bound(lo, num_layers), bound(hi or lo, num_layers)


# -- entry classes ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Selection:
    """An entry class's effective selection (``probe.selection.Evaluated``)."""

    rule: SelectionRule | None  # None: no named rule explains the grid, or an unknown name
    rule_name: str | None  # the name in the table ("sorted_set"), kept for messages
    default: DefaultSelection | None
    default_name: str | None
    last_rank_only: bool | None  # only the last pipeline rank selects
    raises_on: tuple[str, ...] = ()  # grid cases on which the setter raises
    inner_raises_on: tuple[str, ...] = ()  # cases on which the inner model's setter raises
    delegates_to: str | None = None  # a wrapper whose language model selects

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Selection:
        rule, default = data.get("rule"), data.get("default")
        return cls(
            rule=_enum_or_none(SelectionRule, rule),
            rule_name=rule,
            default=_enum_or_none(DefaultSelection, default),
            default_name=default,
            last_rank_only=data.get("last_rank_only"),
            raises_on=tuple(data.get("raises_on", ())),
            inner_raises_on=tuple(data.get("inner_raises_on", ())),
            delegates_to=data.get("delegates_to"),
        )


class ArmsVerdict(str, Enum):
    """Whether the EAGLE-3 setter writes the state the capture sites read
    (``probe.tables.setter_arms``)."""

    ARMED = "armed"
    PARTLY = "partly armed"  # some sites read a state only another setter writes
    NOT_ARMED = "not armed"  # no site is armed: nothing is captured
    UNKNOWN = "unknown"  # a setter hands on to a class not read statically


@dataclass(frozen=True)
class SetterArms:
    """The setter-to-loop consistency of one entry class."""

    verdict: ArmsVerdict
    writes: tuple[str, ...]  # states the setters write
    setters: tuple[str, ...]  # "file:Class.method (line N)", outermost first
    unarmed: tuple[tuple[int, str], ...]  # (line, state read) of sites no setter arms
    unread: tuple[str, ...] = ()  # hand-ons not read statically

    def describe(self) -> str:
        """Why nothing (or not everything) is captured, with the lines."""
        reads = sorted({r for _, r in self.unarmed})
        lines = ", ".join(str(line) for line, _ in self.unarmed)
        return (
            f"the EAGLE-3 setter ({'; '.join(self.setters)}) writes only "
            f"{', '.join(self.writes) or 'nothing'}, while the capture at line {lines} reads "
            f"{', '.join(reads)}, which only another setter sets"
        )

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SetterArms:
        return cls(
            verdict=ArmsVerdict(data["verdict"]),
            writes=tuple(data.get("writes", ())),
            setters=tuple(data.get("setters", ())),
            unarmed=tuple((int(u["line"]), str(u["reads"])) for u in data.get("unarmed", ())),
            unread=tuple(data.get("unread", ())),
        )


@dataclass(frozen=True)
class EntryClass:
    """A class a release registers for an architecture, with the rule it was read through."""

    key: str  # "deepseek_v2.py:DeepseekV3ForCausalLM"
    file: str  # the file whose rule applies (a wrapper's language-model file)
    chain: tuple[str, ...]  # the code the selection was read through, outermost first
    needs_reading: tuple[str, ...]  # what the probe could not evaluate
    selection: Selection
    placement: Placement | None  # None when no single decoder-stack forward was found
    placement_missing: str = ""  # why there is no placement
    grid_from: str | None = None  # "file.py:Class.method" whose grid the selection is
    setter_arms: SetterArms | None = None  # None: no setter or placement was read

    @property
    def class_name(self) -> str:
        return self.key.split(":", 1)[1]

    @property
    def model_file(self) -> str:
        """The file that registers the class (``key``'s file)."""
        return self.key.split(":", 1)[0]

    @property
    def placement_problem(self) -> str:
        """Why the placement does not map element ``e`` to boundary ``e`` ("" when it does)."""
        placement = self.placement
        if placement is None:
            return self.placement_missing or "no decoder-stack forward found"
        if placement.ambiguous:
            return f"{placement.describe()}: " + "; ".join(placement.ambiguous)
        if not placement.boundary_exact:
            return (
                f"{placement.describe()}: boundary = element + {placement.boundary_minus_element}"
            )
        return ""


# -- draft-config readers and the runner ------------------------------------------------------


PLUS_ONE = " + 1"
"""Suffix of a probed precedence entry whose ids the reader adds one to: vLLM model runner V2
reads ``target_layer_ids`` as layer outputs (``eagle3_utils.py get_eagle3_aux_layers_from_config``
``[i + 1 for i in target_layer_ids]``), recorded as ``"target_layer_ids + 1"``."""


def split_offset(entry: str) -> tuple[str, int]:
    """``"target_layer_ids + 1"`` -> ``("target_layer_ids", 1)``; a plain path -> offset 0."""
    return (entry[: -len(PLUS_ONE)], 1) if entry.endswith(PLUS_ONE) else (entry, 0)


@dataclass(frozen=True)
class Reader:
    """A function of the release that reads ids out of the drafter's config."""

    file: str  # "vllm/v1/worker/gpu_model_runner.py"
    line: int
    function: str
    # JSON paths, first present wins (a " + 1" suffix: the reader adds one to those ids,
    # split_offset); None: not evaluated
    precedence: tuple[str, ...] | None
    needs_reading: str = ""

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line} {self.function}"


class RunnerDefault(str, Enum):
    """vLLM's default model runner (``vllm/config/vllm.py`` ``use_v2_model_runner``)."""

    V1 = "v1"
    V2 = "v2"
    V2_FOR_ARCHITECTURES = "v2-for-architectures"  # V2 for listed dense, unquantised archs
    V2_BY_CASE = "v2-by-case"  # V2 where the release's own predicate says so (``v2_cases``)


def runner_case(listed: bool, moe: bool, quantized: bool) -> str:
    """The key of one target shape in ``RunnerRule.v2_cases``: ``"listed dense plain"``..."""
    return " ".join(
        (
            "listed" if listed else "unlisted",
            "moe" if moe else "dense",
            "quantized" if quantized else "plain",
        )
    )


@dataclass(frozen=True)
class RunnerRule:
    """How a vLLM release picks its model runner."""

    default: RunnerDefault | None  # None: a default this model does not know
    available: tuple[str, ...]  # ("v1", "v2")
    source: str
    assumes: str = ""  # what the default assumes of the host
    v2_architectures: frozenset[str] = frozenset()  # for V2_FOR_ARCHITECTURES and V2_BY_CASE
    v2_cases: Mapping[str, bool] = field(default_factory=dict)  # runner_case -> V2 (V2_BY_CASE)
    v2_cases_from: str = ""  # file:line of the predicate the cases were evaluated from

    def pick(
        self, architectures: Sequence[str], moe: bool, quantized: bool
    ) -> tuple[str, str] | None:
        """(runner, why) for a target, when the default depends on it; None otherwise."""
        listed = any(a in self.v2_architectures for a in architectures)
        shape = (
            f"{', '.join(architectures) or '?'}"
            + (", MoE" if moe else "")
            + (", quantised" if quantized else "")
        )
        if self.default is RunnerDefault.V2_FOR_ARCHITECTURES:
            runner = "v2" if listed and not moe and not quantized else "v1"
            return runner, (
                f"V2 only for {sorted(self.v2_architectures)} when dense and unquantised; "
                f"this target: {shape}"
            )
        if self.default is RunnerDefault.V2_BY_CASE:
            v2 = self.v2_cases.get(runner_case(listed, moe, quantized))
            if v2 is None:
                return None
            return ("v2" if v2 else "v1"), (
                f"{self.v2_cases_from} evaluated for this target ({shape}; "
                f"{'' if listed else 'not '}in {sorted(self.v2_architectures)}): "
                f"{'V2' if v2 else 'V1'}"
            )
        return None


class DrafterNameMap(str, Enum):
    """How a release renames a drafter's ``architectures`` before its registry lookup (vLLM
    ``transformers_utils/configs/eagle.py`` ``EAGLEConfig``, method eagle3; SGLang: as given)."""

    IDENTITY = "identity"
    PREFIX_UNLESS_MARKED = "eagle3-prefix-unless-marked"  # X -> Eagle3X unless X starts/ends so
    PREFIX_UNLESS_PREFIXED = "eagle3-prefix-unless-prefixed"  # X -> Eagle3X unless X starts so
    PREFIX = "eagle3-prefix"  # X -> Eagle3X always

    def apply(self, name: str) -> str:
        if self is DrafterNameMap.IDENTITY:
            return name
        keep = {
            DrafterNameMap.PREFIX_UNLESS_MARKED: name.startswith("Eagle3")
            or name.endswith("Eagle3"),
            DrafterNameMap.PREFIX_UNLESS_PREFIXED: name.startswith("Eagle3"),
            DrafterNameMap.PREFIX: False,
        }[self]
        return name if keep else f"Eagle3{name}"


@dataclass(frozen=True)
class DrafterRegistry:
    """Which EAGLE-3 drafters a release can load (``probe.registry``, the table's ``drafters``)."""

    registered: frozenset[str]  # names (after name_map) that build an EAGLE-3 drafter
    name_map: DrafterNameMap | None  # None: the rename was not read (no verdict)
    source: str  # file:line of the lookup and the rename
    speculators: Mapping[str, Any] | None = None  # {"types", "eagle3", "default_model_type",
    # "source"}; None: the release reads no speculators format
    fallback: str = ""  # what an unregistered name falls back to (SGLang's Transformers class)

    def refusal(self, draft: Mapping[str, Any]) -> str | None:
        """Why the release cannot load the drafter ``draft`` (its config.json), else None (it
        loads, or the registry was not read)."""
        if self.name_map is None:
            return None
        archs = [a for a in draft.get("architectures") or () if isinstance(a, str)]
        kind = draft.get("speculators_model_type")
        if kind is not None and self.speculators is not None:
            why, archs = self._speculators(kind, draft)
            if why is not None:
                return why
        if not archs:
            return None
        looked_up = [self.name_map.apply(a) for a in archs]
        if any(a in self.registered for a in looked_up):
            return None
        renamed = "" if looked_up == archs else f" (looked up as {', '.join(looked_up)})"
        fallback = f", falls back to {self.fallback}" if self.fallback else ""
        return (
            f"the drafter's architectures {', '.join(archs)}{renamed} name no EAGLE-3 drafter it "
            f"registers{fallback}; it registers {', '.join(sorted(self.registered)) or 'none'} "
            f"({self.source})"
        )

    def _speculators(self, kind: object, draft: Mapping[str, Any]) -> tuple[str | None, list[str]]:
        """A speculators-format drafter: why the release refuses it, else the architecture its
        eagle3 reader maps it to (``[]``: no verdict, the format loads or was not read)."""
        spec = self.speculators or {}
        source = spec.get("source", "")
        if kind not in spec.get("types", ()):
            return (
                f"speculators_model_type {kind!r} is not a format it reads (it reads "
                f"{', '.join(spec.get('types', ())) or 'none'}; {source})"
            ), []
        if kind != "eagle3":
            return None, []
        layer = draft.get("transformer_layer_config")
        model_type = (layer if isinstance(layer, Mapping) else {}).get(
            "model_type", spec.get("default_model_type")
        )
        eagle3 = spec.get("eagle3") or {}
        mapped = spec.get("fixed") or eagle3.get(model_type)
        if mapped is not None:
            return None, [mapped]
        if not eagle3:
            return None, []  # the updater's architecture was not read: no verdict
        return (
            f"its speculators eagle3 reader maps transformer_layer_config.model_type "
            f"{', '.join(sorted(eagle3))} only, this drafter's is {model_type!r}: ValueError at "
            f"start-up ({source})"
        ), []


# -- a release ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReleaseTable:
    """One probed engine release."""

    framework: Framework
    version: str
    wheel: str  # the wheel's file name
    wheel_sha256: str
    architectures: Mapping[str, str]  # architecture -> entry-class key (EAGLE-3 capable)
    unsupported_architectures: Mapping[str, str]  # registered without EAGLE-3 support
    classes: Mapping[str, EntryClass]
    precedence: tuple[str, ...]  # the release's id precedence (empty: needs reading)
    precedence_from: str
    readers: tuple[Reader, ...]
    runner: RunnerRule | None = None  # vLLM releases whose runner default was probed
    grids: Mapping[str, Mapping[str, Mapping[str, Any]]] = field(default_factory=dict)
    # grids["file.py:Class.method"][str(L)][case] = elements, "raises X" or None
    drafter_file: str = ""  # the release's EAGLE-3 drafter file ("" when not probed)
    drafter_flags: Mapping[str, int | None] = field(default_factory=dict)
    # flag -> first line of drafter_file naming it; None: the release ignores the flag
    stored_at: str = ""  # the user-cache file of a table probed on demand ("" when shipped)
    drafters: DrafterRegistry | None = None  # which drafters it loads (None: not probed)
    methods: Mapping[str, Any] = field(default_factory=dict)  # probe/methods.py read_methods

    @property
    def release(self) -> str:
        return f"{self.framework.value}=={self.version}"

    @property
    def path(self) -> str:
        """The table's path in an installed wheel, or in the user's cache."""
        return self.stored_at or f"{DATA_DIR}/{self.framework.value}-{self.version}.json"

    def evaluated_readers(self, file_suffix: str = "") -> list[Reader]:
        """Readers whose precedence was evaluated, optionally only those in ``*file_suffix``."""
        return [
            r
            for r in self.readers
            if r.precedence is not None and str(r.file).endswith(file_suffix)
        ]

    def grid(self, entry: EntryClass, case: str, num_layers: int) -> Any:
        """What ``entry``'s selection code stored for a grid case (list, "raises X", None)."""
        if not entry.grid_from:
            return None
        return self.grids.get(entry.grid_from, {}).get(str(num_layers), {}).get(case)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ReleaseTable:
        """Read a table as the probe writes it (``ContractError`` naming what is malformed)."""
        try:
            return _release_from_json(data)
        except (KeyError, TypeError, ValueError) as exc:
            raise _malformed("release", exc) from exc


def _release_from_json(data: Mapping[str, Any]) -> ReleaseTable:
    placements: dict[tuple[str, str], Placement] = {}
    grids: dict[str, dict[str, dict[str, Any]]] = {}
    for file, mod in data["model_files"].items():
        for forward, summary in mod.get("placement", {}).items():
            placements[(file, forward)] = Placement.from_json(file, forward, summary)
        for qual, row in mod.get("functions", {}).items():
            if "grid" in row:
                grids[f"{file}:{qual}"] = row["grid"]
    classes = {}
    for key, row in data["classes"].items():
        ref = row["placement"]
        placement = placements.get((ref.get("file", ""), ref.get("forward", "")))
        arms = row.get("setter_arms")
        if placement is not None and arms is not None and "armed_placement" in arms:
            # only the sites the EAGLE-3 setter arms capture for this class
            armed = {**arms["armed_placement"], "line": placement.line}
            armed["sites"] = [
                s
                for s in data["model_files"][placement.file]["placement"][placement.forward][
                    "sites"
                ]
                if s["line"] in arms["armed_lines"]
            ]
            placement = Placement.from_json(placement.file, placement.forward, armed)
        classes[key] = EntryClass(
            key=key,
            file=row["file"],
            chain=tuple(row.get("chain", ())),
            needs_reading=tuple(row.get("needs_reading", ())),
            selection=Selection.from_json(row.get("selection", {})),
            placement=placement,
            placement_missing=str(ref.get("ambiguous", "")) if placement is None else "",
            grid_from=row.get("grid_from"),
            setter_arms=None if arms is None else SetterArms.from_json(arms),
        )
    source = data["id_source"]
    runner = data.get("runner")
    return ReleaseTable(
        framework=Framework(data["framework"]),
        version=data["version"],
        wheel=data.get("wheel", {}).get("name", ""),
        wheel_sha256=data.get("wheel", {}).get("sha256", ""),
        architectures=dict(data["architectures"]),
        unsupported_architectures=dict(data.get("unsupported_architectures", {})),
        classes=classes,
        precedence=tuple(source.get("precedence") or ()),
        precedence_from=source.get("precedence_from", ""),
        readers=tuple(
            Reader(
                file=r["file"],
                line=r["line"],
                function=r["function"],
                precedence=tuple(r["precedence"]) if "precedence" in r else None,
                needs_reading=r.get("needs_reading", ""),
            )
            for r in source.get("readers", ())
        ),
        runner=None
        if runner is None
        else RunnerRule(
            default=_enum_or_none(RunnerDefault, runner.get("default")),
            available=tuple(runner.get("available", ("v1", "v2"))),
            source=runner.get("source", ""),
            assumes=runner.get("assumes", ""),
            v2_architectures=frozenset(runner.get("v2_architectures", ())),
            v2_cases=dict(runner.get("v2_cases", {})),
            v2_cases_from=runner.get("v2_cases_from", ""),
        ),
        grids=grids,
        drafter_file=data.get("drafter_flags", {}).get("file", ""),
        drafter_flags=dict(data.get("drafter_flags", {}).get("reads", {})),
        stored_at=str(data.get("stored_at", "")),
        drafters=_drafters(data.get("drafters")),
        methods=dict(data.get("methods", {})),
    )


def _drafters(data: Mapping[str, Any] | None) -> DrafterRegistry | None:
    if data is None:
        return None
    return DrafterRegistry(
        registered=frozenset(data.get("registered", ())),
        name_map=_enum_or_none(DrafterNameMap, data.get("name_map")),
        source=data.get("source", ""),
        speculators=data.get("speculators"),
        fallback=data.get("fallback", ""),
    )


# -- a trainer release --------------------------------------------------------------------------


@dataclass(frozen=True)
class TrainerTable:
    """One probed trainer release (``data/trainers/specforge-0.2.0.json``)."""

    # -- identity ---------------------------------------------------------------------------
    framework: str  # "specforge"
    version: str
    # -- which engine captures its training features ----------------------------------------
    backend: str  # the default backend ("sglang")
    backends: tuple[str, ...]
    backends_source: str
    engine: str | None  # the pinned capture engine release ("sglang==0.5.14"); None: unpinned
    engine_source: str
    # -- how it resolves the ids ------------------------------------------------------------
    resolver_source: str  # "specforge/algorithms/model_providers.py:188"
    resolver_function: str
    reads: str  # the JSON path read
    default: DefaultSelection | None  # its ids when none are given (native, outputs)
    default_name: str | None
    refuses: frozenset[str]  # grid cases it refuses ("two", "four", "negative")
    resolver_needs_reading: str  # non-empty: the resolver was not evaluated
    offline_checks: Mapping[str, str]  # check name ("distinct", "below_depth") -> source
    setter_source: str  # where it hands the ids to the engine's setter

    @property
    def release(self) -> str:
        return f"{self.framework}=={self.version}"

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TrainerTable:
        try:
            resolver = data["resolver"]
            backends = data["backends"]
            return cls(
                framework=data["framework"],
                version=data["version"],
                backend=backends["default"],
                backends=tuple(backends.get("values", ())),
                backends_source=backends.get("source", ""),
                engine=data["engine"].get("release"),
                engine_source=data["engine"].get("source", ""),
                resolver_source=resolver.get("source", ""),
                resolver_function=resolver.get("function", ""),
                reads=resolver.get("reads", ""),
                default=_enum_or_none(DefaultSelection, resolver.get("default")),
                default_name=resolver.get("default"),
                refuses=frozenset(resolver.get("refuses", ())),
                resolver_needs_reading=resolver.get("needs_reading", ""),
                offline_checks=dict(data.get("offline_checks", {})),
                setter_source=data.get("setter", {}).get("source", ""),
            )
        except (KeyError, TypeError, AttributeError) as exc:
            raise _malformed("trainer", exc) from exc


# -- the shipped tables, then the user's cache ------------------------------------------------

SHARED_DIR = "shared"
"""``data/shared/<framework>.json``: entries several shipped releases share, stored once."""

REF = "@"
"""A ``model_files``/``classes`` value ``"@<digest>"`` stands for ``shared[section][digest]``."""

SHARED_SECTIONS: tuple[str, ...] = ("model_files", "classes")
"""The sections whose entries (a model file's probed behaviour, an entry class's rule) are
shared between releases (``probe.tables.compact``)."""

WHOLE_SECTIONS: tuple[str, ...] = (
    "architectures", "unsupported_architectures", "id_source", "runner", "drafter_flags",
    "grid", "sources", "drafters", "methods",
)  # fmt: skip
"""Sections shared whole (``shared[WHOLE][digest]``) when several releases have them equal
(a registry, a reader, the read files' hashes of a post-release)."""

WHOLE = "sections"
"""The shared pool's section holding whole sections (``WHOLE_SECTIONS``)."""


def _data_dir() -> Any:
    return resources.files(DATA_PACKAGE).joinpath("data")


def cache_dir() -> Path:
    """Where probes write tables: ``<user cache>/tables`` (``_io.user_cache_dir``), read after
    the shipped tables."""
    return user_cache_dir() / "tables"


def _release_names(names: Iterable[str]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for name in names:
        if name.endswith(".json") and "-" in name:
            framework, version = name[: -len(".json")].split("-", 1)
            found.setdefault(framework, []).append(version)
    return found


def _shipped() -> dict[str, tuple[str, ...]]:
    """The releases whose tables ship with the package."""
    found = _release_names(e.name for e in _data_dir().iterdir())
    return {fw: tuple(vs) for fw, vs in found.items()}


def shipped_releases() -> dict[str, tuple[str, ...]]:
    """The releases whose tables ship with the package, oldest first (no user-cache table)."""
    return {fw: tuple(sorted(vs, key=_version_key)) for fw, vs in sorted(_shipped().items())}


CHANGES_FILE = "changes.json"
"""``data/changes.json``: per engine, the releases where a probed rule changed
(``probe.report.changes``)."""

COVERAGE_FILE = "coverage.json"
"""``data/coverage.json``: per shipped release, how many registered architectures are answered,
unsupported, crash or unknown (``probe.report.coverage``)."""


def rule_changes() -> dict[str, list[dict[str, Any]]]:
    """The committed change log (``CHANGES_FILE``; empty when not generated)."""
    path = _data_dir().joinpath(CHANGES_FILE)
    if not path.is_file():
        return {}
    log: dict[str, list[dict[str, Any]]] = json.loads(path.read_text(encoding="utf-8"))
    return log


def _cached() -> dict[str, list[str]]:
    """The releases probed into the user's cache (listed on every call: a probe may add one)."""
    try:
        names = [e.name for e in os.scandir(cache_dir()) if e.is_file()]
    except OSError:
        return {}
    return _release_names(names)


def known_releases() -> dict[str, tuple[str, ...]]:
    """``{"sglang": ("0.5.5", ...), "vllm": (...)}``: every shipped table, then every release
    probed into the user's cache, oldest first (an installed engine's table, keyed
    ``<version>+installed.<digest>``, is not a release: ``has_table`` finds it)."""
    found = {fw: list(vs) for fw, vs in _shipped().items()}
    for fw, vs in _cached().items():
        fresh = [v for v in vs if "+" not in v and v not in found.get(fw, ())]
        if fresh:
            found.setdefault(fw, []).extend(fresh)
    return {fw: tuple(sorted(vs, key=_version_key)) for fw, vs in sorted(found.items())}


def has_table(framework: str, version: str) -> bool:
    """Whether ``framework==version`` has a table: shipped, or in the user's cache."""
    return (
        version in _shipped().get(framework, ())
        or (cache_dir() / f"{framework}-{version}.json").is_file()
    )


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.replace("post", ".").split(".") if p.isdigit())


def probe_advice(release: str) -> str:
    """The one command that probes a release into the user's cache (needs the package index)."""
    return f"python -m eagle3_contracts.probe refresh --release {release}"


@cache
def _shared_entries(framework: str) -> dict[str, dict[str, Any]]:
    """The entries several shipped releases of ``framework`` share (read on first use)."""
    path = _data_dir().joinpath(SHARED_DIR).joinpath(f"{framework}.json")
    if not path.is_file():
        return {}
    shared: dict[str, dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))
    return shared


def expand(
    framework: str, table: dict[str, Any], shared: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """A shipped table with its ``"@<digest>"`` references replaced by the shared entries
    (``shared``: the pool to use instead of the package's, for the probe's own data folders)."""
    for section in WHOLE_SECTIONS:
        value = table.get(section)
        if isinstance(value, str) and value.startswith(REF):
            source = _shared_entries(framework) if shared is None else shared
            try:
                table[section] = source.get(WHOLE, {})[value[len(REF) :]]
            except KeyError as exc:
                raise _malformed("release", KeyError(f"{section} {exc} not shared")) from None
    for section in SHARED_SECTIONS:
        rows = table.get(section)
        if not isinstance(rows, dict):
            continue
        refs = {k for k, v in rows.items() if isinstance(v, str) and v.startswith(REF)}
        if refs:
            source = _shared_entries(framework) if shared is None else shared
            pool = source.get(section, {})
            try:
                table[section] = {
                    k: pool[v[len(REF) :]] if k in refs else v for k, v in rows.items()
                }
            except KeyError as exc:
                raise _malformed("release", KeyError(f"{section} entry {exc} not shared")) from None
    return table


def read_json(framework: str, version: str) -> dict[str, Any]:
    """The JSON of one release: the shipped table (its shared entries expanded), else the one
    probed into the user's cache (``ContractError`` listing the known ones if neither)."""
    known = known_releases()
    if framework not in known:
        raise ContractError(
            f"no release tables for framework {framework!r}; known frameworks: "
            f"{', '.join(known)} (e.g. 'sglang==0.5.23')",
            field="convention",
        )
    if not has_table(framework, version):
        raise ContractError(
            f"{framework}=={version} has not been probed; known {framework} releases: "
            f"{', '.join(known[framework])}. Probe it with `{probe_advice(f'{framework}=={version}')}` "
            "(needs the package index; writes to the user cache)",
            field="convention",
        )
    name = f"{framework}-{version}.json"
    if version in _shipped().get(framework, ()):
        text = _data_dir().joinpath(name).read_text(encoding="utf-8")
        return expand(framework, json.loads(text))
    path = cache_dir() / name
    try:
        table: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ContractError(
            f"the cached table {path} cannot be read ({exc}); delete it and re-probe with "
            f"`{probe_advice(f'{framework}=={version}')}`",
            field="convention",
        ) from None
    table.setdefault("stored_at", str(path))
    return table


@cache
def load_table(framework: str, version: str) -> ReleaseTable:
    """The probed table of one release, typed."""
    return ReleaseTable.from_json(read_json(framework, version))


def read_trainer_json(framework: str, version: str) -> dict[str, Any]:
    """The shipped JSON of a trainer release (``data/trainers/specforge-0.2.0.json``)."""
    path = _data_dir().joinpath("trainers").joinpath(f"{framework}-{version}.json")
    if not path.is_file():
        known = sorted(
            e.name[: -len(".json")].replace("-", "==", 1)
            for e in _data_dir().joinpath("trainers").iterdir()
            if e.name.endswith(".json")
        )
        raise ContractError(
            f"{framework}=={version} has not been probed; probed trainer releases: "
            f"{', '.join(known)} (probe it with `python -m eagle3_contracts.probe refresh "
            f"--release {framework}=={version}`, which needs the package index)",
            field="trained_with",
        )
    table: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return table


@cache
def load_trainer_table(framework: str, version: str) -> TrainerTable:
    """The probed table of a trainer release, typed."""
    return TrainerTable.from_json(read_trainer_json(framework, version))


# -- what a release answers ------------------------------------------------------------------

MODEL_TYPE_FILES: dict[str, str] = {
    "deepseek_v2": "deepseek_v2.py",
    "deepseek_v3": "deepseek_v2.py",
    "deepseek_v32": "deepseek_v2.py",
    "kimi_k2": "deepseek_v2.py",
    "kimi_k25": "deepseek_v2.py",
    "mistral": "llama.py",
    "llama": "llama.py",
}
"""``model_type`` values whose model file is not ``<model_type>.py`` (Kimi-K2.5's language model
is ``DeepseekV3ForCausalLM``: its wrapper delegates capture to it)."""

WRAPPER_ARCHITECTURES: dict[str, str] = {
    "KimiK25ForConditionalGeneration": "DeepseekV3ForCausalLM",
}
"""Multimodal wrappers whose language model the engine builds at run time (vLLM's
``init_vllm_registered_model``): the probe cannot read that class statically, these can."""


def newest_release(framework: str) -> str:
    """The newest probed release of an engine (what its unversioned name means)."""
    known = known_releases().get(framework)
    if not known:
        raise ContractError(f"no probed releases of {framework}", field="serve_with")
    return known[-1]


def last_stage_only(release: str | SystemName, entry_class: str) -> bool | None:
    """Whether the entry class's setter captures only on the last pipeline rank (its probed
    ``if not self.pp_group.is_last_rank``); ``None`` when the probe did not read it. A release
    already parsed (``Feed.spec``) is not parsed again."""
    spec = system_name(release, field="release")
    if not isinstance(spec, EngineSpec) or spec.version is None:
        return None
    row = load_table(spec.framework, spec.version).classes.get(entry_class)
    return row.selection.last_rank_only if row else None


# -- choosing the model file ------------------------------------------------------------------


def model_file_for(
    table: ReleaseTable, *, model_type: str | None = None, architectures: Sequence[str] = ()
) -> str:
    """The entry-class key (``"deepseek_v2.py:DeepseekV3ForCausalLM"``) serving the target."""
    archs = table.architectures
    for arch in architectures:
        for name in (arch, WRAPPER_ARCHITECTURES.get(arch)):
            if name and name in archs:
                key = archs[name]
                delegates = table.classes[key].selection.delegates_to is not None
                if name == arch and delegates and arch in WRAPPER_ARCHITECTURES:
                    continue  # a wrapper whose language model is read through the map below
                return key
    if model_type:
        main = _main_key(table.classes, MODEL_TYPE_FILES.get(model_type, f"{model_type}.py"))
        if main is not None:
            return main
    files = sorted({k.split(":", 1)[0] for k in table.classes})
    given = ", ".join(
        ([f"architectures {list(architectures)}"] if architectures else [])
        + ([f"model_type {model_type!r}"] if model_type else [])
    )
    raise ContractError(
        f"{table.release} has no probed model file for {given or 'an unknown target'}: pass the "
        f"target's config (architectures/model_type). Known architectures: "
        f"{', '.join(sorted(archs)[:40])}{' ...' if len(archs) > 40 else ''}; "
        f"model files: {', '.join(files)}",
        field="architectures",
    )


def _main_key(classes: Mapping[str, EntryClass], file: str) -> str | None:
    """The entry class of model file ``file``: its ``...ForCausalLM`` when it has several."""
    keys = [k for k in classes if k.split(":", 1)[0] == file]
    causal = [k for k in keys if k.endswith("ForCausalLM")]
    return sorted(causal or keys)[0] if keys else None
