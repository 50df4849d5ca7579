"""vLLM before ``SupportsEagle3`` (0.10.0): a class defining ``set_aux_hidden_state_layers``
serves, and the runner hands it the model's own default (no draft field is read). Fixtures are
cut-down copies of the released code they cite."""

from __future__ import annotations

import textwrap
from pathlib import Path

from eagle3_contracts.conventions import predict, releases
from eagle3_contracts.conventions.releases import ReleaseTable
from eagle3_contracts.probe.frameworks import VLLM
from eagle3_contracts.probe.tables import build_table

# vllm 0.10.0 model_executor/models/llama.py:559-566
LLAMA = """
class LlamaModel(nn.Module):
    def forward(self, input_ids, positions):
        hidden_states = self.embed_tokens(input_ids)
        residual = None
        aux_hidden_states = []
        for idx, layer in enumerate(self.layers[self.start_layer:self.end_layer]):
            if idx in self.aux_hidden_state_layers:
                aux_hidden_states.append(hidden_states + residual)
            hidden_states, residual = layer(positions, hidden_states, residual)
        return hidden_states, aux_hidden_states


class LlamaForCausalLM(nn.Module, SupportsLoRA, SupportsPP):
    def __init__(self, *, vllm_config, prefix=""):
        self.model = LlamaModel(vllm_config=vllm_config)

    def set_aux_hidden_state_layers(self, layers):
        self.model.aux_hidden_state_layers = layers

    def get_eagle3_aux_hidden_state_layers(self):
        num_layers = len(self.model.layers)
        return (2, num_layers // 2, num_layers - 3)


class MistralForCausalLM(LlamaForCausalLM):
    pass
"""
QWEN2 = """
class Qwen2ForCausalLM(nn.Module):
    def __init__(self, *, vllm_config, prefix=""):
        self.model = Qwen2Model(vllm_config=vllm_config)
"""
REGISTRY = """
_TEXT_GENERATION_MODELS = {
    "LlamaForCausalLM": ("llama", "LlamaForCausalLM"),
    "MistralForCausalLM": ("llama", "MistralForCausalLM"),
    "Qwen2ForCausalLM": ("qwen2", "Qwen2ForCausalLM"),
}
"""
# vllm 0.10.0 v1/worker/gpu_model_runner.py:1887-1889
RUNNER = """
class GPUModelRunner:
    def load_model(self):
        if self.use_aux_hidden_state_outputs:
            self.model.set_aux_hidden_state_layers(
                self.model.get_eagle3_aux_hidden_state_layers())
"""


def _table(tmp_path: Path) -> dict:
    files = {
        f"{VLLM.model_dir}llama.py": LLAMA,
        f"{VLLM.model_dir}qwen2.py": QWEN2,
        f"{VLLM.model_dir}registry.py": REGISTRY,
        "vllm/v1/worker/gpu_model_runner.py": RUNNER,
    }
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return build_table(VLLM, "0.10.0", tmp_path)


def test_classes_defining_the_setter_serve_and_the_rest_are_unsupported(tmp_path):
    table = _table(tmp_path)
    assert sorted(table["classes"]) == ["llama.py:LlamaForCausalLM", "llama.py:MistralForCausalLM"]
    assert table["unsupported_architectures"] == {"Qwen2ForCausalLM": "qwen2.py:Qwen2ForCausalLM"}
    row = table["classes"]["llama.py:MistralForCausalLM"]
    assert row["needs_reading"] == [] and row["selection"]["default"] == "2,L//2,L-3"


def test_the_runner_reads_no_draft_field(tmp_path):
    (reader,) = _table(tmp_path)["id_source"]["readers"]
    assert reader["precedence"] == [] and reader["line"] == 5
    assert reader["function"] == "GPUModelRunner.load_model (no draft field)"


def test_the_drafter_gets_the_model_default_whatever_its_ids(tmp_path, monkeypatch):
    table = ReleaseTable.from_json(_table(tmp_path))
    monkeypatch.setattr(predict.releases, "load_table", lambda fw, v: table)
    target = {"architectures": ["LlamaForCausalLM"], "model_type": "llama",
              "num_hidden_layers": 32, "hidden_size": 4096}  # fmt: skip
    draft = {
        "architectures": ["LlamaForCausalLMEagle3"],
        "eagle_aux_hidden_state_layer_ids": [1, 2, 3],
    }
    feed = predict.predict_feed(f"vllm=={releases.known_releases()['vllm'][0]}", draft, target)
    assert (feed.kind, feed.canonical, feed.ids_source) == ("segments", (1, 15, 28), "default")
    assert any("are ignored" in note for note in feed.notes)
