"""The dump format: round trips for every layout/dtype/batching, and every bad file -> DumpError."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from safetensors.torch import save_file

from eagle3_contracts.dumps.format import FORMAT, METADATA_KEYS, Dump, read_dump, write_dump
from eagle3_contracts.errors import DumpError

from .cases import BAD_DUMPS, BadDump, good_metadata

H = 8
IDS = (2, 30, 58)


def _states(k: int = 3, t: int = 5, dtype: torch.dtype = torch.float32, batch: int | None = 1):
    g = torch.Generator().manual_seed(0)
    shape = (t, H) if batch is None else (batch, t, H)
    return [torch.randn(shape, generator=g).to(dtype) for _ in range(k)]


def _ids(t: int = 5, batch: int | None = 1) -> torch.Tensor:
    ids = torch.arange(t) % 7
    return ids if batch is None else ids.expand(batch, t).clone()


# -- round trips ------------------------------------------------------------------------------


@pytest.mark.parametrize("layout", ["concatenated", "segments", "per_layer"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("batch", [None, 1, 2])
def test_round_trip(tmp_path: Path, layout: str, dtype: torch.dtype, batch: int | None) -> None:
    states = _states(dtype=dtype, batch=batch)
    captured: object
    if layout == "concatenated":
        captured = torch.cat(states, dim=-1)
    elif layout == "segments":
        captured = states
    else:
        captured = {f"layer{n + 1}": s for n, s in zip(IDS, states, strict=True)}
    path = write_dump(
        tmp_path / "d.safetensors",
        captured,  # type: ignore[arg-type]
        _ids(batch=batch),
        layer_ids=IDS,
        convention="canonical",
        system="test",
    )
    dump = read_dump(path)
    assert isinstance(dump, Dump)
    assert dump.layout == layout
    assert dump.layer_ids == IDS
    assert dump.hidden_size == H
    assert dump.dtype == str(dtype).removeprefix("torch.")
    assert dump.batched is (batch is not None)
    assert dump.input_ids.dtype == torch.long and dump.input_ids.dim() == 2
    for got, want in zip(dump.segments, states, strict=True):
        assert got.dtype == dtype
        assert torch.equal(got, want if batch is not None else want.unsqueeze(0))
    assert dump.captured.shape[-1] == 3 * H
    if layout == "per_layer":
        assert dump.names == ("layer3", "layer31", "layer59")


def test_per_layer_keeps_given_order(tmp_path: Path) -> None:
    """safetensors sorts names; the dump keeps the writer's concatenation order."""
    states = _states()
    captured = {"layer59": states[0], "layer3": states[1], "layer31": states[2]}
    path = write_dump(
        tmp_path / "d.safetensors",
        captured,
        _ids(),
        layer_ids=(58, 2, 30),
        convention="canonical",
        system="t",
    )
    dump = read_dump(path)
    assert dump.names == ("layer59", "layer3", "layer31")
    assert torch.equal(dump.segments[0], states[0])


@settings(max_examples=10, deadline=None)
@given(
    k=st.integers(1, 4),
    t=st.integers(1, 6),
    h=st.integers(1, 12),
    extra=st.dictionaries(
        st.text("abcxyz_", min_size=1, max_size=6), st.text(max_size=8), max_size=2
    ),
)
def test_round_trip_any_shape(tmp_path_factory: pytest.TempPathFactory, k, t, h, extra) -> None:
    extra = {f"x_{key}": v for key, v in extra.items()}
    path = tmp_path_factory.mktemp("d") / "d.safetensors"
    captured = torch.randn(1, t, k * h)
    write_dump(
        path,
        captured,
        torch.zeros(1, t, dtype=torch.int32),
        layer_ids=list(range(k)),
        convention="canonical",
        system="s",
        extra_metadata=extra,
    )
    dump = read_dump(path)
    assert dump.hidden_size == h and dump.num_segments == k and dump.num_tokens == t
    assert torch.equal(dump.captured, captured)
    for key, value in extra.items():
        assert dump.metadata[key] == value


# -- every bad file -> one-line DumpError ----------------------------------------------------


@pytest.mark.parametrize("case", BAD_DUMPS, ids=lambda c: c.name)
def test_bad_dump_raises(tmp_path: Path, case: BadDump) -> None:
    path = case.make(tmp_path)
    with pytest.raises(DumpError) as info:
        read_dump(path)
    message = str(info.value)
    assert case.expect in message, message
    assert str(path) in message  # names the file
    assert "\n" not in message


def test_metadata_keys_are_all_required(tmp_path: Path) -> None:
    for key in METADATA_KEYS:
        meta = good_metadata()
        del meta[key]
        path = tmp_path / f"no_{key}.safetensors"
        save_file(
            {"hidden_states": torch.zeros(1, 2, 3 * H), "input_ids": torch.zeros(1, 2).long()},
            str(path),
            metadata=meta,
        )
        with pytest.raises(DumpError, match=f"missing metadata {key}"):
            read_dump(path)


# -- write_dump refuses what read_dump would refuse --------------------------------------------

WriteCase = tuple[str, Callable[[Path], object], str]
WRITE_CASES: tuple[WriteCase, ...] = (
    (
        "pt-suffix",
        lambda p: write_dump(
            p / "d.pt",
            torch.zeros(1, 2, 8),
            _ids(2),
            layer_ids=[1],
            convention="canonical",
            system="s",
        ),
        "name it d.safetensors",
    ),
    (
        "nan",
        lambda p: write_dump(
            p / "d.safetensors",
            torch.full((1, 2, 8), float("nan")),
            _ids(2),
            layer_ids=[1],
            convention="canonical",
            system="s",
        ),
        "non-finite",
    ),
    (
        "width",
        lambda p: write_dump(
            p / "d.safetensors",
            torch.zeros(1, 2, 7),
            _ids(2),
            layer_ids=[1, 2],
            convention="canonical",
            system="s",
        ),
        "not a multiple",
    ),
    (
        "tokens",
        lambda p: write_dump(
            p / "d.safetensors",
            torch.zeros(1, 3, 8),
            _ids(2),
            layer_ids=[1],
            convention="canonical",
            system="s",
        ),
        "token count mismatch",
    ),
    (
        "empty-ids",
        lambda p: write_dump(
            p / "d.safetensors",
            torch.zeros(1, 2, 8),
            _ids(2),
            layer_ids=[],
            convention="canonical",
            system="s",
        ),
        "non-empty list",
    ),
    (
        "no-system",
        lambda p: write_dump(
            p / "d.safetensors",
            torch.zeros(1, 2, 8),
            _ids(2),
            layer_ids=[1],
            convention="canonical",
            system="",
        ),
        "system must be",
    ),
    (
        "bad-name",
        lambda p: write_dump(
            p / "d.safetensors",
            {"hidden": torch.zeros(1, 2, 8)},
            _ids(2),
            layer_ids=[1],
            convention="canonical",
            system="s",
        ),
        "must look like 'layer3'",
    ),
    (
        "mixed-dtypes",
        lambda p: write_dump(
            p / "d.safetensors",
            [torch.zeros(1, 2, 8), torch.zeros(1, 2, 8, dtype=torch.bfloat16)],
            _ids(2),
            layer_ids=[1, 2],
            convention="canonical",
            system="s",
        ),
        "mix dtypes",
    ),
    (
        "int-states",
        lambda p: write_dump(
            p / "d.safetensors",
            torch.zeros(1, 2, 8, dtype=torch.int32),
            _ids(2),
            layer_ids=[1],
            convention="canonical",
            system="s",
        ),
        "hidden states must be one of",
    ),
)


@pytest.mark.parametrize("case", WRITE_CASES, ids=lambda c: c[0])
def test_write_dump_refuses(tmp_path: Path, case: WriteCase) -> None:
    _, write, expect = case
    with pytest.raises(DumpError, match=expect):
        write(tmp_path)
    assert not (tmp_path / "d.safetensors").exists()


def test_metadata_is_plain_strings(tmp_path: Path) -> None:
    path = write_dump(
        tmp_path / "d.safetensors",
        torch.zeros(1, 2, 8),
        _ids(2),
        layer_ids=[-1],
        convention="canonical",
        system="s",
    )
    header_len = int.from_bytes(path.read_bytes()[:8], "little")
    header = json.loads(path.read_bytes()[8 : 8 + header_len])
    assert header["__metadata__"]["format"] == FORMAT
    assert json.loads(header["__metadata__"]["layer_ids"]) == [-1]


@pytest.mark.parametrize("dtype", [torch.uint8, torch.uint16, torch.uint32, torch.uint64])
def test_unsigned_input_ids_are_read_as_int64(tmp_path, dtype) -> None:
    """uint16/32/64 token ids raised NotImplementedError ('min_all')."""
    ids = torch.tensor([[0, 5, 7, 2]]).to(dtype)
    path = write_dump(
        tmp_path / "u.safetensors",
        torch.randn(1, 4, 16),
        ids,
        layer_ids=[0, 1],
        convention="canonical",
        system="t",
    )
    dump = read_dump(path)
    assert dump.input_ids.dtype == torch.int64
    assert dump.input_ids.tolist() == [[0, 5, 7, 2]]


def test_uint64_token_ids_above_int64_are_refused(tmp_path) -> None:
    ids = torch.tensor([[0, 1, 2, 2**63 + 5]], dtype=torch.uint64)
    with pytest.raises(DumpError, match="negative token id"):
        write_dump(
            tmp_path / "u.safetensors",
            torch.randn(1, 4, 16),
            ids,
            layer_ids=[0, 1],
            convention="canonical",
            system="t",
        )
