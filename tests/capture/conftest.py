"""Capture tests run many tiny forwards: one intra-op torch thread per test avoids
oversubscribing the CPU (``pytest -n 2`` on 2 cores would otherwise run 2 x 2 torch threads,
~40x slower per small op). Restored after each test, so other suites keep their setting."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch


@pytest.fixture(autouse=True)
def _one_torch_thread() -> Iterator[None]:
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)
