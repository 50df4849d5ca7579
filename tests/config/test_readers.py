"""Reading drafter and target configs: every schema, and every way a file can be broken."""

from __future__ import annotations

import contextlib
import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eagle3_contracts import ConfigError, ContractError
from eagle3_contracts.config.readers import (
    IDS_FIELD,
    NESTED_PATH,
    TargetConfig,
    read_draft_config,
    read_target_config,
)
from eagle3_contracts.testing.strategies import SCHEMAS, draft_configs

from ._corrupt import DRAFT_KEYS, JSON, TARGET_KEYS, corrupted_cases, pipeline, targets

# Pure-Python properties: cheap enough for more examples than the torch-sized ci profile.
MANY = settings(max_examples=60, deadline=None)


@MANY
@given(st.sampled_from(SCHEMAS).flatmap(lambda s: st.tuples(st.just(s), draft_configs(schema=s))))
def test_every_schema_reads_back(case: tuple[str, dict]) -> None:
    schema, data = case
    cfg = read_draft_config(data)
    assert cfg.schema == schema
    written = data.get("eagle_config", data).get(IDS_FIELD)
    assert cfg.ids == (None if written is None else tuple(written))
    if schema == "eagle_config":
        assert cfg.ids_at(NESTED_PATH) == cfg.ids and cfg.top_level_ids is None
    if schema in ("top-level", "speculators"):
        assert cfg.ids_at(IDS_FIELD) == cfg.ids and cfg.nested_ids is None
    layer = data.get("transformer_layer_config", data)
    assert cfg.hidden_size == layer["hidden_size"]
    assert cfg.fc_hidden_size == data.get("target_hidden_size", layer["hidden_size"])
    assert cfg.draft_vocab_size == data.get("draft_vocab_size")


@MANY
@given(targets())
def test_targets_read_back(data: dict) -> None:
    t = read_target_config(data)
    sizes = data.get("text_config", data)
    assert (t.num_layers, t.hidden_size, t.vocab_size) == (
        sizes["num_hidden_layers"],
        sizes["hidden_size"],
        sizes["vocab_size"],
    )
    assert t.model_type == data["model_type"]


def test_paths_directories_and_aliases(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps({"n_layer": 12, "n_embd": 768}))
    t = read_target_config(tmp_path)  # a directory means its config.json
    assert (t.num_layers, t.hidden_size) == (12, 768)
    assert t.source.endswith("config.json")
    draft = tmp_path / "d.json"
    draft.write_text(json.dumps({"eagle_config": {IDS_FIELD: [1, 5, 9]}}))
    assert read_draft_config(str(draft)).ids == (1, 5, 9)


def test_same_ids_in_both_places_is_fine() -> None:
    cfg = read_draft_config({IDS_FIELD: [1, 2, 3], "eagle_config": {IDS_FIELD: [1, 2, 3]}})
    assert cfg.nested_ids == cfg.top_level_ids == (1, 2, 3)


def test_different_lists_in_both_places_are_read_both() -> None:
    """Each engine reads its own place (vLLM the top level first, SGLang only the nested
    one), so a printed per-engine fix can put different lists there: both are kept."""
    cfg = read_draft_config({IDS_FIELD: [1, 2, 3], "eagle_config": {IDS_FIELD: [2, 3, 4]}})
    assert (cfg.top_level_ids, cfg.nested_ids) == ((1, 2, 3), (2, 3, 4))


def test_multimodal_target_sections() -> None:
    """Qwen3-Omni keeps its language model in thinker_config.text_config, InternVL in
    llm_config; the first section found gives depth, width and the model_type."""
    omni = read_target_config(
        {
            "architectures": ["Qwen3OmniMoeForConditionalGeneration"],
            "model_type": "qwen3_omni_moe",
            "thinker_config": {
                "model_type": "qwen3_omni_moe_thinker",
                "text_config": {
                    "model_type": "qwen3_omni_moe_text",
                    "num_hidden_layers": 48,
                    "hidden_size": 2048,
                    "num_experts": 128,
                },
            },
        }
    )
    assert (omni.num_layers, omni.hidden_size, omni.section) == (
        48,
        2048,
        "thinker_config.text_config.",
    )
    assert omni.is_moe and omni.text_model_type == "qwen3_omni_moe_text"
    internvl = read_target_config(
        {
            "architectures": ["InternVLChatModel"],
            "model_type": "internvl_chat",
            "llm_config": {"model_type": "qwen2", "num_hidden_layers": 28, "hidden_size": 3584},
        }
    )
    assert (internvl.num_layers, internvl.hidden_size, internvl.section) == (
        28,
        3584,
        "llm_config.",
    )


def test_text_config_defaults_come_from_transformers() -> None:
    """llava-hf/llava-1.5-7b-hf's text_config leaves LlamaConfig's defaults out
    (num_hidden_layers 32, hidden_size 4096): they are filled from the transformers class,
    read from its source, and the target says so."""
    pytest.importorskip("transformers")
    t = read_target_config(
        {
            "architectures": ["LlavaForConditionalGeneration"],
            "model_type": "llava",
            "text_config": {"model_type": "llama", "vocab_size": 32064},
        }
    )
    assert (t.num_layers, t.hidden_size, t.vocab_size) == (32, 4096, 32064)
    assert any("LlamaConfig default" in f for f in t.filled)


def test_missing_field_without_a_default_names_it() -> None:
    with pytest.raises(ConfigError, match=r"text_config\.num_hidden_layers is missing") as err:
        read_target_config({"model_type": "llava", "text_config": {"model_type": "no_such_xx"}})
    assert err.value.field == "text_config.num_hidden_layers"


def test_errors_name_file_and_field(tmp_path: Path) -> None:
    path = tmp_path / "draft.json"
    path.write_text(json.dumps({"eagle_config": {IDS_FIELD: [1, "2", 3]}}))
    with pytest.raises(ConfigError) as err:
        read_draft_config(path)
    assert err.value.source == str(path)
    assert err.value.field == f"eagle_config.{IDS_FIELD}[1]"
    assert str(path) in str(err.value) and "string" in str(err.value)
    with pytest.raises(ConfigError, match="cannot read") as err:
        read_draft_config(tmp_path / "missing.json")
    with pytest.raises(ConfigError, match="line 1"):
        path.write_text("{")
        read_draft_config(path)
    with pytest.raises(ConfigError, match="path to a JSON file or a dict"):
        read_draft_config(42)  # type: ignore[arg-type]


def test_norm_flags() -> None:
    cfg = read_draft_config(
        {"norm_before_fc": True, "eagle_config": {"use_last_layernorm": False, "my_norm": True}}
    )
    assert dict(cfg.norm_flags) == {
        "norm_before_fc": True,
        "eagle_config.use_last_layernorm": False,
    }
    assert dict(cfg.unknown_norm_flags) == {"eagle_config.my_norm": True}
    assert read_draft_config({"rms_norm_eps": 1e-5}).unknown_norm_flags == {}


def test_target_from_sizes() -> None:
    t = TargetConfig.from_sizes(61, 7168)
    assert (t.num_layers, t.hidden_size, t.source) == (61, 7168, "<command line>")
    with pytest.raises(ConfigError, match="positive"):
        TargetConfig.from_sizes(0, 7168)


@settings(max_examples=150, deadline=None)
@given(corrupted_cases())
def test_corrupted_configs_raise_typed_errors(case: tuple[str, object, object]) -> None:
    _kind, draft, target = case
    with pytest.raises((ConfigError, ContractError)):
        pipeline(draft, target)


@MANY
@given(
    draft_configs(),
    targets(),
    st.sampled_from(DRAFT_KEYS),
    st.sampled_from(TARGET_KEYS),
    JSON,
    JSON,
)
def test_arbitrary_values_never_escape_untyped(
    draft: dict, target: dict, dkey: str, tkey: str, dval: object, tval: object
) -> None:
    draft[dkey] = dval
    target[tkey] = tval
    with contextlib.suppress(ConfigError, ContractError):
        pipeline(draft, target)


@MANY
@given(st.binary(max_size=64))
def test_arbitrary_bytes_never_escape_untyped(blob: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "x.json"
        path.write_bytes(blob)
        for reader in (read_draft_config, read_target_config):
            with contextlib.suppress(ConfigError):
                reader(path)


@MANY
@given(
    st.sampled_from(("eagle_config", "top-level", "speculators")).flatmap(
        lambda s: draft_configs(schema=s)
    ),
    targets(),
    st.lists(st.integers(-(2**70), 2**70) | st.integers(-3, 100), min_size=1, max_size=6),
)
def test_any_integer_ids_resolve_or_raise_typed(draft: dict, target: dict, ids: list[int]) -> None:
    holder = draft["eagle_config"] if isinstance(draft.get("eagle_config"), dict) else draft
    holder[IDS_FIELD] = ids
    with contextlib.suppress(ConfigError, ContractError):
        pipeline(draft, target)
