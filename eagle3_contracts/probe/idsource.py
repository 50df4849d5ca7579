"""Where a release reads a drafter's layer ids from, and in what precedence.

Every function of a reader file that mentions ``eagle_aux_hidden_state_layer_ids`` is found. A
pure function is evaluated whole; otherwise the smallest statement holding the read (its ``try``
block, typically) is evaluated alone when its only free names are declared stub inputs (the
draft's ``ModelConfig``, ``self``...). Each is called on a grid of draft configs (top-level ids,
nested ``eagle_config`` ids, both, neither, ...) and the precedence is read off the answers.
Everything else is listed as a read site with its line, marked *needs reading*.
"""

from __future__ import annotations

import ast
from typing import Any

from eagle3_contracts.conventions.hf import TOP_LEVEL as KEY
from eagle3_contracts.conventions.releases import PLUS_ONE as OFFSET
from eagle3_contracts.conventions.releases import split_offset
from eagle3_contracts.probe.selection import iter_functions
from eagle3_contracts.probe.stubs import Stub, World, namespace
from eagle3_contracts.probe.whitelist import (
    SAFE_BUILTINS,
    SAFE_EXCEPTIONS,
    check_pure,
    compile_pure,
    compile_snippet,
)

TOP = [1, 15, 28]
NESTED = [2, 16, 29]
DFLASH = [3, 17, 30]
NESTED_LAYER_IDS = [5, 19, 33]
DSPARK = [6, 20, 34]
TARGET_LAYER_IDS = [8, 22, 36]
DFLASH_LAYER_IDS = [10, 24, 38]

FORMS: tuple[tuple[str, list[int]], ...] = (
    (KEY, TOP),
    (f"eagle_config.{KEY}", NESTED),
    ("dflash_config.target_layer_ids", DFLASH),
    ("dspark_target_layer_ids", DSPARK),
    ("target_layer_ids", TARGET_LAYER_IDS),
    ("dflash_config.layer_ids", DFLASH_LAYER_IDS),
    ("eagle_config.layer_ids", NESTED_LAYER_IDS),
)
"""Every draft-config field a release's reader may take ids from (vLLM model runner V2,
``spec_decode/eagle/eagle3_utils.py get_eagle3_aux_layers_from_config``, reads all but the
nested ``eagle_config`` ids), each with a value no other form has (nor has plus one)."""

CONFIG_CASES: dict[str, dict[str, Any]] = {
    "top_only": {KEY: TOP},
    "nested_only": {"eagle_config": {KEY: NESTED}},
    "both": {KEY: TOP, "eagle_config": {KEY: NESTED}},
    "top_empty_nested": {KEY: [], "eagle_config": {KEY: NESTED}},
    "neither": {},
    "dflash_only": {"dflash_config": {"target_layer_ids": DFLASH}},
    "nested_layer_ids_only": {"eagle_config": {"layer_ids": NESTED_LAYER_IDS}},
    "dspark_only": {"dspark_target_layer_ids": DSPARK},
    "target_layer_ids_only": {"target_layer_ids": TARGET_LAYER_IDS},
    "dflash_layer_ids_only": {"dflash_config": {"layer_ids": DFLASH_LAYER_IDS}},
}
"""Draft configs every reader is evaluated on (as transformers exposes them)."""

_LABELS = {
    tuple(TOP): "top-level",
    tuple(NESTED): "nested",
    tuple(DFLASH): "dflash target_layer_ids",
    tuple(v + 1 for v in DFLASH): "dflash target_layer_ids + 1",
    tuple(NESTED_LAYER_IDS): "nested layer_ids",
    tuple(DSPARK): "dspark_target_layer_ids",
    tuple(v + 1 for v in DSPARK): "dspark_target_layer_ids + 1",
    tuple(TARGET_LAYER_IDS): "target_layer_ids",
    tuple(v + 1 for v in TARGET_LAYER_IDS): "target_layer_ids + 1",
    tuple(DFLASH_LAYER_IDS): "dflash layer_ids",
}

_PATHS = {
    tuple(v + shift for v in value): path + (OFFSET if shift else "")
    for path, value in FORMS
    for shift in (0, 1)
}
"""An answer's ids -> the precedence entry that produced them."""


STUB_INPUTS: frozenset[str] = frozenset(
    {"self", "draft_model_config", "model_config", "hf_config", "config", "spec_config"}
)
"""Free names a snippet may take as stubs: each names the draft's config (or an object whose
``.hf_config`` is it). Any other free name is a local computed earlier: needs reading."""


def _label(value: Any) -> str:
    if value is None:
        return "absent"
    if isinstance(value, (list, tuple)):
        if not value:
            return "empty"
        return _LABELS.get(tuple(value), f"other {list(value)}")
    return f"other {value!r}"


def _input(name: str, config: dict[str, Any]) -> Any:
    ns = namespace(config)
    if name == "hf_config":
        return ns
    return Stub(World(num_layers=32, hf_config=ns), name)


def _call(func: Any, inputs: tuple[str, ...], config: dict[str, Any]) -> str:
    try:
        return _label(func(*(_input(n, config) for n in inputs)))
    except Exception as exc:
        return f"raises {type(exc).__name__}"


def _without(config: dict[str, Any], path: str) -> dict[str, Any]:
    """``config`` less the field at ``path``; a section left empty is dropped too."""
    head, _, key = path.rpartition(".")
    out = {k: dict(v) if isinstance(v, dict) else v for k, v in config.items()}
    if not head:
        out.pop(key, None)
        return out
    section = out.get(head)
    if isinstance(section, dict):
        section.pop(key, None)
        if not section:
            out.pop(head)
    return out


def _all_forms() -> dict[str, Any]:
    config: dict[str, Any] = {}
    for path, value in FORMS:
        head, _, key = path.rpartition(".")
        (config.setdefault(head, {}) if head else config)[key] = list(value)
    return config


def read_order(func: Any, inputs: tuple[str, ...]) -> list[str]:
    """The reader's precedence over every form in ``FORMS``: called on a config holding all of
    them, the form it answers with comes first; that form is removed and it is called again,
    until it answers none."""
    config, order = _all_forms(), []
    for _ in FORMS:
        try:
            value = func(*(_input(n, config) for n in inputs))
        except Exception:
            break
        entry = _PATHS.get(tuple(value)) if isinstance(value, (list, tuple)) and value else None
        if entry is None or entry in order:
            break
        order.append(entry)
        config = _without(config, split_offset(entry)[0])
    return order


def precedence(answers: dict[str, str], order: list[str] | None = None) -> list[str]:
    """Ordered precedence entries (JSON paths, ``+ 1`` where the reader adds one): ``order``
    from ``read_order`` when given, else read off the answers on ``CONFIG_CASES`` (top-level
    and nested ids, then the nested ``layer_ids``)."""
    if order is not None:
        return list(order)
    top = answers.get("top_only") == "top-level"
    nested = answers.get("nested_only") == "nested"
    if top and nested:
        first = answers.get("both")
        paths = (
            [KEY, f"eagle_config.{KEY}"] if first == "top-level" else [f"eagle_config.{KEY}", KEY]
        )
    else:
        paths = [KEY] if top else [f"eagle_config.{KEY}"] if nested else []
    if answers.get("nested_layer_ids_only") == "nested layer_ids":
        paths.append("eagle_config.layer_ids")
    return paths


def _mentions_key(node: ast.AST) -> bool:
    return any(_is_key(n) for n in ast.walk(node))


def _free_names(stmts: list[ast.stmt]) -> list[str]:
    bound: set[str] = set()
    loads: list[str] = []
    for stmt in stmts:
        for n in ast.walk(stmt):
            if isinstance(n, ast.Name):
                if isinstance(n.ctx, ast.Store):
                    bound.add(n.id)
                elif n.id not in loads:
                    loads.append(n.id)
            elif isinstance(n, ast.ExceptHandler) and n.name:
                bound.add(n.name)
    skip = bound | set(SAFE_BUILTINS) | set(SAFE_EXCEPTIONS)
    return [n for n in loads if n not in skip]


def _is_key(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value == KEY


def _site_form(node: ast.AST) -> str | None:
    """How one read of the key looks: nested subscript/get, or top-level getattr."""
    if isinstance(node, ast.Subscript) and _is_key(node.slice):
        return "nested" if "eagle_config" in ast.unparse(node.value) else "subscript"
    if not (isinstance(node, ast.Call) and node.args):
        return None
    func, first = node.func, node.args[0]
    if isinstance(func, ast.Attribute) and func.attr == "get" and _is_key(first):
        return "nested" if "eagle_config" in ast.unparse(func.value) else "get"
    if not isinstance(func, ast.Name):
        return None
    if func.id in ("getattr", "hasattr") and len(node.args) >= 2 and _is_key(node.args[1]):
        return "nested" if "eagle_config" in ast.unparse(first) else "top-level"
    return f"via {func.id}()" if _is_key(first) else None


def _read_sites(func: ast.FunctionDef) -> list[dict[str, Any]]:
    sites = []
    for n in ast.walk(func):
        form = _site_form(n)
        if form and isinstance(n, (ast.expr, ast.stmt)):
            sites.append({"form": form, "line": n.lineno})
    return sorted(sites, key=lambda s: (s["line"], s["form"]))


def _statement_lists(node: ast.AST) -> list[list[ast.stmt]]:
    """Every statement list in ``node``; a ``try`` whose body reads the key counts as one
    statement (its handler is the reader's fallback and belongs to the snippet)."""
    lists: list[list[ast.stmt]] = []
    for sub in ast.walk(node):
        for name in ("body", "orelse", "finalbody"):
            value = getattr(sub, name, None)
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                if isinstance(sub, ast.Try) and name == "body":
                    lists.append([sub])
                else:
                    lists.append(value)
        if isinstance(sub, ast.Try):
            lists.extend(h.body for h in sub.handlers)
    return lists


def _enclosing_span(func: ast.FunctionDef) -> tuple[list[ast.stmt], str | None]:
    """The smallest run of sibling statements holding every read, and what the first assigns."""
    total = sum(1 for n in ast.walk(func) if _site_form(n))
    best: list[ast.stmt] = []
    for stmts in _statement_lists(func):
        hits = [i for i, st in enumerate(stmts) if _mentions_key(st)]
        if not hits:
            continue
        span = stmts[hits[0] : hits[-1] + 1]
        covered = sum(1 for st in span for n in ast.walk(st) if _site_form(n))
        if covered == total and (not best or _size(span) < _size(best)):
            best = span
    target = None
    for st in best:
        for node in ast.walk(st):
            if isinstance(node, ast.Assign) and _mentions_key(node.value):
                target = ast.unparse(node.targets[0])
                break
        if target:
            break
    return best, target


def _size(stmts: list[ast.stmt]) -> int:
    return sum(1 for st in stmts for _ in ast.walk(st))


def probe_reader(func: ast.FunctionDef, class_name: str | None, file: str) -> dict[str, Any]:
    """The table row of one reader function."""
    qual = f"{class_name}.{func.name}" if class_name else func.name
    row: dict[str, Any] = {"function": qual, "line": func.lineno, "sites": _read_sites(func)}
    found = _compiled_reader(func, file, row)
    if found is None:
        return row
    compiled, inputs = found
    answers = {case: _call(compiled, inputs, cfg) for case, cfg in CONFIG_CASES.items()}
    stubbed = sorted({a for a in answers.values() if "<stub" in a or a.startswith("raises")})
    if stubbed:  # the answer is a value our stubs made up: not an id reader's answer
        row["needs_reading"] = (
            f"{file}:{func.lineno}: the result depends on stubbed run-time values "
            f"({', '.join(stubbed)}); not evaluated as an id reader"
        )
        return row
    row["answers"] = answers
    row["precedence"] = precedence(answers, read_order(compiled, inputs))
    return row


def _compiled_reader(
    func: ast.FunctionDef, file: str, row: dict[str, Any]
) -> tuple[Any, tuple[str, ...]] | None:
    """The reader compiled to run on the config cases (the whole function when pure, else the
    statements that assign the read) and its inputs; ``None`` after writing ``needs_reading``
    into ``row``."""
    if check_pure(func) is None:
        row["evaluated"] = "whole function"
        return compile_pure(func, source_name=file), tuple(a.arg for a in func.args.args)
    span, target = _enclosing_span(func)
    if not span or target is None:
        row["needs_reading"] = f"{file}:{func.lineno}: no statement run assigns the read"
        return None
    free = _free_names(span)
    unknown = [n for n in free if n not in STUB_INPUTS]
    rejection = next(
        (r for r in (check_pure(st, free_names=free) for st in span) if r is not None), None
    )
    if unknown or rejection is not None:
        why = (
            f"uses {', '.join(unknown)} computed earlier in the function"
            if unknown or rejection is None
            else rejection.construct
        )
        line = span[0].lineno if unknown or rejection is None else rejection.line
        row["needs_reading"] = f"{file}:{line}: {why}"
        return None
    row["evaluated"] = f"lines {span[0].lineno}-{span[-1].end_lineno} (-> {target})"
    return compile_snippet(span, tuple(free), target, source_name=file), tuple(free)


def find_readers(tree: ast.Module) -> list[tuple[ast.FunctionDef, str | None]]:
    """Every function (module level or method) whose body mentions the ids key."""
    return [(f.node, f.class_name) for f in iter_functions(tree) if _mentions_key(f.node)]


def default_only_readers(
    tree: ast.Module, file: str, setters: tuple[str, ...], getters: tuple[str, ...]
) -> list[dict[str, Any]]:
    """A runner that reads no draft field and hands the model's own default to its setter,
    ``self.model.set_aux_hidden_state_layers(self.model.get_eagle3_aux_hidden_state_layers())``
    (vllm 0.10.0 ``v1/worker/gpu_model_runner.py:1888-1889``): one reader row per such call,
    with an empty precedence (every id field is ignored, the model's default is fed). None when
    the file reads the ids key anywhere (its readers are probed instead)."""
    if find_readers(tree):
        return []
    rows = []
    for found in iter_functions(tree):
        for node in ast.walk(found.node):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in setters
                and len(node.args) == 1
                and isinstance(node.args[0], ast.Call)
                and isinstance(node.args[0].func, ast.Attribute)
                and node.args[0].func.attr in getters
            ):
                rows.append(
                    {
                        "evaluated": f"line {node.lineno}: the setter gets "
                        f"{node.args[0].func.attr}(), no draft field",
                        "file": file,
                        "function": f"{found.qualname} (no draft field)",
                        "line": node.lineno,
                        "precedence": [],
                        "sites": [],
                    }
                )
    return rows
