"""An EAGLE-3 drafter read from its checkpoint and run exactly as vLLM runs it.

Layouts read (one ``config.json`` plus ``*.safetensors``; pickles are never opened):

* vLLM / SGLang / SpecForge ``LlamaForCausalLMEagle3``: ``fc``, ``midlayer.*``, ``norm``,
  ``lm_head`` (over ``draft_vocab_size`` tokens), ``d2t`` (draft id -> target id offset) and
  ``t2d``; ``embed_tokens`` optional (absent: the target's embedding is shared);
* the same names under a ``model.`` prefix, and the EAGLE repository's ``layers.0.*`` for
  ``midlayer.*``.

EAGLE-3.1's norm flags are run as vLLM 0.33.0 reads them (llama_eagle3.py): ``norm_before_fc``
(``eagle_config`` first, then the top level, lines 184-188) is one RMSNorm ``input_norm`` over
the concatenated states; ``fc_norm`` (top level only, line 231) is one RMSNorm ``fc_norm.<i>``
per state; both before ``fc``, in that order (``combine_hidden_states``, lines 399-417).

Not read (refused with the field): fused ``qkv_proj``/``gate_up_proj`` (engine-internal),
``rope_scaling``, more than one decoder layer; methods other than EAGLE-3 and EAGLE-3.1
(``NOT_RUN``).

The forward follows vLLM 0.32.0 ``vllm/model_executor/models/llama_eagle3.py``:
``embeds = input_layernorm(embed(tokens))``; ``h = fc(target states)``; ``residual = h``
(``norm_before_residual``: ``residual = hidden_norm(h)``); attention over
``cat([embeds, hidden_norm(h)])`` (lines 131-144); ``post_attention_layernorm`` with the fused
residual add, MLP (146-149); ``norm`` with the residual gives the logits' input and the pre-norm
state that the next draft step takes in place of ``fc(...)`` (283-288;
``v1/spec_decode/llm_base_proposer.py`` lines 754-761). Draft logits map to target ids by
``target = draft + d2t[draft]`` (llama_eagle3.py 385-395).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from eagle3_contracts._io import read_json_file
from eagle3_contracts.errors import ConfigError

ARCHITECTURES = ("LlamaForCausalLMEagle3", "Eagle3LlamaForCausalLM", "LlamaForCausalLM")
_MIDLAYER = (
    "input_layernorm.weight",
    "hidden_norm.weight",
    "self_attn.q_proj.weight",
    "self_attn.k_proj.weight",
    "self_attn.v_proj.weight",
    "self_attn.o_proj.weight",
    "post_attention_layernorm.weight",
    "mlp.gate_proj.weight",
    "mlp.up_proj.weight",
    "mlp.down_proj.weight",
)

_BLOCK_WHY = (
    "it drafts a whole block at once, denoising mask tokens over the target's context features "
    "(z-lab/dflash dflash/model.py:63 dflash_generate; sglang 0.5.23 models/dflash.py), "
    "which the oracle's one-token EAGLE-3 steps (vllm llama_eagle3.py) do not run; `check` "
    "still answers which layers each release feeds it"
)
NOT_RUN: dict[str, str] = {
    "dflash": _BLOCK_WHY,
    "dflash2": _BLOCK_WHY,
    "domino": _BLOCK_WHY,
    "dspark": _BLOCK_WHY,
    "nemotron-3.5": _BLOCK_WHY,
    "p-eagle": (
        "it drafts several tokens in one forward pass from parallel-drafting positions "
        "(vllm 0.33.0 PeagleLlamaForCausalLM, model_executor/models/registry.py:699), which "
        "the oracle's one-token EAGLE-3 steps do not run; `check` still answers which layers "
        "each release feeds it"
    ),
}
"""Drafter methods (``conventions.methods``) the oracle cannot run, and why. EAGLE-3 and
EAGLE-3.1 (its ``norm_before_fc``, ``fc_norm`` and ``norm_output``, read by ``read_shape``) run."""


def check_method(config: dict[str, Any], source: str) -> None:
    """Refuse (``ConfigError``, field ``architectures``) a drafter whose method the oracle
    cannot run, naming the method and why, before anything is loaded or measured."""
    from eagle3_contracts.conventions import methods

    method = methods.detect(config)
    why = NOT_RUN.get(method.name)
    if why is not None:
        raise ConfigError(
            f"accept cannot run a {method.label} drafter: {why}",
            source=source,
            field="architectures",
        )


@dataclass(frozen=True)
class DrafterShape:
    """The sizes the drafter's config declares (and its checkpoint must hold)."""

    hidden_size: int
    target_hidden_size: int
    num_states: int  # target states concatenated into fc (fc input = num_states * target H)
    num_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int  # the target's vocabulary
    draft_vocab_size: int
    rms_norm_eps: float
    rope_theta: float
    norm_before_residual: bool = False
    norm_output: bool = False
    norm_before_fc: bool = False  # EAGLE-3.1: one RMSNorm over the concatenated states
    fc_norm: bool = False  # EAGLE-3.1: one RMSNorm per state


def _rms(x: Tensor, weight: Tensor, eps: float) -> Tensor:
    var = x.float().pow(2).mean(-1, keepdim=True)
    return (x.float() * torch.rsqrt(var + eps)).to(x.dtype) * weight


def _rotate_half(x: Tensor) -> Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class Eagle3Drafter(nn.Module):
    """The one-layer EAGLE-3 drafter: weights as parameters, one method per stage of a step."""

    inv_freq: Tensor
    d2t: Tensor | None

    def __init__(self, shape: DrafterShape, weights: dict[str, Tensor]) -> None:
        super().__init__()
        self.shape = shape
        self.w = nn.ParameterDict(
            {
                k.replace(".", "__"): nn.Parameter(v, requires_grad=False)
                for k, v in weights.items()
                if k != "d2t"
            }
        )
        self.register_buffer("d2t", weights.get("d2t"))
        inv = 1.0 / (
            shape.rope_theta
            ** (torch.arange(0, shape.head_dim, 2, dtype=torch.float32) / shape.head_dim)
        )
        self.register_buffer("inv_freq", inv, persistent=False)

    def p(self, name: str) -> Tensor:
        """A weight by its checkpoint name (``midlayer.mlp.up_proj.weight``)."""
        weight: Tensor = self.w[name.replace(".", "__")]
        return weight

    @property
    def has_embedding(self) -> bool:
        return "embed_tokens__weight" in self.w

    # -- pieces ----------------------------------------------------------------------------
    def combine(self, states: Tensor) -> Tensor:
        """``fc`` over the concatenated target states ``[..., num_states * H_target]``, after
        EAGLE-3.1's norms (vLLM 0.33.0 llama_eagle3.py:405-416)."""
        s = self.shape
        if s.norm_before_fc:
            states = _rms(states, self.p("input_norm.weight"), s.rms_norm_eps)
        if s.fc_norm:
            chunks = states.chunk(s.num_states, dim=-1)
            states = torch.cat(
                [
                    _rms(c, self.p(f"fc_norm.{i}.weight"), s.rms_norm_eps)
                    for i, c in enumerate(chunks)
                ],
                dim=-1,
            )
        return states @ self.p("fc.weight").T

    def rope(self, positions: Tensor) -> tuple[Tensor, Tensor]:
        freqs = positions.to(torch.float32)[..., None] * self.inv_freq
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos(), emb.sin()

    def qkv(
        self, hidden: Tensor, embeds: Tensor, positions: Tensor
    ) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """Queries, keys, values ``[N, heads, head_dim]`` and the residual of one step."""
        s = self.shape
        e = _rms(embeds, self.p("midlayer.input_layernorm.weight"), s.rms_norm_eps)
        normed = _rms(hidden, self.p("midlayer.hidden_norm.weight"), s.rms_norm_eps)
        residual = normed if s.norm_before_residual else hidden
        x = torch.cat([e, normed], dim=-1)
        q = (x @ self.p("midlayer.self_attn.q_proj.weight").T).view(-1, s.num_heads, s.head_dim)
        k = (x @ self.p("midlayer.self_attn.k_proj.weight").T).view(-1, s.num_kv_heads, s.head_dim)
        v = (x @ self.p("midlayer.self_attn.v_proj.weight").T).view(-1, s.num_kv_heads, s.head_dim)
        cos, sin = self.rope(positions)
        cos, sin = cos[:, None, :], sin[:, None, :]
        q = q * cos + _rotate_half(q) * sin
        k = k * cos + _rotate_half(k) * sin
        rep = s.num_heads // s.num_kv_heads
        return q, k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1), residual

    def finish(self, attn: Tensor, residual: Tensor) -> tuple[Tensor, Tensor]:
        """After attention: o_proj, fused add + norm, MLP, final norm.

        Returns (logits' input, the state the next draft step takes)."""
        s = self.shape
        out = attn.reshape(attn.shape[0], -1) @ self.p("midlayer.self_attn.o_proj.weight").T
        residual = out + residual
        h = _rms(residual, self.p("midlayer.post_attention_layernorm.weight"), s.rms_norm_eps)
        gate = h @ self.p("midlayer.mlp.gate_proj.weight").T
        up = h @ self.p("midlayer.mlp.up_proj.weight").T
        h = (nn.functional.silu(gate) * up) @ self.p("midlayer.mlp.down_proj.weight").T
        prenorm = h + residual
        normed = _rms(prenorm, self.p("norm.weight"), s.rms_norm_eps)
        return normed, (normed if s.norm_output else prenorm)

    def logits(self, normed: Tensor) -> Tensor:
        """Draft-vocabulary logits ``[N, draft_vocab]``."""
        return normed @ self.p("lm_head.weight").T

    def to_target_ids(self, draft_ids: Tensor) -> Tensor:
        if self.d2t is None:
            return draft_ids
        return draft_ids + self.d2t[draft_ids]


# -- reading a checkpoint ------------------------------------------------------------------


def _config(path: Path) -> tuple[dict[str, Any], Path]:
    file = path / "config.json" if path.is_dir() else path
    if not file.is_file():
        raise ConfigError(
            "no config.json (pass the drafter's directory: config.json and *.safetensors)",
            source=str(path),
            field="config.json",
        )
    data = read_json_file(file, what="draft config")
    if not isinstance(data, dict):
        raise ConfigError("config.json is not a JSON object", source=str(file))
    return data, file.parent


def _int(config: dict[str, Any], key: str, source: str, default: int | None = None) -> int:
    value = config.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(
            f"{key} must be a positive integer, got {value!r}", source=source, field=key
        )
    return value


def _number(value: object, key: str, source: str) -> float:
    """A positive finite number from the config (a string or ``NaN`` is refused, not cast)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < math.inf:
        raise ConfigError(
            f"{key} must be a positive number, got {value!r}", source=source, field=key
        )
    return float(value)


def read_shape(config: dict[str, Any], source: str, fc_in: int | None = None) -> DrafterShape:
    """The drafter's sizes from its ``config.json`` (``fc_in``: the fc width in the weights)."""
    archs = config.get("architectures") or []
    if not any(a in ARCHITECTURES for a in archs):
        raise ConfigError(
            f"architectures {archs!r} is not an EAGLE-3 Llama drafter (readable: "
            f"{', '.join(ARCHITECTURES[:2])})",
            source=source,
            field="architectures",
        )
    if config.get("rope_scaling"):
        raise ConfigError(
            "rope_scaling is not read by the acceptance oracle (plain RoPE only)",
            source=source,
            field="rope_scaling",
        )
    layers = config.get("num_hidden_layers", 1)
    if layers != 1:
        raise ConfigError(
            f"num_hidden_layers {layers!r}: the oracle runs one-layer EAGLE-3 drafters",
            source=source,
            field="num_hidden_layers",
        )
    hidden = _int(config, "hidden_size", source)
    heads = _int(config, "num_attention_heads", source)
    target_hidden = _int(config, "target_hidden_size", source, hidden)
    vocab = _int(config, "vocab_size", source)
    rope = config.get("rope_parameters") or {}
    if not isinstance(rope, dict):
        raise ConfigError(
            f"rope_parameters must be an object, got {type(rope).__name__}",
            source=source,
            field="rope_parameters",
        )
    theta = _number(config.get("rope_theta", rope.get("rope_theta", 10000.0)), "rope_theta", source)
    eps = _number(config.get("rms_norm_eps", 1e-6), "rms_norm_eps", source)
    num_states = 3
    if fc_in is not None:
        if fc_in % target_hidden:
            raise ConfigError(
                f"fc.weight takes {fc_in} inputs, not a multiple of target_hidden_size "
                f"{target_hidden}",
                source=source,
                field="fc.weight",
            )
        num_states = fc_in // target_hidden
    return DrafterShape(
        hidden_size=hidden,
        target_hidden_size=target_hidden,
        num_states=num_states,
        num_heads=heads,
        num_kv_heads=_int(config, "num_key_value_heads", source, heads),
        head_dim=_int(config, "head_dim", source, hidden // heads),
        intermediate_size=_int(config, "intermediate_size", source),
        vocab_size=vocab,
        draft_vocab_size=_int(config, "draft_vocab_size", source, vocab),
        rms_norm_eps=eps,
        rope_theta=theta,
        norm_before_residual=bool(config.get("norm_before_residual", False)),
        norm_output=bool(config.get("norm_output", False)),
        **_fc_norms(config),
    )


def _fc_norms(config: dict[str, Any]) -> dict[str, bool]:
    """EAGLE-3.1's fc norms where vLLM 0.33.0 reads them: ``norm_before_fc`` from
    ``eagle_config``, else the top level (llama_eagle3.py:184-188); ``fc_norm`` from the top
    level only (line 231)."""
    eagle = config.get("eagle_config")
    eagle = eagle if isinstance(eagle, dict) else {}
    return {
        "norm_before_fc": bool(eagle.get("norm_before_fc", config.get("norm_before_fc", False))),
        "fc_norm": bool(config.get("fc_norm", False)),
    }


def _canonical_name(name: str) -> str:
    name = name.removeprefix("model.")
    if name.startswith("layers.0."):
        name = "midlayer." + name.removeprefix("layers.0.")
    return name


def _read_weights(folder: Path, source: str) -> dict[str, Tensor]:
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    files = sorted(folder.glob("*.safetensors"))
    if not files:
        pickled = sorted(p.name for g in ("*.bin", "*.pt", "*.pth") for p in folder.glob(g))
        hint = (
            f" (only pickle-based {', '.join(pickled[:2])}: convert to safetensors; pickles "
            "are never opened)"
            if pickled
            else ""
        )
        raise ConfigError(f"no *.safetensors weights{hint}", source=source, field="weights")
    weights: dict[str, Tensor] = {}
    for f in files:
        try:
            for k, v in load_file(str(f)).items():
                weights[_canonical_name(k)] = v
        except (SafetensorError, OSError, ValueError) as exc:
            raise ConfigError(
                f"{f.name} is not a readable safetensors file: {exc}",
                source=source,
                field="weights",
            ) from None
    return weights


def draft_config(path: str | os.PathLike[str]) -> tuple[dict[str, Any], str]:
    """The drafter's raw ``config.json`` (a directory or the file) and how to name it."""
    config, _ = _config(Path(path))
    return config, str(path)


def load_drafter(
    path: str | os.PathLike[str], *, dtype: torch.dtype = torch.float32
) -> tuple[Eagle3Drafter, dict[str, Any]]:
    """Read a drafter directory; returns the drafter and its raw ``config.json``.

    ``ConfigError`` (with ``field``) for a method or layout this module does not run, a missing
    tensor, a shape that disagrees with the config, or a draft vocabulary without ``d2t``."""
    config, folder = _config(Path(path))
    source = str(path)
    check_method(config, source)
    weights = _read_weights(folder, source)
    if "fc.weight" not in weights:
        raise ConfigError(
            "no fc.weight: not an EAGLE-3 layout (readable: fc, midlayer.*, norm, lm_head, "
            f"d2t, t2d; found {', '.join(sorted(weights)[:6])})",
            source=source,
            field="fc.weight",
        )
    shape = read_shape(config, source, fc_in=weights["fc.weight"].shape[1])
    _require_tensors(weights, source, _norm_tensors(shape))
    _check_heads(shape, source)
    for name, want in _expected_shapes(shape).items():
        if name in weights:  # only embed_tokens is optional: the others were required above
            _check_tensor(name, weights[name], want, source)
    _map_draft_vocab(weights, shape, source)
    weights.pop("t2d", None)
    floats = {k: (v if k == "d2t" else v.to(dtype)) for k, v in weights.items()}
    return Eagle3Drafter(shape, floats), config


def _norm_tensors(s: DrafterShape) -> tuple[str, ...]:
    """The EAGLE-3.1 norm weights the flags need (vLLM 0.33.0 llama_eagle3.py:223-240)."""
    return (
        *(("input_norm.weight",) if s.norm_before_fc else ()),
        *((f"fc_norm.{i}.weight" for i in range(s.num_states)) if s.fc_norm else ()),
    )


def _require_tensors(weights: dict[str, Tensor], source: str, norms: tuple[str, ...]) -> None:
    """Every tensor the forward reads is there, and no norm the flags leave unused."""
    _refuse_unused_norms(weights, source, norms)
    required = ("norm.weight", "lm_head.weight", *(f"midlayer.{m}" for m in _MIDLAYER), *norms)
    missing = [n for n in required if n not in weights]
    if missing:
        fused = [n for n in weights if "qkv_proj" in n or "gate_up_proj" in n]
        why = " (fused qkv_proj/gate_up_proj are engine-internal: save q/k/v and gate/up)"
        raise ConfigError(
            f"missing tensors {', '.join(missing[:4])}" + (why if fused else ""),
            source=source,
            field=missing[0],
        )


def _refuse_unused_norms(weights: dict[str, Tensor], source: str, norms: tuple[str, ...]) -> None:
    """An fc norm in the checkpoint that the flags leave unused is refused: vLLM 0.33.0 drops
    ``input_norm`` then (llama_eagle3.py:464-465) and builds no ``fc_norm`` module (231-240)."""
    stray = sorted(
        n
        for n in weights
        if (n.startswith("fc_norm.") or n == "input_norm.weight") and n not in norms
    )
    if stray:
        flag = "fc_norm" if stray[0].startswith("fc_norm.") else "norm_before_fc"
        raise ConfigError(
            f"{stray[0]} is in the checkpoint but {flag} is not set where vLLM 0.33.0 reads it "
            "(fc_norm: top level only, llama_eagle3.py:231; norm_before_fc: eagle_config, then "
            "the top level, 184-188): vLLM runs the drafter without the norm it was trained with",
            source=source,
            field=flag,
        )


def _check_heads(s: DrafterShape, source: str) -> None:
    if s.num_heads % s.num_kv_heads or s.head_dim % 2:
        raise ConfigError(
            f"num_attention_heads {s.num_heads} is not a multiple of num_key_value_heads "
            f"{s.num_kv_heads}, or head_dim {s.head_dim} is odd (RoPE rotates pairs)",
            source=source,
            field="num_key_value_heads",
        )


def _expected_shapes(s: DrafterShape) -> dict[str, tuple[int, ...]]:
    """Each tensor's shape as the config implies it."""
    h = s.hidden_size
    return {
        "fc.weight": (h, s.num_states * s.target_hidden_size),
        "lm_head.weight": (s.draft_vocab_size, h),
        "norm.weight": (h,),
        "midlayer.input_layernorm.weight": (h,),
        "midlayer.hidden_norm.weight": (h,),
        "midlayer.post_attention_layernorm.weight": (h,),
        "midlayer.self_attn.q_proj.weight": (s.num_heads * s.head_dim, 2 * h),
        "midlayer.self_attn.k_proj.weight": (s.num_kv_heads * s.head_dim, 2 * h),
        "midlayer.self_attn.v_proj.weight": (s.num_kv_heads * s.head_dim, 2 * h),
        "midlayer.self_attn.o_proj.weight": (h, s.num_heads * s.head_dim),
        "midlayer.mlp.gate_proj.weight": (s.intermediate_size, h),
        "midlayer.mlp.up_proj.weight": (s.intermediate_size, h),
        "midlayer.mlp.down_proj.weight": (h, s.intermediate_size),
        "embed_tokens.weight": (s.vocab_size, h),
        "input_norm.weight": (s.num_states * s.target_hidden_size,),
        **{f"fc_norm.{i}.weight": (s.target_hidden_size,) for i in range(s.num_states)},
    }


def _check_tensor(name: str, tensor: Tensor, want: tuple[int, ...], source: str) -> None:
    got = tuple(tensor.shape)
    if got != want:
        raise ConfigError(
            f"{name} has shape {list(got)}, the config implies {list(want)}",
            source=source,
            field=name,
        )
    if not tensor.is_floating_point() or not bool(tensor.isfinite().all()):
        raise ConfigError(
            f"{name} holds NaN, infinite or non-float values: the checkpoint is damaged",
            source=source,
            field=name,
        )


def _map_draft_vocab(weights: dict[str, Tensor], s: DrafterShape, source: str) -> None:
    """Keep a valid ``d2t`` (as int64) when the draft vocabulary is smaller, else drop it."""
    if s.draft_vocab_size == s.vocab_size:
        weights.pop("d2t", None)
        return
    d2t = weights.get("d2t")
    if d2t is None:
        raise ConfigError(
            f"draft_vocab_size {s.draft_vocab_size} differs from vocab_size {s.vocab_size} "
            "and the checkpoint has no d2t (draft id -> target id offsets): add it",
            source=source,
            field="d2t",
        )
    if tuple(d2t.shape) != (s.draft_vocab_size,):
        raise ConfigError(
            f"d2t has shape {list(d2t.shape)}, expected [{s.draft_vocab_size}]",
            source=source,
            field="d2t",
        )
    mapped = torch.arange(s.draft_vocab_size) + d2t.long()
    if int(mapped.min()) < 0 or int(mapped.max()) >= s.vocab_size:
        raise ConfigError(
            f"d2t maps draft ids outside the target vocabulary [0, {s.vocab_size})",
            source=source,
            field="d2t",
        )
    weights["d2t"] = d2t.long()


def check_against_target(
    drafter: Eagle3Drafter, vocab_size: int, hidden_size: int, source: str
) -> None:
    """The drafter fits this target: same vocabulary and target width (``ConfigError``)."""
    s = drafter.shape
    if s.vocab_size != vocab_size:
        raise ConfigError(
            f"vocab_size {s.vocab_size} differs from the target's {vocab_size}",
            source=source,
            field="vocab_size",
        )
    if s.target_hidden_size != hidden_size:
        raise ConfigError(
            f"target_hidden_size {s.target_hidden_size} differs from the target's hidden size "
            f"{hidden_size}",
            source=source,
            field="target_hidden_size",
        )
