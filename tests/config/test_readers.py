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


def test_contradiction_names_the_field() -> None:
    with pytest.raises(ConfigError, match="vLLM the top level") as err:
        read_draft_config({IDS_FIELD: [1, 2, 3], "eagle_config": {IDS_FIELD: [2, 3, 4]}})
    assert err.value.field == IDS_FIELD and err.value.source == "<dict>"


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
