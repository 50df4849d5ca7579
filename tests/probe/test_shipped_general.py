"""The shipped tables answer the four classes the probe used to leave unknown or read wrong:
rank-guarded setters, multimodal wrappers, the runner predicate, unloadable drafters."""

from __future__ import annotations

import pytest

from eagle3_contracts.conventions import releases
from eagle3_contracts.conventions.predict import predict_feed
from eagle3_contracts.conventions.releases import DrafterNameMap, RunnerDefault


@pytest.mark.parametrize("version", ["0.5.12", "0.5.17", "0.5.23"])
def test_rank_guarded_setters_are_answered(version):
    """sglang minimax_m2.py / exaone_moe.py guard with get_pp_group() / get_parallel()."""
    table = releases.load_table("sglang", version)
    for key in ("minimax_m2.py:MiniMaxM2ForCausalLM", "exaone_moe.py:ExaoneMoEForCausalLM"):
        row = table.classes[key]
        assert row.needs_reading == ()
        assert row.selection.last_rank_only is True


@pytest.mark.parametrize("version", ["0.21.0", "0.22.0", "0.32.0", "0.33.0"])
def test_qwen2_5_vl_is_placed_on_its_language_model(version):
    """vllm qwen2_5_vl.py builds init_vllm_registered_model(architectures=["Qwen2ForCausalLM"])."""
    row = releases.load_table("vllm", version).classes[
        "qwen2_5_vl.py:Qwen2_5_VLForConditionalGeneration"
    ]
    assert row.needs_reading == ()
    assert row.placement is not None and row.placement.file == "qwen2.py"


def test_vllm_0_22_0_runner_is_its_evaluated_predicate():
    rule = releases.load_table("vllm", "0.22.0").runner
    assert rule is not None and rule.default is RunnerDefault.V2_BY_CASE
    assert [case for case, v2 in rule.v2_cases.items() if v2] == ["listed dense plain"]


@pytest.mark.parametrize(
    ("release", "registered", "name_map"),
    [
        ("sglang==0.5.5", {"LlamaForCausalLMEagle3"}, DrafterNameMap.IDENTITY),
        (
            "sglang==0.5.23",
            {"LlamaForCausalLMEagle3", "Eagle3DeepseekV2ForCausalLM"},
            DrafterNameMap.IDENTITY,
        ),
        ("vllm==0.33.0", {"Eagle3LlamaForCausalLM", "LlamaForCausalLMEagle3"}, None),
    ],
)
def test_shipped_drafter_registries(release, registered, name_map):
    framework, version = release.split("==")
    drafters = releases.load_table(framework, version).drafters
    assert drafters is not None
    assert registered <= drafters.registered
    if name_map is not None:
        assert drafters.name_map is name_map
    else:
        assert drafters.name_map is DrafterNameMap.PREFIX_UNLESS_MARKED


QWEN3 = {
    "architectures": ["Qwen3ForCausalLM"],
    "model_type": "qwen3",
    "num_hidden_layers": 36,
    "hidden_size": 4096,
}


@pytest.mark.parametrize(
    ("serve", "draft", "kind"),
    [
        # a SpecForge-style name no SGLang release registers (falls back to Transformers)
        ("sglang==0.5.23", {"architectures": ["Qwen3ForCausalLMEagle3"]}, "crash"),
        # the original EAGLE-3 checkpoints' target class: no hot_token_id in SGLang
        ("sglang==0.5.23", {"architectures": ["LlamaForCausalLM"]}, "crash"),
        # ... but vLLM renames it to Eagle3LlamaForCausalLM
        ("vllm==0.33.0", {"architectures": ["LlamaForCausalLM"]}, "segments"),
        ("sglang==0.5.23", {"architectures": ["LlamaForCausalLMEagle3"]}, "segments"),
        # speculators format: vLLM reads it, SGLang does not
        (
            "vllm==0.33.0",
            {"speculators_model_type": "eagle3", "architectures": ["Eagle3Speculator"],
             "transformer_layer_config": {"model_type": "qwen3"}},
            "segments",
        ),
        ("sglang==0.5.23", {"speculators_model_type": "eagle3",
                            "architectures": ["Eagle3Speculator"]}, "crash"),
    ],
)  # fmt: skip
def test_unloadable_drafters_on_shipped_releases(serve, draft, kind):
    feed = predict_feed(serve, {**draft, "eagle_aux_hidden_state_layer_ids": [1, 17, 32]}, QWEN3)
    assert feed.kind == kind
    if kind == "crash":
        assert feed.crash == "unloadable-drafter"
        assert feed.model_file == "qwen3.py"  # the row still names the target's model file
        assert "it registers Eagle3DeepseekV2ForCausalLM, LlamaForCausalLMEagle3" in feed.notes[-1]
