"""Canonical ids and their boundary / Hugging Face index conversions."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eagle3_contracts import ContractError
from eagle3_contracts.layer_ids import (
    EMBEDDING,
    check_layer_id,
    check_num_layers,
    describe,
    from_boundary,
    from_hf_index,
    to_boundary,
    to_hf_index,
)


@st.composite
def depth_and_id(draw: st.DrawFn) -> tuple[int, int]:
    n = draw(st.integers(1, 256))
    return n, draw(st.integers(-1, n - 1))


@given(depth_and_id())
def test_boundary_round_trip(case: tuple[int, int]) -> None:
    n, layer_id = case
    b = to_boundary(layer_id, n)
    assert b == layer_id + 1 and 0 <= b <= n
    assert from_boundary(b, n) == layer_id


@given(depth_and_id())
def test_hf_index_round_trip_except_the_last_layer(case: tuple[int, int]) -> None:
    n, layer_id = case
    if layer_id == n - 1:
        with pytest.raises(ContractError, match=r"post-norm|final norm"):
            to_hf_index(layer_id, n)
    else:
        assert from_hf_index(to_hf_index(layer_id, n), n) == layer_id


@pytest.mark.parametrize("n", [1, 2, 61])
def test_hf_last_index_is_post_norm(n: int) -> None:
    with pytest.raises(ContractError, match="final norm") as err:
        from_hf_index(n, n)
    assert err.value.field == "hf_index"
    assert from_hf_index(0, n) == EMBEDDING


@pytest.mark.parametrize(
    ("value", "n", "fragment"),
    [
        (True, 4, "integer"),
        (1.0, 4, "integer"),
        ("2", 4, "integer"),
        (None, 4, "integer"),
        (4, 4, "outside"),
        (-2, 4, "negative indexing"),
    ],
)
def test_bad_layer_ids_are_typed_errors(value: object, n: int, fragment: str) -> None:
    with pytest.raises(ContractError, match=fragment) as err:
        check_layer_id(value, n, field="layer_ids[0]")
    assert err.value.field == "layer_ids[0]"


@pytest.mark.parametrize("n", [0, -3, True, 2.0, "61", None])
def test_bad_depths(n: object) -> None:
    with pytest.raises(ContractError) as err:
        check_num_layers(n)
    assert err.value.field == "num_layers"


@pytest.mark.parametrize("b", [-1, 5, True, "1"])
def test_bad_boundaries(b: object) -> None:
    with pytest.raises(ContractError):
        from_boundary(b, 4)  # type: ignore[arg-type]


def test_describe() -> None:
    assert describe(-1, 61) == "embedding (-1)"
    assert describe(30, 61) == "layer 30"
    assert describe(60, 61) == "layer 60 (last, pre-norm)"
