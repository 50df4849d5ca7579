"""Config readers at their edges: which field each refusal names (``err.field``, the JSON path
the CLI prints), what each schema reads, and where a multimodal target's sizes come from."""

from __future__ import annotations

import pytest

from eagle3_contracts import ConfigError
from eagle3_contracts.config.readers import (
    IDS_FIELD,
    NESTED_PATH,
    TargetConfig,
    read_draft_config,
    read_target_config,
    transformers_defaults,
)
from eagle3_contracts.layer_ids import MAX_LAYER_IDS

TARGET = {"num_hidden_layers": 61, "hidden_size": 7168}


def refusal(fn, *args) -> ConfigError:
    with pytest.raises(ConfigError) as err:
        fn(*args)
    return err.value


# -- drafter ids ---------------------------------------------------------------------------


def test_the_schema_names_where_the_ids_are() -> None:
    assert read_draft_config({"eagle_config": {IDS_FIELD: [2]}}).schema == "eagle_config"
    assert read_draft_config({IDS_FIELD: [2]}).schema == "top-level"
    assert read_draft_config({}).schema == "none"
    assert read_draft_config({"eagle_config": {}}).schema == "none"
    spec = read_draft_config({"speculators_model_type": "eagle3", IDS_FIELD: [2]})
    assert spec.schema == "speculators"


def test_ids_at_reads_each_path_and_refuses_others() -> None:
    cfg = read_draft_config({"eagle_config": {IDS_FIELD: [2, 30]}, IDS_FIELD: [3, 31]})
    assert cfg.ids_at(NESTED_PATH) == (2, 30)
    assert cfg.ids_at(IDS_FIELD) == (3, 31)
    assert cfg.ids == (2, 30)  # nested first
    err = refusal(cfg.ids_at, "eagle_config.other")
    assert err.field == "eagle_config.other"
    assert "no reader for JSON path 'eagle_config.other'" in str(err)


def test_null_ids_are_absent() -> None:
    cfg = read_draft_config({"eagle_config": {IDS_FIELD: None}, IDS_FIELD: [4]})
    assert (cfg.nested_ids, cfg.top_level_ids, cfg.ids) == (None, (4,), (4,))


@pytest.mark.parametrize(
    ("draft", "field"),
    [
        ({IDS_FIELD: []}, IDS_FIELD),
        ({"eagle_config": {IDS_FIELD: []}}, NESTED_PATH),
        ({IDS_FIELD: 3}, IDS_FIELD),
        ({IDS_FIELD: "2,30"}, IDS_FIELD),
        ({IDS_FIELD: [2, True]}, f"{IDS_FIELD}[1]"),
        ({IDS_FIELD: [2.0]}, f"{IDS_FIELD}[0]"),
        ({"eagle_config": {IDS_FIELD: [1, None]}}, f"{NESTED_PATH}[1]"),
        ({IDS_FIELD: list(range(MAX_LAYER_IDS + 1))}, IDS_FIELD),
        ({"eagle_config": [1]}, "eagle_config"),
        ({"speculators_model_type": 3}, "speculators_model_type"),
        ({"hidden_size": 0}, "hidden_size"),
        ({"hidden_size": True}, "hidden_size"),
        ({"target_hidden_size": "16"}, "target_hidden_size"),
        ({"draft_vocab_size": -1}, "draft_vocab_size"),
        ({"architectures": "LlamaForCausalLM"}, "architectures"),
        ({"architectures": ["A", 1]}, "architectures"),
        ({"model_type": 3}, "model_type"),
        ({"norm_before_fc": "yes"}, "norm_before_fc"),
        ({"eagle_config": {"fc_norm": 1}}, "eagle_config.fc_norm"),
        (
            {"speculators_model_type": "eagle3", "transformer_layer_config": {"hidden_size": 0}},
            "transformer_layer_config.hidden_size",
        ),
    ],
)
def test_each_bad_field_is_refused_by_its_path(draft: dict, field: str) -> None:
    err = refusal(read_draft_config, draft)
    assert err.field == field
    assert err.source == "<dict>"  # a dict has no file name
    assert field.split("[")[0] in str(err)


def test_exactly_the_id_limit_is_read() -> None:
    assert len(read_draft_config({IDS_FIELD: list(range(MAX_LAYER_IDS))}).ids) == MAX_LAYER_IDS


def test_an_empty_id_list_says_engines_disagree() -> None:
    assert str(refusal(read_draft_config, {IDS_FIELD: []})).startswith(
        f"<dict>: {IDS_FIELD} is empty: "
    )


def test_speculators_sizes_come_from_the_layer_config() -> None:
    cfg = read_draft_config(
        {
            "speculators_model_type": "eagle3",
            "transformer_layer_config": {"hidden_size": 4096, "vocab_size": 128256},
            "hidden_size": 1,
            "speculators_config": {"verifier": {"name_or_path": "meta-llama/Llama-3.1-8B"}},
        }
    )
    assert (cfg.hidden_size, cfg.vocab_size) == (4096, 128256)
    assert cfg.verifier == "meta-llama/Llama-3.1-8B"


def test_a_non_speculators_draft_ignores_a_layer_config() -> None:
    cfg = read_draft_config({"transformer_layer_config": {"hidden_size": 4096}, "hidden_size": 8})
    assert cfg.hidden_size == 8


def test_norm_flags_known_and_unknown() -> None:
    cfg = read_draft_config(
        {"norm_before_fc": True, "eagle_config": {"fc_norm": False, "NormTrick": True}, "x": 1}
    )
    assert dict(cfg.norm_flags) == {"norm_before_fc": True, "eagle_config.fc_norm": False}
    assert dict(cfg.unknown_norm_flags) == {"eagle_config.NormTrick": True}


def test_fc_hidden_size_prefers_the_target_width() -> None:
    assert read_draft_config({"hidden_size": 8, "target_hidden_size": 16}).fc_hidden_size == 16
    assert read_draft_config({"hidden_size": 8}).fc_hidden_size == 8
    assert read_draft_config({}).fc_hidden_size is None


# -- targets -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "field"),
    [
        ({"hidden_size": 8}, "num_hidden_layers"),
        ({"num_hidden_layers": 4}, "hidden_size"),
        ({"num_hidden_layers": 0, "hidden_size": 8}, "num_hidden_layers"),
        ({"n_layer": True, "hidden_size": 8}, "n_layer"),
        ({"num_hidden_layers": 4, "d_model": "8"}, "d_model"),
        ({"num_hidden_layers": 4, "hidden_size": 8, "vocab_size": 0}, "vocab_size"),
        ({"text_config": 3}, "text_config"),
        (
            {"text_config": {"hidden_size": 8, "num_hidden_layers": -1}},
            "text_config.num_hidden_layers",
        ),
    ],
)
def test_each_bad_target_field_is_refused_by_its_path(target: dict, field: str) -> None:
    assert refusal(read_target_config, target).field == field


def test_a_missing_depth_names_every_accepted_key() -> None:
    err = refusal(read_target_config, {"hidden_size": 8})
    assert str(err).startswith("<dict>: no num_hidden_layers (or n_layer, num_layers): ")


def test_depth_and_width_aliases() -> None:
    t = read_target_config({"n_layer": 12, "n_embd": 768})
    assert (t.num_layers, t.hidden_size, t.section) == (12, 768, "")
    t = read_target_config({"num_layers": 24, "d_model": 1024, "num_hidden_layers": None})
    assert (t.num_layers, t.hidden_size) == (24, 1024)


def test_a_multimodal_target_reads_its_text_config() -> None:
    t = read_target_config(
        {
            "model_type": "llava",
            "architectures": ["LlavaForConditionalGeneration"],
            "vocab_size": 32064,
            "text_config": {"model_type": "llama", **TARGET},
        }
    )
    assert (t.num_layers, t.hidden_size, t.section) == (61, 7168, "text_config.")
    assert (t.model_type, t.text_model_type, t.vocab_size) == ("llava", "llama", 32064)
    assert t.architectures == ("LlavaForConditionalGeneration",)


def test_a_text_config_lends_its_architectures_when_the_top_has_none() -> None:
    t = read_target_config({"llm_config": {"architectures": ["Qwen2ForCausalLM"], **TARGET}})
    assert (t.architectures, t.section) == (("Qwen2ForCausalLM",), "llm_config.")


def test_the_top_level_depth_wins_over_a_text_config() -> None:
    t = read_target_config({**TARGET, "text_config": {"num_hidden_layers": 2, "hidden_size": 4}})
    assert (t.num_layers, t.section, t.text_model_type) == (61, "", None)


def test_moe_and_quantization_flags() -> None:
    assert read_target_config({**TARGET, "n_routed_experts": 256}).is_moe
    assert not read_target_config({**TARGET, "num_experts": 1}).is_moe
    assert not read_target_config({**TARGET, "num_experts": True}).is_moe
    assert read_target_config({"text_config": {**TARGET, "num_local_experts": 8}}).is_moe
    assert read_target_config({**TARGET, "quantization_config": {}}).quantized
    assert not read_target_config({**TARGET, "quantization_config": None}).quantized


def test_sizes_from_the_command_line() -> None:
    t = TargetConfig.from_sizes(61, 7168)
    assert (t.source, t.num_layers, t.hidden_size) == ("<command line>", 61, 7168)
    assert refusal(TargetConfig.from_sizes, 0, 8).field == "num_hidden_layers"
    assert refusal(TargetConfig.from_sizes, 4, None).field == "hidden_size"


def test_a_text_config_without_model_type_names_the_missing_field() -> None:
    err = refusal(read_target_config, {"text_config": {"hidden_size": 8}})
    assert err.field == "text_config.num_hidden_layers"
    assert "text_config.model_type is absent" in str(err)


def test_transformers_defaults_of_an_unknown_model_type() -> None:
    assert transformers_defaults("no-such-model-xx") is None


def test_transformers_defaults_read_from_the_source() -> None:
    pytest.importorskip("transformers")
    llama = transformers_defaults("llama")
    assert llama is not None
    assert (llama["num_hidden_layers"], llama["hidden_size"]) == (32, 4096)
    assert llama["__class__"] == "transformers LlamaConfig"


def test_two_experts_make_a_moe() -> None:
    assert read_target_config({**TARGET, "num_experts": 2}).is_moe


def test_a_draft_without_speculators_config_names_no_verifier() -> None:
    assert read_draft_config({}).verifier is None
    assert read_draft_config({"speculators_config": {"verifier": "x"}}).verifier is None


def test_refusals_name_the_type_they_got_and_where_from() -> None:
    assert str(refusal(read_draft_config, {IDS_FIELD: 3})) == (
        f"<dict>: {IDS_FIELD} must be a list of integer layer ids, got number 3"
    )
    err = refusal(TargetConfig.from_sizes, 4, None)
    assert (err.source, str(err)) == ("<command line>", "<command line>: hidden_size is missing")
    assert refusal(TargetConfig.from_sizes, None, 4).source == "<command line>"
