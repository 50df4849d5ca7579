"""Evaluate released capture-layer selection functions on a grid of ids and layer counts.

Each function that passes the whitelist (``whitelist.check_pure``) is compiled alone and called
with a recording stub ``self``; what it stores (``...layers_to_capture = ...``,
``...aux_hidden_state_layers = ...``), hands on (``self.model.set_eagle3_layers_to_capture(x)``)
or returns is its *selection*: the capture-set elements (loop / boundary indices). The grid's
answers are then matched against a few named rules; a function no rule explains is reported.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from eagle3_contracts.conventions.releases import DefaultSelection, SelectionRule
from eagle3_contracts.probe.stubs import Stub, World, make_self
from eagle3_contracts.probe.whitelist import check_pure, compile_pure

GRID_LAYERS: tuple[int, ...] = (24, 32, 36, 61)
"""Target depths every selection is evaluated at (gpt-oss-20b, Llama-8B, gpt-oss-120b, DSV3)."""


def grid_ids(num_layers: int) -> dict[str, list[int] | None]:
    """The explicit-id cases for a ``num_layers``-deep target (case name -> ids)."""
    n = num_layers
    return {
        "none": None,
        "empty": [],
        "outputs_1_mid-1_L-4": [1, n // 2 - 1, n - 4],  # SpecForge default; [1, 15, 28] at 32
        "boundaries_2_mid_L-3": [2, n // 2, n - 3],  # EAGLE default; [2, 30, 58] at 61
        "embedding_first": [-1, 2, n // 2],  # the "fixed" Kimi list [-1, 2, 30] at 61
        "max_is_L": [2, n // 2, n],  # boundary list reaching the last output
        "first_is_1_max_is_L": [1, n // 2, n],
        "unsorted": [n - 4, 1, n // 2 - 1],
        "duplicate": [1, 1, n - 4],
    }


SET_RULES: dict[str, Callable[[list[int], int], list[int]]] = {
    rule.value: rule.elements for rule in SelectionRule
}
"""Candidate rules: explicit ids -> capture-set elements (the release-table model's
``SelectionRule``: a new rule is a new member there)."""

DEFAULT_RULES: dict[str, Callable[[int], list[int]]] = {
    default.value: default.elements for default in DefaultSelection
}
"""Candidate no-ids defaults, as capture-set elements (``DefaultSelection``)."""

SINK_ATTRS: tuple[str, ...] = ("layers_to_capture", "aux_hidden_state_layers")
SINK_METHODS: tuple[str, ...] = (
    "set_eagle3_layers_to_capture",
    "_set_aux_hidden_state_layers",
    "set_aux_hidden_state_layers",
)


@dataclass(frozen=True)
class Outcome:
    """One grid point: the selected elements, or why there are none."""

    value: tuple[int, ...] | None = None
    sink: str | None = None  # "self.model.layers_to_capture" or "self.model.set_...()"
    raises: str | None = None

    def to_json(self) -> Any:
        if self.raises:
            return f"raises {self.raises}"
        return None if self.value is None else list(self.value)


def _as_ints(value: Any) -> tuple[int, ...] | None:
    if isinstance(value, (list, tuple)) and all(
        isinstance(v, int) and not isinstance(v, bool) for v in value
    ):
        return tuple(value)
    return None


def run_once(
    func: Callable[..., Any], num_layers: int, args: tuple[Any, ...], *, last_rank: bool = True
) -> Outcome:
    """Call ``func(stub_self, *args)`` and read what it selected."""
    stub, world = make_self(num_layers, last_rank=last_rank)
    _bind_rank_calls(func, world)
    try:
        returned = func(stub, *args)
    except Exception as exc:  # the released code's own raise, on our stub
        return Outcome(raises=type(exc).__name__)
    for path, value in reversed(world.assignments):
        if path.rsplit(".", 1)[-1] in SINK_ATTRS and _as_ints(value) is not None:
            return Outcome(_as_ints(value), path)
    for path, call_args in reversed(world.calls):
        if path.rsplit(".", 1)[-1] in SINK_METHODS and call_args:
            if _as_ints(call_args[0]) is not None:
                return Outcome(_as_ints(call_args[0]), f"{path}()")
            if call_args[0] is None:
                return Outcome(None, f"{path}(None)")
    ints = _as_ints(returned)
    if ints is not None:
        return Outcome(ints, "return")
    return Outcome()


@dataclass(frozen=True)
class Evaluated:
    """A released function's grid, its classified rule and its sink."""

    grid: dict[str, dict[str, Any]]
    rule: str | None
    default: str | None
    sinks: tuple[str, ...]
    last_rank_only: bool | None
    raises_on: tuple[str, ...] = ()  # grid cases on which the released code raises

    def to_json(self) -> dict[str, Any]:
        return {
            "default": self.default,
            "grid": self.grid,
            "last_rank_only": self.last_rank_only,
            "raises_on": list(self.raises_on),
            "rule": self.rule,
            "sinks": list(self.sinks),
        }


def evaluate_setter(func: Callable[..., Any], *, takes_ids: bool = True) -> Evaluated:
    """Evaluate a setter ``f(self, ids)`` (or a getter ``f(self)``) over the whole grid."""
    grid: dict[str, dict[str, Any]] = {}
    outcomes: dict[tuple[int, str], Outcome] = {}
    for n in GRID_LAYERS:
        row: dict[str, Any] = {}
        cases = grid_ids(n) if takes_ids else {"none": None}
        for case, ids in cases.items():
            out = run_once(func, n, (list(ids) if ids is not None else None,) if takes_ids else ())
            outcomes[(n, case)] = out
            row[case] = out.to_json()
        grid[str(n)] = row
    sinks = tuple(sorted({o.sink for o in outcomes.values() if o.sink}))
    raises_on = sorted({case for (_, case), o in outcomes.items() if o.raises})
    last_rank_only = None
    if takes_ids:
        off_rank = run_once(func, GRID_LAYERS[0], ([1, 2, 3],), last_rank=False)
        last_rank_only = off_rank.value is None and off_rank.raises is None
    return Evaluated(
        grid=grid,
        rule=classify_set_rule(outcomes) if takes_ids else None,
        default=classify_default(outcomes),
        sinks=sinks,
        last_rank_only=last_rank_only,
        raises_on=tuple(raises_on),
    )


def classify_set_rule(outcomes: dict[tuple[int, str], Outcome]) -> str | None:
    """The one named rule explaining every explicit-id grid point where the code does not raise
    (raising points are listed separately, as ``raises_on``), else None."""
    points = [
        (n, ids, out)
        for (n, case), out in outcomes.items()
        if (ids := grid_ids(n)[case]) is not None and out.raises is None
    ]
    if not points:
        return None
    fits = [
        name
        for name, rule in SET_RULES.items()
        if all(out.value is not None and list(out.value) == rule(ids, n) for n, ids, out in points)
    ]
    return fits[0] if len(fits) == 1 else None


def classify_default(outcomes: dict[tuple[int, str], Outcome]) -> str | None:
    """The named default (as elements) the no-ids case selects at every depth, else None."""
    for name, rule in DEFAULT_RULES.items():
        if all(
            out.value is not None and list(out.value) == rule(n)
            for (n, case), out in outcomes.items()
            if case == "none"
        ):
            return name
    return None


# -- finding functions in a module's syntax tree ------------------------------------------------


@dataclass(frozen=True)
class FoundFunction:
    """A function definition in a released file, with the class that holds it."""

    class_name: str | None
    node: ast.FunctionDef

    @property
    def qualname(self) -> str:
        return f"{self.class_name}.{self.node.name}" if self.class_name else self.node.name


def iter_functions(tree: ast.Module) -> Iterator[FoundFunction]:
    """Every function defined at module level or directly in a class, in file order."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            yield FoundFunction(None, node)
        elif isinstance(node, ast.ClassDef):
            for sub in node.body:
                if isinstance(sub, ast.FunctionDef):
                    yield FoundFunction(node.name, sub)


def find_functions(tree: ast.Module, names: Sequence[str]) -> list[FoundFunction]:
    """Every function (module level or in a class) named one of ``names``, in file order."""
    return [f for f in iter_functions(tree) if f.node.name in names]


RANK_CALLS: dict[str, tuple[str, ...]] = {
    "get_pp_group": ("distributed", "parallel_state"),
    "get_parallel": ("runtime_context",),
}
"""Pipeline-rank lookups a setter may guard on, by name and the module (last part) it must be
imported from: ``if not get_pp_group().is_last_rank: return`` (sglang 0.5.12
``exaone_moe.py:872``), ``if not get_parallel().pp_group.is_last_rank: return`` (sglang 0.5.21
``exaone_moe.py:852``). Called on a stub of the grid's world they answer its rank flags, as
``self.pp_group`` does; which ids are captured does not otherwise depend on them."""


def rank_calls(tree: ast.Module) -> frozenset[str]:
    """The ``RANK_CALLS`` names a released file imports from their own module."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            last = node.module.rsplit(".", 1)[-1]
            for alias in node.names:
                if alias.asname is None and last in RANK_CALLS.get(alias.name, ()):
                    found.add(alias.name)
    return frozenset(found)


def _bind_rank_calls(func: Callable[..., Any], world: World) -> None:
    """Point the rank lookups a compiled selection reads at this call's world."""
    namespace = getattr(func, "__globals__", {})
    for name in RANK_CALLS:
        if name in namespace:
            namespace[name] = partial(Stub, world, f"{name}()")


def probe_function(
    found: FoundFunction, file: str, ranks: frozenset[str] = frozenset()
) -> dict[str, Any]:
    """The table row of one function: evaluated grid, or where it needs reading. ``ranks``:
    the ``RANK_CALLS`` its file imports (``rank_calls``), answered by the grid's stubs."""
    node = found.node
    row: dict[str, Any] = {"line": node.lineno}
    used = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
    bindings: dict[str, Any] = {name: None for name in ranks & used}  # bound per call
    rejection = check_pure(node, free_names=bindings)
    if rejection is not None:
        row["needs_reading"] = rejection.render(file)
        return row
    func = compile_pure(node, source_name=file, bindings=bindings)
    params = [a.arg for a in node.args.args]
    takes_ids = len(params) >= 2
    row.update(evaluate_setter(func, takes_ids=takes_ids).to_json())
    return row
