"""Release-pinned conventions: ``"sglang==0.5.23"`` read from that release's probed code.

Each supported (framework, release) has a table produced by ``python -m eagle3_contracts.probe
refresh`` from the released wheel, shipped as package data and read through
``conventions.release_table``. ``release_convention`` picks the target's model file from its
``architectures`` (the class names the engine registers) or ``model_type``, and turns that file's
probed rule into a ``Convention``. What a name means (``sglang`` = the newest probed release,
``vllm-nested`` = ``vllm==0.33.0:v1``) is decided once, in ``conventions.names``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from eagle3_contracts.conventions import release_table
from eagle3_contracts.conventions._entry import Convention, PipelineParallel, Role
from eagle3_contracts.conventions.names import EngineSpec, parse_system
from eagle3_contracts.conventions.release_table import EntryClass, ReleaseTable, load_table
from eagle3_contracts.errors import ContractError


def newest_release(framework: str) -> str:
    """The newest probed release of an engine (what its unversioned name means)."""
    known = release_table.known_releases().get(framework)
    if not known:
        raise ContractError(f"no probed releases of {framework}", field="serve_with")
    return known[-1]


def last_stage_only(release: str, entry_class: str) -> bool | None:
    """Whether the entry class's setter captures only on the last pipeline rank (its probed
    ``if not self.pp_group.is_last_rank``); ``None`` when the probe did not read it."""
    spec = parse_system(release, field="release")
    if not isinstance(spec, EngineSpec) or spec.version is None:
        return None
    entry = load_table(spec.framework, spec.version).classes.get(entry_class)
    return entry.selection.last_rank_only if entry is not None else None


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


def convention_from_table(table: ReleaseTable, key: str) -> Convention:
    """Turn one probed entry class of a release table into a ``Convention``."""
    release = table.release
    entry = table.classes[key]
    where = f"{release} {entry.file} ({entry.class_name})"
    selection = entry.selection
    placement = entry.placement
    problems = list(entry.needs_reading)
    if selection.rule is None:
        problems.append(f"selection rule {selection.rule_name!r} has no registry equivalent")
    if placement is None or not placement.boundary_exact:
        problems.append(f"placement not boundary-exact: {entry.placement_problem}")
    default = selection.default.registry_default if selection.default else None
    if default is None:
        problems.append(f"no-ids default {selection.default_name!r} has no registry equivalent")
    if not table.precedence:
        problems.append("the draft-config reader needed reading (no evaluated precedence)")
    if problems or selection.rule is None or placement is None or default is None:
        raise ContractError(
            f"{where}: the probed code cannot back a convention: " + "; ".join(problems),
            field="convention",
        )
    meaning, offset_rule = selection.rule.registry_rule
    embedding = placement.embedding
    notes = [
        f"Probed from the released wheel {table.wheel or release}: " + " -> ".join(entry.chain),
        f"Ids read from {' then '.join(table.precedence)} ({table.precedence_from}).",
        f"Placement: {placement.file} {placement.forward}: "
        + "; ".join(
            f"{s.where} tests {s.index} and stores {s.value} (line {s.line})"
            for s in placement.sites
        ),
    ]
    if selection.raises_on:
        notes.append(f"The selection raises for grid cases {list(selection.raises_on)}.")
    if selection.inner_raises_on:
        notes.append(f"The inner model's setter raises for {list(selection.inner_raises_on)}.")
    fields: dict[str, Any] = {
        "name": f"{release}:{entry.file}",
        "system": f"{table.framework.label} {table.version}, {entry.file} ({entry.class_name})",
        "role": Role.ENGINE,
        "meaning": meaning,
        "offset_rule": offset_rule,
        "id_paths": table.precedence,
        "default": default,
        "concat_order": "ascending",
        "dedup": selection.rule.dedup,
        "embedding_reachable": embedding == "captured",
        "last_output_reachable": placement.last_output,
        "pipeline_parallel": (
            PipelineParallel.LAST_STAGE_ONLY
            if selection.last_rank_only
            else PipelineParallel.DEPENDS
        ),
        "notes": tuple(notes),
        "sources": (
            f"{release} wheel {table.wheel or '?'} sha256 {(table.wheel_sha256 or '?')[:16]}",
            f"{table.path} classes[{key!r}]",
        ),
        "release": release,
        "captures_before_layer": any(
            s.where in ("before layer", "into layer") for s in placement.sites
        ),
        "pp_split_rule": table.framework.value,
        "embedding_caveat": "" if embedding == "captured" else embedding,
    }
    return Convention(**fields)
