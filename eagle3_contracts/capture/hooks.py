"""Hook-based reference capture of EAGLE-3 hidden states, in canonical layer ids, and what a
capture takes.

``capture_hidden_states`` registers hooks only on the layers it needs and keeps only the k
requested states (never ``output_hidden_states``):

* ``-1``: a forward-pre-hook on layer 0 records the stream *entering* it, exactly as the layer
  sees it (GPT-2's position embeddings and Gemma's scaling included);
* ``N >= 0``: a forward hook on layer N records its output (so ``L - 1`` is pre-norm).

A layer output is a tensor, a tuple whose first item is the stream (HF), or a
``(hidden, residual)`` pair (fused engines: the stream is ``hidden + residual``); a layer input
may arrive positionally or as keywords. Hooks are removed even when the forward raises, and the
forward stops right after the deepest requested layer (``stop_early``).

What a capture takes (first below): the model's own facts (config, embedding table, hidden size,
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

import contextlib
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, TypeGuard

import torch
from torch import Tensor, nn

from eagle3_contracts.contract import ORDERS
from eagle3_contracts.errors import ContractError
from eagle3_contracts.layer_ids import EMBEDDING, check_layer_id

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


# -- the model's layers and final norm -------------------------------------------------------------

# Where decoder layers live in known layouts, most specific first.
KNOWN_LAYER_PATHS: tuple[str, ...] = (
    "layers",
    "model.layers",
    "model.model.layers",
    "model.language_model.layers",
    "language_model.model.layers",
    "transformer.h",
    "model.transformer.h",
    "gpt_neox.layers",
    "model.decoder.layers",
    "transformer.layers",
    "h",
)
# Where the final norm lives in known layouts.
KNOWN_NORM_PATHS: tuple[str, ...] = (
    "norm",
    "model.norm",
    "model.model.norm",
    "model.language_model.norm",
    "transformer.ln_f",
    "model.transformer.ln_f",
    "gpt_neox.final_layer_norm",
    "model.decoder.final_layer_norm",
    "ln_f",
)


# -- locating modules ------------------------------------------------------------------
def _get_path(model: nn.Module, path: str) -> Any:
    obj: Any = model
    for part in path.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def decoder_layers(model: nn.Module, layers_path: str | None = None) -> nn.ModuleList:
    """The decoder-layer list of ``model`` (HF, GPT-2 ``transformer.h``, synthetic, ...).

    ``layers_path`` (dotted, e.g. ``"model.layers"``) overrides the search. Without it, known
    paths are tried, then the single longest ``nn.ModuleList`` of identical blocks.
    """
    if layers_path is not None:
        found = _get_path(model, layers_path)
        if not isinstance(found, nn.ModuleList) or len(found) == 0:
            raise ContractError(
                f"layers_path {layers_path!r} does not name a non-empty nn.ModuleList on "
                f"{type(model).__name__} (found {type(found).__name__})",
                field="layers_path",
            )
        return found
    for path in KNOWN_LAYER_PATHS:
        found = _get_path(model, path)
        if isinstance(found, nn.ModuleList) and len(found) > 0:
            return found
    candidates = [
        (name, mod)
        for name, mod in model.named_modules()
        if isinstance(mod, nn.ModuleList) and len(mod) > 0 and len({type(m) for m in mod}) == 1
    ]
    if candidates:
        longest = max(len(m) for _, m in candidates)
        best = [(n, m) for n, m in candidates if len(m) == longest]
        if len(best) == 1:
            return best[0][1]
        names = ", ".join(repr(n) for n, _ in best)
        raise ContractError(
            f"cannot tell which ModuleList of {type(model).__name__} holds the decoder layers "
            f"(candidates {names}); pass layers_path=",
            field="layers_path",
        )
    raise ContractError(
        f"no decoder-layer list found on {type(model).__name__} (tried {', '.join(KNOWN_LAYER_PATHS)}); "
        f"pass layers_path= naming the nn.ModuleList of decoder layers",
        field="layers_path",
    )


def final_norm(model: nn.Module, norm_path: str | None = None) -> nn.Module | None:
    """The final norm module applied after the last decoder layer, or ``None`` if unknown."""
    for path in (norm_path,) if norm_path else KNOWN_NORM_PATHS:
        found = _get_path(model, path)
        if isinstance(found, nn.Module):
            return found
    return None


# -- reading states from hook arguments --------------------------------------------------
def _same_shape_tensor(x: Any, like: Tensor) -> TypeGuard[Tensor]:
    return isinstance(x, Tensor) and x.shape == like.shape


def stream_of_output(output: Any) -> Tensor:
    """The residual stream carried by a layer's output (tensor, HF tuple, or fused pair)."""
    if isinstance(output, Tensor):
        return output
    if isinstance(output, (tuple, list)) and output and isinstance(output[0], Tensor):
        hidden = output[0]
        if len(output) > 1 and _same_shape_tensor(output[1], hidden):
            return hidden + output[1]  # fused (hidden, residual)
        return hidden
    if isinstance(output, Mapping) and isinstance(output.get("hidden_states"), Tensor):
        state: Tensor = output["hidden_states"]
        return state
    raise ContractError(
        f"cannot read a hidden state from a layer output of type {type(output).__name__}; "
        f"expected a tensor, a tuple starting with one, or (hidden, residual)",
        field="layer output",
    )


def stream_of_input(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Tensor:
    """The residual stream entering a layer, from its call arguments.

    The hidden state is the first positional argument or ``hidden_states=``; a fused engine's
    residual is the second positional argument or ``residual=`` (``None`` before layer 0).
    """
    hidden = args[0] if args else kwargs.get("hidden_states")
    if not isinstance(hidden, Tensor):
        raise ContractError(
            "cannot read the hidden state entering layer 0: pass it as the first positional "
            "argument or hidden_states=",
            field="layer input",
        )
    residual = args[1] if len(args) > 1 else kwargs.get("residual")
    return hidden + residual if _same_shape_tensor(residual, hidden) else hidden


# -- capture ---------------------------------------------------------------------------
class _StopForward(Exception):
    """Raised by a hook once every requested state is captured."""


def _check_ids(layer_ids: Sequence[int], num_layers: int) -> tuple[int, ...]:
    if isinstance(layer_ids, (str, bytes)) or not isinstance(layer_ids, Sequence):
        raise ContractError(
            f"layer_ids must be a sequence of canonical ids, got {layer_ids!r}", field="layer_ids"
        )
    ids = tuple(
        check_layer_id(n, num_layers, field=f"layer_ids[{i}]") for i, n in enumerate(layer_ids)
    )
    if not ids:
        raise ContractError("layer_ids is empty", field="layer_ids")
    if len(set(ids)) != len(ids):
        raise ContractError(f"layer_ids {list(ids)} repeats an id", field="layer_ids")
    return ids


def _is_hf(model: nn.Module) -> bool:
    tf = sys.modules.get("transformers")
    return tf is not None and isinstance(model, tf.PreTrainedModel)


def run_forward(
    model: nn.Module,
    input_ids: Tensor,
    attention_mask: Tensor | None = None,
    **forward_kwargs: Any,
) -> Any:
    """Call ``model`` the way a capture does (no grad; no KV cache for HF models)."""
    kwargs = dict(forward_kwargs)
    if attention_mask is not None:
        kwargs["attention_mask"] = attention_mask
    if _is_hf(model):
        kwargs.setdefault("use_cache", False)
    with torch.no_grad():
        return model(input_ids, **kwargs)


@contextlib.contextmanager
def layer_hooks(
    layers: nn.ModuleList,
    on_state: Callable[[int, Tensor], None],
    layer_ids: Sequence[int],
    *,
    stop_after: int | None = None,
) -> Iterator[None]:
    """Call ``on_state(id, stream)`` for each canonical id as the forward produces it.

    ``stop_after``: end the forward right after that id's state (run the forward with
    ``forward_until``, which treats that stop as done). Hooks are removed on exit, whatever
    happens.
    """
    handles = []
    try:
        if EMBEDDING in layer_ids:

            def pre_hook(module: nn.Module, args: tuple, kwargs: dict) -> None:
                on_state(EMBEDDING, stream_of_input(args, kwargs))
                if stop_after == EMBEDDING:
                    raise _StopForward

            handles.append(layers[0].register_forward_pre_hook(pre_hook, with_kwargs=True))
        for n in sorted(set(layer_ids) - {EMBEDDING}):

            def hook(module: nn.Module, args: tuple, output: Any, n: int = n) -> None:
                on_state(n, stream_of_output(output))
                if stop_after == n:
                    raise _StopForward

            handles.append(layers[n].register_forward_hook(hook))
        yield
    finally:
        for handle in handles:
            handle.remove()


def forward_until(
    model: nn.Module, input_ids: Tensor, attention_mask: Tensor | None = None, **kwargs: Any
) -> None:
    """Run the forward, treating an early stop raised by a ``layer_hooks`` hook as done."""
    with contextlib.suppress(_StopForward):
        run_forward(model, input_ids, attention_mask, **kwargs)


def capture_states(
    model: nn.Module,
    input_ids: Tensor,
    layer_ids: Sequence[int],
    *,
    attention_mask: Tensor | None = None,
    layers_path: str | None = None,
    stop_early: bool = True,
    **forward_kwargs: Any,
) -> dict[int, Tensor]:
    """The requested states as ``{canonical id: [B, T, H]}``, captured by hooks."""
    layers = decoder_layers(model, layers_path)
    ids = _check_ids(layer_ids, len(layers))
    states: dict[int, Tensor] = {}

    def keep(n: int, state: Tensor) -> None:
        states[n] = state.detach().clone()

    with layer_hooks(layers, keep, ids, stop_after=max(ids) if stop_early else None):
        forward_until(model, input_ids, attention_mask, **forward_kwargs)
    missing = [n for n in ids if n not in states]
    if missing:
        raise ContractError(
            f"the forward of {type(model).__name__} never ran layer(s) for ids {missing}: "
            f"the layer list found ({len(layers)} layers) is not the one the forward uses; "
            f"pass layers_path=",
            field="layers_path",
        )
    return states


def capture_hidden_states(
    model: nn.Module,
    input_ids: Tensor,
    layer_ids: Sequence[int],
    *,
    order: str = "ascending",
    attention_mask: Tensor | None = None,
    layers_path: str | None = None,
    stop_early: bool = True,
    **forward_kwargs: Any,
) -> Tensor:
    """Reference EAGLE-3 capture: ``[B, T, k*H]``, the k canonical states concatenated.

    ``order="ascending"`` (every engine) sorts the ids; ``"as_listed"`` keeps the given order.
    Extra keyword arguments go to the model's forward.
    """
    if order not in ORDERS:
        raise ContractError(
            f"order must be one of {', '.join(ORDERS)}, got {order!r}", field="order"
        )
    check_model(model)
    check_input_ids(input_ids, vocab_size=known_vocab_size(model))
    states = capture_states(
        model,
        input_ids,
        layer_ids,
        attention_mask=attention_mask,
        layers_path=layers_path,
        stop_early=stop_early,
        **forward_kwargs,
    )
    concat = sorted(states) if order == "ascending" else list(layer_ids)
    return torch.cat([states[n] for n in concat], dim=-1)


def reference_states(
    model: nn.Module,
    input_ids: Tensor,
    layer_ids: Sequence[int],
    *,
    attention_mask: Tensor | None = None,
    layers_path: str | None = None,
) -> dict[int, Tensor]:
    """The same states as ``capture_states``, computed without capture hooks (for testing).

    Synthetic targets: the explicit ``enter`` / ``run_layer`` / ``stream`` loop. Hugging Face
    models: ``output_hidden_states=True`` with ``config.tie_last_hidden_states = False`` so
    ``hidden_states[L]`` is the pre-norm last output (``hidden_states[N + 1]`` = canonical N).
    """
    from eagle3_contracts.testing.synthetic import SyntheticTarget

    layers = decoder_layers(model, layers_path)
    ids = _check_ids(layer_ids, len(layers))
    if isinstance(model, SyntheticTarget):
        with torch.no_grad():
            state = model.enter(input_ids, attention_mask)
            found = {EMBEDDING: model.stream(state)}
            for i in range(len(layers)):
                state = model.run_layer(i, state, attention_mask)
                found[i] = model.stream(state)
        return {n: found[n] for n in ids}
    if not _is_hf(model):
        raise ContractError(
            f"reference_states supports synthetic and Hugging Face models, got "
            f"{type(model).__name__}",
            field="model",
        )
    config: Any = model.config
    had = "tie_last_hidden_states" in config.__dict__
    old = getattr(config, "tie_last_hidden_states", None)
    config.tie_last_hidden_states = False
    try:
        out = run_forward(model, input_ids, attention_mask, output_hidden_states=True)
    finally:
        if had:
            config.tie_last_hidden_states = old
        else:
            del config.tie_last_hidden_states
    hidden = out.hidden_states
    if len(hidden) != len(layers) + 1:
        raise ContractError(
            f"{type(model).__name__} returned {len(hidden)} hidden states for {len(layers)} "
            f"layers; expected {len(layers) + 1}",
            field="model",
        )
    return {n: hidden[n + 1] for n in ids}
