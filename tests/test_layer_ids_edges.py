"""The canonical-id rules at their edges (-1, 0, L-2, L-1, L) and what each refusal tells the user.

Every ``ContractError`` names the field at fault (``err.field``, which the CLI turns into the
option or config key) and, in its message, the value given and the range that is valid: that
is the contract of ``eagle3_contracts.errors``, so it is pinned here.
"""

from __future__ import annotations

import pytest

from eagle3_contracts import ContractError
from eagle3_contracts.layer_ids import (
    EMBEDDING,
    MAX_LAYER_IDS,
    MAX_NUM_LAYERS,
    check_id_count,
    check_layer_id,
    check_num_layers,
    describe,
    from_boundary,
    from_hf_index,
    to_boundary,
    to_hf_index,
    uniform_shift,
)

L = 61  # Kimi-K2.5's depth: canonical ids -1..60, boundaries 0..61, HF indices 0..60 usable


def refusal(fn, *args, **kwargs) -> ContractError:
    with pytest.raises(ContractError) as err:
        fn(*args, **kwargs)
    return err.value


# -- num_layers ----------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 2, L])
def test_positive_depths_are_returned(n: int) -> None:
    assert check_num_layers(n) == n


@pytest.mark.parametrize(
    ("n", "shown"), [(True, "True"), (2.0, "2.0"), ("61", "'61'"), (None, "None")]
)
def test_a_depth_that_is_no_int_is_refused_naming_field_and_value(n: object, shown: str) -> None:
    err = refusal(check_num_layers, n, field="num_hidden_layers")
    assert err.field == "num_hidden_layers"
    assert str(err).startswith("num_hidden_layers must be a positive integer")
    assert shown in str(err)


@pytest.mark.parametrize("n", [0, -1, -61])
def test_a_depth_below_one_is_refused_naming_field_and_value(n: int) -> None:
    err = refusal(check_num_layers, n)
    assert err.field == "num_layers"
    assert str(err) == f"num_layers must be >= 1 (the target's decoder depth), got {n}"


def test_the_deepest_accepted_target_is_the_limit() -> None:
    assert check_num_layers(MAX_NUM_LAYERS) == MAX_NUM_LAYERS
    err = refusal(check_num_layers, MAX_NUM_LAYERS + 1, field="--num-layers")
    assert err.field == "--num-layers"
    assert str(err).startswith(
        f"--num-layers = {MAX_NUM_LAYERS + 1} is over the limit of {MAX_NUM_LAYERS} layers"
    )


def test_the_most_ids_accepted_is_the_limit() -> None:
    assert check_id_count(0) == 0
    assert check_id_count(MAX_LAYER_IDS) == MAX_LAYER_IDS
    err = refusal(check_id_count, MAX_LAYER_IDS + 1)
    assert err.field == "layer_ids"  # the default field name
    assert str(err).startswith(
        f"layer_ids lists {MAX_LAYER_IDS + 1} layer ids, over the limit of {MAX_LAYER_IDS}"
    )
    assert refusal(check_id_count, 10**6, field="--ids").field == "--ids"


# -- canonical ids ---------------------------------------------------------------------------


@pytest.mark.parametrize("layer_id", [EMBEDDING, 0, 1, L - 2, L - 1])
def test_canonical_ids_from_minus_one_to_last_are_valid(layer_id: int) -> None:
    assert check_layer_id(layer_id, L) == layer_id


def test_a_one_layer_target_has_two_ids() -> None:
    assert check_layer_id(-1, 1) == -1
    assert check_layer_id(0, 1) == 0
    assert "[-1, 0]" in str(refusal(check_layer_id, 1, 1))


@pytest.mark.parametrize("layer_id", [L, L + 1, -2, -L])
def test_an_id_outside_the_target_is_refused_naming_the_valid_range(layer_id: int) -> None:
    err = refusal(check_layer_id, layer_id, L, field="layer_ids[1]")
    assert err.field == "layer_ids[1]"
    message = str(err)
    assert message.startswith(f"layer_ids[1] = {layer_id} is outside [-1, {L - 1}] for a {L}-layer")
    assert f"0..{L - 1} (output of that layer)" in message


@pytest.mark.parametrize(
    ("value", "type_name"), [(True, "bool"), (2.0, "float"), ("2", "str"), (None, "NoneType")]
)
def test_an_id_that_is_no_int_is_refused_naming_its_type_and_the_valid_ids(
    value: object, type_name: str
) -> None:
    err = refusal(check_layer_id, value, L)
    assert err.field == "layer_id"  # the default field name
    message = str(err)
    assert message.startswith(f"layer_id must be an integer layer id, got {type_name} {value!r}")
    assert f"0..{L - 1} for a layer's output" in message


# -- boundaries ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("layer_id", "boundary"), [(EMBEDDING, 0), (0, 1), (L - 2, L - 1), (L - 1, L)]
)
def test_boundary_edges(layer_id: int, boundary: int) -> None:
    assert to_boundary(layer_id, L) == boundary
    assert from_boundary(boundary, L) == layer_id


def test_to_boundary_refuses_what_has_no_canonical_id() -> None:
    assert refusal(to_boundary, L, L).field == "layer_id"
    assert refusal(to_boundary, -2, L).field == "layer_id"
    assert refusal(to_boundary, 0, 0).field == "num_layers"


@pytest.mark.parametrize("boundary", [-1, L + 1])
def test_a_boundary_outside_zero_to_depth_is_refused_naming_the_range(boundary: int) -> None:
    err = refusal(from_boundary, boundary, L)
    assert err.field == "boundary"
    assert str(err).startswith(f"boundary = {boundary} is outside [0, {L}] for a {L}-layer target")
    assert f"{L} the last layer's output" in str(err)


@pytest.mark.parametrize("boundary", [True, 1.0, "1", None])
def test_a_boundary_that_is_no_int_is_refused_with_its_field(boundary: object) -> None:
    err = refusal(from_boundary, boundary, L, field="eagle_aux_hidden_state_layer_ids[0]")
    assert err.field == "eagle_aux_hidden_state_layer_ids[0]"
    assert str(err) == (f"eagle_aux_hidden_state_layer_ids[0] must be an integer, got {boundary!r}")


def test_from_boundary_checks_the_depth_first() -> None:
    assert refusal(from_boundary, 0, 0).field == "num_layers"


# -- Hugging Face hidden_states indices ----------------------------------------------------------


@pytest.mark.parametrize(("layer_id", "index"), [(EMBEDDING, 0), (0, 1), (L - 2, L - 1)])
def test_hf_index_edges(layer_id: int, index: int) -> None:
    assert to_hf_index(layer_id, L) == index
    assert from_hf_index(index, L) == layer_id


def test_the_last_layer_has_no_hf_index_and_the_refusal_says_why() -> None:
    err = refusal(to_hf_index, L - 1, L)
    assert err.field == "layer_id"
    assert f"hidden_states[{L}] is the final norm" in str(err)
    assert str(err).startswith(f"canonical layer {L - 1} (output of the last layer, pre-norm)")


def test_to_hf_index_refuses_ids_outside_the_target() -> None:
    assert refusal(to_hf_index, L, L).field == "layer_id"
    assert refusal(to_hf_index, 0, 0).field == "num_layers"


def test_the_post_norm_index_has_no_canonical_id_and_the_refusal_names_the_pre_norm_one() -> None:
    err = refusal(from_hf_index, L, L, field="hidden_states_index")
    assert err.field == "hidden_states_index"
    assert str(err).startswith(f"hidden_states_index = {L} is hidden_states[-1]")
    assert f"(canonical {L - 1} is the pre-norm output)" in str(err)


@pytest.mark.parametrize("index", [-1, L + 1])
def test_an_hf_index_outside_the_states_is_refused_naming_the_range(index: int) -> None:
    err = refusal(from_hf_index, index, L)
    assert err.field == "hf_index"
    assert str(err) == f"hf_index = {index} is outside [0, {L}] for a {L}-layer target"


@pytest.mark.parametrize("index", [True, False, 1.0, "1", None])
def test_an_hf_index_that_is_no_int_is_refused_with_its_field(index: object) -> None:
    err = refusal(from_hf_index, index, L)
    assert err.field == "hf_index"
    assert str(err) == f"hf_index must be an integer, got {index!r}"


def test_from_hf_index_checks_the_depth_first() -> None:
    assert refusal(from_hf_index, 0, 0).field == "num_layers"


# -- shifts and labels ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("want", "got", "shift"),
    [
        ((2, 30, 58), (3, 31, 59), 1),
        ((2, 30, 58), (1, 29, 57), -1),
        ((2, 30, 58), (2, 30, 58), 0),
        ((5,), (-1,), -6),
        ((2, 30, 58), (3, 31, 58), None),  # not uniform
        ((2, 30), (3, 32), None),
        ((), (), None),  # nothing to compare
        ((2, 30), (3, 31, 59), None),  # different lengths
        ((2, 30, 58), (3, 31), None),
    ],
)
def test_uniform_shift(want: tuple[int, ...], got: tuple[int, ...], shift: int | None) -> None:
    assert uniform_shift(want, got) == shift


@pytest.mark.parametrize(
    ("layer_id", "n", "label"),
    [
        (-1, 61, "embedding (-1)"),
        (0, 61, "layer 0"),
        (59, 61, "layer 59"),
        (60, 61, "layer 60 (last, pre-norm)"),
        (0, 1, "layer 0 (last, pre-norm)"),
        (-1, 1, "embedding (-1)"),
    ],
)
def test_describe_edges(layer_id: int, n: int, label: str) -> None:
    assert describe(layer_id, n) == label
