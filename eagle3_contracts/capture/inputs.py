"""What a capture takes: the model's own facts (config, embedding table, hidden size,
vocabulary, the seeded token ids a check runs it on when the caller gives none), and checks of
what a caller hands the capture API (model, token ids, captured tensor, capture function), so a
wrong argument is a ``ContractError`` naming it, never an ``AttributeError`` or a raw torch
error from deep inside a forward. One place for the duck-typed reads that capture, identify,
verify, target loading and the parallel simulations share (HF models, multimodal HF models
with a text part, and the synthetic targets).

Only decoder-only language models are modelled: an encoder (BERT-style, post-norm layer
outputs) or an encoder-decoder (T5-style, two stacks of different depths) is refused with the
reason, because "output of layer N" and "last layer, pre-norm" do not mean there what the
canonical ids say.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor, nn

from eagle3_contracts.errors import ContractError

# -- what a model says about itself ----------------------------------------------------------


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


# -- checks of the capture API's arguments ----------------------------------------------------

ENCODER_MODEL_TYPES = frozenset(
    {
        "albert",
        "bert",
        "camembert",
        "deberta",
        "deberta-v2",
        "distilbert",
        "electra",
        "ernie",
        "modernbert",
        "mpnet",
        "roberta",
        "roberta-prelayernorm",
        "xlm-roberta",
        "xlm-roberta-xl",
    }
)
"""HF ``model_type`` values of encoder-only models (bidirectional, post-norm layer outputs)."""


def check_model(model: Any, *, argument: str = "model") -> nn.Module:
    """``model`` if it is a decoder-only ``nn.Module``; else ``ContractError`` with the reason."""
    if not isinstance(model, nn.Module):
        raise ContractError(
            f"{argument} must be a torch.nn.Module (a decoder-only language model), got "
            f"{type(model).__name__}",
            field=argument,
        )
    config = getattr(model, "config", None)
    model_type = getattr(config, "model_type", None)
    if getattr(config, "is_encoder_decoder", False):
        raise ContractError(
            f"{argument} is an encoder-decoder model ({model_type or type(model).__name__}): "
            f"EAGLE-3 captures from a decoder-only stack, and its encoder and decoder have "
            f"their own depths; not modelled here",
            field=argument,
        )
    if model_type in ENCODER_MODEL_TYPES:
        raise ContractError(
            f"{argument} is an encoder-only model ({model_type}): its layer outputs are "
            f"post-norm and bidirectional, so canonical ids (pre-norm residual stream of a "
            f"decoder) do not describe it; not modelled here",
            field=argument,
        )
    return model


def known_vocab_size(model: nn.Module) -> int | None:
    """The model's vocabulary size, or ``None`` when it does not say."""

    try:
        return vocab_size(model)
    except ContractError:
        return None


def check_input_ids(
    input_ids: Any, *, vocab_size: int | None = None, argument: str = "input_ids"
) -> Tensor:
    """``input_ids`` if it is an integer ``[B, T]`` tensor of token ids in the vocabulary."""
    if not isinstance(input_ids, Tensor):
        raise ContractError(
            f"{argument} must be a torch.Tensor of token ids [B, T], got "
            f"{type(input_ids).__name__}",
            field=argument,
        )
    if (
        input_ids.dtype.is_floating_point
        or input_ids.dtype.is_complex
        or input_ids.dtype == torch.bool
    ):
        raise ContractError(
            f"{argument} must hold integer token ids, got dtype "
            f"{str(input_ids.dtype).removeprefix('torch.')}",
            field=argument,
        )
    if input_ids.dim() != 2 or input_ids.numel() == 0:
        raise ContractError(
            f"{argument} must be [B, T] with B, T >= 1, got shape {list(input_ids.shape)}",
            field=argument,
        )
    low, high = int(input_ids.min()), int(input_ids.max())
    if low < 0 or (vocab_size is not None and high >= vocab_size):
        bad = low if low < 0 else high
        raise ContractError(
            f"{argument} holds token id {bad}, outside the model's vocabulary [0, {vocab_size})",
            field=argument,
        )
    return input_ids


def check_captured(captured: Any, *, argument: str = "captured") -> Tensor:
    """``captured`` if it is a floating-point tensor."""
    if not isinstance(captured, Tensor) or not captured.dtype.is_floating_point:
        kind = (
            f"a {str(captured.dtype).removeprefix('torch.')} tensor"
            if isinstance(captured, Tensor)
            else type(captured).__name__
        )
        raise ContractError(
            f"{argument} must be a floating-point torch.Tensor [B, T, k*H], got {kind}",
            field=argument,
        )
    return captured


def check_capture_fn(fn: Any, *, argument: str = "capture_fn") -> Callable[..., Any]:
    """``fn`` if it is callable as ``fn(model, input_ids)``."""
    if not callable(fn):
        raise ContractError(
            f"{argument} must be a callable fn(model, input_ids) -> [B, T, k*H], got "
            f"{type(fn).__name__}",
            field=argument,
        )
    checked: Callable[..., Any] = fn
    return checked


__all__ = [
    "ENCODER_MODEL_TYPES",
    "check_capture_fn",
    "check_captured",
    "check_input_ids",
    "check_model",
    "hidden_size",
    "input_embeddings",
    "known_vocab_size",
    "seeded_input_ids",
    "text_config",
    "vocab_size",
]
