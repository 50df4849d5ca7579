"""Which EAGLE-3 drafters a release can load at all: read from its own registry code.

- **SGLang** resolves a drafter's ``architectures`` in the ``EntryClass`` lists of its model
  files, falling back to ``TransformersForCausalLM`` (``srt/models/registry.py``
  ``_normalize_archs``). Its EAGLE-3 worker then reads ``draft_model.hot_token_id`` unguarded
  (0.5.23 ``speculative/eagle_worker_v2.py:366``, 0.5.2 ``eagle_worker.py:154``): only a class
  that sets ``self.hot_token_id`` is an EAGLE-3 drafter; any other raises AttributeError at
  start-up. The release reads no speculators format.
- **vLLM** renames the drafter's ``architectures`` for method ``eagle3`` (``EAGLEConfig``,
  ``transformers_utils/configs/eagle.py``; the rename is *evaluated* in the sandbox and matched
  to a ``DrafterNameMap``) and looks the result up in ``model_executor/models/registry.py``; a
  speculators-format config (``speculators_model_type``) is first turned into an HF config by
  ``transformers_utils/configs/speculators/algos.py``, whose eagle3 updater maps
  ``transformer_layer_config.model_type`` to one architecture and raises for any other.

The result is the table's optional ``drafters`` section (``conventions.releases.DrafterRegistry``).
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from eagle3_contracts.conventions.releases import DrafterNameMap
from eagle3_contracts.probe.whitelist import check_pure, compile_pure

HOT_TOKEN_ID = "hot_token_id"
"""The attribute SGLang's EAGLE-3 worker reads off the drafter without a default."""

SGLANG_WORKERS: tuple[str, ...] = (
    "sglang/srt/speculative/eagle_worker.py",
    "sglang/srt/speculative/eagle_worker_v2.py",
)
SGLANG_REGISTRY = "sglang/srt/models/registry.py"
VLLM_EAGLE_CONFIG = "vllm/transformers_utils/configs/eagle.py"
VLLM_SPECULATORS = "vllm/transformers_utils/configs/speculators/algos.py"

NAME_PROBES: tuple[str, ...] = (
    "LlamaForCausalLM",
    "LlamaForCausalLMEagle3",
    "Eagle3LlamaForCausalLM",
    "Qwen3ForCausalLMEagle3Draft",
)
"""Drafter architecture names a release's rename is evaluated on (plain, suffixed, prefixed,
marked mid-name): enough to tell every ``DrafterNameMap`` apart."""


def entry_class_names(tree: ast.Module) -> list[str]:
    """The names of a model file's ``EntryClass`` (a class or a list of classes)."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "EntryClass" for t in node.targets
        ):
            value = node.value
            items = value.elts if isinstance(value, (ast.List, ast.Tuple)) else [value]
            return [ast.unparse(i) for i in items if isinstance(i, (ast.Name, ast.Attribute))]
    return []


def _parse(path: Path) -> ast.Module | None:
    try:
        return ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return None


def read_drafters(framework: str, root: Path, models: Mapping[str, ast.Module]) -> dict[str, Any]:
    """The ``drafters`` section of a release's table. ``models``: model file name -> tree."""
    if framework == "sglang":
        return _sglang(root, models)
    return _vllm(root)


# -- SGLang -------------------------------------------------------------------------------------


def _sets_hot_token_id(node: ast.ClassDef) -> bool:
    return any(
        isinstance(sub, ast.Attribute)
        and sub.attr == HOT_TOKEN_ID
        and isinstance(sub.ctx, ast.Store)
        and isinstance(sub.value, ast.Name)
        and sub.value.id == "self"
        for sub in ast.walk(node)
    )


def _sglang(root: Path, models: Mapping[str, ast.Module]) -> dict[str, Any]:
    classes: dict[str, ast.ClassDef] = {}
    for tree in models.values():
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                classes.setdefault(node.name, node)

    def drafter(name: str, depth: int = 0) -> bool:
        node = classes.get(name)
        if node is None or depth > 12:
            return False
        if _sets_hot_token_id(node):
            return True
        bases = [ast.unparse(b).rsplit(".", 1)[-1] for b in node.bases]
        return any(drafter(b, depth + 1) for b in bases)

    registered = sorted(
        {n.rsplit(".", 1)[-1] for tree in models.values() for n in entry_class_names(tree)}
    )
    read = _unguarded_read(root)
    out: dict[str, Any] = {
        "registered": [n for n in registered if drafter(n)],
        "name_map": DrafterNameMap.IDENTITY.value if read else None,
        "source": read or f"no unguarded .{HOT_TOKEN_ID} read in {', '.join(SGLANG_WORKERS)}",
        "speculators": None,
    }
    fallback = _fallback_line(root)
    if fallback:
        out["fallback"] = fallback
    return out


def _unguarded_read(root: Path) -> str | None:
    """``file:line`` where the EAGLE-3 worker reads ``<runner>.model.hot_token_id`` directly."""
    for rel in SGLANG_WORKERS:
        tree = _parse(root / rel)
        for node in ast.walk(tree) if tree else ():
            if (
                isinstance(node, ast.Attribute)
                and node.attr == HOT_TOKEN_ID
                and isinstance(node.value, ast.Attribute)
                and node.value.attr == "model"
            ):
                return f"{rel}:{node.lineno}"
    return None


def _fallback_line(root: Path) -> str | None:
    tree = _parse(root / SGLANG_REGISTRY)
    for node in ast.walk(tree) if tree else ():
        if isinstance(node, ast.Constant) and node.value == "TransformersForCausalLM":
            return f"{SGLANG_REGISTRY}:{node.lineno} TransformersForCausalLM"
    return None


# -- vLLM ---------------------------------------------------------------------------------------


def _vllm(root: Path) -> dict[str, Any]:
    registry = "vllm/model_executor/models/registry.py"
    names, line = _vllm_registered(root / registry)
    name_map, map_source = _vllm_name_map(root / VLLM_EAGLE_CONFIG)
    out: dict[str, Any] = {
        "registered": names,
        "name_map": name_map,
        "source": f"{registry}:{line}; {map_source}",
        "speculators": _vllm_speculators(root / VLLM_SPECULATORS),
    }
    return out


def _marked(name: str) -> bool:
    return "Eagle3" in name


def _vllm_registered(path: Path) -> tuple[list[str], int]:
    """Registry names that build an EAGLE-3 drafter: a name marked ``Eagle3`` or one whose
    module is an ``*eagle3*`` file. Every rename result is marked, so no other name matters."""
    tree = _parse(path)
    names: set[str] = set()
    first = 0
    for node in ast.walk(tree) if tree else ():
        if not isinstance(node, ast.Dict):
            continue
        for key, value in zip(node.keys, node.values, strict=False):
            if not (
                isinstance(key, ast.Constant)
                and isinstance(key.value, str)
                and isinstance(value, ast.Tuple)
                and value.elts
                and isinstance(value.elts[0], ast.Constant)
            ):
                continue
            if _marked(key.value) or "eagle3" in str(value.elts[0].value):
                names.add(key.value)
                first = first or key.lineno
    return sorted(names), first


def _vllm_name_map(path: Path) -> tuple[str | None, str]:
    """The rename ``EAGLEConfig`` applies for method eagle3, evaluated on ``NAME_PROBES``."""
    rel = VLLM_EAGLE_CONFIG
    tree = _parse(path)
    if tree is None:
        return None, f"{rel}: not in the wheel"
    for node in ast.walk(tree):
        if not (
            isinstance(node, ast.If)
            and any(
                isinstance(c, ast.Constant) and c.value == "eagle3" for c in ast.walk(node.test)
            )
        ):
            continue
        for sub in node.body:
            comp = sub.value if isinstance(sub, ast.Assign) else None
            if not (
                isinstance(sub, ast.Assign)
                and "architectures" in ast.unparse(sub.targets[0])
                and isinstance(comp, ast.ListComp)
                and len(comp.generators) == 1
            ):
                continue
            found = _evaluate_rename(comp, rel)
            if found is None:
                return None, f"{rel}:{sub.lineno}: the rename is not a pure expression"
            return found, f"{rel}:{sub.lineno} renames it ({found})"
    return None, f"{rel}: no eagle3 rename found"


def _evaluate_rename(comp: ast.ListComp, rel: str) -> str | None:
    gen = comp.generators[0]
    func = ast.parse("def _rename(names):\n    return []").body[0]
    assert isinstance(func, ast.FunctionDef)
    loop = ast.comprehension(
        target=gen.target, iter=ast.Name("names", ast.Load()), ifs=gen.ifs, is_async=0
    )
    func.body = [ast.Return(ast.ListComp(elt=comp.elt, generators=[loop]))]
    ast.copy_location(func, comp)
    func = ast.fix_missing_locations(func)
    if check_pure(func) is not None:
        return None
    rename = compile_pure(func, source_name=rel)
    try:
        got = rename(list(NAME_PROBES))
    except Exception:  # the released expression's own error on our probes
        return None
    fits = [m for m in DrafterNameMap if [m.apply(n) for n in NAME_PROBES] == got]
    return fits[0].value if len(fits) == 1 else None


def _vllm_speculators(path: Path) -> dict[str, Any] | None:
    """The speculators formats the release reads (``@register_speculator("eagle3")``) and the
    eagle3 updater's ``model_type -> architecture`` map; None when the release has none."""
    rel = VLLM_SPECULATORS
    tree = _parse(path)
    if tree is None:
        return None
    types: list[str] = []
    eagle3: dict[str, str] = {}
    default = None
    line = 0
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef):
            continue
        for deco in node.decorator_list:
            if (
                isinstance(deco, ast.Call)
                and ast.unparse(deco.func) == "register_speculator"
                and deco.args
                and isinstance(deco.args[0], ast.Constant)
            ):
                name = str(deco.args[0].value)
                types.append(name)
                if name == "eagle3":
                    line = node.lineno
                    eagle3, default, fixed = _arch_map(node)
    out: dict[str, Any] = {
        "types": sorted(types),
        "eagle3": eagle3,
        "default_model_type": default,
        "source": f"{rel}:{line}",
    }
    if fixed:
        out["fixed"] = fixed  # one architecture whatever the model_type (vllm 0.21.0)
    return out


def _arch_map(func: ast.FunctionDef) -> tuple[dict[str, str], str | None, str | None]:
    """The eagle3 updater's ``model_type -> architecture`` dict and default ``model_type``
    (vllm 0.28.0 ``algos.py:41-48``), or the one architecture it always writes
    (``pre_trained_config["architectures"] = ["Eagle3LlamaForCausalLM"]``, vllm 0.21.0)."""
    found: dict[str, str] = {}
    default = None
    fixed = None
    for node in ast.walk(func):
        fixed = _fixed_architecture(node) or fixed
        if isinstance(node, ast.Assign) and (table := _constant_dict(node.value)) is not None:
            found = table
        default = _model_type_default(node) or default
    return found, default, fixed


def _fixed_architecture(node: ast.AST) -> str | None:
    """``x["architectures"] = ["Name"]``: the one architecture written."""
    if not isinstance(node, ast.Assign) or not isinstance(node.targets[0], ast.Subscript):
        return None
    key = node.targets[0].slice
    if not (isinstance(key, ast.Constant) and key.value == "architectures"):
        return None
    value = node.value
    if isinstance(value, ast.List) and len(value.elts) == 1:
        only = value.elts[0]
        return str(only.value) if isinstance(only, ast.Constant) else None
    return None


def _constant_dict(value: ast.expr) -> dict[str, str] | None:
    """A dict literal of constants, as strings (``None`` for anything else)."""
    if not isinstance(value, ast.Dict):
        return None
    pairs = list(zip(value.keys, value.values, strict=False))
    if not all(isinstance(k, ast.Constant) and isinstance(v, ast.Constant) for k, v in pairs):
        return None
    return {str(k.value): str(v.value) for k, v in pairs}  # type: ignore[attr-defined,union-attr]


def _model_type_default(node: ast.AST) -> str | None:
    """``x.get("model_type", "llama")``: the default model type."""
    if not (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "get"
        and len(node.args) == 2
    ):
        return None
    key, default = node.args
    if isinstance(key, ast.Constant) and key.value == "model_type":
        return str(default.value) if isinstance(default, ast.Constant) else None
    return None
