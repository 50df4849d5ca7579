"""Tiny random-init Hugging Face targets for tests (no downloads, eager attention, eval mode).

``HF_ARCHITECTURES`` lists the model types covered; ``tiny_hf_config`` shrinks each to
hidden 16-32 and 2-6 layers; ``build_tiny_hf`` builds the causal-LM with seeded weights.
``decoder_layers`` (re-exported from ``capture``) finds the decoder-layer list of any of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch

from eagle3_contracts.capture.hooks import decoder_layers, final_norm
from eagle3_contracts.errors import ContractError

if TYPE_CHECKING:
    from transformers import PretrainedConfig, PreTrainedModel

__all__ = [
    "HF_ARCHITECTURES",
    "HF_SPECS",
    "HfSpec",
    "build_tiny_hf",
    "decoder_layers",
    "final_norm",
    "tiny_hf_config",
]


@dataclass(frozen=True)
class HfSpec:
    """How to shrink one architecture's config (an OpInfo-style table entry)."""

    # -- identity -----------------------------------------------------------------------
    arch: str  # transformers model_type
    # -- field names for depth and width (GPT-2 uses its own) ----------------------------
    layers_field: str = "num_hidden_layers"
    hidden_field: str = "hidden_size"
    # -- fixed small settings ------------------------------------------------------------
    small: dict[str, Any] = field(default_factory=dict)
    # -- what makes the embedding differ from the stream entering layer 0 ----------------
    entry_transform: str | None = None  # "position embeddings", "scaled by sqrt(H)", None


_DENSE = {
    "intermediate_size": 64,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 96,
    "max_position_embeddings": 128,
}

HF_SPECS: tuple[HfSpec, ...] = (
    HfSpec("llama", small={**_DENSE, "head_dim": 8}),
    HfSpec("qwen2", small=_DENSE),
    HfSpec("qwen3", small={**_DENSE, "head_dim": 8}),
    HfSpec(
        "qwen3_moe",
        small={
            **_DENSE,
            "head_dim": 8,
            "moe_intermediate_size": 16,
            "num_experts": 4,
            "num_experts_per_tok": 2,
            "decoder_sparse_step": 1,
            "mlp_only_layers": [],
        },
    ),
    HfSpec("mistral", small={**_DENSE, "head_dim": 8}),
    HfSpec("gemma", small={**_DENSE, "head_dim": 8}, entry_transform="scaled by sqrt(H)"),
    HfSpec(
        "deepseek_v3",
        small={
            **_DENSE,
            "num_key_value_heads": 4,
            "moe_intermediate_size": 16,
            "n_routed_experts": 4,
            "num_experts_per_tok": 2,
            "n_shared_experts": 1,
            "n_group": 1,
            "topk_group": 1,
            "first_k_dense_replace": 1,
            "q_lora_rank": 16,
            "kv_lora_rank": 8,
            "qk_rope_head_dim": 4,
            "qk_nope_head_dim": 4,
            "v_head_dim": 8,
            "head_dim": 4,
        },
    ),
    HfSpec(
        "gpt2",
        layers_field="n_layer",
        hidden_field="n_embd",
        small={
            "n_head": 4,
            "vocab_size": 96,
            "n_positions": 128,
            "n_inner": 64,
            "bos_token_id": 0,
            "eos_token_id": 1,
        },
        entry_transform="position embeddings",
    ),
)
HF_ARCHITECTURES: tuple[str, ...] = tuple(s.arch for s in HF_SPECS)
_BY_ARCH = {s.arch: s for s in HF_SPECS}


def hf_spec(arch: str) -> HfSpec:
    try:
        return _BY_ARCH[arch]
    except KeyError:
        raise ContractError(
            f"unknown architecture {arch!r}; choose one of {', '.join(HF_ARCHITECTURES)}",
            field="arch",
        ) from None


def tiny_hf_config(
    arch: str, *, num_layers: int = 4, hidden_size: int = 32, **overrides: Any
) -> PretrainedConfig:
    """A tiny config of ``arch`` (eager attention, no dropout); ``overrides`` win."""
    from transformers import AutoConfig

    spec = hf_spec(arch)
    values: dict[str, Any] = {
        spec.layers_field: num_layers,
        spec.hidden_field: hidden_size,
        **spec.small,
        **overrides,
    }
    config = AutoConfig.for_model(arch, **values)
    config._attn_implementation = "eager"
    return config


def build_tiny_hf(
    arch_or_config: str | PretrainedConfig, *, seed: int = 0, dtype: torch.dtype = torch.float32
) -> PreTrainedModel:
    """A random-init causal LM in eval mode, weights drawn under ``torch.manual_seed(seed)``.

    torch's global RNG is restored afterwards, so building a model never perturbs a test's
    random stream.
    """
    from transformers import AutoModelForCausalLM

    config = tiny_hf_config(arch_or_config) if isinstance(arch_or_config, str) else arch_or_config
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = AutoModelForCausalLM.from_config(config, attn_implementation="eager")
    ready: PreTrainedModel = model.to(dtype).eval().requires_grad_(False)
    return ready


def entry_transform(arch: str) -> str | None:
    """What turns ``embed_tokens`` into the stream entering layer 0 (``None``: nothing)."""
    return hf_spec(arch).entry_transform
