"""Fuzzing the config readers: any file bytes, any JSON under the fields they read,
give a config or a ``ConfigError``, never another exception. Fixed budget, derandomized."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eagle3_contracts.config.readers import read_draft_config, read_target_config
from eagle3_contracts.errors import ConfigError

BUDGET = settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)
ids = st.lists(st.integers(-3, 70) | json_values, max_size=5) | json_values
FIELDS = {
    "eagle_aux_hidden_state_layer_ids": ids,
    "eagle_config": st.fixed_dictionaries({}, optional={"eagle_aux_hidden_state_layer_ids": ids})
    | json_values,
    "num_hidden_layers": st.integers(-2, 200) | json_values,
    "hidden_size": st.integers(-2, 9000) | json_values,
    "vocab_size": st.integers(-2, 200_000) | json_values,
    "draft_vocab_size": st.integers(-2, 200_000) | json_values,
    "target_hidden_size": st.integers(-2, 9000) | json_values,
    "text_config": st.fixed_dictionaries(
        {}, optional={"num_hidden_layers": st.integers(-2, 90), "hidden_size": st.integers(-2, 90)}
    )
    | json_values,
    "speculators_model_type": json_values,
    "transformer_layer_config": json_values,
    "speculators_config": json_values,
    "architectures": st.lists(st.text(max_size=8), max_size=2) | json_values,
    "model_type": st.text(max_size=8) | json_values,
    "norm_before_residual": json_values,
    "fc_norm": json_values,
}
configs = st.fixed_dictionaries({}, optional=FIELDS)
READERS: dict[str, Callable[[Any], Any]] = {
    "draft": read_draft_config,
    "target": read_target_config,
}


def _read(reader: Callable[[Any], Any], data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "config.json"
        path.write_bytes(data)
        try:
            reader(path)
        except ConfigError as exc:
            assert str(path) in str(exc), exc  # every message names the file


@pytest.mark.parametrize("reader", READERS.values(), ids=READERS.keys())
@BUDGET
@given(configs)
def test_any_json_under_the_fields_read(reader: Callable[[Any], Any], config: dict) -> None:
    _read(reader, json.dumps(config).encode())


@pytest.mark.parametrize("reader", READERS.values(), ids=READERS.keys())
@BUDGET
@given(st.binary(max_size=128) | json_values.map(lambda v: json.dumps(v).encode()))
def test_any_bytes(reader: Callable[[Any], Any], data: bytes) -> None:
    _read(reader, data)
