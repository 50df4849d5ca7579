"""Where a model file captures: read statically from its forward loop, never executed.

A *capture site* is code guarded by a membership test against the capture set
(``i in self.layers_to_capture``, ``idx + 1 in self.aux_hidden_state_layers``,
``getattr(layer, "_is_layer_to_capture", False)``), directly or one helper call deep
(``self._maybe_add_hidden_state(aux, idx + 1, hidden_states, residual)``). Each site is placed
relative to the decoder-stack loop (before the stack, in the loop before/after the layer call,
handed *into* the layer call, after the stack), with the index it tests and the value it stores.
From the sites follows the map *set element -> boundary* (``b = canonical + 1``) and which
boundaries are reachable. Whatever does not fit a known shape is listed as ambiguous with its
line: reported, not guessed.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from eagle3_contracts.probe.selection import FoundFunction, iter_functions

CAPTURE_SETS: tuple[str, ...] = ("layers_to_capture", "aux_hidden_state_layers")
CAPTURE_FLAG = "_is_layer_to_capture"
COLLECT_METHODS: tuple[str, ...] = ("append", "capture", "extend")


@dataclass(frozen=True)
class Site:
    """One capture site of a forward function."""

    line: int
    where: str  # "before stack", "before layer", "after layer", "into layer", "after stack"
    index: str  # the tested index relative to the loop variable: "i", "i+1", "start", "end"
    value: str  # "hidden+residual", "hidden", ..., or "read in <callee>"
    via: str | None = None  # helper or callee the site goes through
    evidence: dict[str, str] | None = None  # the hand reading of that callee, if one applied
    reads: str = ""  # the state its guard tests: "layers_to_capture", "flag _is_layer_to_capture"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "index": self.index,
            "line": self.line,
            "value": self.value,
            "where": self.where,
        }
        if self.reads:
            out["reads"] = self.reads
        if self.via:
            out["via"] = self.via
        if self.evidence:
            out["reading"] = self.evidence
        return out


_OFFSETS = {  # (where, index) -> boundary - element
    ("before stack", "start"): 0,
    ("before stack", "0"): 0,
    ("before layer", "i"): 0,
    ("into layer", "i"): 0,
    ("after layer", "i+1"): 0,
    ("after layer", "i"): 1,
    ("after stack", "end"): 0,
}
_SPANS = {  # (where, index) -> reachable elements, as (lo, hi) with L = number of layers
    ("before stack", "start"): ("0", "0"),
    ("before stack", "0"): ("0", "0"),
    ("before layer", "i"): ("0", "L-1"),
    ("into layer", "i"): ("0", "L-1"),
    ("after layer", "i+1"): ("1", "L"),
    ("after layer", "i"): ("0", "L-1"),
    ("after stack", "end"): ("L", "L"),
}


def _is_set_attr(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr in CAPTURE_SETS


def _guard_index(test: ast.AST) -> ast.expr | None:
    """``E`` of a guard ``E in self.<capture set>`` (possibly inside ``and``), or None."""
    found = guard(test)
    return found[0] if found else None


FLAG_STATE = f"flag {CAPTURE_FLAG}"
"""The state a ``getattr(layer, "_is_layer_to_capture", False)`` guard reads: a per-layer
attribute, armed only by a setter that ``setattr``s it on ``self.layers[i]``."""


def guard(test: ast.AST) -> tuple[ast.expr, str] | None:
    """``(E, state)`` of a capture guard: ``E in self.<set>`` reads the set attribute ``<set>``;
    ``getattr(E, "_is_layer_to_capture", False)`` reads the per-layer flag (``FLAG_STATE``)."""
    for node in ast.walk(test):
        if (
            isinstance(node, ast.Compare)
            and len(node.ops) == 1
            and isinstance(node.ops[0], ast.In)
            and _is_set_attr(node.comparators[0])
        ):
            attr = node.comparators[0]
            assert isinstance(attr, ast.Attribute)
            return node.left, attr.attr
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "getattr"
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and node.args[1].value == CAPTURE_FLAG
        ):
            return node.args[0], FLAG_STATE
    return None


def _guard_state(test: ast.AST) -> str:
    found = guard(test)
    return found[1] if found else ""


def normalize_value(expr: ast.expr | None) -> str:
    """A stored expression as a short fact: ``hidden+residual``, ``hidden`` or its source."""
    if expr is None:
        return "unknown"
    text = ast.unparse(expr).replace(" ", "")
    if text == "hidden_states+residual":
        return "hidden+residual"
    if text == "hidden_states":
        return "hidden"
    if text in (
        "hidden_states+residualifresidualisnotNoneelsehidden_states",
        "hidden_statesifresidualisNoneelsehidden_states+residual",
    ):
        return "hidden+residual (hidden when residual is None)"
    return ast.unparse(expr)


def _collected(body: list[ast.stmt]) -> list[ast.expr]:
    values = []
    for stmt in body:
        for node in ast.walk(stmt):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in COLLECT_METHODS
                and node.args
            ):
                values.append(node.args[0])
    return values


def _resolve_value(values: list[ast.expr], assigned: dict[str, ast.expr]) -> str:
    """Normalized stored values; a name assigned in the same block is followed once."""
    out = []
    for v in values:
        if isinstance(v, ast.Name) and v.id in assigned:
            v = assigned[v.id]
        inner = v
        # all_gather(hidden_states + residual, dim=0) and friends: the stored state is the arg
        if isinstance(inner, ast.Call) and inner.args and "gather" in ast.unparse(inner.func):
            out.append(normalize_value(inner.args[0]) + " (gathered)")
        else:
            out.append(normalize_value(inner))
    unique = sorted(set(out))
    return " | ".join(unique) if unique else "unknown"


def _assignments(body: list[ast.stmt]) -> dict[str, ast.expr]:
    table: dict[str, ast.expr] = {}
    for stmt in body:
        for node in ast.walk(stmt):
            if (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
            ):
                table.setdefault(node.targets[0].id, node.value)
    return table


@dataclass(frozen=True)
class _Loop:
    node: ast.For
    var: str
    layer_call: ast.Call  # the first call of a decoder layer in the loop
    layer_names: frozenset[str] = frozenset()  # names bound to self.layers[var] in the loop
    layer_calls: tuple[ast.Call, ...] = ()  # every layer call (if/else branches call it twice)
    fused_residual: bool = False  # `hidden, residual = layer(..., residual)`: hidden is a delta


def _stack_loop(func: ast.FunctionDef) -> _Loop | None:
    """The decoder-stack loop: the first ``for`` whose body calls a decoder layer."""
    loops = _stack_loops(func)
    return loops[0] if loops else None


def _stack_loops(func: ast.FunctionDef) -> list[_Loop]:
    """Every decoder-stack loop of a forward (branches such as ``if _is_cpu: for ...`` each
    hold one), in walk order; loops nested in a found loop are not counted again."""
    loops: list[_Loop] = []
    for node in ast.walk(func):
        if isinstance(node, ast.For) and not any(_contains(lp.node, node) for lp in loops):
            found = _loop_of(node)
            if found is not None:
                loops.append(found)
    return loops


def _loop_of(node: ast.For) -> _Loop | None:
    target = node.target
    names = [target] if isinstance(target, ast.Name) else list(getattr(target, "elts", []))
    if not names or not all(isinstance(n, ast.Name) for n in names):
        return None
    var = names[0].id
    layer_names = {n.id for n in names[1:]}
    for sub in ast.walk(node):
        if (
            isinstance(sub, ast.Assign)
            and len(sub.targets) == 1
            and isinstance(sub.targets[0], ast.Name)
            and "self.layers[" in ast.unparse(sub.value)
        ):
            layer_names.add(sub.targets[0].id)
    calls = [
        sub
        for sub in ast.walk(node)
        if isinstance(sub, ast.Call)
        and (
            (isinstance(sub.func, ast.Name) and sub.func.id in layer_names)
            or (
                isinstance(sub.func, ast.Subscript) and ast.unparse(sub.func.value) == "self.layers"
            )
        )
    ]
    if not calls:
        return None
    calls.sort(key=lambda c: c.lineno)
    return _Loop(node, var, calls[0], frozenset(layer_names), tuple(calls), _fused(node, calls))


def _fused(loop: ast.For, calls: list[ast.Call]) -> bool:
    """``hidden_states, residual = layer(..., residual=residual)``: the layer returns the
    residual separately, so ``hidden_states`` alone is the layer's delta, not the stream."""
    passes = any(
        any(isinstance(a, ast.Name) and a.id == "residual" for a in c.args)
        or any(k.arg == "residual" for k in c.keywords)
        for c in calls
    )
    if not passes:
        return False
    for node in ast.walk(loop):
        if (
            isinstance(node, ast.Assign)
            and any(node.value is c for c in calls)
            and isinstance(node.targets[0], ast.Tuple)
            and any(isinstance(e, ast.Name) and e.id == "residual" for e in node.targets[0].elts)
        ):
            return True
    return False


def _index_form(expr: ast.expr, loop: _Loop, aliases: dict[str, str] | None = None) -> str:
    var = loop.var
    text = ast.unparse(expr).replace(" ", "")
    text = (aliases or {}).get(text, text)  # num_layers = len(self.layers)
    if text in loop.layer_names:  # getattr(layer, "_is_layer_to_capture"): layer = self.layers[i]
        return "i"
    table = {
        var: "i",
        f"{var}+1": "i+1",
        "self.start_layer": "start",
        "self.end_layer": "end",
        "len(self.layers)": "end",
    }
    return table.get(text, text)


def _contains(outer: ast.AST, inner: ast.AST) -> bool:
    return any(n is inner for n in ast.walk(outer))


def _where(node: ast.AST, loop: _Loop) -> str:
    calls = loop.layer_calls or (loop.layer_call,)
    if any(_contains(c, node) for c in calls):
        return "into layer"
    line = _line(node)
    if _contains(loop.node, node):
        before = [c for c in calls if c.lineno > line]
        return "before layer" if before else "after layer"
    return "before stack" if line < loop.node.lineno else "after stack"


def _line(node: ast.AST) -> int:
    return int(getattr(node, "lineno", 0))


def _loop_for(node: ast.AST, loops: list[_Loop]) -> _Loop:
    """The stack loop holding ``node``, else the last loop before it, else the first."""
    for lp in loops:
        if _contains(lp.node, node):
            return lp
    earlier = [lp for lp in loops if lp.node.lineno < _line(node)]
    return earlier[-1] if earlier else loops[0]


def _len_aliases(func: ast.FunctionDef) -> dict[str, str]:
    """``num_layers = len(self.layers)`` -> ``{"num_layers": "len(self.layers)"}``."""
    out = {}
    for node in ast.walk(func):
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and ast.unparse(node.value).replace(" ", "") == "len(self.layers)"
        ):
            out[node.targets[0].id] = "len(self.layers)"
    return out


def _value_of(value: str, loop: _Loop, where: str, index: str) -> str:
    """A stored plain ``hidden`` is the layer's delta when the layer returns the residual
    separately, except at loop index 0 (the embedding, residual still None)."""
    if value == "hidden" and loop.fused_residual and where != "before stack":
        return DELTA
    return value


def find_sites(
    func: ast.FunctionDef,
    helpers: dict[str, ast.FunctionDef],
    layer_forwards: list[ast.FunctionDef],
) -> tuple[list[Site], list[str]]:
    """Capture sites of one forward function, and what could not be read."""
    loops = _stack_loops(func)
    if not loops:
        return [], []
    aliases = _len_aliases(func)
    sites: list[Site] = []
    ambiguous: list[str] = []
    seen: set[int] = set()
    for node in ast.walk(func):
        if isinstance(node, ast.If) and id(node) not in seen:
            index = _guard_index(node.test)
            if index is None:
                continue
            for sub in ast.walk(node):
                seen.add(id(sub))
            loop = _loop_for(node, loops)
            where = _where(node, loop)
            form = _index_form(index, loop, aliases)
            value = _resolve_value(_collected(node.body), _assignments(node.body))
            value = _value_of(value, loop, where, form)
            sites.append(Site(node.lineno, where, form, value, reads=_guard_state(node.test)))
        elif isinstance(node, ast.IfExp):
            index = _guard_index(node.test)
            if index is None:
                continue
            loop = _loop_for(node, loops)
            owner = _keyword_owner(func, node)
            where = _where(node, loop)
            if owner is not None and where not in ("into layer",):
                where = _where(owner[0], loop)  # `x = cap if i in set else None`, then layer(x=x)
            if owner is None:
                ambiguous.append(f"line {node.lineno}: guarded expression outside a call")
                continue
            call, keyword = owner
            callee = ast.unparse(call.func)
            if where == "into layer":
                via, value = _follow_into_layer(keyword, layer_forwards)
            else:
                via, value = f"{callee}({keyword}=...)", f"read in {callee}"
            form = _index_form(index, loop, aliases)
            reads = _guard_state(node.test)
            sites.append(Site(node.lineno, where, form, value, via, reads=reads))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "self"
            and node.func.attr in helpers
        ):
            site = _inline_helper(node, helpers[node.func.attr], _loop_for(node, loops))
            if site is None:
                ambiguous.append(f"line {node.lineno}: helper {node.func.attr} not understood")
            else:
                sites.append(site)
    return sorted(sites, key=lambda s: s.line), ambiguous


def _keyword_owner(func: ast.FunctionDef, node: ast.AST) -> tuple[ast.Call, str] | None:
    """The call (and keyword) a guarded expression is handed to: directly, or through a name
    it is assigned to first (``capture_output = cap if i in s else None; layer(capture_output=
    capture_output)``)."""
    names = {
        t.id
        for a in ast.walk(func)
        if isinstance(a, ast.Assign) and a.value is node
        for t in a.targets
        if isinstance(t, ast.Name)
    }
    for call in ast.walk(func):
        if isinstance(call, ast.Call):
            for kw in call.keywords:
                if kw.arg and (
                    kw.value is node or (isinstance(kw.value, ast.Name) and kw.value.id in names)
                ):
                    return call, kw.arg
    return None


def _follow_into_layer(keyword: str, layer_forwards: list[ast.FunctionDef]) -> tuple[str, str]:
    """Where a layer's ``forward(..., <keyword>=...)`` uses the capture it was handed."""
    for fwd in layer_forwards:
        params = [a.arg for a in [*fwd.args.args, *fwd.args.kwonlyargs]]
        if keyword not in params:
            continue
        for stmt in fwd.body:
            uses = [
                n
                for n in ast.walk(stmt)
                if isinstance(n, ast.Call)
                and any(isinstance(k.value, ast.Name) and k.value.id == keyword for k in n.keywords)
            ]
            if uses:
                callee = ast.unparse(uses[0].func)
                first = "first statement" if stmt is fwd.body[0] else f"line {stmt.lineno}"
                return (
                    f"{fwd.name}(line {fwd.lineno}) -> {callee} ({first}, layer entry)",
                    f"read in {callee.rsplit('.', 1)[-1]}",
                )
        return f"{fwd.name}(line {fwd.lineno})", "needs reading: capture use not found"
    return "no layer forward takes it in this file", "needs reading"


def _inline_helper(call: ast.Call, helper: ast.FunctionDef, loop: _Loop) -> Site | None:
    params = [a.arg for a in helper.args.args][1:]  # drop self
    bind = dict(zip(params, call.args, strict=False))
    for node in ast.walk(helper):
        if isinstance(node, ast.If):
            index = _guard_index(node.test)
            if not isinstance(index, ast.Name) or index.id not in bind:
                continue
            values = _collected(node.body)
            assigned = _assignments(node.body)
            expr = (
                assigned.get(values[0].id) if values and isinstance(values[0], ast.Name) else None
            )
            value = normalize_value(expr if expr is not None else (values[0] if values else None))
            return Site(
                call.lineno,
                _where(call, loop),
                _index_form(bind[index.id], loop),
                value,
                f"self.{helper.name}",
                reads=_guard_state(node.test),
            )
    return None


def summarize(sites: list[Site], residual_none: bool) -> dict[str, Any]:
    """Element -> boundary offset and reachable boundaries, or why they are ambiguous."""
    out: dict[str, Any] = {"sites": [s.to_json() for s in sites]}
    if not sites:
        out["ambiguous"] = ["no capture site in this file"]
        return out
    offsets = {_OFFSETS.get((s.where, s.index)) for s in sites}
    unknown = [s for s in sites if (s.where, s.index) not in _OFFSETS]
    notes = [f"line {s.line}: {s.where} tests {s.index!r}" for s in unknown]
    if unknown or len(offsets) != 1:
        out["ambiguous"] = notes or ["sites disagree on the element -> boundary offset"]
        return out
    (offset,) = offsets
    out["boundary_minus_element"] = offset
    spans = sorted({_SPANS[(s.where, s.index)] for s in sites})
    out["elements"] = [f"{lo}..{hi}" if lo != hi else lo for lo, hi in spans]
    out["last_output"] = any(hi == "L" for _, hi in spans)
    out["embedding"] = _embedding(sites, residual_none)
    if any(s.value == DELTA for s in sites):
        out["residual_dropped"] = True  # boundaries >= 1 hold the layer's delta only
    return out


DELTA = "hidden (residual returned separately: the layer delta, not the stream)"
_DELTA_AT_ZERO = {DELTA: "hidden"}  # at loop index 0 the residual is still None: the embedding


def _embedding(sites: list[Site], residual_none: bool) -> str:
    """How boundary 0 (the embedding) fares."""
    zero = [s for s in sites if _SPANS[(s.where, s.index)][0] == "0"]
    if not zero:
        return "unreachable"
    values = {_DELTA_AT_ZERO.get(s.value, s.value) for s in zero}
    if any(v.startswith("read in") or v.startswith("needs reading") for v in values):
        return "stored value read outside this file (see via)"
    if values <= {"hidden", "hidden+residual (hidden when residual is None)"}:
        return "captured"
    if residual_none and any("hidden+residual" in v and "None" not in v for v in values):
        return "raises: hidden_states + residual with residual None at layer 0"
    return "captured" if not residual_none else "needs reading"


def residual_is_none_at_entry(func: ast.FunctionDef) -> bool:
    """Whether ``residual = None`` is assigned before the stack loop (first-rank path)."""
    loop = _stack_loop(func)
    if loop is None:
        return False
    for node in ast.walk(func):
        if (
            isinstance(node, ast.Assign)
            and node.lineno < loop.node.lineno
            and any(isinstance(t, ast.Name) and t.id == "residual" for t in node.targets)
            and isinstance(node.value, ast.Constant)
            and node.value.value is None
        ):
            return True
    return False


Resolver = Callable[[str], "tuple[str, dict[str, str]] | None"]


def read_placement(
    tree: ast.Module,
    helpers: dict[str, ast.FunctionDef] | None = None,
    resolver: Resolver | None = None,
    imported_forwards: Sequence[ast.FunctionDef] = (),
) -> dict[str, Any]:
    """Placement of every forward in a model file that loops over its decoder layers.

    Returns ``{"Class.forward": summary}``; ``helpers`` are capture helpers defined elsewhere
    (``EagleModelMixin._maybe_add_hidden_state``), by name; ``resolver`` turns a callee a capture
    is handed to into the value it stores (``readings.resolve``); ``imported_forwards`` are the
    layer forwards of the model files this one imports (a capture handed into a layer defined
    there, as ``qwen3_vl.py`` hands ``capture_output`` to ``qwen3.py``'s decoder layer).
    """
    local = capture_helpers(tree)
    local.pop("forward", None)  # a forward is read as a stack, never inlined as a helper
    helpers = {**local, **(helpers or {})}  # helpers passed in win over this file's
    forwards = [(f.class_name, f.node) for f in _methods(tree) if f.node.name == "forward"]
    layer_forwards = [f for _, f in forwards] + list(imported_forwards)
    out: dict[str, Any] = {}
    for cls, func in forwards:
        if _stack_loop(func) is None:
            continue
        sites, ambiguous = find_sites(func, helpers, layer_forwards)
        if not sites and not ambiguous:
            continue
        if resolver is not None:
            sites = [_resolved(s, resolver) for s in sites]
        summary = summarize(sites, residual_is_none_at_entry(func))
        counted = _counted_collector(func)
        if counted is not None:
            summary["count_checked_line"] = counted
        if ambiguous:
            summary["ambiguous"] = [*summary.get("ambiguous", []), *ambiguous]
        summary["line"] = func.lineno
        out[f"{cls}.forward"] = summary
    return out


def _counted_collector(func: ast.FunctionDef) -> int | None:
    """Line of ``AuxHiddenStatePacker(len(self.layers_to_capture))``: a collector sized by the
    number of ids, whose ``finalize()`` raises when fewer states were captured (sglang 0.5.23
    ``layers/aux_hidden_states.py``)."""
    for node in ast.walk(func):
        if (
            isinstance(node, ast.Call)
            and ast.unparse(node.func).rsplit(".", 1)[-1] == "AuxHiddenStatePacker"
            and node.args
            and ast.unparse(node.args[0]).replace(" ", "") == "len(self.layers_to_capture)"
        ):
            return node.lineno
    return None


def _resolved(site: Site, resolver: Resolver) -> Site:
    """A site whose stored value a helper decides, resolved by its reading: a capture handed
    into a helper (``read in X``), or a value returned by a helper called on the boundary's
    pair (``snapshot(hidden_states, residual)``, sglang 0.5.21 qwen2.py:421)."""
    callee = _pair_helper(site.value)
    if site.value.startswith("read in "):
        callee = site.value.removeprefix("read in ").rsplit(".", 1)[-1]
    if callee is None:
        return site
    found = resolver(callee)
    if found is None:
        return site
    value, evidence = found
    return replace(site, value=value, evidence=evidence)


def _pair_helper(value: str) -> str | None:
    """The name of ``helper(hidden_states, residual)`` when a stored value is such a call."""
    try:
        expr = ast.parse(value, mode="eval").body
    except SyntaxError:
        return None
    if (
        isinstance(expr, ast.Call)
        and not expr.keywords
        and [ast.unparse(a) for a in expr.args] == ["hidden_states", "residual"]
    ):
        return ast.unparse(expr.func).rsplit(".", 1)[-1]
    return None


def _defines_capture_helper(func: ast.FunctionDef) -> bool:
    params = {a.arg for a in func.args.args}
    for node in ast.walk(func):
        if isinstance(node, ast.If):
            index = _guard_index(node.test)
            if isinstance(index, ast.Name) and index.id in params:
                return True
    return False


def _methods(tree: ast.Module) -> list[FoundFunction]:
    return [f for f in iter_functions(tree) if f.class_name is not None]


def capture_helpers(tree: ast.Module) -> dict[str, ast.FunctionDef]:
    """Capture helpers (methods testing a parameter against the capture set) in a file."""
    found: dict[str, ast.FunctionDef] = {}
    for f in _methods(tree):
        if _defines_capture_helper(f.node):
            found.setdefault(f.node.name, f.node)
    return found
