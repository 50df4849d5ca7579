"""vLLM's default model runner per target shape, evaluated from the release's own predicate.

``VllmConfig.use_v2_model_runner`` (``vllm/config/vllm.py``) asks
``_is_default_v2_model_runner_model`` whether a model defaults to V2. Its rule changed across
releases (0.22.0 ``vllm.py:518-532``: V2 only for a listed, dense, unquantised architecture;
0.25.0 ``vllm.py:557-574`` and 0.28.0 ``vllm.py:691-711``: V2 for any dense model and for a
listed MoE), so it is not read as a per-release constant: the predicate is compiled alone in the
sandbox (``whitelist.compile_pure``), its module-level list bound to the literal the release
defines, and called on every target shape ``conventions.releases.runner_case`` names.
"""

from __future__ import annotations

import ast
import itertools
from types import SimpleNamespace
from typing import Any

from eagle3_contracts.conventions.releases import runner_case
from eagle3_contracts.probe.whitelist import check_pure, compile_pure

PREDICATE = "_is_default_v2_model_runner_model"
LIST_NAME = "DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES"
LIST_GETTER = "default_v2_model_runner_architectures"
"""0.28.0 ``vllm.py:83-93`` reads the list through this getter (ROCm drops one name: the
evaluation assumes a CUDA host, as ``RunnerRule.assumes`` says)."""

UNLISTED = "UnlistedForCausalLM"
"""An architecture in no release's V2 list."""


def listed_architectures(tree: ast.Module) -> tuple[list[str], int | None]:
    """The release's module-level V2 architecture list (sorted) and its line."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == LIST_NAME for t in node.targets
        ):
            names = sorted(
                c.value
                for c in ast.walk(node.value)
                if isinstance(c, ast.Constant) and isinstance(c.value, str)
            )
            return names, node.lineno
    return [], None


def v2_cases(tree: ast.Module, rel_path: str) -> dict[str, Any] | None:
    """``{"v2_cases": {case: bool}, "v2_cases_from": "file:line ..."}``, or None when the
    predicate is absent, not pure with the list bound, or reads what the shapes do not set."""
    func = next(
        (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == PREDICATE),
        None,
    )
    names, _ = listed_architectures(tree)
    if func is None or not names:
        return None
    listed = frozenset(names)
    bindings: dict[str, Any] = {LIST_NAME: listed, LIST_GETTER: lambda: listed}
    if check_pure(func, free_names=bindings) is not None:
        return None
    predicate = compile_pure(func, source_name=rel_path, bindings=bindings)
    cases: dict[str, bool] = {}
    for is_listed, moe, quantized in itertools.product((True, False), repeat=3):
        model_config = SimpleNamespace(
            runner_type="generate",
            architectures=[names[0] if is_listed else UNLISTED],
            is_moe=moe,
            is_quantized=quantized,
            quantization="fp8" if quantized else None,
            is_hybrid=False,
            is_attention_free=False,
        )
        try:
            answer = predicate(SimpleNamespace(model_config=model_config))
        except Exception:  # the released code read something these shapes do not set
            return None
        if not isinstance(answer, bool):
            return None
        cases[runner_case(is_listed, moe, quantized)] = answer
    return {"v2_cases": cases, "v2_cases_from": f"{rel_path}:{func.lineno} {PREDICATE}"}
