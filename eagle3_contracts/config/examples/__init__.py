"""Example drafter/target configs shipped as package data (public facts only).

Each example is a directory holding ``target.json``, one or more draft configs and an
``example.json`` manifest (``description``, ``trained_with``, ``target``, ``drafts``,
``sources``). ``load(name)`` returns the first draft (the trained one) and the target.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from eagle3_contracts.errors import ConfigError

_ROOT = Path(__file__).resolve().parent


def names() -> tuple[str, ...]:
    """Names of the shipped examples."""
    return tuple(sorted(p.parent.name for p in _ROOT.glob("*/example.json")))


def manifest(name: str) -> dict[str, Any]:
    """The example's manifest, with ``target`` and ``drafts`` as absolute paths."""
    if name not in names():
        raise ConfigError(f"unknown example {name!r}; known: {', '.join(names())}", field="example")
    folder = _ROOT / name
    data: dict[str, Any] = json.loads((folder / "example.json").read_text())
    data["target"] = str(folder / data["target"])
    data["drafts"] = [str(folder / d) for d in data["drafts"]]
    return data


def load(name: str) -> tuple[str, str]:
    """``(draft_path, target_path)`` of the example's trained draft and its target."""
    data = manifest(name)
    return data["drafts"][0], data["target"]
