"""CaptureContract: validation, derived width/segments, JSON round trip."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eagle3_contracts import CaptureContract, ContractError
from eagle3_contracts.contract import ORDERS


@st.composite
def contracts(draw: st.DrawFn) -> CaptureContract:
    n = draw(st.integers(1, 128))
    ids = draw(st.lists(st.integers(-1, n - 1), min_size=1, max_size=min(6, n + 1), unique=True))
    h = draw(st.integers(1, 8192))
    return CaptureContract(tuple(ids), n, h, draw(st.sampled_from(ORDERS)))


@given(contracts())
def test_width_and_segments(c: CaptureContract) -> None:
    assert c.width == len(c.layer_ids) * c.hidden_size
    assert [s.layer_id for s in c.segments] == list(c.concat_ids)
    assert c.segments[0].start == 0 and c.segments[-1].stop == c.width
    for a, b in zip(c.segments, c.segments[1:], strict=False):
        assert a.stop == b.start and a.stop - a.start == c.hidden_size
    expected = sorted(c.layer_ids) if c.order == "ascending" else list(c.layer_ids)
    assert list(c.concat_ids) == expected
    assert c.segment_of(c.layer_ids[0]).layer_id == c.layer_ids[0]


@given(contracts())
def test_json_round_trip(c: CaptureContract) -> None:
    assert CaptureContract.from_json(c.to_json()) == c


def test_order_rules() -> None:
    asc = CaptureContract([58, 2, 30], 61, 7168)
    listed = CaptureContract([58, 2, 30], 61, 7168, "as_listed")
    assert asc.concat_ids == (2, 30, 58)
    assert listed.concat_ids == (58, 2, 30)
    assert asc.segment_of(58).start == 2 * 7168
    assert listed.segment_of(58).start == 0
    assert "width 21504" in asc.describe()


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"layer_ids": ()}, "layer_ids"),
        ({"layer_ids": (2, 2)}, "layer_ids[1]"),
        ({"layer_ids": (True,)}, "layer_ids[0]"),
        ({"layer_ids": (1.0,)}, "layer_ids[0]"),
        ({"layer_ids": ("1",)}, "layer_ids[0]"),
        ({"layer_ids": "12"}, "layer_ids"),
        ({"layer_ids": (61,)}, "layer_ids[0]"),
        ({"layer_ids": (-2,)}, "layer_ids[0]"),
        ({"num_layers": 0}, "num_layers"),
        ({"hidden_size": 0}, "hidden_size"),
        ({"hidden_size": True}, "hidden_size"),
        ({"order": "descending"}, "order"),
    ],
)
def test_validation(kwargs: dict, field: str) -> None:
    args = {"layer_ids": (2, 30, 58), "num_layers": 61, "hidden_size": 16, "order": "ascending"}
    args.update(kwargs)
    with pytest.raises(ContractError) as err:
        CaptureContract(**args)
    assert err.value.field == field
    assert isinstance(err.value, ValueError)


def test_validate_tensor_shape() -> None:
    c = CaptureContract([2, 30, 58], 61, 8)
    ok = SimpleNamespace(shape=(2, 5, 24))
    assert c.validate(ok) is ok
    with pytest.raises(ContractError, match="2 segments of 8"):
        c.validate(SimpleNamespace(shape=(2, 5, 16)))
    with pytest.raises(ContractError, match="not a multiple"):
        c.validate(SimpleNamespace(shape=(2, 5, 25)))
    with pytest.raises(ContractError, match="tensor"):
        c.validate([1, 2, 3])


@pytest.mark.parametrize(
    "text",
    [
        "{",
        "[]",
        '{"layer_ids": [1], "num_layers": 4, "hidden_size": 8}',
        '{"layer_ids": [1], "num_layers": 4, "hidden_size": 8, "order": "ascending", "x": 1}',
        '{"layer_ids": 1, "num_layers": 4, "hidden_size": 8, "order": "ascending"}',
    ],
)
def test_bad_json(text: str) -> None:
    with pytest.raises(ContractError):
        CaptureContract.from_json(text)


def test_examples_are_valid() -> None:
    kimi = CaptureContract.published()[0]
    assert (kimi.layer_ids, kimi.num_layers, kimi.hidden_size) == ((2, 30, 58), 61, 7168)
