"""Probe a trainer's released wheel: SpecForge's own reading of layer ids.

What a SpecForge release trained a drafter on is decided in four places, each read here from
the wheel (never installed, never imported):

* ``config/schema.py``: the ``target_backend: Literal[...]`` values (0.2.0: only ``"sglang"``);
* the wheel's ``METADATA``: the pinned capture engine (``Requires-Dist: sglang==0.5.14``);
* ``algorithms/model_providers.py`` ``resolve_eagle_capture_layers``: evaluated on stub configs
  over a grid of depths and id lists (it passes the probe's whitelist), giving where ids are
  read, the default and which lists it refuses;
* ``application/composition.py`` (offline capture): the extra refusals it applies to the
  resolved list (duplicates, ids past the depth), found by their syntax;
* ``offline_capture/sglang_backend/capture.py``: that the resolved ids go to the target's
  ``set_eagle3_layers_to_capture`` as explicit ids.

``python -m eagle3_contracts.probe refresh --release specforge==0.2.0`` writes the table next to
the engine tables; ``conventions.trainers`` reads it.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from eagle3_contracts.probe.selection import DEFAULT_RULES, GRID_LAYERS
from eagle3_contracts.probe.whitelist import check_pure, compile_pure

SCHEMA = "specforge/config/schema.py"
RESOLVER = "specforge/algorithms/model_providers.py"
COMPOSITION = "specforge/application/composition.py"
CAPTURE = "specforge/offline_capture/sglang_backend/capture.py"
FILES: tuple[str, ...] = (SCHEMA, RESOLVER, COMPOSITION, CAPTURE)

IDS = "eagle_aux_hidden_state_layer_ids"


def trainer_cases(n: int) -> dict[str, list[int] | None]:
    """Nested id lists a drafter config may carry (``None``: no ids)."""
    return {
        "none": None,
        "three": [2, n // 2, n - 3],
        "two": [1, n // 2],
        "four": [1, 2, n // 2, n - 4],
        "negative": [-1, 2, n // 2],
        "duplicate": [1, 1, n - 4],
        "past_depth": [1, n // 2, n],
    }


def build_trainer_table(version: str, root: Path) -> dict[str, Any]:
    """The SpecForge table of one release, from its extracted sources under ``root``."""
    table: dict[str, Any] = {
        "framework": "specforge",
        "version": version,
        "probe_format": 1,
        "backends": _backends(root),
        "engine": _pinned_engine(root),
        "resolver": _resolver(root),
        "offline_checks": _offline_checks(root),
        "setter": _setter_call(root),
    }
    wheel = root / "wheel.json"
    if wheel.exists():
        import json

        info = json.loads(wheel.read_text())
        table["wheel"] = {"name": info["wheel"], "sha256": info["sha256"]}
    return table


def _parse(root: Path, rel: str) -> ast.Module | None:
    try:
        return ast.parse((root / rel).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return None


def _backends(root: Path) -> dict[str, Any]:
    tree = _parse(root, SCHEMA)
    for node in ast.walk(tree) if tree else ():
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and node.target.id == "target_backend"
        ):
            values = sorted(
                c.value
                for c in ast.walk(node.annotation)
                if isinstance(c, ast.Constant) and isinstance(c.value, str)
            )
            default = node.value.value if isinstance(node.value, ast.Constant) else None
            return {"values": values, "default": default, "source": f"{SCHEMA}:{node.lineno}"}
    return {"values": [], "default": None, "source": f"{SCHEMA}: target_backend not found"}


def _pinned_engine(root: Path) -> dict[str, Any]:
    for meta in sorted(root.glob("*.dist-info/METADATA")):
        for line in meta.read_text(encoding="utf-8", errors="replace").splitlines():
            found = re.match(r"Requires-Dist:\s*sglang\s*==\s*([0-9][\w.]*)\s*(;.*)?$", line)
            if found and not found.group(2):
                return {
                    "release": f"sglang=={found.group(1)}",
                    "source": f"{meta.parent.name}/METADATA: {line.strip()}",
                }
    return {"release": None, "source": "no exact sglang pin in the wheel METADATA"}


def _resolver(root: Path) -> dict[str, Any]:
    tree = _parse(root, RESOLVER)
    func = next(
        (
            n
            for n in (tree.body if tree else [])
            if isinstance(n, ast.FunctionDef) and n.name == "resolve_eagle_capture_layers"
        ),
        None,
    )
    if func is None:
        return {"needs_reading": f"{RESOLVER}: resolve_eagle_capture_layers not found"}
    rejection = check_pure(func)
    if rejection is not None:
        return {"needs_reading": rejection.render(RESOLVER), "line": func.lineno}
    resolve = compile_pure(func, source_name=RESOLVER)
    grid: dict[str, dict[str, Any]] = {}
    for n in GRID_LAYERS:
        row: dict[str, Any] = {}
        for case, ids in trainer_cases(n).items():
            cfg = SimpleNamespace(model=SimpleNamespace(aux_hidden_state_layer_ids=None))
            draft = {"eagle_config": {IDS: ids}} if ids is not None else {}
            target = SimpleNamespace(num_hidden_layers=n)
            try:
                row[case] = list(resolve(cfg, draft, target))
            except Exception as exc:  # the released code's own raise, on our stubs
                row[case] = f"raises {type(exc).__name__}"
        grid[str(n)] = row
    top_only: Any
    try:  # a top-level list: not read
        top_only = list(
            resolve(
                SimpleNamespace(model=SimpleNamespace(aux_hidden_state_layer_ids=None)),
                {IDS: [5, 6, 7]},
                SimpleNamespace(num_hidden_layers=32),
            )
        )
    except Exception as exc:
        top_only = f"raises {type(exc).__name__}"
    default = next(
        (
            name
            for name, rule in DEFAULT_RULES.items()
            if all(grid[str(n)]["none"] == rule(n) for n in GRID_LAYERS)
        ),
        None,
    )
    raises = sorted({c for row in grid.values() for c, v in row.items() if isinstance(v, str)})
    return {
        "function": "resolve_eagle_capture_layers",
        "line": func.lineno,
        "source": f"{RESOLVER}:{func.lineno}",
        "grid": grid,
        "default": default,
        "reads": f"eagle_config.{IDS}"
        if grid["32"]["three"] == trainer_cases(32)["three"]
        else None,
        "top_level_read": top_only == [5, 6, 7],
        "refuses": raises,
    }


def _offline_checks(root: Path) -> dict[str, Any]:
    """Refusals the offline capture path adds, recognised by their syntax."""
    tree = _parse(root, COMPOSITION)
    out: dict[str, Any] = {}
    for node in ast.walk(tree) if tree else ():
        if not isinstance(node, ast.Compare):
            continue
        text = ast.unparse(node).replace(" ", "")
        if text == "len(set(layers))!=len(layers)":
            out["distinct"] = f"{COMPOSITION}:{node.lineno}"
        if text == "layer>=target_layers":
            out["below_depth"] = f"{COMPOSITION}:{node.lineno}"
    return out


def _setter_call(root: Path) -> dict[str, Any]:
    tree = _parse(root, CAPTURE)
    for node in ast.walk(tree) if tree else ():
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "set_eagle3_layers_to_capture"
        ):
            return {"explicit_ids": True, "source": f"{CAPTURE}:{node.lineno}"}
    return {"explicit_ids": False, "source": f"{CAPTURE}: no set_eagle3_layers_to_capture call"}
