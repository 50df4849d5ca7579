"""``conventions.releases`` at its edges: which model file a target's architectures or
model_type pick, what each alias stands for, and how a probed table row becomes a
``Convention`` (or why it cannot). The tables themselves: ``test_releases_table.py``.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from eagle3_contracts import conventions
from eagle3_contracts.conventions import (
    Dedup,
    DefaultRule,
    Meaning,
    OffsetRule,
    PipelineParallel,
    Role,
)
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


# -- release conventions and aliases ---------------------------------------------------------------
def test_a_release_name_is_read_however_it_is_cased_or_spaced() -> None:
    convention = R.release_convention(" SGLang ", " 0.5.23 ", architectures=["LlamaForCausalLM"])
    assert convention.name == "sglang==0.5.23:llama.py"
    assert convention == R.release_convention(
        "sglang", "0.5.23", architectures=("LlamaForCausalLM",)
    )
    assert convention.system == "SGLang 0.5.23, llama.py (LlamaForCausalLM)"


@pytest.mark.parametrize(
    ("name", "arch", "convention", "rule", "paths"),
    [
        ("sglang-legacy", "LlamaForCausalLM", "sglang==0.5.12:llama.py",
         OffsetRule.PLUS_ONE_ALWAYS, (NESTED,)),
        ("sglang", "DeepseekV3ForCausalLM", "sglang==0.5.23:deepseek_v2.py",
         OffsetRule.PLUS_ONE_IF_FIRST_IS_ONE, (NESTED,)),
        ("sglang", "LlamaForCausalLM", "sglang==0.5.23:llama.py", OffsetRule.PLUS_ONE_ALWAYS,
         (NESTED,)),
        ("sglang-gpt-oss", "GptOssForCausalLM", "sglang==0.5.17:gpt_oss.py",
         OffsetRule.LOOP_IF_MAX_IS_L, (NESTED,)),
        ("vllm", "LlamaForCausalLM", "vllm==0.33.0:llama.py", OffsetRule.BOUNDARY,
         ("eagle_aux_hidden_state_layer_ids", NESTED)),
        ("vllm-nested", "LlamaForCausalLM", "vllm==0.33.0:llama.py", OffsetRule.BOUNDARY,
         ("eagle_aux_hidden_state_layer_ids", NESTED)),
    ],
)  # fmt: skip
def test_each_engine_name_is_its_release_for_the_targets_model_file(
    name: str, arch: str, convention: str, rule: OffsetRule, paths: tuple[str, ...]
) -> None:
    got = conventions.get(name, architectures=[arch])
    assert (got.name, got.offset_rule, got.id_paths) == (convention, rule, paths)
    framework, version = convention.split(":")[0].split("==")
    assert got == R.release_convention(framework, version, architectures=[arch])


# -- a table row as a Convention -------------------------------------------------------------------
def test_a_release_row_becomes_the_convention_of_that_release() -> None:
    c = R.convention_from_table(SG23, "deepseek_v2.py:DeepseekV3ForCausalLM")
    wheel = "sglang-0.5.23-cp311-cp311-manylinux_2_34_x86_64.whl"
    assert (c.name, c.release) == ("sglang==0.5.23:deepseek_v2.py", "sglang==0.5.23")
    assert c.system == "SGLang 0.5.23, deepseek_v2.py (DeepseekV3ForCausalLM)"
    assert (c.role, c.meaning, c.offset_rule) == (
        Role.ENGINE,
        Meaning.CONDITIONAL,
        OffsetRule.PLUS_ONE_IF_FIRST_IS_ONE,
    )
    assert (c.id_paths, c.default, c.concat_order, c.dedup) == (
        (NESTED,),
        DefaultRule.BOUNDARIES_2_MID_LM3,
        "ascending",
        Dedup.MEMBERSHIP,
    )
    assert (c.embedding_reachable, c.last_output_reachable, c.embedding_caveat) == (True, False, "")
    assert (c.pipeline_parallel, c.pp_split_rule, c.captures_before_layer) == (
        PipelineParallel.LAST_STAGE_ONLY,
        "sglang",
        True,  # "into layer"
    )
    assert c.notes == (
        f"Probed from the released wheel {wheel}: deepseek_v2.py:DeepseekV2ForCausalLM."
        "set_eagle3_layers_to_capture (line 3458)",
        f"Ids read from {NESTED} (sglang/srt/model_executor/model_runner_components/"
        "spec_aux_hidden_state.py:_resolve_eagle_aux_hidden_state).",
        "Placement: deepseek_v2.py DeepseekV2Model.forward: into layer tests i and stores "
        "hidden+residual (hidden when residual is None) (line 3193)",
    )
    assert c.sources == (
        f"sglang==0.5.23 wheel {wheel} sha256 00b3cd5b265ac76c",
        "eagle3_contracts/conventions/data/sglang-0.5.23.json "
        "classes['deepseek_v2.py:DeepseekV3ForCausalLM']",
    )


def test_a_vllm_row_names_both_paths_its_sorted_set_and_its_raising_grid_cases() -> None:
    c = R.convention_from_table(VL33, "llama.py:LlamaForCausalLM")
    assert c.system == "vLLM 0.33.0, llama.py (LlamaForCausalLM)"
    assert (c.meaning, c.offset_rule, c.dedup) == (
        Meaning.BOUNDARY,
        OffsetRule.BOUNDARY,
        Dedup.SORTED_SET,
    )
    assert c.id_paths == ("eagle_aux_hidden_state_layer_ids", NESTED)
    assert (c.embedding_reachable, c.last_output_reachable) == (True, True)
    assert (c.pipeline_parallel, c.pp_split_rule) == (PipelineParallel.DEPENDS, "vllm")
    assert not c.captures_before_layer  # "before stack" and "after layer"
    assert c.notes[1] == (
        f"Ids read from eagle_aux_hidden_state_layer_ids then {NESTED} "
        "(vllm/v1/worker/gpu_model_runner.py:GPUModelRunner._get_eagle3_aux_layers_from_config)."
    )
    assert c.notes[2] == (
        "Placement: llama.py LlamaModel.forward: before stack tests start and stores "
        "hidden+residual (hidden when residual is None) (line 429); after layer tests i+1 and "
        "stores hidden+residual (hidden when residual is None) (line 439)"
    )
    assert c.notes[3:] == ("The selection raises for grid cases ['none'].",)


def test_an_unreachable_embedding_is_a_caveat() -> None:
    c = R.convention_from_table(SG5, "llama.py:LlamaForCausalLM")
    assert (c.meaning, c.offset_rule) == (Meaning.OUTPUT, OffsetRule.PLUS_ONE_ALWAYS)
    assert not c.embedding_reachable and not c.last_output_reachable
    assert c.embedding_caveat == "raises: hidden_states + residual with residual None at layer 0"
    assert c.captures_before_layer  # "before layer"
    assert c.notes[2] == (
        "Placement: llama.py LlamaModel.forward: before layer tests i and stores hidden+residual "
        "(line 339)"
    )


def test_a_wrapper_row_is_named_by_the_file_whose_rule_applies() -> None:
    key = "qwen3_moe.py:Qwen3MoeForCausalLM"  # delegates to qwen2_moe.py's model
    c = R.convention_from_table(SG23, key)
    assert c.name == "sglang==0.5.23:qwen3_moe.py"
    assert c.notes[-1] == (
        "The inner model's setter raises for ['first_is_1_max_is_L', 'max_is_L', 'none']."
    )
    assert c.sources[1] == f"eagle3_contracts/conventions/data/sglang-0.5.23.json classes[{key!r}]"
    kimi = R.convention_from_table(SG23, "kimi_k25.py:KimiK25ForConditionalGeneration")
    assert kimi.name == "sglang==0.5.23:deepseek_v2.py"
    wheel = SG23.wheel
    assert kimi.notes[0] == (
        f"Probed from the released wheel {wheel}: kimi_k25.py:KimiK25ForConditionalGeneration."
        "set_eagle3_layers_to_capture (line 928) -> deepseek_v2.py:DeepseekV2ForCausalLM."
        "set_eagle3_layers_to_capture (line 3458)"
    )
    assert kimi.system == "SGLang 0.5.23, deepseek_v2.py (KimiK25ForConditionalGeneration)"


def _edited(key: str, **selection: object) -> dict[str, Any]:
    """sglang 0.5.23's table as JSON, with ``key``'s selection updated."""
    out = copy.deepcopy(SG23_JSON)
    out["classes"][key]["selection"].update(selection)
    return out


LLAMA_KEY = "llama.py:LlamaForCausalLM"


@pytest.mark.parametrize(
    ("rule", "meaning", "offset", "dedup"),
    [
        ("plus_one", Meaning.OUTPUT, OffsetRule.PLUS_ONE_ALWAYS, Dedup.MEMBERSHIP),
        ("identity", Meaning.BOUNDARY, OffsetRule.BOUNDARY, Dedup.MEMBERSHIP),
        ("sorted_set", Meaning.BOUNDARY, OffsetRule.BOUNDARY, Dedup.SORTED_SET),
        ("plus_one_if_first_is_one", Meaning.CONDITIONAL, OffsetRule.PLUS_ONE_IF_FIRST_IS_ONE,
         Dedup.MEMBERSHIP),
        ("identity_if_max_is_L_else_plus_one", Meaning.CONDITIONAL, OffsetRule.LOOP_IF_MAX_IS_L,
         Dedup.MEMBERSHIP),
    ],
)  # fmt: skip
def test_each_probed_rule_maps_to_the_registry_vocabulary(
    rule: str, meaning: Meaning, offset: OffsetRule, dedup: Dedup
) -> None:
    c = R.convention_from_table(ReleaseTable.from_json(_edited(LLAMA_KEY, rule=rule)), LLAMA_KEY)
    assert (c.meaning, c.offset_rule, c.dedup) == (meaning, offset, dedup)


def test_a_row_raising_on_grid_cases_and_at_the_last_rank_says_so() -> None:
    table = _edited(
        LLAMA_KEY, raises_on=["max_is_L"], inner_raises_on=["none"], last_rank_only=False
    )
    c = R.convention_from_table(ReleaseTable.from_json(table), LLAMA_KEY)
    assert c.notes[3:] == (
        "The selection raises for grid cases ['max_is_L'].",
        "The inner model's setter raises for ['none'].",
    )
    assert c.pipeline_parallel is PipelineParallel.DEPENDS


def test_a_table_without_a_wheel_still_cites_the_release() -> None:
    table = copy.deepcopy(SG23_JSON)
    del table["wheel"]
    del table["id_source"]["precedence_from"]
    c = R.convention_from_table(ReleaseTable.from_json(table), LLAMA_KEY)
    assert c.system == "SGLang 0.5.23, llama.py (LlamaForCausalLM)"
    assert (c.pp_split_rule, c.release) == ("sglang", "sglang==0.5.23")
    assert c.notes[0].startswith("Probed from the released wheel sglang==0.5.23: llama.py:")
    assert c.sources == (
        "sglang==0.5.23 wheel ? sha256 ?",
        f"eagle3_contracts/conventions/data/sglang-0.5.23.json classes[{LLAMA_KEY!r}]",
    )
    assert c.notes[1] == f"Ids read from {NESTED} ()."


def test_a_row_the_registry_cannot_express_is_refused_with_every_reason() -> None:
    table = _edited(LLAMA_KEY, rule="reversed", default="4,L//2,L-1")
    table["classes"][LLAMA_KEY]["needs_reading"] = ["llama.py:10: call of 'f'"]
    table["id_source"]["precedence"] = []
    forward = table["classes"][LLAMA_KEY]["placement"]["forward"]
    table["model_files"]["llama.py"]["placement"][forward]["boundary_minus_element"] = 1
    with pytest.raises(ContractError) as err:
        R.convention_from_table(ReleaseTable.from_json(table), LLAMA_KEY)
    assert err.value.field == "convention"
    message = str(err.value)
    assert message.startswith(
        "sglang==0.5.23 llama.py (LlamaForCausalLM): the probed code cannot back a convention: "
        "llama.py:10: call of 'f'; selection rule 'reversed' has no registry equivalent; "
        "placement not boundary-exact: capture in llama.py LlamaModel.forward (lines 491): "
        "boundary = element + 1; no-ids default '4,L//2,L-1' has no registry equivalent; "
        "the draft-config reader needed reading (no evaluated precedence)"
    )


def test_an_ambiguous_placement_and_a_missing_default_are_named() -> None:
    table = _edited(LLAMA_KEY, default=None)
    table["classes"][LLAMA_KEY]["placement"] = {"ambiguous": "two decoder stacks"}
    with pytest.raises(ContractError) as err:
        R.convention_from_table(ReleaseTable.from_json(table), LLAMA_KEY)
    assert str(err.value) == (
        "sglang==0.5.23 llama.py (LlamaForCausalLM): the probed code cannot back a convention: "
        "placement not boundary-exact: two decoder stacks; no-ids default None has no registry "
        "equivalent"
    )
    del table["classes"][LLAMA_KEY]["selection"]["default"]
    with pytest.raises(ContractError, match=r"no-ids default None has no registry equivalent$"):
        R.convention_from_table(ReleaseTable.from_json(table), LLAMA_KEY)
        R.convention_from_table(table, LLAMA_KEY)


def test_the_minimax_m3_default_is_boundaries_3_mid_plus_1_l_minus_2() -> None:
    """sglang 0.5.23 minimax_m3_vl.py defaults to loop indices (3, L//2+1, L-2): a convention
    backs it (explicit ids were refused for want of this default)."""
    c = conventions.get("sglang==0.5.23", architectures=["MiniMaxM3SparseForConditionalGeneration"])
    assert c.default is DefaultRule.BOUNDARIES_3_MIDP1_LM2
    assert c.default.native(32) == c.default.boundaries(32) == (3, 17, 30)
    assert c.describe_default(32) == "boundaries (3, L//2+1, L-2) = (3, 17, 30) for L = 32"
