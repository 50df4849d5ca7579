"""``conventions.releases`` at its edges: which model file a target's architectures or
model_type pick, and what each alias stands for (answered by ``conventions.predict``). The tables themselves: ``test_releases_table.py``.
"""

from __future__ import annotations

import pytest

from eagle3_contracts import conventions
from eagle3_contracts.conventions import releases as R
from eagle3_contracts.conventions.releases import ReleaseTable, load_table, read_json
from eagle3_contracts.errors import ContractError

NESTED = "eagle_config.eagle_aux_hidden_state_layer_ids"


# -- choosing the model file -----------------------------------------------------------------------
SG23 = load_table("sglang", "0.5.23")
SG5 = load_table("sglang", "0.5.5")
VL33 = load_table("vllm", "0.33.0")
SG23_JSON = read_json("sglang", "0.5.23")


def _tiny(architectures: dict[str, str], keys: list[str]) -> ReleaseTable:
    """A release table holding only entry classes and their architectures."""
    row = {"file": "", "placement": {"ambiguous": "-"}, "selection": {}}
    return ReleaseTable.from_json(
        {
            "framework": "sglang",
            "version": "9.9",
            "architectures": architectures,
            "classes": {k: {**row, "file": k.split(":")[0]} for k in keys},
            "model_files": {},
            "id_source": {"precedence": [], "readers": []},
        }
    )


@pytest.mark.parametrize(
    ("table", "target", "key"),
    [
        # the first registered architecture wins, before model_type
        (SG23, {"architectures": ["NoSuchForCausalLM", "LlamaForCausalLM", "Qwen3ForCausalLM"]},
         "llama.py:LlamaForCausalLM"),
        (SG23, {"architectures": ["LlamaForCausalLM"], "model_type": "qwen3"},
         "llama.py:LlamaForCausalLM"),
        (SG23, {"architectures": ["NoSuchForCausalLM"], "model_type": "qwen3"},
         "qwen3.py:Qwen3ForCausalLM"),
        # a wrapper the release reads itself is its own row
        (SG23, {"architectures": ["KimiK25ForConditionalGeneration"]},
         "kimi_k25.py:KimiK25ForConditionalGeneration"),
        # a wrapper whose factory names its language model (kimi_k25.py:376-381
        # architectures=["DeepseekV2ForCausalLM"]) is read by the probe: its own row
        (VL33, {"architectures": ["KimiK25ForConditionalGeneration"]},
         "kimi_k25.py:KimiK25ForConditionalGeneration"),
        # a wrapper the release does not register: its language model's row
        (SG5, {"architectures": ["KimiK25ForConditionalGeneration"]},
         "deepseek_v2.py:DeepseekV3ForCausalLM"),
        # a delegating class no map names is still its own row (it then needs reading)
        (VL33, {"architectures": ["PixtralForConditionalGeneration"]},
         "pixtral.py:PixtralForConditionalGeneration"),
        # model_type: the mapped file's ...ForCausalLM, the first by name when it has several
        (SG23, {"model_type": "kimi_k2"}, "deepseek_v2.py:DeepseekV2ForCausalLM"),
        (SG23, {"model_type": "gemma3_causal"}, "gemma3_causal.py:Gemma3ForCausalLM"),
        (SG23, {"model_type": "gemma3_mm"}, "gemma3_mm.py:Gemma3ForConditionalGeneration"),
        (VL33, {"model_type": "qwen3"}, "qwen3.py:Qwen3ForCausalLM"),
    ],
)  # fmt: skip
def test_the_model_file_follows_architectures_then_model_type(
    table: ReleaseTable, target: dict, key: str
) -> None:
    assert R.model_file_for(table, **target) == key


SG5_ARCHS = (
    "ApertusForCausalLM, DeepseekV2ForCausalLM, DeepseekV32ForCausalLM, DeepseekV3ForCausalLM, "
    "DeepseekV3ForCausalLMNextN, Glm4MoeForCausalLM, Glm4MoeForCausalLMNextN, GptOssForCausalLM, "
    "InternLM3ForCausalLM, Llama4ForCausalLM, Llama4ForConditionalGeneration, LlamaForCausalLM, "
    "LlamaForCausalLMEagle, LlamaForCausalLMEagle3, MistralForCausalLM, Phi3ForCausalLM, "
    "Qwen2ForCausalLM, Qwen2ForCausalLMEagle, Qwen2MoeForCausalLM, "
    "Qwen2_5_VLForConditionalGeneration, Qwen3ForCausalLM, Qwen3MoeForCausalLM"
)
SG5_FILES = (
    "apertus.py, deepseek_nextn.py, deepseek_v2.py, glm4_moe.py, glm4_moe_nextn.py, gpt_oss.py, "
    "llama.py, llama4.py, llama_eagle.py, llama_eagle3.py, mistral.py, mllama4.py, qwen2.py, "
    "qwen2_5_vl.py, qwen2_eagle.py, qwen2_moe.py, qwen3.py, qwen3_moe.py"
)


@pytest.mark.parametrize(
    ("target", "given"),
    [
        ({"architectures": ["NoSuchForCausalLM", "OtherModel"], "model_type": "nosuch"},
         "architectures ['NoSuchForCausalLM', 'OtherModel'], model_type 'nosuch'"),
        ({"architectures": ["NoSuchForCausalLM"]}, "architectures ['NoSuchForCausalLM']"),
        ({"model_type": "nosuch"}, "model_type 'nosuch'"),
        ({}, "an unknown target"),
        ({"model_type": ""}, "an unknown target"),
    ],
)  # fmt: skip
def test_an_unknown_model_file_is_refused_naming_what_is_known(target: dict, given: str) -> None:
    with pytest.raises(ContractError) as err:
        R.model_file_for(SG5, **target)
    assert err.value.field == "architectures"
    assert str(err.value) == (
        f"sglang==0.5.5 has no probed model file for {given}: pass the target's config "
        f"(architectures/model_type). Known architectures: {SG5_ARCHS}; model files: {SG5_FILES}"
    )


def test_a_release_with_many_architectures_lists_the_first_forty() -> None:
    with pytest.raises(ContractError) as err:
        R.model_file_for(VL33, architectures=["NoSuchForCausalLM"])
    head, _, files = str(err.value).partition(" ...; model files: ")
    listed = head.split("Known architectures: ")[1].split(", ")
    assert len(listed) == 40 and listed == sorted(listed) and listed[0] == "AfmoeForCausalLM"
    assert set(listed) < set(VL33.architectures)
    assert files.startswith("afmoe.py, ") and files.endswith(", teleflm.py")


def test_a_row_without_a_probed_selection_is_its_own_model_file() -> None:
    table = _tiny({"XForCausalLM": "x.py:XForCausalLM"}, ["x.py:XForCausalLM"])
    assert R.model_file_for(table, architectures=["XForCausalLM"]) == "x.py:XForCausalLM"


@pytest.mark.parametrize(("count", "more"), [(40, False), (41, True)])
def test_the_known_architectures_are_listed_up_to_forty(count: int, more: bool) -> None:
    names = [f"A{i:02d}ForCausalLM" for i in range(count)]
    table = _tiny(
        {n: f"a.py:{n}" for n in reversed(names)},
        [f"b.py:{n}" for n in names] + [f"a.py:{n}" for n in names],
    )
    with pytest.raises(ContractError) as err:
        R.model_file_for(table)
    listed = ", ".join(names[:40]) + (" ..." if more else "")
    assert str(err.value).endswith(f"Known architectures: {listed}; model files: a.py, b.py")


# -- engine names and aliases, answered by the simulation ------------------------------------------
def test_a_release_name_is_read_however_it_is_cased_or_spaced() -> None:
    llama = {"architectures": ["LlamaForCausalLM"]}
    spaced = conventions.to_canonical([2, 30, 58], " SGLang == 0.5.23 ", 61, **llama)
    assert spaced == conventions.to_canonical([2, 30, 58], "sglang==0.5.23", 61, **llama)
    assert spaced == (2, 30, 58)  # llama.py: +1 always


@pytest.mark.parametrize(
    ("name", "arch", "ids", "canonical"),
    [
        ("sglang-legacy", "LlamaForCausalLM", [2, 30, 58], (2, 30, 58)),
        ("sglang", "DeepseekV3ForCausalLM", [2, 30, 58], (1, 29, 57)),
        ("sglang", "LlamaForCausalLM", [2, 30, 58], (2, 30, 58)),
        ("sglang-gpt-oss", "GptOssForCausalLM", [2, 30, 61], (1, 29, 60)),
        ("vllm", "LlamaForCausalLM", [2, 30, 58], (1, 29, 57)),
        ("vllm-nested", "LlamaForCausalLM", [2, 30, 58], (1, 29, 57)),
    ],
)
def test_each_engine_name_is_its_release_for_the_targets_model_file(
    name: str, arch: str, ids: list[int], canonical: tuple[int, ...]
) -> None:
    assert conventions.to_canonical(ids, name, 61, architectures=[arch]) == canonical
    native = conventions.from_canonical(canonical, name, 61, architectures=[arch])
    assert conventions.to_canonical(native, name, 61, architectures=[arch]) == canonical
