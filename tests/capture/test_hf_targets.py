"""Tiny Hugging Face targets: every architecture builds small, random, offline and eager."""

from __future__ import annotations

import pytest
import torch

from eagle3_contracts import capture_hidden_states
from eagle3_contracts.errors import ContractError
from eagle3_contracts.testing.hf_models import (
    HF_ARCHITECTURES,
    build_tiny_hf,
    decoder_layers,
    final_norm,
    tiny_hf_config,
)

from ._targets import tokens


def test_the_architectures_of_the_issue_are_covered():
    assert set(HF_ARCHITECTURES) == {
        "llama",
        "qwen2",
        "qwen3",
        "qwen3_moe",
        "mistral",
        "gemma",
        "deepseek_v3",
        "gpt2",
    }


@pytest.mark.parametrize("arch", HF_ARCHITECTURES)
@pytest.mark.parametrize(("num_layers", "hidden_size"), [(2, 16), (6, 32)])
def test_builds_at_the_small_bounds(arch, num_layers, hidden_size):
    config = tiny_hf_config(arch, num_layers=num_layers, hidden_size=hidden_size)
    model = build_tiny_hf(config, seed=1)
    assert model.config.model_type == arch
    assert model.config._attn_implementation == "eager"
    assert len(decoder_layers(model)) == num_layers and final_norm(model) is not None
    assert not model.training and not any(p.requires_grad for p in model.parameters())
    out = capture_hidden_states(model, tokens(model.config.vocab_size, 1, 5), (-1, num_layers - 1))
    assert out.shape == (1, 5, 2 * hidden_size) and torch.isfinite(out).all()


def test_same_seed_same_model_and_the_global_rng_is_untouched():
    torch.manual_seed(5)
    expected = torch.rand(3)
    torch.manual_seed(5)
    a, b = build_tiny_hf("llama", seed=2), build_tiny_hf("llama", seed=2)
    assert torch.equal(torch.rand(3), expected)
    c = build_tiny_hf("llama", seed=3)
    wa, wb, wc = (m.model.layers[0].mlp.up_proj.weight for m in (a, b, c))
    assert torch.equal(wa, wb) and not torch.equal(wa, wc)


def test_overrides_win_and_unknown_architectures_are_refused():
    assert tiny_hf_config("qwen3_moe", num_experts=2).num_experts == 2
    with pytest.raises(ContractError, match="unknown architecture 'bert'") as info:
        tiny_hf_config("bert")
    assert info.value.field == "arch"


def test_bfloat16_targets():
    model = build_tiny_hf("mistral", dtype=torch.bfloat16)
    assert {p.dtype for p in model.parameters()} == {torch.bfloat16}
