"""vLLM wrappers building their language model through a factory (``initialize_model(...,
model_class=X)``, ``init_vllm_registered_model(..., architectures=["X"])``) are followed like
SGLang's delegation: the row is the delegate's, its default over the delegate's own depth."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from eagle3_contracts.conventions.predict import predict_feed
from eagle3_contracts.probe.frameworks import VLLM
from eagle3_contracts.probe.tables import build_table

INTERFACES = """
class SupportsEagle3:
    def set_aux_hidden_state_layers(self, layers):
        self.model._set_aux_hidden_state_layers(layers)


class EagleModelMixin:
    def _set_aux_hidden_state_layers(self, layers):
        self.aux_hidden_state_layers = tuple(sorted(set(layers)))
"""

LLAMA = """
from vllm.model_executor.models.interfaces import EagleModelMixin, SupportsEagle3


class LlamaModel(EagleModelMixin):
    def forward(self, hidden_states, residual):
        aux_hidden_states = []
        for idx, layer in enumerate(self.layers):
            if idx in self.aux_hidden_state_layers:
                aux_hidden_states.append(hidden_states + residual)
            hidden_states, residual = layer(hidden_states, residual)
        return hidden_states, aux_hidden_states


class LlamaForCausalLM(SupportsEagle3):
    def __init__(self, config):
        self.model = LlamaModel(config)

    def get_eagle3_default_aux_hidden_state_layers(self):
        num_layers = len(self.model.layers)
        return (2, num_layers // 2, num_layers - 3)
"""

WRAPPER = """
from vllm.model_executor.models.interfaces import SupportsEagle3
from vllm.model_executor.models.llama import LlamaForCausalLM


class WrapperForConditionalGeneration(SupportsEagle3):
    def __init__(self, vllm_config):
        self.language_model = {factory}

    def set_aux_hidden_state_layers(self, layers):
        self.language_model.set_aux_hidden_state_layers(layers)
"""

REGISTRY = """
_MODELS = {
    "LlamaForCausalLM": ("llama", "LlamaForCausalLM"),
    "WrapperForConditionalGeneration": ("wrapper", "WrapperForConditionalGeneration"),
}
"""

FACTORIES = {
    "model_class": "initialize_model(vllm_config=vllm_config, model_class=LlamaForCausalLM)",
    "architectures": 'init_vllm_registered_model(vllm_config, architectures=["LlamaForCausalLM"])',
    "run_time": "init_vllm_registered_model(vllm_config, hf_config=vllm_config.text_config)",
}


def _release(tmp_path: Path, factory: str) -> dict:
    files = {
        "interfaces.py": INTERFACES,
        "llama.py": LLAMA,
        "wrapper.py": WRAPPER.format(factory=factory),
        "registry.py": REGISTRY,
    }
    for name, text in files.items():
        path = tmp_path / VLLM.model_dir / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return build_table(VLLM, "0.0.1", tmp_path)


@pytest.mark.parametrize("how", ["model_class", "architectures"])
def test_a_factory_naming_its_class_is_followed_to_the_delegate(tmp_path, how):
    row = _release(tmp_path, FACTORIES[how])["classes"][
        "wrapper.py:WrapperForConditionalGeneration"
    ]
    assert row["needs_reading"] == []
    assert row["file"] == "llama.py"
    assert row["placement"] == {"file": "llama.py", "forward": "LlamaModel.forward"}
    assert row["selection"]["default"] == "2,L//2,L-3"
    assert any("builds LlamaForCausalLM" in link for link in row["chain"])


def test_a_factory_choosing_at_run_time_stays_unread(tmp_path):
    row = _release(tmp_path, FACTORIES["run_time"])["classes"][
        "wrapper.py:WrapperForConditionalGeneration"
    ]
    assert any("chosen at run time" in n for n in row["needs_reading"])


LLAMA4 = {
    "architectures": ["Llama4ForConditionalGeneration"],
    "model_type": "llama4",
    "text_config": {"model_type": "llama4_text", "num_hidden_layers": 48, "hidden_size": 32},
}


@pytest.mark.parametrize("release", ["vllm==0.21.0", "vllm==0.33.0:v1"])
def test_llama4_multimodal_is_answered_with_the_default_over_its_language_model(release):
    """vllm 0.33.0 mllama4.py:780-786 builds Llama4ForCausalLM with initialize_model and
    delegates set_aux_hidden_state_layers to it (lines 803-806): answered, not unknown, with
    the default boundaries (2, 24, 45) of the 48-layer language model."""
    feed = predict_feed(release, {"hidden_size": 32}, LLAMA4)
    assert (feed.kind, feed.canonical) == ("segments", (1, 23, 44))
    assert feed.entry_class == "mllama4.py:Llama4ForConditionalGeneration"
