"""Hypothesis entry point: let hypothesis seed and restore torch's global RNG, lazily.

The entry point runs in every process that imports hypothesis, including downstream projects
that never touch torch, so it must not import torch (about 230 MB and a NumPy warning where
numpy is absent). It registers an adapter that does nothing until torch has been imported by
someone else, and from then on seeds, saves and restores torch's global generator.
"""

from __future__ import annotations

import sys
from typing import Any


class _LazyTorchRandom:
    """``random.Random``-like view of torch's global generator, active once torch is imported."""

    @staticmethod
    def _torch() -> Any:
        return sys.modules.get("torch")

    def seed(self, seed: int) -> None:
        torch = self._torch()
        if torch is not None:
            torch.manual_seed(seed)

    def getstate(self) -> object:
        torch = self._torch()
        return None if torch is None else torch.random.get_rng_state()

    def setstate(self, state: object) -> None:
        torch = self._torch()
        if torch is not None and state is not None:
            torch.random.set_rng_state(state)


_TORCH_RANDOM = _LazyTorchRandom()  # hypothesis keeps a weak reference; this keeps it alive


def _hypothesis_setup_hook() -> None:
    from hypothesis import register_random

    register_random(_TORCH_RANDOM)
