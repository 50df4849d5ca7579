"""Release-pinned conventions: ``"sglang==0.5.23"`` read from that release's probed code.

Each supported (framework, release) has a table produced by ``python -m eagle3_contracts.probe
refresh`` from the released wheel and shipped as package data (``conventions/data/*.json``, byte-equal
to ``goldens/registry/*.json``). ``release_convention`` picks the target's model file from its
``architectures`` (the class names the engine registers) or ``model_type``, and turns that file's
probed rule into a ``Convention``. What a name means (``sglang`` = the newest probed release,
``vllm-nested`` = ``vllm==0.33.0:v1``) is decided once, in ``conventions.names``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import cache
from importlib import resources
from typing import Any

from eagle3_contracts.conventions._entry import (
    Convention,
    Dedup,
    DefaultRule,
    Meaning,
    OffsetRule,
    PipelineParallel,
    Role,
)
from eagle3_contracts.conventions.names import EngineSpec, parse_system
from eagle3_contracts.errors import ContractError

FRAMEWORKS: dict[str, str] = {"sglang": "SGLang", "vllm": "vLLM"}


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

_RULES: dict[str, tuple[Meaning, OffsetRule]] = {
    "plus_one": (Meaning.OUTPUT, OffsetRule.PLUS_ONE_ALWAYS),
    "identity": (Meaning.BOUNDARY, OffsetRule.BOUNDARY),
    "sorted_set": (Meaning.BOUNDARY, OffsetRule.BOUNDARY),
    "plus_one_if_first_is_one": (Meaning.CONDITIONAL, OffsetRule.PLUS_ONE_IF_FIRST_IS_ONE),
    "identity_if_max_is_L_else_plus_one": (Meaning.CONDITIONAL, OffsetRule.LOOP_IF_MAX_IS_L),
}
"""Probed selection rule (ids -> capture-set elements) -> the registry's vocabulary, valid when
the placement maps element e to boundary e (``boundary_minus_element == 0``)."""

_DEFAULTS: dict[str, DefaultRule] = {
    "2,L//2,L-3": DefaultRule.BOUNDARIES_2_MID_LM3,
    "3,L//2+1,L-2": DefaultRule.BOUNDARIES_3_MIDP1_LM2,
}


# -- the shipped tables -----------------------------------------------------------------------


def _data_dir() -> Any:
    return resources.files("eagle3_contracts.conventions").joinpath("data")


def known_releases() -> dict[str, tuple[str, ...]]:
    """``{"sglang": ("0.5.5", ...), "vllm": (...)}`` for every shipped table, oldest first."""
    found: dict[str, list[str]] = {}
    for entry in _data_dir().iterdir():
        name = entry.name
        if name.endswith(".json") and "-" in name:
            framework, version = name[: -len(".json")].split("-", 1)
            found.setdefault(framework, []).append(version)
    return {fw: tuple(sorted(vs, key=_version_key)) for fw, vs in sorted(found.items())}


def newest_release(framework: str) -> str:
    """The newest probed release of an engine (what its unversioned name means)."""
    known = known_releases().get(framework)
    if not known:
        raise ContractError(f"no probed releases of {framework}", field="serve_with")
    return known[-1]


def last_stage_only(release: str, entry_class: str) -> bool | None:
    """Whether the entry class's setter captures only on the last pipeline rank (its probed
    ``if not self.pp_group.is_last_rank``); ``None`` when the probe did not read it."""
    spec = parse_system(release, field="release")
    if not isinstance(spec, EngineSpec) or spec.version is None:
        return None
    row = load_table(spec.framework, spec.version)["classes"].get(entry_class)
    flag = row["selection"].get("last_rank_only") if row else None
    return flag if isinstance(flag, bool) else None


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.replace("post", ".").split(".") if p.isdigit())


@cache
def load_table(framework: str, version: str) -> dict[str, Any]:
    """The probed table of one release (``ContractError`` listing the known ones if absent)."""
    known = known_releases()
    if framework not in known:
        raise ContractError(
            f"no release tables for framework {framework!r}; known frameworks: "
            f"{', '.join(known)} (e.g. 'sglang==0.5.23')",
            field="convention",
        )
    if version not in known[framework]:
        raise ContractError(
            f"{framework}=={version} has not been probed; known {framework} releases: "
            f"{', '.join(known[framework])}. Probe it with `python -m eagle3_contracts.probe "
            f"refresh --release {framework}=={version}` (needs the package index)",
            field="convention",
        )
    text = _data_dir().joinpath(f"{framework}-{version}.json").read_text(encoding="utf-8")
    table: dict[str, Any] = json.loads(text)
    return table


@cache
def load_trainer_table(framework: str, version: str) -> dict[str, Any]:
    """The probed table of a trainer release (``data/trainers/specforge-0.2.0.json``)."""
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


# -- choosing the model file ------------------------------------------------------------------


def model_file_for(
    table: dict[str, Any], *, model_type: str | None = None, architectures: Sequence[str] = ()
) -> str:
    """The entry-class key (``"deepseek_v2.py:DeepseekV3ForCausalLM"``) serving the target."""
    release = f"{table['framework']}=={table['version']}"
    archs = table["architectures"]
    classes = table["classes"]
    for arch in architectures:
        for name in (arch, WRAPPER_ARCHITECTURES.get(arch)):
            if name and name in archs:
                key = archs[name]
                if name == arch and _delegates(classes[key]) and arch in WRAPPER_ARCHITECTURES:
                    continue  # a wrapper whose language model is read through the map below
                return str(key)
    if model_type:
        key = _main_key(classes, MODEL_TYPE_FILES.get(model_type, f"{model_type}.py"))
        if key is not None:
            return key
    files = sorted({k.split(":", 1)[0] for k in classes})
    given = ", ".join(
        ([f"architectures {list(architectures)}"] if architectures else [])
        + ([f"model_type {model_type!r}"] if model_type else [])
    )
    raise ContractError(
        f"{release} has no probed model file for {given or 'an unknown target'}: pass the "
        f"target's config (architectures/model_type). Known architectures: "
        f"{', '.join(sorted(archs)[:40])}{' ...' if len(archs) > 40 else ''}; "
        f"model files: {', '.join(files)}",
        field="architectures",
    )


def _delegates(row: dict[str, Any]) -> bool:
    return "delegates_to" in row.get("selection", {})


def _main_key(classes: dict[str, Any], file: str) -> str | None:
    """The entry class of model file ``file``: its ``...ForCausalLM`` when it has several."""
    keys = [k for k in classes if k.split(":", 1)[0] == file]
    causal = [k for k in keys if k.endswith("ForCausalLM")]
    return sorted(causal or keys)[0] if keys else None


# -- building the Convention ------------------------------------------------------------------


def release_convention(
    framework: str,
    version: str,
    *,
    model_type: str | None = None,
    architectures: Sequence[str] = (),
) -> Convention:
    """The ``Convention`` of ``framework==version`` for the target's model file.

    Raises ``ContractError`` for an unknown release, an unknown model file, or a model file
    whose probed code needed reading (listing what was not understood).
    """
    framework = framework.strip().lower()
    table = load_table(framework, version.strip())
    key = model_file_for(table, model_type=model_type, architectures=tuple(architectures))
    return convention_from_table(table, key)


def convention_from_table(table: dict[str, Any], key: str) -> Convention:
    """Turn one probed entry class of a release table into a ``Convention``."""
    framework, version = table["framework"], table["version"]
    release = f"{framework}=={version}"
    row = table["classes"][key]
    cls = key.split(":", 1)[1]
    file = row["file"]  # the file whose rule applies (a wrapper's language-model file)
    where = f"{release} {file} ({cls})"
    selection = row["selection"]
    placement = _placement(table, row)
    problems = list(row["needs_reading"])
    rule = selection.get("rule")
    if rule not in _RULES:
        problems.append(f"selection rule {rule!r} has no registry equivalent")
    if placement.get("boundary_minus_element") != 0:
        problems.append(
            f"placement {placement.get('ambiguous') or placement} is not boundary-exact"
        )
    default = _DEFAULTS.get(selection.get("default") or "")
    if default is None:
        problems.append(f"no-ids default {selection.get('default')!r} has no registry equivalent")
    precedence = table["id_source"]["precedence"]
    if not precedence:
        problems.append("the draft-config reader needed reading (no evaluated precedence)")
    if problems:
        raise ContractError(
            f"{where}: the probed code cannot back a convention: " + "; ".join(problems),
            field="convention",
        )
    meaning, offset_rule = _RULES[rule]
    embedding = placement["embedding"]
    notes = [
        f"Probed from the released wheel {table.get('wheel', {}).get('name', release)}: "
        + " -> ".join(row["chain"]),
        f"Ids read from {' then '.join(precedence)} "
        f"({table['id_source'].get('precedence_from', '')}).",
        f"Placement: {placement['file']} {placement['forward']}: "
        + "; ".join(
            f"{s['where']} tests {s['index']} and stores {s['value']} (line {s['line']})"
            for s in placement["sites"]
        ),
    ]
    if selection.get("raises_on"):
        notes.append(f"The selection raises for grid cases {selection['raises_on']}.")
    if selection.get("inner_raises_on"):
        notes.append(f"The inner model's setter raises for {selection['inner_raises_on']}.")
    fields: dict[str, Any] = {
        "name": f"{release}:{file}",
        "system": f"{FRAMEWORKS.get(framework, framework)} {version}, {file} ({cls})",
        "role": Role.ENGINE,
        "meaning": meaning,
        "offset_rule": offset_rule,
        "id_paths": tuple(precedence),
        "default": default,
        "concat_order": "ascending",
        "dedup": Dedup.SORTED_SET if rule == "sorted_set" else Dedup.MEMBERSHIP,
        "embedding_reachable": embedding == "captured",
        "last_output_reachable": bool(placement["last_output"]),
        "pipeline_parallel": (
            PipelineParallel.LAST_STAGE_ONLY
            if selection.get("last_rank_only")
            else PipelineParallel.DEPENDS
        ),
        "notes": tuple(notes),
        "sources": (
            f"{release} wheel {table.get('wheel', {}).get('name', '?')} "
            f"sha256 {table.get('wheel', {}).get('sha256', '?')[:16]}",
            f"goldens/registry/{framework}-{version}.json classes[{key!r}]",
        ),
        "release": release,
        "captures_before_layer": any(
            s["where"] in ("before layer", "into layer") for s in placement["sites"]
        ),
        "pp_split_rule": framework,
        "embedding_caveat": "" if embedding == "captured" else embedding,
    }
    return Convention(**fields)


def _placement(table: dict[str, Any], row: dict[str, Any]) -> dict[str, Any]:
    ref: dict[str, Any] = row["placement"]
    if "ambiguous" in ref:
        return ref
    summary = table["model_files"][ref["file"]]["placement"][ref["forward"]]
    return {**summary, "file": ref["file"], "forward": ref["forward"]}
