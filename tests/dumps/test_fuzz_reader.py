"""Fuzzing the dump reader: any bytes, headers, metadata and offsets give a ``Dump``
or a ``DumpError``, never another exception. A fixed budget (``BUDGET`` examples per test,
derandomized) runs in CI whatever hypothesis profile is loaded."""

from __future__ import annotations

import json
import struct
import tempfile
from pathlib import Path
from typing import Any

import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eagle3_contracts.dumps.format import FORMAT, read_dump, write_dump
from eagle3_contracts.errors import DumpError

BUDGET = settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
H, T = 4, 3

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)
dtypes = (
    st.sampled_from(["F32", "F16", "BF16", "I64", "U16", "U64", "BOOL", "Q7", ""]) | json_values
)
counts = st.integers(-4, 2**64) | json_values
entries = (
    st.fixed_dictionaries(
        {
            "dtype": dtypes,
            "shape": st.lists(st.integers(-2, 6), max_size=4) | json_values,
            "data_offsets": st.lists(counts, min_size=0, max_size=3) | json_values,
        }
    )
    | json_values
)
metadata_values = st.sampled_from(
    [
        FORMAT,
        "[0, 1]",
        "[1]",
        "canonical",
        "t",
        "float32",
        str(H),
        "concatenated",
        "segments",
        '["hidden_states"]',
        '["hidden_states.0", "hidden_states.1"]',
        "[",
        "-1",
        "1e400",
    ]
) | st.text(max_size=10)
metadata = (
    st.dictionaries(
        st.sampled_from(
            [
                "format",
                "layer_ids",
                "convention",
                "system",
                "dtype",
                "hidden_size",
                "layout",
                "segments",
            ]
        ),
        metadata_values,
    )
    | json_values
)


def _good_bytes() -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
        path = write_dump(
            Path(tmp) / "good.safetensors",
            torch.randn(1, T, 2 * H),
            torch.arange(T).unsqueeze(0),
            layer_ids=[0, 1],
            convention="canonical",
            system="fuzz",
        )
        return path.read_bytes()


GOOD = _good_bytes()


def _read(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "fuzz.safetensors"
        path.write_bytes(data)
        try:
            dump = read_dump(path)
        except DumpError as exc:
            assert str(exc).startswith(str(path)), exc  # every message names the file
            assert "\n" not in str(exc).strip()
        else:
            assert all(torch.isfinite(s).all() for s in dump.segments)


@BUDGET
@given(st.binary(max_size=256))
def test_random_bytes(data: bytes) -> None:
    _read(data)


@BUDGET
@given(st.integers(0, len(GOOD) - 1), st.binary(min_size=1, max_size=8))
def test_a_valid_dump_with_some_bytes_overwritten(at: int, patch: bytes) -> None:
    _read(GOOD[:at] + patch + GOOD[at + len(patch) :])


@BUDGET
@given(st.integers(0, len(GOOD)))
def test_a_valid_dump_cut_anywhere(at: int) -> None:
    _read(GOOD[:at])


@BUDGET
@given(
    st.dictionaries(st.sampled_from(["hidden_states", "input_ids", "x"]), entries, max_size=3),
    metadata,
    st.integers(0, 512),
)
def test_crafted_headers_metadata_and_offsets(
    tensors: dict[str, Any], meta: Any, data_bytes: int
) -> None:
    header = {**tensors, "__metadata__": meta}
    raw = json.dumps(header).encode()
    _read(struct.pack("<Q", len(raw)) + raw + bytes(data_bytes))


@BUDGET
@given(st.integers(0, 2**64 - 1), st.binary(max_size=64))
def test_any_header_length(length: int, rest: bytes) -> None:
    _read(struct.pack("<Q", length) + rest)
