"""``release_convention`` lookups and errors, and ``conventions.get("framework==version")``."""

from __future__ import annotations

import pytest

from eagle3_contracts import conventions
from eagle3_contracts.conventions import OffsetRule
from eagle3_contracts.conventions.releases import release_convention
from eagle3_contracts.errors import ContractError


@pytest.mark.parametrize(
    ("framework", "version", "target", "name", "rule"),
    [
        ("sglang", "0.5.23", {"architectures": ["DeepseekV3ForCausalLM"]}, "deepseek_v2.py",
         OffsetRule.PLUS_ONE_IF_FIRST_IS_ONE),
        ("sglang", "0.5.23", {"architectures": ["KimiK25ForConditionalGeneration"]},
         "deepseek_v2.py", OffsetRule.PLUS_ONE_IF_FIRST_IS_ONE),
        ("sglang", "0.5.23", {"model_type": "kimi_k25"}, "deepseek_v2.py",
         OffsetRule.PLUS_ONE_IF_FIRST_IS_ONE),
        ("sglang", "0.5.12", {"architectures": ["DeepseekV3ForCausalLM"]}, "deepseek_v2.py",
         OffsetRule.PLUS_ONE_ALWAYS),
        ("sglang", "0.5.23", {"architectures": ["LlamaForCausalLM"]}, "llama.py",
         OffsetRule.PLUS_ONE_ALWAYS),
        ("sglang", "0.5.17", {"model_type": "gpt_oss"}, "gpt_oss.py", OffsetRule.LOOP_IF_MAX_IS_L),
        ("vllm", "0.33.0", {"architectures": ["KimiK25ForConditionalGeneration"]},
         "deepseek_v2.py", OffsetRule.BOUNDARY),
        ("vllm", "0.21.0", {"model_type": "qwen3"}, "qwen3.py", OffsetRule.BOUNDARY),
    ],
)  # fmt: skip
def test_lookup_by_architectures_or_model_type(framework, version, target, name, rule):
    convention = release_convention(framework, version, **target)
    assert convention.name == f"{framework}=={version}:{name}"
    assert convention.offset_rule is rule
    assert convention.release == f"{framework}=={version}"
    assert any(f"{framework}-{version}.json" in s for s in convention.sources)


def test_the_kimi_story_per_release():
    ids, n = [2, 30, 58], 61
    kimi = {"architectures": ["KimiK25ForConditionalGeneration"]}
    assert release_convention("sglang", "0.5.12", **kimi).to_canonical(ids, n) == (2, 30, 58)
    assert release_convention("sglang", "0.5.23", **kimi).to_canonical(ids, n) == (1, 29, 57)
    assert release_convention("vllm", "0.33.0", **kimi).to_canonical(ids, n) == (1, 29, 57)


def test_registry_get_resolves_release_names():
    convention = conventions.get("sglang==0.5.23", model_type="deepseek_v3")
    assert convention.name == "sglang==0.5.23:deepseek_v2.py"


@pytest.mark.parametrize(
    ("args", "kwargs", "says"),
    [
        (("sglang", "0.5.99"), {"model_type": "llama"}, "known sglang releases: 0.5.1, 0.5.1.post1"),
        (("tgi", "3.0"), {}, "known frameworks: sglang, vllm"),
        (("sglang", "0.5.23"), {"architectures": ["NoSuchForCausalLM"]}, "Known architectures"),
        (("sglang", "0.5.23"), {}, "pass the target's config"),
        (("sglang", "0.5.23"), {"architectures": ["MindSporeForCausalLM"]},
         "delegates to self.model.set_eagle3_layers_to_capture (arch): not found"),
    ],
)  # fmt: skip
def test_errors_list_what_is_known_or_what_needs_reading(args, kwargs, says):
    with pytest.raises(ContractError) as info:
        release_convention(*args, **kwargs)
    assert says in str(info.value)
