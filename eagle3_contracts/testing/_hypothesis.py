"""Hypothesis entry point: register torch's global RNG so hypothesis seeds and restores it."""

from __future__ import annotations

from typing import Any


def _hypothesis_setup_hook() -> None:
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a dependency, but stay importable
        return
    from hypothesis import register_random

    class _TorchRandom:
        """Adapter exposing torch's global generator through the ``random.Random`` protocol."""

        def seed(self, seed: int) -> None:
            torch.manual_seed(seed)

        def getstate(self) -> object:
            return torch.random.get_rng_state()

        def setstate(self, state: object) -> None:
            torch.random.set_rng_state(state)  # type: ignore[arg-type]

    register_random(_TORCH_RANDOM.setdefault("r", _TorchRandom()))


_TORCH_RANDOM: dict[str, Any] = {}  # the one adapter instance (register_random keeps a weak ref)
