"""Shared test targets: every HF architecture and synthetic variant, built once per session."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator

import torch

from eagle3_contracts.capture.hooks import seeded_input_ids
from eagle3_contracts.testing.hf_models import HF_ARCHITECTURES, build_tiny_hf, tiny_hf_config
from eagle3_contracts.testing.synthetic import SyntheticConfig, build_synthetic

SYNTHETIC_VARIANTS: dict[str, dict] = {
    "residual": {},
    "residual-tuple": {"tuple_outputs": True},
    "fused": {"style": "fused"},
    "positions": {"position_embeddings": True},
    "scaled": {"embed_scale": 4.0},
    "fused-positions-scaled": {"style": "fused", "position_embeddings": True, "embed_scale": 2.0},
}
HF_DEPTH = 4


@functools.cache
def hf_model(arch: str, num_layers: int = HF_DEPTH):
    return build_tiny_hf(tiny_hf_config(arch, num_layers=num_layers))


@functools.cache
def synthetic_model(variant: str, num_layers: int = 5, hidden_size: int = 16):
    config = SyntheticConfig(num_layers, hidden_size, **SYNTHETIC_VARIANTS[variant])
    return build_synthetic(config)


def tokens(vocab: int, batch: int = 2, seq: int = 9, seed: int = 0) -> torch.Tensor:
    return seeded_input_ids(vocab, batch, seq, seed=seed)


def all_targets():
    """Names of every synthetic variant and HF architecture (see ``target``)."""
    return [*(f"synthetic-{v}" for v in SYNTHETIC_VARIANTS), *(f"hf-{a}" for a in HF_ARCHITECTURES)]


def target(name: str):
    kind, _, which = name.partition("-")
    return synthetic_model(which) if kind == "synthetic" else hf_model(which)


def vocab_of(model) -> int:
    return model.config.vocab_size


@contextlib.contextmanager
def forward_calls(model) -> Iterator[list[dict]]:
    """Record the keyword arguments of every ``model.forward`` call made inside the block."""
    calls: list[dict] = []
    original = model.forward

    def spy(*args, **kwargs):
        calls.append(kwargs)
        return original(*args, **kwargs)

    model.forward = spy
    try:
        yield calls
    finally:
        del model.forward
