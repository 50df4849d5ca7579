"""Reading drafter checkpoints: the layouts users have give one drafter; others are refused
with the field to change."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from eagle3_contracts.acceptance.drafter import check_against_target, load_drafter
from eagle3_contracts.errors import ConfigError
from tests.acceptance.conftest import MakeDrafter


def _outputs(path: Path) -> torch.Tensor:
    drafter, _ = load_drafter(path)
    gen = torch.Generator().manual_seed(0)
    hidden = drafter.combine(torch.randn(5, 48, generator=gen))
    q, _k, _v, res = drafter.qkv(hidden, torch.randn(5, 16, generator=gen), torch.arange(5))
    normed, _ = drafter.finish(q, res)
    return drafter.logits(normed)


@pytest.mark.parametrize(
    "layout",
    [
        {"prefix": "model."},  # a model. prefix
        {"rename": lambda k: k.replace("midlayer.", "layers.0.")},  # the EAGLE repository
    ],
    ids=["model-prefix", "layers.0"],
)
def test_layouts_read_as_the_same_drafter(make_drafter: MakeDrafter, layout: dict) -> None:
    plain = make_drafter("plain", seed=9)
    other = make_drafter("other", seed=9, **layout)
    torch.testing.assert_close(_outputs(plain), _outputs(other))


@pytest.mark.parametrize(
    ("kwargs", "field", "fragment"),
    [
        ({"drop": ("d2t",), "vocab": 64, "draft_vocab": 32}, "d2t", "has no d2t"),
        ({"drop": ("fc.weight",)}, "fc.weight", "not an EAGLE-3 layout"),
        ({"drop": ("norm.weight",)}, "norm.weight", "missing tensors norm.weight"),
        ({"config": {"architectures": ["MistralForCausalLM"]}}, "architectures", "EAGLE-3"),
        ({"config": {"fc_norm": True}}, "fc_norm.0.weight", "missing tensors fc_norm.0.weight"),
        ({"config": {"rope_scaling": {"type": "llama3"}}}, "rope_scaling", "plain RoPE"),
        ({"config": {"hidden_size": 32}}, "fc.weight", "not a multiple"),
        (
            {"config": {"intermediate_size": 48}},
            "midlayer.mlp.gate_proj.weight",
            "the config implies",
        ),
        ({"config": {"num_hidden_layers": 2}}, "num_hidden_layers", "one-layer"),
    ],
    ids=["no-d2t", "no-fc", "no-norm", "arch", "fc-norm", "rope", "fc-width", "shape", "layers"],
)
def test_unreadable_drafters_are_refused_with_the_field(
    make_drafter: MakeDrafter, kwargs: dict, field: str, fragment: str
) -> None:
    with pytest.raises(ConfigError, match=fragment) as info:
        load_drafter(make_drafter(**kwargs))
    assert info.value.field == field


def test_pickled_weights_are_never_opened(tmp_path: Path) -> None:
    folder = tmp_path / "pickled"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLMEagle3"]}))
    (folder / "pytorch_model.bin").write_bytes(b"not opened")
    with pytest.raises(ConfigError, match="pickles are never opened") as info:
        load_drafter(folder)
    assert info.value.field == "weights"


def test_a_d2t_outside_the_target_vocabulary_is_refused(make_drafter: MakeDrafter) -> None:
    from safetensors.torch import load_file, save_file

    path = make_drafter(vocab=64, draft_vocab=32)
    tensors = load_file(str(path / "model.safetensors"))
    tensors["d2t"] = tensors["d2t"] + 64
    save_file(tensors, str(path / "model.safetensors"))
    with pytest.raises(ConfigError, match="outside the target vocabulary"):
        load_drafter(path)


def test_a_drafter_for_another_target_is_refused(make_drafter: MakeDrafter) -> None:
    drafter, _ = load_drafter(make_drafter(vocab=64))
    with pytest.raises(ConfigError) as info:
        check_against_target(drafter, 128, 16, "d")
    assert info.value.field == "vocab_size"
    with pytest.raises(ConfigError) as info:
        check_against_target(drafter, 64, 32, "d")
    assert info.value.field == "target_hidden_size"
