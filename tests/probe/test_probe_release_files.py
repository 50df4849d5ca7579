"""The probe reads what an audit of the released files found: delegation through a constructor
parameter (qwen3_vl.py), a capture after the stack tested against ``len(self.layers)`` in a
second loop (gemma3_causal.py), a fused-residual loop storing ``hidden_states`` alone (sglang
0.5.23 gemma3_causal.py), a capture handed into the layer through a name, ``self._init_model()``
factories, unsupported classes and vLLM's default model runner. Inline sources, offline."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

from eagle3_contracts.probe.frameworks import SGLANG
from eagle3_contracts.probe.placement import read_placement
from eagle3_contracts.probe.tables import build_table, read_runner_rule

from ._fixtures import BEFORE_LAYER, CAUSAL_LM


def _placement(source: str) -> dict:
    (summary,) = read_placement(ast.parse(textwrap.dedent(source))).values()
    return summary


TWO_LOOPS_AFTER_STACK = """
class Gemma3TextModel:
    def forward(self, input_ids, positions):
        hidden_states = self.embed_tokens(input_ids)
        aux_hidden_states = []
        num_layers = len(self.layers)
        if _is_cpu:
            for i, layer in enumerate(self.layers):
                if i in self.layers_to_capture:
                    aux_hidden_states.append(hidden_states)
                layer_outputs = layer(positions=positions, hidden_states=hidden_states)
                hidden_states = layer_outputs[0]
        else:
            for i, layer in enumerate(self.layers):
                if i in self.layers_to_capture:
                    aux_hidden_states.append(hidden_states)
                layer_outputs = layer(positions=positions, hidden_states=hidden_states)
                hidden_states = layer_outputs[0]
        if num_layers in self.layers_to_capture:
            aux_hidden_states.append(hidden_states)
        return self.norm(hidden_states), aux_hidden_states
"""


def test_a_capture_after_the_stack_reaches_the_last_output() -> None:
    summary = _placement(TWO_LOOPS_AFTER_STACK)
    assert "ambiguous" not in summary
    assert [s["where"] for s in summary["sites"]] == ["before layer", "before layer", "after stack"]
    assert summary["sites"][-1]["index"] == "end"
    assert summary["elements"] == ["0..L-1", "L"] and summary["last_output"] is True
    assert "residual_dropped" not in summary  # the layers return the whole stream


def test_a_fused_residual_loop_storing_hidden_alone_is_flagged() -> None:
    fused = TWO_LOOPS_AFTER_STACK.replace(
        """                layer_outputs = layer(positions=positions, hidden_states=hidden_states)
                hidden_states = layer_outputs[0]""",
        """                hidden_states, residual = layer(
                    positions=positions, hidden_states=hidden_states, residual=residual
                )""",
    )
    summary = _placement(fused)
    assert summary["residual_dropped"] is True
    assert summary["embedding"] == "captured"  # loop index 0: residual still None


def test_a_capture_handed_to_the_layer_through_a_name() -> None:
    source = """
class Qwen3LLMModel:
    def forward(self, input_ids, positions):
        hidden_states = self.embed_tokens(input_ids)
        aux = []
        for layer_idx, layer in enumerate(self.layers):
            capture_output = (
                aux.capture if layer_idx in self.layers_to_capture else None
            )
            hidden_states = layer(positions, hidden_states, capture_output=capture_output)
        return hidden_states, aux


class Qwen3DecoderLayer:
    def forward(self, positions, hidden_states, capture_output=None):
        hidden_states = self.attn_boundary.prepare(hidden_states, capture=capture_output)
        return self.mlp(hidden_states)
"""
    summary = read_placement(ast.parse(textwrap.dedent(source)))["Qwen3LLMModel.forward"]
    (site,) = summary["sites"]
    assert site["where"] == "into layer" and site["via"].startswith("forward(")


DELEGATING = """
class Qwen3LLMModel(LlamaModel):
    pass


class Qwen3VLForConditionalGeneration:
    def __init__(self, config, language_model_cls=Qwen3LLMModel):
        self.model = language_model_cls(config)

    def set_eagle3_layers_to_capture(self, layer_ids=None):
        if layer_ids is None:
            num_layers = self.config.num_hidden_layers
            layers_to_capture = [2, num_layers // 2, num_layers - 3]
        else:
            layers_to_capture = [val + 1 for val in layer_ids]
        if hasattr(self.model, "set_eagle3_layers_to_capture"):
            self.model.set_eagle3_layers_to_capture(layers_to_capture)
        else:
            self.model.layers_to_capture = layers_to_capture


class NoEagleForCausalLM:
    def __init__(self, config):
        self.model = LlamaModel(config)


EntryClass = [Qwen3VLForConditionalGeneration, NoEagleForCausalLM]
"""


def _release(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / SGLANG.model_dir / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return tmp_path


def test_delegation_through_a_constructor_parameter_and_unsupported_classes(tmp_path: Path) -> None:
    root = _release(
        tmp_path,
        {
            "llama.py": BEFORE_LAYER + CAUSAL_LM,
            "qwen3_vl.py": "from sglang.srt.models.llama import LlamaModel\n" + DELEGATING,
        },
    )
    table = build_table(SGLANG, "0.0.1", root)
    row = table["classes"]["qwen3_vl.py:Qwen3VLForConditionalGeneration"]
    assert row["needs_reading"] == [] and row["selection"]["rule"] == "plus_one"
    assert "has no set_eagle3_layers_to_capture" in row["chain"][-1]
    assert table["unsupported_architectures"] == {
        "NoEagleForCausalLM": "qwen3_vl.py:NoEagleForCausalLM"
    }


def test_a_factory_method_names_the_decoder_stack(tmp_path: Path) -> None:
    mistral = """
from sglang.srt.models.llama import LlamaForCausalLM, LlamaModel


class MistralModel(LlamaModel):
    def forward(self, input_ids, positions):
        return super().forward(input_ids, positions)


class MistralForCausalLM(LlamaForCausalLM):
    def _init_model(self, config):
        return MistralModel(config)


EntryClass = [MistralForCausalLM]
"""
    llama = (BEFORE_LAYER + CAUSAL_LM).replace(
        "self.model = LlamaModel(config)", "self.model = self._init_model(config)"
    ) + "\n\ndef _unused():\n    pass\n"
    llama = llama.replace(
        "    def set_eagle3_layers_to_capture",
        "    def _init_model(self, config):\n        return LlamaModel(config)\n\n"
        "    def set_eagle3_layers_to_capture",
    )
    table = build_table(
        SGLANG, "0.0.1", _release(tmp_path, {"llama.py": llama, "mistral.py": mistral})
    )
    row = table["classes"]["mistral.py:MistralForCausalLM"]
    assert row["placement"] == {"file": "llama.py", "forward": "LlamaModel.forward"}
    assert row["needs_reading"] == []


def test_vllm_runner_rules(tmp_path: Path) -> None:
    config = tmp_path / "vllm" / "config" / "vllm.py"
    config.parent.mkdir(parents=True)
    config.write_text(
        textwrap.dedent(
            """
            DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES = frozenset({"Qwen3ForCausalLM"})

            class VllmConfig:
                @property
                def use_v2_model_runner(self):
                    if envs.VLLM_USE_V2_MODEL_RUNNER is not None:
                        return envs.VLLM_USE_V2_MODEL_RUNNER
                    if not self._is_default_v2_model_runner_model():
                        return False
                    if not HAS_TRITON:
                        return False
                    return True
            """
        )
    )
    rule = read_runner_rule(tmp_path, "vllm/config/vllm.py")
    assert rule["default"] == "v2-for-architectures"
    assert rule["v2_architectures"] == ["Qwen3ForCausalLM"]
    assert "HAS_TRITON" not in rule["source"] and rule["source"].endswith("use_v2_model_runner")
    text = config.read_text().replace("self._is_default_v2_model_runner_model()", "False")
    config.write_text(text)
    assert read_runner_rule(tmp_path, "vllm/config/vllm.py")["default"] == "v2"
    assert read_runner_rule(tmp_path, "vllm/config/missing.py")["default"] == "v1"


def test_specforge_table_is_shipped_once_and_backs_the_trainer() -> None:
    from eagle3_contracts.conventions.trainers import trainer_release
    from eagle3_contracts.probe.__main__ import PACKAGE_DATA

    assert (PACKAGE_DATA / "trainers" / "specforge-0.2.0.json").is_file()
    trainer = trainer_release("specforge==0.2.0")
    assert (trainer.backend, trainer.engine, trainer.count) == ("sglang", "sglang==0.5.14", 3)
    assert trainer.distinct and trainer.below_depth
    assert any("model_providers.py:188" in s for s in trainer.sources)


def test_the_trainer_probe_evaluates_the_resolver(tmp_path: Path) -> None:
    from eagle3_contracts.probe.trainers import RESOLVER, build_trainer_table

    path = tmp_path / RESOLVER
    path.parent.mkdir(parents=True)
    path.write_text(
        textwrap.dedent(
            """
            def resolve_eagle_capture_layers(cfg, draft_config, target_config):
                layers = cfg.model.aux_hidden_state_layer_ids
                if layers is None:
                    eagle_config = draft_config.get("eagle_config", {}) or {}
                    layers = eagle_config.get("eagle_aux_hidden_state_layer_ids")
                if layers is None:
                    num_layers = int(target_config.num_hidden_layers)
                    layers = [1, num_layers // 2 - 1, num_layers - 4]
                layers = list(layers)
                if len(layers) != 3 or any(i < 0 for i in layers):
                    raise ValueError("three non-negative ids")
                return layers
            """
        )
    )
    resolver = build_trainer_table("0.0.1", tmp_path)["resolver"]
    assert resolver["default"] == "1,L//2-1,L-4"
    assert resolver["reads"] == "eagle_config.eagle_aux_hidden_state_layer_ids"
    assert resolver["refuses"] == ["four", "negative", "two"] and not resolver["top_level_read"]
