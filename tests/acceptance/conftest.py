"""Tiny random EAGLE-3 drafters written in the checkpoint layouts the oracle reads."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

MakeDrafter = Callable[..., Path]


def drafter_tensors(
    *,
    hidden: int = 16,
    states: int = 3,
    heads: int = 4,
    kv_heads: int = 2,
    inter: int = 24,
    vocab: int = 64,
    draft_vocab: int | None = None,
    seed: int = 0,
) -> dict[str, Any]:
    import torch

    gen = torch.Generator().manual_seed(seed)
    hd = hidden // heads
    dv = draft_vocab or vocab

    def w(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=gen) * 0.3

    def gain(n: int) -> torch.Tensor:
        return 1 + 0.2 * torch.randn(n, generator=gen)

    out = {
        "fc.weight": w(hidden, states * hidden),
        "midlayer.input_layernorm.weight": gain(hidden),
        "midlayer.hidden_norm.weight": gain(hidden),
        "midlayer.self_attn.q_proj.weight": w(heads * hd, 2 * hidden),
        "midlayer.self_attn.k_proj.weight": w(kv_heads * hd, 2 * hidden),
        "midlayer.self_attn.v_proj.weight": w(kv_heads * hd, 2 * hidden),
        "midlayer.self_attn.o_proj.weight": w(hidden, heads * hd),
        "midlayer.post_attention_layernorm.weight": gain(hidden),
        "midlayer.mlp.gate_proj.weight": w(inter, hidden),
        "midlayer.mlp.up_proj.weight": w(inter, hidden),
        "midlayer.mlp.down_proj.weight": w(hidden, inter),
        "norm.weight": gain(hidden),
        "lm_head.weight": w(dv, hidden),
    }
    if dv != vocab:
        keep = torch.sort(torch.randperm(vocab, generator=gen)[:dv]).values
        out["d2t"] = keep - torch.arange(dv)
        t2d = torch.zeros(vocab, dtype=torch.bool)
        t2d[keep] = True
        out["t2d"] = t2d
    return out


def drafter_config_dict(
    *,
    hidden: int = 16,
    heads: int = 4,
    kv_heads: int = 2,
    inter: int = 24,
    vocab: int = 64,
    draft_vocab: int | None = None,
) -> dict[str, Any]:
    return {
        "architectures": ["LlamaForCausalLMEagle3"],
        "model_type": "llama",
        "hidden_size": hidden,
        "intermediate_size": inter,
        "num_hidden_layers": 1,
        "num_attention_heads": heads,
        "num_key_value_heads": kv_heads,
        "vocab_size": vocab,
        "draft_vocab_size": draft_vocab or vocab,
        "rms_norm_eps": 1e-5,
        "rope_theta": 10000.0,
    }


@pytest.fixture
def make_drafter(tmp_path: Path) -> MakeDrafter:
    """``make_drafter(name, prefix="", drop=(), config={...}, **sizes)``: a drafter directory."""
    from safetensors.torch import save_file

    def make(
        name: str = "drafter",
        *,
        prefix: str = "",
        rename: Callable[[str], str] | None = None,
        drop: tuple[str, ...] = (),
        config: dict[str, Any] | None = None,
        **sizes: Any,
    ) -> Path:
        folder = tmp_path / name
        folder.mkdir()
        tensors = drafter_tensors(**sizes)
        out = {}
        for key, value in tensors.items():
            if key in drop:
                continue
            new = rename(key) if rename else key
            out[prefix + new] = value.contiguous()
        save_file(out, str(folder / "model.safetensors"))
        cfg = drafter_config_dict(
            **{
                k: v
                for k, v in sizes.items()
                if k in ("hidden", "heads", "kv_heads", "inter", "vocab", "draft_vocab")
            }
        )
        cfg.update(config or {})
        (folder / "config.json").write_text(json.dumps(cfg))
        return folder

    return make
