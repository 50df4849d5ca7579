"""The AST whitelist: which released functions are pure selections, safe to evaluate on stubs.

A function (or a statement block) passes only if every node is in a small whitelist: attribute
access, arithmetic, comparisons, list/tuple/set/dict building and comprehensions, if/else,
bounded ``for`` loops over values, ``return``, ``raise`` of a builtin exception, ``try``, and
calls to a few builtins (``sorted``, ``len``, ``list``, ``tuple``, ``set``, ``range``,
``getattr`` ...) or to methods of the stub objects passed in (``self...``, parameters). No name
may refer to a module global, no attribute may be a dunder, nothing is imported. Anything else is
reported as *needs reading* (file, line, the offending construct) and never executed.

Evaluation compiles the function's syntax tree **alone** (annotations and decorators stripped)
with a builtins table holding only the whitelisted names, so even a checker bug cannot reach a
module, a file or the network.
"""

from __future__ import annotations

import ast
import builtins
import copy
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

SAFE_BUILTINS: tuple[str, ...] = (
    "abs", "all", "any", "bool", "dict", "enumerate", "getattr", "hasattr", "int", "isinstance",
    "len", "list", "max", "min", "range", "reversed", "set", "setattr", "sorted", "str", "sum",
    "tuple", "zip",
)  # fmt: skip
"""Builtins a pure selection may call (``setattr``/``getattr`` only with a constant name)."""

SAFE_EXCEPTIONS: tuple[str, ...] = (
    "AssertionError", "AttributeError", "Exception", "IndexError", "KeyError",
    "NotImplementedError", "RuntimeError", "TypeError", "ValueError",
)  # fmt: skip
"""Builtin exceptions a pure selection may raise or catch."""

SAFE_METHODS: frozenset[str] = frozenset({"get"})
"""Method names callable on any value (``dict.get``); everything else only on stub roots."""

DENIED_METHODS: frozenset[str] = frozenset({"format", "format_map"})
"""Never callable, even on a name bound in the function: format strings reach attributes."""

_ALLOWED_NODES: tuple[type[ast.AST], ...] = (
    # structure
    ast.Module, ast.FunctionDef, ast.arguments, ast.arg, ast.Return, ast.Assign, ast.AugAssign,
    ast.AnnAssign, ast.If, ast.For, ast.Expr, ast.Pass, ast.Raise, ast.Assert, ast.Try,
    ast.ExceptHandler, ast.Break, ast.Continue,
    # expressions
    ast.IfExp, ast.Compare, ast.BoolOp, ast.UnaryOp, ast.BinOp, ast.Name, ast.Attribute,
    ast.Subscript, ast.Slice, ast.Constant, ast.List, ast.Tuple, ast.Set, ast.Dict, ast.ListComp,
    ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.comprehension, ast.Call, ast.keyword,
    ast.JoinedStr, ast.FormattedValue, ast.Starred,
    # contexts and operators
    ast.Load, ast.Store, ast.And, ast.Or, ast.Not, ast.USub, ast.UAdd, ast.Add, ast.Sub,
    ast.Mult, ast.FloorDiv, ast.Mod, ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.In,
    ast.NotIn, ast.Is, ast.IsNot,
)  # fmt: skip


@dataclass(frozen=True)
class Rejection:
    """Why a syntax tree is not a pure selection: the first offending construct and its line."""

    line: int
    construct: str

    def render(self, file: str) -> str:
        return f"{file}:{self.line}: {self.construct}"


def _root_name(node: ast.expr) -> str | None:
    """``self`` for ``self.a.b[0].c``; None when the chain does not start at a plain name."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _bound_names(node: ast.AST) -> set[str]:
    """Every name the tree binds: parameters, assignment targets, loop/comprehension vars."""
    names: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.arg):
            names.add(sub.arg)
        elif isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
            names.add(sub.id)
        elif isinstance(sub, ast.ExceptHandler) and sub.name:
            names.add(sub.name)
    return names


def check_pure(tree: ast.AST, *, free_names: Iterable[str] = ()) -> Rejection | None:
    """Return None when ``tree`` is a pure selection, else the first ``Rejection``.

    ``free_names`` are names the caller will bind to stubs or to values it computed from the
    release's own module-level constants (a snippet's inputs, ``compile_pure``'s
    ``bindings``); a function's own parameters are bound automatically.
    """
    if isinstance(tree, ast.FunctionDef):
        tree = strip_for_compile(tree)
    free = set(free_names)
    bound = _bound_names(tree) | free
    stub_roots = bound  # calls are allowed only on values we pass in or build ourselves
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if not isinstance(node, _ALLOWED_NODES):
            return Rejection(line, f"{type(node).__name__} is not a pure selection construct")
        if isinstance(node, ast.FunctionDef) and node is not tree:
            return Rejection(line, f"nested function {node.name!r}")
        if isinstance(node, ast.Attribute) and node.attr.startswith("__"):
            return Rejection(line, f"dunder attribute .{node.attr}")
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            allowed = bound | set(SAFE_BUILTINS) | set(SAFE_EXCEPTIONS)
            if node.id not in allowed:
                return Rejection(line, f"global name {node.id!r} (module state, import or call)")
        if isinstance(node, ast.Call):
            reason = _check_call(node, stub_roots, free)
            if reason:
                return Rejection(line, reason)
        if isinstance(node, ast.Raise) and node.exc is not None:
            exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if not (isinstance(exc, ast.Name) and exc.id in SAFE_EXCEPTIONS):
                return Rejection(line, "raise of a non-builtin exception")
    return None


def _check_call(node: ast.Call, stub_roots: set[str], free: set[str]) -> str | None:
    func = node.func
    if isinstance(func, ast.Name):
        if func.id in SAFE_EXCEPTIONS or func.id in free:
            return None  # a free name is a stub or a binding the caller supplies
        if func.id not in SAFE_BUILTINS:
            return f"call of {func.id!r}"
        if func.id in ("getattr", "hasattr", "setattr"):
            if len(node.args) < 2:
                return f"{func.id} without an attribute name"
            name = node.args[1]
            if isinstance(name, ast.Constant) and (
                not isinstance(name.value, str) or name.value.startswith("__")
            ):
                return f"{func.id} of {name.value!r}"
            if func.id == "setattr" and _root_name(node.args[0]) not in stub_roots:
                return "setattr on an object that is not a stub"
        return None
    if isinstance(func, ast.Attribute):
        if func.attr in DENIED_METHODS:
            return f"method call .{func.attr}()"
        if func.attr in SAFE_METHODS:
            return None
        if _root_name(func) in stub_roots:
            return None  # a method of a stub passed in: recorded, never real code
        return f"method call .{func.attr}() on a value that is not a stub"
    return "call of a computed callable"


def strip_for_compile(func: ast.FunctionDef) -> ast.FunctionDef:
    """A copy of ``func`` (line numbers kept) without decorators, annotations and non-constant
    defaults: those are evaluated at definition time and name module globals (``Optional``)."""
    clone = copy.deepcopy(func)
    clone.decorator_list = []
    clone.returns = None
    args = clone.args
    for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
        if arg is not None:
            arg.annotation = None
    args.defaults = [
        d if isinstance(d, ast.Constant) else ast.Constant(None) for d in args.defaults
    ]
    args.kw_defaults = [
        d if d is None or isinstance(d, ast.Constant) else ast.Constant(None)
        for d in args.kw_defaults
    ]
    for node in ast.walk(clone):  # annotated assignments: keep the value, drop the annotation
        if isinstance(node, ast.AnnAssign):
            node.annotation = ast.Constant(None)
    return ast.fix_missing_locations(clone)


def _checked_name(name: object) -> str:
    if not isinstance(name, str) or name.startswith("__"):
        raise AttributeError(f"attribute name {name!r} refused by the probe sandbox")
    return name


def _safe_getattr(obj: Any, name: object, *default: Any) -> Any:
    return getattr(obj, _checked_name(name), *default)


def _safe_hasattr(obj: Any, name: object) -> bool:
    return hasattr(obj, _checked_name(name))


def _safe_setattr(obj: Any, name: object, value: Any) -> None:
    from eagle3_contracts.probe.stubs import Stub  # only stubs may be written to

    if not isinstance(obj, Stub):
        raise TypeError("setattr outside a stub refused by the probe sandbox")
    setattr(obj, _checked_name(name), value)


def _sandbox_globals() -> dict[str, Any]:
    """Globals for compiled selections: only the whitelisted builtins, attribute access checked
    at run time too (a computed ``getattr`` name can never reach a dunder)."""
    table = {name: getattr(builtins, name) for name in (*SAFE_BUILTINS, *SAFE_EXCEPTIONS)}
    table.update(getattr=_safe_getattr, hasattr=_safe_hasattr, setattr=_safe_setattr)
    return {"__builtins__": table}


def compile_pure(
    func: ast.FunctionDef, *, source_name: str, bindings: dict[str, Any] | None = None
) -> Callable[..., Any]:
    """Compile a function that passed ``check_pure`` on its own, in the restricted sandbox.

    ``bindings``: module-level names the function reads, bound to values the caller computed
    (a release's constant read as a literal, a stub); nothing else of the module is reachable.
    """
    bindings = bindings or {}
    rejection = check_pure(func, free_names=bindings)
    if rejection is not None:
        raise ValueError(f"not a pure selection: {rejection.render(source_name)}")
    clean = strip_for_compile(func)
    clean.name = "_probed"
    namespace = {**_sandbox_globals(), **bindings}
    code = compile(ast.Module(body=[clean], type_ignores=[]), source_name, "exec")
    exec(code, namespace)  # defines the function only; nothing in its body runs here
    probed: Callable[..., Any] = namespace["_probed"]
    return probed


def compile_snippet(
    statements: list[ast.stmt], inputs: tuple[str, ...], output: str, *, source_name: str
) -> Callable[..., Any]:
    """Compile ``statements`` as ``def _snippet(*inputs): ...; return <output>`` if pure.

    ``output`` is an expression over the inputs and the snippet's names (``"layer_ids"``,
    ``"config.eagle_aux_hidden_state_layer_ids"``).
    """
    template = ast.parse(f"def _snippet({', '.join(inputs)}):\n    pass").body[0]
    assert isinstance(template, ast.FunctionDef)
    template.body = [*statements, ast.Return(ast.parse(output, mode="eval").body)]
    func = ast.fix_missing_locations(template)
    return compile_pure(func, source_name=source_name)
