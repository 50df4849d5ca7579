"""Public hypothesis strategies for EAGLE-3 capture tests (in the style of hypothesis.extra.numpy).

Every argument accepts a value or a strategy; bounds are small by default so property tests
over real torch models stay fast. torch's global RNG is registered with hypothesis through the
package's ``hypothesis`` entry point (``eagle3_contracts.testing._hypothesis``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import torch
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument
from hypothesis.strategies import SearchStrategy

from eagle3_contracts.contract import ORDERS, CaptureContract, Order
from eagle3_contracts.conventions.hf import TOP_LEVEL as IDS_FIELD
from eagle3_contracts.layer_ids import check_num_layers
from eagle3_contracts.testing.synthetic import (
    STYLES,
    Style,
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

METHOD_NAMES: tuple[str, ...] = (
    "eagle3.1",
    "p-eagle",
    "dflash",
    "dflash2",
    "domino",
    "dspark",
    "nemotron-3.5",
)
"""Drafter methods beyond EAGLE-3 that ``method_configs`` writes (``conventions.methods``)."""
ANY_METHOD = st.sampled_from(METHOD_NAMES)
DRAFT_DEPTHS = st.integers(1, 6)

__all__ = [
    "METHOD_NAMES",
    "SCHEMAS",
    "contracts",
    "draft_configs",
    "layer_ids",
    "method_configs",
    "padded_batches",
    "synthetic_configs",
    "synthetic_models",
    "token_batches",
]


def as_strategy(value: T | SearchStrategy[T]) -> SearchStrategy[T]:
    """A strategy for ``value``: itself if it is one, else ``just(value)``."""
    return value if isinstance(value, SearchStrategy) else st.just(value)


_s = as_strategy  # short name inside this module and eagle3_contracts.parallel.strategies

Check = Callable[[Any], str | None]


def _arg(name: str, value: T | SearchStrategy[T], check: Check) -> SearchStrategy[T]:
    """``value`` as a strategy, checked: a plain value now (``InvalidArgument`` naming
    ``name`` when the strategy is built), a strategy's values when they are drawn."""
    if isinstance(value, SearchStrategy):

        def checked(drawn: T) -> T:
            problem = check(drawn)
            if problem:
                raise InvalidArgument(f"{name}={drawn!r} (drawn from its strategy) {problem}")
            return drawn

        return value.map(checked)
    problem = check(value)
    if problem:
        raise InvalidArgument(f"{name}={value!r} {problem}")
    return st.just(value)


def _count(minimum: int) -> Check:
    def check(value: Any) -> str | None:
        if isinstance(value, bool) or not isinstance(value, int):
            return f"must be an integer >= {minimum}"
        return None if value >= minimum else f"must be >= {minimum}"

    return check


def _flag(value: Any) -> str | None:
    return None if isinstance(value, bool) else "must be True or False"


def _one_of(options: tuple[Any, ...]) -> Check:
    def check(value: Any) -> str | None:
        return None if value in options else f"must be one of {', '.join(map(repr, options))}"

    return check


def _or_none(check: Check) -> Check:
    return lambda value: None if value is None else check(value)


def _sizes(min_size: Any, max_size: Any) -> tuple[SearchStrategy[int], SearchStrategy[int]]:
    low, high = _arg("min_size", min_size, _count(1)), _arg("max_size", max_size, _count(1))
    if isinstance(min_size, int) and isinstance(max_size, int) and min_size > max_size:
        raise InvalidArgument(f"min_size={min_size} must be <= max_size={max_size}")
    return low, high


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

    Arguments are checked when the strategy is built (``InvalidArgument`` naming the
    argument); ``min_size`` more ids than the depth has is an error, never clamped.
    ``max_size`` is an upper bound: a shallow target may give fewer ids (every id it has).
    """
    depths = _arg("num_layers", num_layers, _count(1))
    low_sizes, high_sizes = _sizes(min_size, max_size)
    embeddings, sorts = (
        _arg("allow_embedding", allow_embedding, _flag),
        _arg("sorted_", sorted_, _flag),
    )

    @st.composite
    def draw(data: st.DrawFn) -> tuple[int, ...]:
        n = check_num_layers(data(depths))
        low = -1 if data(embeddings) else 0
        available = n - low
        lo, hi = data(low_sizes), data(high_sizes)
        if lo > hi:
            raise InvalidArgument(f"min_size={lo} must be <= max_size={hi} (drawn)")
        if lo > available:
            raise InvalidArgument(
                f"min_size={lo} ids do not exist for num_layers={n} (there are {available})"
            )
        ids = data(
            st.lists(st.integers(low, n - 1), min_size=lo, max_size=min(hi, available), unique=True)
        )
        return tuple(sorted(ids)) if data(sorts) else tuple(ids)

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
    order: Order | SearchStrategy[Order] = ANY_ORDER,
) -> SearchStrategy[CaptureContract]:
    """Valid ``CaptureContract`` objects (also ``CaptureContract.contracts(**kwargs)``).

    ``layer_ids`` fixes the ids (value or strategy); by default they are drawn for the depth.
    """
    depths = _arg("num_layers", num_layers, _count(1))
    widths = _arg("hidden_size", hidden_size, _count(1))
    orders: SearchStrategy[Order] = _arg("order", order, _one_of(ORDERS))
    _sizes(min_size, max_size)

    @st.composite
    def draw(data: st.DrawFn) -> CaptureContract:
        n = data(depths)
        ids = (
            data(
                _ids_strategy(
                    n, min_size=min_size, max_size=max_size, allow_embedding=allow_embedding
                )
            )
            if layer_ids is None
            else tuple(data(_s(layer_ids)))
        )
        return CaptureContract(ids, n, data(widths), data(orders))

    return draw()


# -- synthetic targets --------------------------------------------------------------------
def synthetic_configs(
    *,
    num_layers: int | SearchStrategy[int] = MODEL_DEPTHS,
    hidden_size: int | SearchStrategy[int] = SMALL_WIDTHS,
    vocab_size: int | SearchStrategy[int] = 64,
    seed: int | SearchStrategy[int] = SEEDS,
    style: Style | SearchStrategy[Style] = ANY_STYLE,
    position_embeddings: bool | SearchStrategy[bool] = BOOLEANS,
    embed_scale: float | SearchStrategy[float | None] | None = EMBED_SCALES,
    max_positions: int | SearchStrategy[int] = 64,
    tuple_outputs: bool | SearchStrategy[bool] | None = None,
) -> SearchStrategy[SyntheticConfig]:
    """``SyntheticConfig`` objects over every variant (``tuple_outputs`` drawn for the
    residual style unless given)."""
    args: dict[str, SearchStrategy[Any]] = {
        "num_layers": _arg("num_layers", num_layers, _count(1)),
        "hidden_size": _arg("hidden_size", hidden_size, _count(1)),
        "vocab_size": _arg("vocab_size", vocab_size, _count(1)),
        "seed": _arg("seed", seed, _count(0)),
        "position_embeddings": _arg("position_embeddings", position_embeddings, _flag),
        "max_positions": _arg("max_positions", max_positions, _count(1)),
    }
    styles: SearchStrategy[Style] = _arg("style", style, _one_of(STYLES))
    tuple_flags = _arg("tuple_outputs", tuple_outputs, _or_none(_flag))

    def _scale(value: Any) -> str | None:
        ok = value is None or (
            isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0
        )
        return None if ok else "must be None or a number > 0"

    scales = _arg("embed_scale", embed_scale, _scale)

    @st.composite
    def draw(data: st.DrawFn) -> SyntheticConfig:
        chosen_style: Style = data(styles)
        drawn = data(tuple_flags)
        tuples = drawn if drawn is not None else chosen_style == "residual" and data(st.booleans())
        scale = data(scales)
        return SyntheticConfig(
            **{name: data(strategy) for name, strategy in args.items()},
            style=chosen_style,
            embed_scale=scale if scale is None else float(scale),
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
    vocabs = _arg("vocab_size", vocab_size, _count(1))
    batches, lengths = (
        _arg("batch_size", batch_size, _count(1)),
        _arg("seq_len", seq_len, _count(1)),
    )

    @st.composite
    def draw(data: st.DrawFn) -> torch.Tensor:
        v, b, t = data(vocabs), data(batches), data(lengths)
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
    sides = _arg("side", side, _one_of(("right", "left")))
    _arg("pad_id", pad_id, _count(0))
    token_batches(vocab_size, batch_size=batch_size, seq_len=seq_len)  # checks those arguments

    @st.composite
    def draw(data: st.DrawFn) -> tuple[torch.Tensor, torch.Tensor, tuple[int, ...]]:
        ids = data(token_batches(vocab_size, batch_size=batch_size, seq_len=seq_len))
        b, t = ids.shape
        lengths = tuple(data(st.integers(1, t)) for _ in range(b))
        where = data(sides)
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

    schemas = _arg("schema", schema, _one_of(SCHEMAS))
    depths = _arg("num_target_layers", num_target_layers, _count(1))
    widths = _arg("hidden_size", hidden_size, _count(1))
    vocabs = _arg("vocab_size", vocab_size, _count(1))
    draft_vocabs = _arg("draft_vocab_size", draft_vocab_size, _or_none(_count(1)))
    target_widths = _arg("target_hidden_size", target_hidden_size, _or_none(_count(1)))

    @st.composite
    def draw(data: st.DrawFn) -> dict[str, Any]:
        kind = data(schemas)
        n = data(depths)
        ids = (
            data(_ids_strategy(n, min_size=3, max_size=3, allow_embedding=False, sorted_=True))
            if layer_ids is None
            else tuple(data(_s(layer_ids)))
        )
        h, vocab = data(widths), data(vocabs)
        draft_vocab = data(draft_vocabs)
        target_h = data(target_widths)
        if draft_vocab is not None and draft_vocab > vocab:
            raise InvalidArgument(
                f"draft_vocab_size={draft_vocab} must be <= vocab_size={vocab} (a drafter "
                f"predicts a subset of the target's vocabulary)"
            )
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
            extra["draft_vocab_size"] = draft_vocab
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


def method_configs(
    method: str | SearchStrategy[str] = ANY_METHOD,
    *,
    num_target_layers: int | SearchStrategy[int] = TARGET_DEPTHS,
    num_draft_layers: int | SearchStrategy[int] = DRAFT_DEPTHS,
    with_ids: bool | SearchStrategy[bool] = BOOLEANS,
    hidden_size: int | SearchStrategy[int] = DRAFT_WIDTHS,
) -> SearchStrategy[dict[str, Any]]:
    """Drafter ``config.json`` dicts of the methods beyond EAGLE-3, in their published layouts
    (SpecForge ``configs/``): DFlash/DFlash2/Domino/DSpark with ``dflash_config`` (taps:
    ``target_layer_ids``, one per draft layer, sorted, in ``[0, L)``; left out when
    ``with_ids`` is false, as in SpecForge's qwen3-8b-dflash.json), a Nemotron-3.5 draft with
    both encodings (``eagle_aux_hidden_state_layer_ids = target_layer_ids + 1``), EAGLE-3.1
    (``fc_norm``, ``norm_output``) and P-EAGLE in the speculators format vLLM loads.
    ``num_target_layers`` is the training target's depth (recorded as ``num_target_layers``)."""
    methods = _arg("method", method, _one_of(METHOD_NAMES))
    depths = _arg("num_target_layers", num_target_layers, _count(4))
    layers = _arg("num_draft_layers", num_draft_layers, _count(1))
    flags = _arg("with_ids", with_ids, _flag)
    widths = _arg("hidden_size", hidden_size, _count(1))

    @st.composite
    def draw(data: st.DrawFn) -> dict[str, Any]:
        name, n, k, h = data(methods), data(depths), data(layers), data(widths)
        base: dict[str, Any] = {
            "model_type": "qwen3",
            "hidden_size": h,
            "num_attention_heads": max(1, h // 128),
            "num_key_value_heads": max(1, h // 512),
            "vocab_size": 151936,
            "rms_norm_eps": 1e-6,
        }
        if name in ("eagle3.1", "p-eagle"):
            ids = list(
                data(_ids_strategy(n, min_size=3, max_size=3, allow_embedding=False, sorted_=True))
            )
            if name == "eagle3.1":
                return {
                    **base,
                    "architectures": ["LlamaForCausalLMEagle3"],
                    "model_type": "llama",
                    "num_hidden_layers": 1,
                    "fc_norm": True,
                    "norm_output": True,
                    "eagle_config": {IDS_FIELD: ids, "use_aux_hidden_state": True},
                }
            return {
                "speculators_model_type": "peagle",
                "architectures": ["PeagleLlamaForCausalLM"],
                "transformer_layer_config": {**base, "model_type": "llama", "num_hidden_layers": k},
                IDS_FIELD: ids,
                "speculators_config": {"algorithm": "peagle"},
            }
        m = min(k, n)  # one tap per draft layer, as the trainers' default has
        ids = list(
            data(_ids_strategy(n, min_size=m, max_size=m, allow_embedding=False, sorted_=True))
        )
        dflash: dict[str, Any] = {"mask_token_id": 151669}
        written = data(flags) or name == "nemotron-3.5"
        if written:
            dflash["target_layer_ids"] = ids
        config: dict[str, Any] = {
            **base,
            "architectures": ["DFlashDraftModel"],
            "num_hidden_layers": k,
            "num_target_layers": n,
            "block_size": 16,
            "dflash_config": dflash,
        }
        if name == "dflash2":
            config["architectures"] = ["DFlash2DraftModel"]
        elif name == "domino":
            dflash.update(
                projector_type="domino",
                shift_label=True,
                pure_draft_prefix_len=1,
                gru_hidden_dim=1024,
                emb_dim=256,
            )
        elif name == "dspark":
            config["architectures"] = ["DSparkDraftModel"]
            dflash.update(projector_type="dspark", markov_rank=256, markov_head_type="vanilla")
        elif name == "nemotron-3.5":
            config[IDS_FIELD] = [i + 1 for i in ids]
        return config

    return draw()
