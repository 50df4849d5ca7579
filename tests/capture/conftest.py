"""Capture tests run many tiny forwards: one intra-op thread avoids oversubscribing the CPU
(``pytest -n 2`` on 2 cores would otherwise run 2 x 2 torch threads, ~40x slower per op)."""

from __future__ import annotations

import torch

torch.set_num_threads(1)
