"""Public hypothesis strategies for EAGLE-3 capture tests (in the style of hypothesis.extra.numpy).

Every argument accepts a value or a strategy; bounds are small by default so property tests
over real torch models stay fast. torch's global RNG is registered with hypothesis through the
package's ``hypothesis`` entry point (``eagle3_contracts.testing._hypothesis``).
"""

from __future__ import annotations

from typing import Any, TypeVar

import torch
from hypothesis import strategies as st
from hypothesis.strategies import SearchStrategy

from eagle3_contracts.contract import ORDERS, CaptureContract
from eagle3_contracts.conventions.hf import TOP_LEVEL as IDS_FIELD
from eagle3_contracts.errors import ContractError
from eagle3_contracts.layer_ids import check_num_layers
from eagle3_contracts.testing.synthetic import (
    STYLES,
    SyntheticConfig,
    SyntheticTarget,
    build_synthetic,
)

T = TypeVar("T")

SCHEMAS: tuple[str, ...] = ("eagle_config", "top-level", "speculators", "none")
"""Drafter config schemas: nested ``eagle_config`` (SpecForge, SGLang, ModelOpt), top-level ids
(vLLM), speculators (``speculators_model_type``), none (the original EAGLE)."""


# Default strategies (module-level: built once, shared by every call).
CONTRACT_DEPTHS = st.integers(1, 8)
SMALL_WIDTHS = st.sampled_from((8, 16, 32))
ANY_ORDER = st.sampled_from(ORDERS)
MODEL_DEPTHS = st.integers(1, 6)
SEEDS = st.integers(0, 2**16)
ANY_STYLE = st.sampled_from(STYLES)
BOOLEANS = st.booleans()
EMBED_SCALES = st.sampled_from((None, 2.0))
BATCH_SIZES = st.integers(1, 3)
SEQ_LENS = st.integers(2, 12)
PADDED_BATCH_SIZES = st.integers(2, 3)
PADDED_SEQ_LENS = st.integers(3, 12)
PAD_SIDES = st.sampled_from(("right", "left"))
ANY_SCHEMA = st.sampled_from(SCHEMAS)
TARGET_DEPTHS = st.integers(4, 64)
DRAFT_WIDTHS = st.sampled_from((256, 1024, 4096))
VOCAB_SIZES = st.sampled_from((32000, 128256))
DRAFT_VOCAB_SIZES = st.sampled_from((None, 32000))

__all__ = [
    "SCHEMAS",
    "contracts",
    "draft_configs",
    "layer_ids",
    "padded_batches",
    "synthetic_configs",
    "synthetic_models",
    "token_batches",
]


def _s(value: T | SearchStrategy[T]) -> SearchStrategy[T]:
    """A strategy for ``value``: itself if it is one, else ``just(value)``."""
    return value if isinstance(value, SearchStrategy) else st.just(value)


# -- layer ids and contracts --------------------------------------------------------------
def layer_ids(
    num_layers: int | SearchStrategy[int],
    *,
    min_size: int | SearchStrategy[int] = 1,
    max_size: int | SearchStrategy[int] = 3,
    allow_embedding: bool | SearchStrategy[bool] = True,
    sorted_: bool | SearchStrategy[bool] = False,
) -> SearchStrategy[tuple[int, ...]]:
    """Unique canonical ids valid for ``num_layers`` (``-1`` only with ``allow_embedding``).

    Sizes are clamped to the ids available, so any depth >= 1 works.
    """

    @st.composite
    def draw(data: st.DrawFn) -> tuple[int, ...]:
        n = check_num_layers(data(_s(num_layers)))
        low = -1 if data(_s(allow_embedding)) else 0
        available = n - low
        lo = max(1, min(data(_s(min_size)), available))
        hi = max(lo, min(data(_s(max_size)), available))
        ids = data(st.lists(st.integers(low, n - 1), min_size=lo, max_size=hi, unique=True))
        return tuple(sorted(ids)) if data(_s(sorted_)) else tuple(ids)

    return draw()


_ids_strategy = layer_ids  # the parameters named ``layer_ids`` below shadow the function


def contracts(
    *,
    num_layers: int | SearchStrategy[int] = CONTRACT_DEPTHS,
    hidden_size: int | SearchStrategy[int] = SMALL_WIDTHS,
    layer_ids: tuple[int, ...] | SearchStrategy[tuple[int, ...]] | None = None,
    min_size: int | SearchStrategy[int] = 1,
    max_size: int | SearchStrategy[int] = 3,
    allow_embedding: bool | SearchStrategy[bool] = True,
    order: str | SearchStrategy[str] = ANY_ORDER,
) -> SearchStrategy[CaptureContract]:
    """Valid ``CaptureContract`` objects (also ``CaptureContract.strategy(**kwargs)``).

    ``layer_ids`` fixes the ids (value or strategy); by default they are drawn for the depth.
    """

    @st.composite
    def draw(data: st.DrawFn) -> CaptureContract:
        n = data(_s(num_layers))
        ids = (
            data(
                _ids_strategy(
                    n, min_size=min_size, max_size=max_size, allow_embedding=allow_embedding
                )
            )
            if layer_ids is None
            else tuple(data(_s(layer_ids)))
        )
        return CaptureContract(ids, n, data(_s(hidden_size)), data(_s(order)))

    return draw()


# -- synthetic targets --------------------------------------------------------------------
def synthetic_configs(
    *,
    num_layers: int | SearchStrategy[int] = MODEL_DEPTHS,
    hidden_size: int | SearchStrategy[int] = SMALL_WIDTHS,
    vocab_size: int | SearchStrategy[int] = 64,
    seed: int | SearchStrategy[int] = SEEDS,
    style: str | SearchStrategy[str] = ANY_STYLE,
    position_embeddings: bool | SearchStrategy[bool] = BOOLEANS,
    embed_scale: float | SearchStrategy[float | None] | None = EMBED_SCALES,
    max_positions: int | SearchStrategy[int] = 64,
    tuple_outputs: bool | SearchStrategy[bool] | None = None,
) -> SearchStrategy[SyntheticConfig]:
    """``SyntheticConfig`` objects over every variant (``tuple_outputs`` drawn for the
    residual style unless given)."""

    @st.composite
    def draw(data: st.DrawFn) -> SyntheticConfig:
        chosen_style = data(_s(style))
        tuples = (
            data(_s(tuple_outputs))
            if tuple_outputs is not None
            else chosen_style == "residual" and data(st.booleans())
        )
        h = data(_s(hidden_size))
        scale = data(_s(embed_scale))
        return SyntheticConfig(
            num_layers=data(_s(num_layers)),
            hidden_size=h,
            vocab_size=data(_s(vocab_size)),
            seed=data(_s(seed)),
            style=chosen_style,
            position_embeddings=data(_s(position_embeddings)),
            embed_scale=scale if scale is None else float(scale),
            max_positions=data(_s(max_positions)),
            tuple_outputs=tuples,
        )

    return draw()


def synthetic_models(
    config: SyntheticConfig | SearchStrategy[SyntheticConfig] | None = None,
    *,
    dtype: torch.dtype | SearchStrategy[torch.dtype] = torch.float32,
    **config_kwargs: Any,
) -> SearchStrategy[SyntheticTarget]:
    """Built synthetic targets; ``config_kwargs`` go to ``synthetic_configs`` when no config."""
    configs = _s(config) if config is not None else synthetic_configs(**config_kwargs)
    return st.builds(lambda c, d: build_synthetic(c, dtype=d), configs, _s(dtype))


# -- tokens -------------------------------------------------------------------------------
def token_batches(
    vocab_size: int | SearchStrategy[int] = 64,
    *,
    batch_size: int | SearchStrategy[int] = BATCH_SIZES,
    seq_len: int | SearchStrategy[int] = SEQ_LENS,
) -> SearchStrategy[torch.Tensor]:
    """``[B, T]`` int64 token ids in ``[0, vocab_size)``."""

    @st.composite
    def draw(data: st.DrawFn) -> torch.Tensor:
        v, b, t = data(_s(vocab_size)), data(_s(batch_size)), data(_s(seq_len))
        flat = data(st.lists(st.integers(0, v - 1), min_size=b * t, max_size=b * t))
        return torch.tensor(flat, dtype=torch.long).view(b, t)

    return draw()


def padded_batches(
    vocab_size: int | SearchStrategy[int] = 64,
    *,
    batch_size: int | SearchStrategy[int] = PADDED_BATCH_SIZES,
    seq_len: int | SearchStrategy[int] = PADDED_SEQ_LENS,
    side: str | SearchStrategy[str] = PAD_SIDES,
    pad_id: int = 0,
) -> SearchStrategy[tuple[torch.Tensor, torch.Tensor, tuple[int, ...]]]:
    """``(input_ids, attention_mask, lengths)``: sequences of random lengths padded to ``T``."""

    @st.composite
    def draw(data: st.DrawFn) -> tuple[torch.Tensor, torch.Tensor, tuple[int, ...]]:
        ids = data(token_batches(vocab_size, batch_size=batch_size, seq_len=seq_len))
        b, t = ids.shape
        lengths = tuple(data(st.integers(1, t)) for _ in range(b))
        where = data(_s(side))
        mask = torch.zeros_like(ids)
        for row, n in enumerate(lengths):
            if where == "right":
                mask[row, :n] = 1
            else:
                mask[row, t - n :] = 1
        return ids.masked_fill(mask == 0, pad_id), mask, lengths

    return draw()


# -- drafter configs ------------------------------------------------------------------------
def draft_configs(
    schema: str | SearchStrategy[str] = ANY_SCHEMA,
    *,
    layer_ids: tuple[int, ...] | SearchStrategy[tuple[int, ...]] | None = None,
    num_target_layers: int | SearchStrategy[int] = TARGET_DEPTHS,
    hidden_size: int | SearchStrategy[int] = DRAFT_WIDTHS,
    target_hidden_size: int | SearchStrategy[int | None] | None = None,
    vocab_size: int | SearchStrategy[int] = VOCAB_SIZES,
    draft_vocab_size: int | SearchStrategy[int | None] | None = DRAFT_VOCAB_SIZES,
) -> SearchStrategy[dict[str, Any]]:
    """Drafter ``config.json`` dicts in each schema, ids written where that schema puts them.

    ``"eagle_config"``: nested ``eagle_config.eagle_aux_hidden_state_layer_ids`` (SpecForge,
    SGLang, ModelOpt); ``"top-level"``: the same field at the top level (vLLM);
    ``"speculators"``: top-level ids with ``speculators_model_type`` and
    ``transformer_layer_config``; ``"none"``: no ids (the original EAGLE). Ids are written as
    drawn (their meaning is the schema's system's); by default three ids in ``[0, L)``.
    """

    if not isinstance(schema, SearchStrategy) and schema not in SCHEMAS:
        raise ContractError(
            f"schema must be one of {', '.join(SCHEMAS)}, got {schema!r}", field="schema"
        )

    @st.composite
    def draw(data: st.DrawFn) -> dict[str, Any]:
        kind = data(_s(schema))
        n = data(_s(num_target_layers))
        ids = (
            data(_ids_strategy(n, min_size=3, max_size=3, allow_embedding=False, sorted_=True))
            if layer_ids is None
            else tuple(data(_s(layer_ids)))
        )
        h, vocab = data(_s(hidden_size)), data(_s(vocab_size))
        draft_vocab = data(_s(draft_vocab_size))
        target_h = data(_s(target_hidden_size))
        layer = {
            "architectures": ["LlamaForCausalLMEagle3"],
            "model_type": "llama",
            "hidden_size": h,
            "intermediate_size": 4 * h,
            "num_attention_heads": max(1, h // 128),
            "num_key_value_heads": max(1, h // 512),
            "num_hidden_layers": 1,
            "vocab_size": vocab,
            "max_position_embeddings": 4096,
            "rms_norm_eps": 1e-5,
        }
        extra: dict[str, Any] = {}
        if draft_vocab is not None:
            extra["draft_vocab_size"] = min(draft_vocab, vocab)
        if target_h is not None:
            extra["target_hidden_size"] = target_h
        if kind == "speculators":
            return {
                "speculators_model_type": "eagle3",
                "architectures": ["Eagle3Speculator"],
                "transformer_layer_config": layer,
                IDS_FIELD: list(ids),
                "norm_before_residual": False,
                "speculators_config": {
                    "algorithm": "eagle3",
                    "verifier": {"name_or_path": "target", "architectures": ["LlamaForCausalLM"]},
                },
                **extra,
            }
        config = {**layer, **extra}
        if kind == "eagle_config":
            config["eagle_config"] = {IDS_FIELD: list(ids), "use_aux_hidden_state": True}
        elif kind == "top-level":
            config[IDS_FIELD] = list(ids)
        return config

    return draw()
