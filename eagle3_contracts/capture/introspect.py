"""What a model says about itself (config, embedding table, hidden size, vocabulary), and the
seeded token ids a check runs it on when the caller gives none.

One place for the duck-typed reads that capture, identify, verify, target loading and the
parallel simulations share (HF models, multimodal HF models with a text part, and the
synthetic targets).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from eagle3_contracts.errors import ContractError


def text_config(model: nn.Module) -> Any:
    """``model.config`` (its text part for multimodal HF configs), or ``None``."""
    config: Any = getattr(model, "config", None)
    if config is not None and hasattr(config, "get_text_config"):
        config = config.get_text_config()
    return config


def input_embeddings(model: nn.Module) -> Any:
    """The token embedding: ``get_input_embeddings()`` (HF) or ``embed_tokens`` (synthetic)."""
    get = getattr(model, "get_input_embeddings", None)
    return get() if callable(get) else getattr(model, "embed_tokens", None)


def hidden_size(model: nn.Module) -> int:
    """The width ``H`` of one hidden state (``ContractError`` naming ``hidden_size=`` if unknown)."""
    config = text_config(model)
    for name in ("hidden_size", "n_embd", "d_model"):
        value = getattr(config, name, None)
        if isinstance(value, int) and value > 0:
            return value
    raise ContractError(
        f"cannot read the hidden size of {type(model).__name__}; pass hidden_size=",
        field="hidden_size",
    )


def vocab_size(model: nn.Module) -> int:
    """The vocabulary size (``ContractError`` naming ``input_ids=`` if unknown)."""
    value = getattr(text_config(model), "vocab_size", None)
    if isinstance(value, int) and value > 0:
        return value
    emb = input_embeddings(model)
    if isinstance(emb, nn.Embedding):
        return emb.num_embeddings
    raise ContractError(
        f"cannot read the vocabulary size of {type(model).__name__}; pass input_ids=",
        field="input_ids",
    )


def seeded_input_ids(vocab_size: int, batch: int = 2, tokens: int = 8, *, seed: int = 0) -> Tensor:
    """Seeded random token ids ``[batch, tokens]`` on the CPU, independent of torch's global RNG."""
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, vocab_size, (batch, tokens), generator=g)


__all__ = ["hidden_size", "input_embeddings", "seeded_input_ids", "text_config", "vocab_size"]
