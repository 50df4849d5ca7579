"""The config readers' rules as a user meets them: every refusal names its file (``source``),
its JSON path (``field``, which the CLI prints), the accepted type or range and the value it
got; which section of a target gives depth, width, vocab and architectures; what a drafter's
speculators sections give; and what a reader keeps of the file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eagle3_contracts import ConfigError
from eagle3_contracts.config.readers import (
    IDS_FIELD,
    NESTED_PATH,
    TargetConfig,
    read_draft_config,
    read_target_config,
)
from eagle3_contracts.layer_ids import MAX_LAYER_IDS, MAX_NUM_LAYERS

TARGET = {"num_hidden_layers": 61, "hidden_size": 7168}
SPEC = {"speculators_model_type": "eagle3"}


def refusal(fn, *args) -> ConfigError:
    with pytest.raises(ConfigError) as err:
        fn(*args)
    return err.value


# -- refusals: field, accepted type or range, and the value got ----------------------------

DRAFT_REFUSALS = [
    # the value a refusal got is named by its JSON type and (shortened) repr
    ({IDS_FIELD: {"a": 1}}, IDS_FIELD, "must be a list of integer layer ids, got object {'a': 1}"),
    ({IDS_FIELD: "2,30"}, IDS_FIELD, "must be a list of integer layer ids, got string '2,30'"),
    ({IDS_FIELD: True}, IDS_FIELD, "must be a list of integer layer ids, got boolean True"),
    ({IDS_FIELD: 1.5}, IDS_FIELD, "must be a list of integer layer ids, got number 1.5"),
    ({IDS_FIELD: [1, None]}, f"{IDS_FIELD}[1]", "must be an integer layer id, got null"),
    ({IDS_FIELD: [[2]]}, f"{IDS_FIELD}[0]", "must be an integer layer id, got list [2]"),
    (
        {"eagle_config": {IDS_FIELD: [0, 1, False]}},
        f"{NESTED_PATH}[2]",
        "must be an integer layer id, got boolean False",
    ),
    ({"eagle_config": 3}, "eagle_config", "must be a JSON object, got number 3"),
    ({"model_type": ["x"]}, "model_type", "must be a string, got list ['x']"),
    ({"model_type": ["a" * 36]}, "model_type", f"must be a string, got list ['{'a' * 36}']"),
    ({"model_type": ["a" * 37]}, "model_type", f"must be a string, got list ['{'a' * 35}..."),
    ({"architectures": "Llama"}, "architectures", "must be a list of strings, got string 'Llama'"),
    (
        {"architectures": ["A", None]},
        "architectures",
        "must be a list of strings, got list ['A', None]",
    ),
    ({"hidden_size": 0}, "hidden_size", "must be a positive integer, got number 0"),
    ({"hidden_size": 1.0}, "hidden_size", "must be a positive integer, got number 1.0"),
    (
        {"target_hidden_size": False},
        "target_hidden_size",
        "must be a positive integer, got boolean False",
    ),
    ({"vocab_size": "1"}, "vocab_size", "must be a positive integer, got string '1'"),
    ({"draft_vocab_size": [1]}, "draft_vocab_size", "must be a positive integer, got list [1]"),
    ({"norm_before_fc": None}, "norm_before_fc", "must be true or false, got null"),
    (
        {"eagle_config": {"fc_norm": 0}},
        "eagle_config.fc_norm",
        "must be true or false, got number 0",
    ),
    ({"speculators_model_type": 3}, "speculators_model_type", "must be a string, got number 3"),
    (
        {**SPEC, "transformer_layer_config": [1]},
        "transformer_layer_config",
        "must be a JSON object, got list [1]",
    ),
    (
        {**SPEC, "transformer_layer_config": {"vocab_size": -3}},
        "transformer_layer_config.vocab_size",
        "must be a positive integer, got number -3",
    ),
    (
        {**SPEC, "speculators_config": "x"},
        "speculators_config",
        "must be a JSON object, got string 'x'",
    ),
    (
        {**SPEC, "speculators_config": {"verifier": {"name_or_path": 8}}},
        "speculators_config.verifier.name_or_path",
        "must be a string, got number 8",
    ),
]


@pytest.mark.parametrize(("draft", "field", "says"), DRAFT_REFUSALS)
def test_a_draft_refusal_names_field_type_and_value(draft: dict, field: str, says: str) -> None:
    err = refusal(read_draft_config, draft)
    assert (err.field, err.source) == (field, "<dict>")
    assert str(err) == f"<dict>: {field} {says}"


TARGET_REFUSALS = [
    (
        {"hidden_size": 8, "num_hidden_layers": "4"},
        "num_hidden_layers",
        "must be a positive integer, got string '4'",
    ),
    ({**TARGET, "vocab_size": 0}, "vocab_size", "must be a positive integer, got number 0"),
    ({**TARGET, "model_type": 1}, "model_type", "must be a string, got number 1"),
    ({**TARGET, "architectures": [1]}, "architectures", "must be a list of strings, got list [1]"),
    ({"text_config": [1]}, "text_config", "must be a JSON object, got list [1]"),
    ({"thinker_config": 0}, "thinker_config", "must be a JSON object, got number 0"),
    # a nested section is named by its whole path
    (
        {"thinker_config": {"text_config": 3}},
        "thinker_config.text_config",
        "must be a JSON object, got number 3",
    ),
    # a section's architectures are named with the section
    (
        {"text_config": {**TARGET, "architectures": ["A", 1]}},
        "text_config.architectures",
        "must be a list of strings, got list ['A', 1]",
    ),
    (
        {"text_config": {**TARGET, "vocab_size": 0}},
        "text_config.vocab_size",
        "must be a positive integer, got number 0",
    ),
    (
        {"vocab_size": 0, "text_config": TARGET},
        "vocab_size",
        "must be a positive integer, got number 0",
    ),
    (
        {"text_config": {**TARGET, "model_type": ["llama"]}},
        "text_config.model_type",
        "must be a string, got list ['llama']",
    ),
    (
        {"llm_config": {"num_hidden_layers": 0, "hidden_size": 8}},
        "llm_config.num_hidden_layers",
        "must be a positive integer, got number 0",
    ),
]


@pytest.mark.parametrize(("target", "field", "says"), TARGET_REFUSALS)
def test_a_target_refusal_names_field_type_and_value(target: dict, field: str, says: str) -> None:
    err = refusal(read_target_config, target)
    assert (err.field, err.source) == (field, "<dict>")
    assert str(err) == f"<dict>: {field} {says}"


def test_an_n_embd_alias_that_is_not_positive_is_refused_by_its_own_name() -> None:
    err = refusal(read_target_config, {"text_config": {"n_layer": 2, "n_embd": 0}})
    assert str(err) == "<dict>: text_config.n_embd must be a positive integer, got number 0"


def test_a_missing_width_names_every_accepted_key() -> None:
    err = refusal(read_target_config, {"text_config": {"num_layers": 2, "model_type": "x"}})
    assert err.field == "text_config.hidden_size"
    err = refusal(read_target_config, {"num_layers": 2})
    assert (err.field, err.source) == ("hidden_size", "<dict>")
    assert str(err).startswith("<dict>: no hidden_size (or n_embd, d_model): ")


def test_the_depth_limit_names_value_and_limit() -> None:
    assert read_target_config({**TARGET, "num_hidden_layers": MAX_NUM_LAYERS}).num_layers == (
        MAX_NUM_LAYERS
    )
    err = refusal(read_target_config, {**TARGET, "num_hidden_layers": MAX_NUM_LAYERS + 1})
    assert (err.field, err.source) == ("num_hidden_layers", "<dict>")
    assert f"num_hidden_layers = {MAX_NUM_LAYERS + 1} is over the limit of {MAX_NUM_LAYERS}" in (
        str(err)
    )
    err = refusal(read_target_config, {"text_config": {**TARGET, "num_hidden_layers": 10**12}})
    assert err.field == "text_config.num_hidden_layers"
    assert str(err).startswith(
        f"<dict>: text_config.num_hidden_layers = {10**12} is over the limit of {MAX_NUM_LAYERS}"
    )


def test_the_depth_limit_names_the_key_written() -> None:
    err = refusal(read_target_config, {"text_config": {"n_layer": 10**6, "hidden_size": 4}})
    assert err.field == "text_config.n_layer"
    assert str(err).startswith(f"<dict>: text_config.n_layer = {10**6} is over the limit")


def test_the_id_count_limit_names_count_and_limit() -> None:
    err = refusal(read_draft_config, {"eagle_config": {IDS_FIELD: [1] * (MAX_LAYER_IDS + 1)}})
    assert (err.field, err.source) == (NESTED_PATH, "<dict>")
    assert f"lists {MAX_LAYER_IDS + 1} layer ids, over the limit of {MAX_LAYER_IDS}" in str(err)


def test_an_empty_id_list_is_refused_where_it_is() -> None:
    err = refusal(read_draft_config, {"eagle_config": {IDS_FIELD: []}})
    assert (err.field, err.source) == (NESTED_PATH, "<dict>")
    assert str(err).startswith(f"<dict>: {NESTED_PATH} is empty: ")


def test_a_width_of_one_is_positive() -> None:
    assert read_draft_config({"hidden_size": 1, "vocab_size": 1}).hidden_size == 1
    t = read_target_config({"num_hidden_layers": 1, "hidden_size": 1, "vocab_size": 1})
    assert (t.num_layers, t.hidden_size, t.vocab_size) == (1, 1, 1)
    t = TargetConfig.from_sizes(1, 1)
    assert (t.num_layers, t.hidden_size) == (1, 1)


# -- what a refusal says about the file itself ---------------------------------------------


@pytest.mark.parametrize(
    ("value", "got"),
    [
        (42, "number 42"),
        (None, "null"),
        (b"{}", "bytes"),
        (["config.json"], "list ['config.json']"),
    ],
)
def test_a_config_that_is_neither_path_nor_dict(value: object, got: str) -> None:
    for reader, what in ((read_draft_config, "draft"), (read_target_config, "target")):
        err = refusal(reader, value)
        assert err.source is None and err.field is None
        assert str(err) == f"a {what} config is a path to a JSON file or a dict, got {got}"


def test_a_json_file_that_is_not_an_object(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text("[1, 2]")
    for reader, what in ((read_draft_config, "draft"), (read_target_config, "target")):
        err = refusal(reader, path)
        assert (err.field, err.source) == ("<root>", str(path))
        assert str(err) == f"{path}: {what} config must be a JSON object, got list [1, 2]"


def test_a_missing_file_names_the_file_and_which_config(tmp_path: Path) -> None:
    err = refusal(read_draft_config, tmp_path / "draft.json")
    assert str(err) == f"{tmp_path / 'draft.json'}: cannot read the draft config: no such file"
    err = refusal(read_target_config, str(tmp_path))  # a directory means its config.json
    assert err.source == str(tmp_path / "config.json")
    assert str(err) == f"{tmp_path / 'config.json'}: cannot read the target config: no such file"


def test_refusals_from_a_file_name_the_file(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(
        json.dumps({"text_config": {"num_layers": 2, "hidden_size": 0}})
    )
    err = refusal(read_target_config, tmp_path)
    assert (err.source, err.field) == (str(tmp_path / "config.json"), "text_config.hidden_size")
    draft = tmp_path / "draft.json"
    draft.write_text(json.dumps({IDS_FIELD: [1, 2]}))
    cfg = read_draft_config(draft)
    assert cfg.source == str(draft)
    err = refusal(cfg.ids_at, "layer_ids")
    assert (err.source, err.field) == (str(draft), "layer_ids")
    assert str(err) == f"{draft}: no reader for JSON path 'layer_ids'"


def test_a_target_read_from_a_directory_names_its_config_json(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps(TARGET))
    t = read_target_config(tmp_path)
    assert t.source == str(tmp_path / "config.json")
    assert dict(t.raw) == TARGET


# -- drafters ------------------------------------------------------------------------------


def test_a_draft_keeps_what_it_read() -> None:
    data = {
        "architectures": ["LlamaForCausalLMEagle3"],
        "model_type": "llama",
        "hidden_size": 4096,
        "target_hidden_size": 7168,
        "vocab_size": 128256,
        "draft_vocab_size": 32000,
        IDS_FIELD: [2, 30, 58],
    }
    cfg = read_draft_config(data)
    assert (cfg.source, cfg.schema, cfg.top_level_ids, cfg.nested_ids) == (
        "<dict>",
        "top-level",
        (2, 30, 58),
        None,
    )
    assert (cfg.hidden_size, cfg.fc_hidden_size, cfg.vocab_size, cfg.draft_vocab_size) == (
        4096,
        7168,
        128256,
        32000,
    )
    assert (cfg.architectures, cfg.model_type, cfg.verifier) == (
        ("LlamaForCausalLMEagle3",),
        "llama",
        None,
    )
    assert dict(cfg.raw) == data
    assert (dict(cfg.norm_flags), dict(cfg.unknown_norm_flags)) == ({}, {})


def test_a_speculators_draft_without_a_layer_config_reads_the_top_level() -> None:
    cfg = read_draft_config({**SPEC, "hidden_size": 8, "vocab_size": 100})
    assert (cfg.schema, cfg.hidden_size, cfg.vocab_size) == ("speculators", 8, 100)
    err = refusal(read_draft_config, {**SPEC, "hidden_size": 0})
    assert err.field == "hidden_size"


def test_a_speculators_draft_takes_widths_from_the_layer_config_only() -> None:
    """The drafter's own width and vocab come from transformer_layer_config; the fc target
    width and the draft vocab stay top-level fields."""
    cfg = read_draft_config(
        {
            **SPEC,
            "transformer_layer_config": {"hidden_size": 4096, "vocab_size": 128256},
            "vocab_size": 5,
            "target_hidden_size": 7168,
            "draft_vocab_size": 32000,
            "speculators_config": {"verifier": {"name_or_path": "org/target"}},
        }
    )
    assert (cfg.hidden_size, cfg.vocab_size) == (4096, 128256)
    assert (cfg.fc_hidden_size, cfg.draft_vocab_size, cfg.verifier) == (7168, 32000, "org/target")


def test_a_speculators_config_without_a_verifier_names_none() -> None:
    assert read_draft_config({**SPEC, "speculators_config": {}}).verifier is None
    assert read_draft_config({**SPEC, "speculators_config": None}).verifier is None
    assert read_draft_config({**SPEC, "speculators_config": {"verifier": {}}}).verifier is None


def test_norm_flags_after_other_keys() -> None:
    """Keys without 'norm' are skipped, wherever they come; case does not matter."""
    cfg = read_draft_config(
        {
            "hidden_size": 8,
            "fc_norm": True,
            "eagle_config": {IDS_FIELD: [1], "Use_Last_LayerNorm": 1, "norm_output": False},
        }
    )
    assert dict(cfg.norm_flags) == {"fc_norm": True, "eagle_config.norm_output": False}
    assert dict(cfg.unknown_norm_flags) == {}
    cfg = read_draft_config({"rope_theta": 1.0, "MyNorm": False})
    assert dict(cfg.unknown_norm_flags) == {"MyNorm": False}


def test_ids_of_a_null_eagle_config_are_top_level() -> None:
    cfg = read_draft_config({"eagle_config": None, IDS_FIELD: [3]})
    assert (cfg.schema, cfg.nested_ids, cfg.top_level_ids) == ("top-level", None, (3,))


# -- targets -------------------------------------------------------------------------------


def test_a_plain_target_keeps_what_it_read() -> None:
    data = {**TARGET, "vocab_size": 129280, "model_type": "deepseek_v3", "architectures": ["X"]}
    t = read_target_config(data)
    assert (t.source, t.section, t.filled, t.text_model_type) == ("<dict>", "", (), None)
    assert (t.vocab_size, t.model_type, t.architectures) == (129280, "deepseek_v3", ("X",))
    assert (t.is_moe, t.quantized) == (False, False)
    assert dict(t.raw) == data


def test_the_text_config_vocab_wins_over_the_top_level() -> None:
    t = read_target_config({"vocab_size": 32000, "text_config": {**TARGET, "vocab_size": 32064}})
    assert t.vocab_size == 32064
    t = read_target_config({"text_config": TARGET})
    assert t.vocab_size is None


def test_the_top_level_architectures_win_over_a_sections() -> None:
    t = read_target_config(
        {"architectures": ["Outer"], "text_config": {**TARGET, "architectures": ["Inner"]}}
    )
    assert t.architectures == ("Outer",)
    t = read_target_config({"text_config": {**TARGET, "architectures": "Inner"}})
    assert t.architectures == ()
    t = read_target_config({**TARGET, "architectures": ["Outer"]})
    assert t.architectures == ("Outer",)


def test_a_sections_bad_architectures_are_refused() -> None:
    """Read only when the top level has none."""
    err = refusal(read_target_config, {"text_config": {**TARGET, "architectures": ["A", 2]}})
    assert err.source == "<dict>"
    assert str(err).endswith("must be a list of strings, got list ['A', 2]")
    t = read_target_config(
        {"architectures": ["A"], "text_config": {**TARGET, "architectures": [2]}}
    )
    assert t.architectures == ("A",)


def test_a_quantized_section_makes_a_quantized_target() -> None:
    t = read_target_config({"text_config": {**TARGET, "quantization_config": {"bits": 4}}})
    assert (t.quantized, t.section) == (True, "text_config.")


def test_sections_are_tried_in_order() -> None:
    """thinker_config without a text_config is passed over for llm_config."""
    t = read_target_config(
        {"thinker_config": {"model_type": "x"}, "llm_config": {**TARGET, "model_type": "qwen2"}}
    )
    assert (t.section, t.text_model_type, t.num_layers) == ("llm_config.", "qwen2", 61)
    t = read_target_config(
        {"text_config": {**TARGET, "num_hidden_layers": 2}, "llm_config": TARGET}
    )
    assert (t.section, t.num_layers) == ("text_config.", 2)


def test_sizes_from_the_command_line_keep_them_raw() -> None:
    t = TargetConfig.from_sizes(61, 7168)
    assert dict(t.raw) == {"num_hidden_layers": 61, "hidden_size": 7168}
    assert (t.filled, t.section, t.vocab_size) == ((), "", None)
