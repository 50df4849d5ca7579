"""Stub objects a pure selection is called with: a recording ``self`` and a draft ``hf_config``.

A ``Stub`` answers every attribute (creating a child stub), records every assignment and every
call made on it, and returns fixed values for the few attributes a selection reads: the layer
count (``num_hidden_layers``, ``len(layers)``), the pipeline rank flags and the layer range.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any


@dataclass
class World:
    """What a stub tree saw: assignments and calls in order, and the fixed facts it answers."""

    num_layers: int
    last_rank: bool = True
    hf_config: Any = None
    assignments: list[tuple[str, Any]] = field(default_factory=list)
    calls: list[tuple[str, tuple[Any, ...]]] = field(default_factory=list)

    def fixed(self, name: str) -> Any:
        """The value of a well-known attribute, or ``_MISSING``."""
        n = self.num_layers
        table = {
            "num_hidden_layers": n,
            "is_last_rank": self.last_rank,
            "is_first_rank": True,
            "start_layer": 0,
            "end_layer": n,
        }
        if name == "layers":
            return [Stub(self, f"layers[{i}]") for i in range(n)]
        if name == "hf_config" and self.hf_config is not None:
            return self.hf_config
        return table.get(name, _MISSING)


_MISSING = object()


class Stub:
    """A recording stand-in for ``self`` and everything reachable from it."""

    def __init__(self, world: World, path: str = "self") -> None:
        object.__setattr__(self, "_world", world)
        object.__setattr__(self, "_path", path)
        object.__setattr__(self, "_children", {})

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        children = object.__getattribute__(self, "_children")
        if name not in children:
            value = self._world.fixed(name)
            children[name] = (
                Stub(self._world, f"{self._path}.{name}") if value is _MISSING else value
            )
        return children[name]

    def __setattr__(self, name: str, value: Any) -> None:
        self._world.assignments.append((f"{self._path}.{name}", value))
        self._children[name] = value

    def __call__(self, *args: Any, **kwargs: Any) -> Stub:
        self._world.calls.append((self._path, args))
        return Stub(self._world, f"{self._path}()")

    def __repr__(self) -> str:
        return f"<stub {self._path}>"


def make_self(num_layers: int, *, last_rank: bool = True) -> tuple[Stub, World]:
    """A fresh recording ``self`` for a ``num_layers``-deep target."""
    world = World(num_layers=num_layers, last_rank=last_rank)
    return Stub(world), world


def namespace(config: dict[str, Any]) -> SimpleNamespace:
    """A draft ``hf_config`` as transformers builds it: top-level keys are attributes, nested
    dicts (``eagle_config``) stay dicts; a missing key raises ``AttributeError``."""
    return SimpleNamespace(**config)
