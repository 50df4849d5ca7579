"""Tiny synthetic decoder targets: embedding + L blocks + final norm, deterministic from a seed.

Variants that matter for EAGLE-3 capture:

* ``style="residual"``: each block adds its own residual (Hugging Face style) and returns the
  stream (a tensor, or a 1-tuple with ``tuple_outputs=True``);
* ``style="fused"``: each block returns ``(hidden, residual)`` separately and the next block's
  input norm fuses the add (SGLang / vLLM / TensorRT-LLM style); the stream is
  ``hidden + residual``;
* ``position_embeddings=True``: learned positions added at entry (GPT-2 style);
* ``embed_scale``: the embedding is multiplied at entry (Gemma style, ``sqrt(H)``).

Every block mixes tokens (causal attention that respects ``attention_mask``) and runs an MLP,
with well-scaled random weights, so adjacent layers are clearly distinct and a sequence inside a
padded batch (left or right padding) yields the states it yields alone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, NamedTuple, Union

import torch
from torch import Tensor, nn

from eagle3_contracts.errors import ContractError

Style = Literal["residual", "fused"]
State = Union[Tensor, tuple[Tensor, Union[Tensor, None]]]  # noqa: UP007 - readable alias
STYLES: tuple[Style, ...] = ("residual", "fused")


@dataclass(frozen=True)
class SyntheticConfig:
    """Shape and variant of a synthetic target."""

    # -- shape --------------------------------------------------------------------------
    num_layers: int  # decoder depth L
    hidden_size: int  # H
    vocab_size: int = 64
    # -- determinism --------------------------------------------------------------------
    seed: int = 0  # every weight is drawn from a generator seeded with this
    # -- variants -----------------------------------------------------------------------
    style: Style = "residual"  # "fused": blocks return (hidden, residual); stream = sum
    position_embeddings: bool = False  # learned positions added at entry (GPT-2)
    embed_scale: float | None = None  # embedding multiplied at entry (Gemma: sqrt(H))
    max_positions: int = 128  # table size of the position embeddings
    tuple_outputs: bool = False  # residual style only: blocks return (stream,) tuples

    def __post_init__(self) -> None:
        for name in ("num_layers", "hidden_size", "vocab_size", "max_positions"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ContractError(f"{name} must be a positive integer, got {value!r}", field=name)
        if self.style not in STYLES:
            raise ContractError(
                f"style must be one of {', '.join(STYLES)}, got {self.style!r}", field="style"
            )
        if self.tuple_outputs and self.style == "fused":
            raise ContractError(
                "tuple_outputs applies to style='residual' only (fused blocks already return "
                "(hidden, residual))",
                field="tuple_outputs",
            )

    @property
    def num_heads(self) -> int:
        """Attention heads: the largest of 4, 2, 1 dividing ``hidden_size``."""
        return next(h for h in (4, 2, 1) if self.hidden_size % h == 0)


class RMSNorm(nn.Module):
    """RMS norm with a learned gain; ``forward(x, residual)`` fuses the add (vLLM style)."""

    def __init__(self, hidden_size: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.eps = eps

    def _norm(self, x: Tensor) -> Tensor:
        var = x.float().pow(2).mean(-1, keepdim=True)
        return (x.float() * torch.rsqrt(var + self.eps)).to(x.dtype) * self.weight

    def forward(self, x: Tensor, residual: Tensor | None = None) -> Tensor | tuple[Tensor, Tensor]:
        if residual is None:
            return self._norm(x)
        residual = x + residual
        return self._norm(residual), residual


def _attention_bias(attention_mask: Tensor | None, t: int, like: Tensor) -> Tensor:
    """Additive ``[B or 1, 1, T, T]`` bias: causal, keys masked where ``attention_mask == 0``.

    A fully masked row (a pad query under left padding) falls back to attending to itself, so
    no NaN appears and real tokens never see padding.
    """
    causal = torch.ones(t, t, dtype=torch.bool, device=like.device).tril()
    allowed = causal[None, None]
    if attention_mask is not None:
        allowed = allowed & attention_mask.bool()[:, None, None, :]
    eye = torch.eye(t, dtype=torch.bool, device=like.device)[None, None]
    allowed = allowed | (eye & ~allowed.any(-1, keepdim=True))
    bias = torch.zeros(allowed.shape, dtype=like.dtype, device=like.device)
    return bias.masked_fill(~allowed, torch.finfo(like.dtype).min)


class Attention(nn.Module):
    """Multi-head causal self-attention (no rotary: positions come from the embedding)."""

    def __init__(self, hidden_size: int, num_heads: int) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.qkv = nn.Linear(hidden_size, 3 * hidden_size, bias=False)
        self.o = nn.Linear(hidden_size, hidden_size, bias=False)

    def forward(self, x: Tensor, bias: Tensor) -> Tensor:
        b, t, h = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.num_heads, h // self.num_heads).unbind(2)
        q, k, v = (y.transpose(1, 2) for y in (q, k, v))
        scores = q @ k.transpose(-1, -2) / math.sqrt(h // self.num_heads) + bias
        out = scores.softmax(-1) @ v
        projected: Tensor = self.o(out.transpose(1, 2).reshape(b, t, h))
        return projected


class MLP(nn.Module):
    def __init__(self, hidden_size: int) -> None:
        super().__init__()
        self.up = nn.Linear(hidden_size, 2 * hidden_size, bias=False)
        self.down = nn.Linear(2 * hidden_size, hidden_size, bias=False)

    def forward(self, x: Tensor) -> Tensor:
        down: Tensor = self.down(nn.functional.gelu(self.up(x)))
        return down


class _Block(nn.Module):
    """The modules of a block (norm, attention, norm, MLP); subclasses wire the residual."""

    def __init__(self, config: SyntheticConfig) -> None:
        super().__init__()
        self.input_norm = RMSNorm(config.hidden_size)
        self.attn = Attention(config.hidden_size, config.num_heads)
        self.post_norm = RMSNorm(config.hidden_size)
        self.mlp = MLP(config.hidden_size)


class ResidualBlock(_Block):
    """HF-style block: ``x + attn(norm(x))`` then ``+ mlp(norm(.))``; returns the stream."""

    def __init__(self, config: SyntheticConfig) -> None:
        super().__init__(config)
        self.tuple_outputs = config.tuple_outputs

    def forward(
        self, hidden_states: Tensor, attention_mask: Tensor | None = None
    ) -> Tensor | tuple[Tensor]:
        bias = _attention_bias(attention_mask, hidden_states.shape[1], hidden_states)
        h = hidden_states + self.attn(self.input_norm(hidden_states), bias)
        h = h + self.mlp(self.post_norm(h))
        return (h,) if self.tuple_outputs else h


class FusedBlock(_Block):
    """Engine-style block: takes and returns ``(hidden, residual)``; stream = their sum."""

    def forward(
        self,
        hidden_states: Tensor,
        residual: Tensor | None = None,
        attention_mask: Tensor | None = None,
    ) -> tuple[Tensor, Tensor]:
        bias = _attention_bias(attention_mask, hidden_states.shape[1], hidden_states)
        if residual is None:
            residual, hidden_states = hidden_states, self.input_norm(hidden_states)
        else:
            hidden_states, residual = self.input_norm(hidden_states, residual)
        hidden_states = self.attn(hidden_states, bias)
        hidden_states, residual = self.post_norm(hidden_states, residual)
        return self.mlp(hidden_states), residual


class SyntheticTarget(nn.Module):
    """A synthetic decoder; attribute names follow HF (``embed_tokens``, ``layers``, ``norm``)."""

    def __init__(self, config: SyntheticConfig) -> None:
        super().__init__()
        self.config = config
        h = config.hidden_size
        self.embed_tokens = nn.Embedding(config.vocab_size, h)
        self.embed_positions = (
            nn.Embedding(config.max_positions, h) if config.position_embeddings else None
        )
        block = FusedBlock if config.style == "fused" else ResidualBlock
        self.layers = nn.ModuleList(block(config) for _ in range(config.num_layers))
        self.norm = RMSNorm(h)

    # -- the pieces, for reference loops ------------------------------------------------
    def enter(self, input_ids: Tensor, attention_mask: Tensor | None = None) -> State:
        """The state entering layer 0 (``(embeds, None)`` in the fused style)."""
        x = self.embed_tokens(input_ids)
        if self.config.embed_scale is not None:
            x = x * torch.tensor(self.config.embed_scale, dtype=x.dtype)
        if self.embed_positions is not None:
            x = x + self.embed_positions(_positions(input_ids, attention_mask))
        return (x, None) if self.config.style == "fused" else x

    def run_layer(self, i: int, state: State, attention_mask: Tensor | None = None) -> State:
        """Run layer ``i`` on ``state`` (through ``__call__``, so hooks fire)."""
        layer = self.layers[i]
        if self.config.style == "fused":
            hidden, residual = state
            fused: State = layer(hidden, residual, attention_mask=attention_mask)
            return fused
        out: Tensor | tuple[Tensor, ...] = layer(state, attention_mask=attention_mask)
        return out[0] if isinstance(out, tuple) else out

    def stream(self, state: State) -> Tensor:
        """The canonical residual stream of a state (``hidden + residual`` when fused)."""
        if isinstance(state, tuple):
            hidden, residual = state
            return hidden if residual is None else hidden + residual
        return state

    def finish(self, state: State) -> Tensor:
        """The final norm of the stream (what ``forward`` returns)."""
        normed: Tensor = self.norm(self.stream(state))
        return normed

    def forward(
        self,
        input_ids: Tensor,
        attention_mask: Tensor | None = None,
        output_hidden_states: bool = False,
    ) -> Tensor | SyntheticOutput:
        """Post-norm last hidden state ``[B, T, H]``.

        ``output_hidden_states=True`` returns a ``SyntheticOutput`` with all L + 1 states the
        Hugging Face way (the last one post-norm), for comparisons with HF-style capture.
        """
        state = self.enter(input_ids, attention_mask)
        kept = [self.stream(state)] if output_hidden_states else None
        for i in range(len(self.layers)):
            state = self.run_layer(i, state, attention_mask)
            if kept is not None:
                kept.append(self.stream(state))
        last = self.finish(state)
        if kept is None:
            return last
        kept[-1] = last
        return SyntheticOutput(last, tuple(kept))


class SyntheticOutput(NamedTuple):
    """``forward(..., output_hidden_states=True)``: HF-style outputs."""

    last_hidden_state: Tensor
    hidden_states: tuple[Tensor, ...]  # [0] entry state, [N + 1] layer N, [L] post-norm


def _positions(input_ids: Tensor, attention_mask: Tensor | None) -> Tensor:
    """Position of each token counting only real tokens, so left padding does not shift them."""
    if attention_mask is None:
        return torch.arange(input_ids.shape[1], device=input_ids.device).expand_as(input_ids)
    return (attention_mask.long().cumsum(-1) - 1).clamp(min=0)


@torch.no_grad()
def _init_weights(model: SyntheticTarget, seed: int) -> None:
    """Draw every weight from one seeded generator: same seed, same model, whatever torch's RNG."""
    g = torch.Generator().manual_seed(seed)
    for name, p in model.named_parameters():
        if name.endswith("norm.weight"):
            p.copy_(0.5 + torch.rand(p.shape, generator=g))  # gains in [0.5, 1.5)
        elif p.dim() == 2 and "embed" not in name:
            p.copy_(torch.randn(p.shape, generator=g) / math.sqrt(p.shape[1]))
        else:
            p.copy_(torch.randn(p.shape, generator=g))


def build_synthetic(
    config: SyntheticConfig, *, dtype: torch.dtype = torch.float32, device: str = "cpu"
) -> SyntheticTarget:
    """A synthetic target in eval mode, weights drawn from ``config.seed``."""
    if not isinstance(config, SyntheticConfig):
        raise ContractError(
            f"config must be a SyntheticConfig, got {type(config).__name__}", field="config"
        )
    with torch.device("meta"):
        model = SyntheticTarget(config)
    model = model.to_empty(device="cpu")
    _init_weights(model, config.seed)
    return model.to(device=device, dtype=dtype).eval().requires_grad_(False)
