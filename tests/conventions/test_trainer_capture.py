"""``conventions.get("specforge")`` means SpecForge 0.2.0, whose ids mean what sglang 0.5.14's
model file makes of them: the same answer ``predict_system`` gives, and never the removed HF
backend's element-wise reading unless asked for by name (``specforge-hf``)."""

from __future__ import annotations

import pytest

from eagle3_contracts import conventions
from eagle3_contracts.conventions.predict import predict_system
from eagle3_contracts.errors import ContractError

TARGETS = {
    "DeepseekV3ForCausalLM": 61,  # deepseek_v2.py: +1 only when ids[0] == 1
    "LlamaForCausalLM": 32,  # llama.py: +1 always
    "Qwen3ForCausalLM": 36,
}


@pytest.mark.parametrize("name", ["specforge", "specforge==0.2.0", "specforge == 0.2.0"])
def test_specforge_without_a_target_is_refused_naming_the_way_out(name: str) -> None:
    with pytest.raises(ContractError, match="specforge-hf") as info:
        conventions.get(name)
    assert info.value.field == "target"
    assert "sglang==0.5.14" in str(info.value) and "--target" in str(info.value)


@pytest.mark.parametrize("arch", sorted(TARGETS))
@pytest.mark.parametrize("ids", [(2, 20, 29), (1, 15, 28), (3, 10, 20)])
def test_specforge_reading_equals_predict_system(arch: str, ids: tuple[int, ...]) -> None:
    num_layers = TARGETS[arch]
    target = {"architectures": [arch], "num_hidden_layers": num_layers, "hidden_size": 64}
    draft = {"eagle_config": {"eagle_aux_hidden_state_layer_ids": list(ids)}}
    trained = predict_system("specforge==0.2.0", draft, target)
    convention = conventions.get("specforge", architectures=[arch])
    assert convention.to_canonical(ids, num_layers) == trained.canonical
    feed = convention.feed(ids, num_layers)
    assert (feed.release, feed.canonical) == ("specforge==0.2.0", trained.canonical)
    assert "newest release specforge==0.2.0" in feed.assumptions[0]


def test_kimi_trained_by_specforge_is_read_as_sglang_0_5_14_captures() -> None:
    kimi = conventions.get("specforge", architectures=["DeepseekV3ForCausalLM"])
    assert kimi.to_canonical((2, 30, 58), 61) == (1, 29, 57)
    hf_backend = conventions.get("specforge-hf")
    assert hf_backend.to_canonical((2, 30, 58), 61) == (2, 30, 58)


def test_an_unprobed_trainer_release_is_refused_as_a_convention() -> None:
    with pytest.raises(ContractError, match="has not been probed") as info:
        conventions.get("specforge==0.3.0", architectures=["LlamaForCausalLM"])
    assert info.value.field == "convention"
