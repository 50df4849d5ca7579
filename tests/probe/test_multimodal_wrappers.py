"""Multimodal wrappers whose decoder stack sits behind ``self.language_model`` (``self.model``
is None) are followed to that stack: vLLM's built by ``init_vllm_registered_model(...,
architectures=[X])`` or ``initialize_model(..., model_class=X)``, SGLang's ``*_mm.py`` built
directly. Fixtures are cut-down copies of the released wrappers they cite."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from eagle3_contracts.conventions.releases import ReleaseTable
from eagle3_contracts.probe.frameworks import SGLANG, VLLM, FrameworkSpec
from eagle3_contracts.probe.tables import build_table
from tests.probe._fixtures import BEFORE_LAYER
from tests.probe.test_factory_delegation import INTERFACES, LLAMA

# vllm 0.28.0 qwen2_5_vl.py:1228-1376: no self.model, no own setter (SupportsEagle3 routes
# through get_language_model(), interfaces.py:1566-1578)
VLLM_WRAPPER = """
from vllm.model_executor.models.interfaces import SupportsEagle3


class VLForConditionalGeneration(nn.Module, SupportsEagle3):
    def __init__(self, *, vllm_config, prefix=""):
        self.visual = VisionTransformer(vllm_config)
        with self._mark_language_model(vllm_config):
            self.language_model = {factory}
"""
VLLM_REGISTRY = """
_MODELS = {
    "LlamaForCausalLM": ("llama", "LlamaForCausalLM"),
    "VLForConditionalGeneration": ("vl", "VLForConditionalGeneration"),
}
"""
FACTORIES = {
    "init_vllm_registered_model": (
        'init_vllm_registered_model(vllm_config=vllm_config, architectures=["LlamaForCausalLM"])'
    ),
    "initialize_model": "initialize_model(vllm_config=vllm_config, model_class=LlamaForCausalLM)",
}

# sglang 0.5.21 gemma4_mm.py:242-246 (self.language_model = Gemma4TextModel(...)) and its
# setter at line 1120, writing self.language_model.layers_to_capture; the stack is
# _fixtures.BEFORE_LAYER's
SGLANG_WRAPPER = """
from sglang.srt.models.llama import LlamaModel


class WrapperForConditionalGeneration(PreTrainedModel):
    def __init__(self, config):
        self.model = None
        self.language_model = LlamaModel(config.text_config)

    def set_eagle3_layers_to_capture(self, layer_ids=None):
        self.capture_aux_hidden_states = True
        if layer_ids is None:
            num_layers = self.config.text_config.num_hidden_layers
            self.language_model.layers_to_capture = [2, num_layers // 2, num_layers - 3]
        else:
            self.language_model.layers_to_capture = [val + 1 for val in layer_ids]


EntryClass = [WrapperForConditionalGeneration]
"""


def _build(tmp_path: Path, spec: FrameworkSpec, files: dict[str, str]) -> dict:
    for name, text in files.items():
        path = tmp_path / spec.model_dir / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return build_table(spec, "0.0.1", tmp_path)


@pytest.mark.parametrize("factory", sorted(FACTORIES))
def test_vllm_wrapper_is_placed_on_its_language_models_stack(tmp_path, factory):
    files = {
        "interfaces.py": INTERFACES,
        "llama.py": LLAMA,
        "vl.py": VLLM_WRAPPER.format(factory=FACTORIES[factory]),
        "registry.py": VLLM_REGISTRY,
    }
    table = _build(tmp_path, VLLM, files)
    row = table["classes"]["vl.py:VLForConditionalGeneration"]
    assert row["needs_reading"] == []
    assert row["placement"] == {
        "file": "llama.py",
        "forward": "LlamaModel.forward",
        "via": "vl.py:VLForConditionalGeneration.language_model = LlamaForCausalLM",
    }
    entry = ReleaseTable.from_json(table).classes["vl.py:VLForConditionalGeneration"]
    assert entry.placement is not None and entry.placement.boundary_exact


@pytest.mark.parametrize("annotated", [False, True])
def test_vllm_wrapper_with_a_run_time_language_model_stays_unknown(tmp_path, annotated):
    """vllm 0.28.0 llava.py builds it from hf_config=config.text_config; gemma4_mm.py:1107
    annotates the attribute (``self.language_model: Gemma4ForCausalLM = ...``), which decides
    nothing."""
    factory = "init_vllm_registered_model(vllm_config=vllm_config, hf_config=config.text_config)"
    wrapper = VLLM_WRAPPER.format(factory=factory)
    if annotated:
        wrapper = wrapper.replace("self.language_model =", "self.language_model: Llama =")
    files = {
        "interfaces.py": INTERFACES,
        "llama.py": LLAMA,
        "vl.py": wrapper,
        "registry.py": VLLM_REGISTRY,
    }
    row = _build(tmp_path, VLLM, files)["classes"]["vl.py:VLForConditionalGeneration"]
    assert row["needs_reading"] == [
        "no single decoder-stack forward found for VLForConditionalGeneration (self.model = None)"
        "; self.language_model is built at vl.py:9 by init_vllm_registered_model("
        "vllm_config=vllm_config, hf_config=config.text_config): the class is chosen from the "
        "run-time config"
    ]


def test_sglang_mm_wrapper_is_placed_on_its_language_model(tmp_path):
    table = _build(tmp_path, SGLANG, {"llama.py": BEFORE_LAYER, "wrapper_mm.py": SGLANG_WRAPPER})
    row = table["classes"]["wrapper_mm.py:WrapperForConditionalGeneration"]
    assert row["needs_reading"] == []
    assert row["placement"]["file"] == "llama.py"
    assert row["placement"]["forward"] == "LlamaModel.forward"
    assert row["selection"]["rule"] == "plus_one"
    assert row["setter_arms"]["verdict"] == "armed"
