"""vLLM's default model runner per target shape, evaluated from each release's own predicate
(``probe.runner``) rather than read as a per-release constant. Fixtures are cut-down copies of
the released ``vllm/config/vllm.py`` they cite."""

from __future__ import annotations

import dataclasses
import textwrap
from pathlib import Path

import pytest

from eagle3_contracts.conventions import predict, releases
from eagle3_contracts.conventions.releases import RunnerRule
from eagle3_contracts.probe.tables import read_runner_rule

HEAD = """
    DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES = frozenset(
        {{"DeepseekV2ForCausalLM", "Qwen2MoeForCausalLM"}}
    )
{getter}
    class VllmConfig:
        @property
        def use_v2_model_runner(self) -> bool:
            if not self._is_default_v2_model_runner_model():
                return False
            if not HAS_TRITON:
                return False
            return True

        def _is_default_v2_model_runner_model(self) -> bool:
            model_config = self.model_config
            if model_config is None:
                return False
            if model_config.runner_type != "generate":
                return False
{body}
"""
# vllm 0.22.0 vllm/config/vllm.py:518-532: listed, dense and unquantised only
V0_22 = """
            architectures = getattr(model_config, "architectures", [])
            if not any(arch in DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES for arch in architectures):
                return False
            return not model_config.is_moe and not model_config.is_quantized
"""
# vllm 0.28.0 vllm/config/vllm.py:691-711 (the list through a getter, lines 83-93): any dense
# model, and a listed MoE
V0_28 = """
            architectures = getattr(model_config, "architectures", [])
            default_architectures = default_v2_model_runner_architectures()
            is_default_v2_architecture = any(
                arch in default_architectures for arch in architectures
            )
            if getattr(model_config, "is_hybrid", False) and not is_default_v2_architecture:
                return False
            if getattr(model_config, "is_attention_free", False):
                return False
            return is_default_v2_architecture or not model_config.is_moe
"""
GETTER = """
    def default_v2_model_runner_architectures():
        return DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES
"""
# a predicate reading what no shape sets: not evaluated
OPAQUE = """
            return model_config.something_new
"""


def _rule(tmp_path: Path, body: str, getter: str = "") -> dict:
    path = tmp_path / "vllm/config/vllm.py"
    path.parent.mkdir(parents=True)
    text = textwrap.dedent(HEAD.format(getter=getter, body=body))
    path.write_text(text)
    return read_runner_rule(tmp_path, "vllm/config/vllm.py")


def test_0_22_predicate_is_v2_only_for_a_listed_dense_unquantised_model(tmp_path):
    rule = _rule(tmp_path, V0_22)
    assert rule["default"] == "v2-by-case"
    assert [case for case, v2 in rule["v2_cases"].items() if v2] == ["listed dense plain"]
    assert rule["v2_cases_from"] == "vllm/config/vllm.py:15 _is_default_v2_model_runner_model"


def test_0_28_predicate_is_v2_for_dense_models_and_v1_for_an_unlisted_moe(tmp_path):
    rule = _rule(tmp_path, V0_28, GETTER)
    assert rule["default"] == "v2-by-case"
    v1 = sorted(case for case, v2 in rule["v2_cases"].items() if not v2)
    assert v1 == ["unlisted moe plain", "unlisted moe quantized"]
    assert rule["v2_architectures"] == ["DeepseekV2ForCausalLM", "Qwen2MoeForCausalLM"]


def test_a_predicate_reading_what_no_shape_sets_is_not_evaluated(tmp_path):
    rule = _rule(tmp_path, OPAQUE)
    assert rule["default"] == "v2-for-architectures"
    assert "v2_cases" not in rule


@pytest.mark.parametrize(
    ("architectures", "moe", "quantized", "runner"),
    [
        (["LlamaForCausalLM"], False, False, "v2"),  # dense: V2 (read inverted before)
        (["LlamaForCausalLM"], False, True, "v2"),  # quantisation no longer matters
        (["MixtralForCausalLM"], True, False, "v1"),  # MoE outside the list: V1
        (["Qwen2MoeForCausalLM"], True, False, "v2"),  # listed MoE: V2
    ],
)
def test_runner_picked_from_the_evaluated_cases(tmp_path, architectures, moe, quantized, runner):
    raw = _rule(tmp_path, V0_28, GETTER)
    rule = RunnerRule(
        default=releases.RunnerDefault.V2_BY_CASE,
        available=("v1", "v2"),
        source=raw["source"],
        v2_architectures=frozenset(raw["v2_architectures"]),
        v2_cases=raw["v2_cases"],
        v2_cases_from=raw["v2_cases_from"],
    )
    picked = rule.pick(architectures, moe, quantized)
    assert picked is not None and picked[0] == runner
    assert "vllm/config/vllm.py:18 _is_default_v2_model_runner_model evaluated" in picked[1]


def test_a_dense_llama_is_predicted_on_the_v2_runner_of_a_0_28_shaped_release(
    tmp_path, monkeypatch
):
    raw = _rule(tmp_path, V0_28, GETTER)
    shipped = releases.load_table("vllm", "0.22.0")
    assert shipped.runner is not None
    runner = dataclasses.replace(
        shipped.runner,
        default=releases.RunnerDefault.V2_BY_CASE,
        v2_cases=raw["v2_cases"],
        v2_cases_from=raw["v2_cases_from"],
    )
    table = dataclasses.replace(shipped, runner=runner)
    monkeypatch.setattr(predict.releases, "load_table", lambda fw, v: table)
    target = {"architectures": ["LlamaForCausalLM"], "model_type": "llama",
              "num_hidden_layers": 32, "hidden_size": 4096}  # fmt: skip
    feed = predict.predict_feed("vllm==0.22.0", {"architectures": ["LlamaForCausalLM"]}, target)
    assert feed.runner == "v2"
    assert any("evaluated for this target" in a for a in feed.assumptions)
