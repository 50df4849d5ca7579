"""``CaptureContract`` at its edges: what it accepts, what it refuses and what the refusal names.

The JSON form (``to_dict`` / ``from_dict``) is a user-facing schema: its fields and their
checks are pinned exactly. Refusals name the field at fault (``err.field``) and the value.
"""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from hypothesis import given

from eagle3_contracts import CaptureContract, ContractError, Segment
from eagle3_contracts.contract import ORDERS

KIMI = {"layer_ids": [2, 30, 58], "num_layers": 61, "hidden_size": 7168, "order": "ascending"}


def refusal(fn, *args, **kwargs) -> ContractError:
    with pytest.raises(ContractError) as err:
        fn(*args, **kwargs)
    return err.value


# -- construction ---------------------------------------------------------------------------


def test_orders() -> None:
    assert ORDERS == ("ascending", "as_listed")


@pytest.mark.parametrize("ids", [[2, 30, 58], (2, 30, 58), range(2, 3)])
def test_any_sequence_of_ids_is_kept_as_a_tuple(ids) -> None:
    c = CaptureContract(ids, 61, 8)
    assert isinstance(c.layer_ids, tuple)
    assert c == CaptureContract(tuple(c.layer_ids), 61, 8)


@pytest.mark.parametrize("ids", [3, None, "2,30", b"\x02", 2.0])
def test_ids_that_are_no_list_are_refused_naming_them(ids: object) -> None:
    err = refusal(CaptureContract, ids, 61, 8)
    assert err.field == "layer_ids"
    assert str(err) == f"layer_ids must be a list of integer layer ids, got {ids!r}"


@pytest.mark.parametrize(
    ("ids", "why"),
    [
        ({2, 30, 58}, "set: it has no order"),
        (frozenset({1}), "frozenset: it has no order"),
        ({2: "a"}, "dict: it has no order"),
        (iter([5, 1]), "one-shot list_iterator"),
        ((n for n in (5, 1)), "one-shot generator"),
    ],
)
def test_unordered_or_one_shot_ids_are_refused(ids: object, why: str) -> None:
    """A set has no order, which is the very thing a contract fixes."""
    err = refusal(CaptureContract, ids, 61, 8)
    assert err.field == "layer_ids" and why in str(err)


def test_no_ids_is_refused_with_an_example() -> None:
    err = refusal(CaptureContract, (), 61, 8)
    assert err.field == "layer_ids"
    assert str(err).startswith("layer_ids is empty: ")


@pytest.mark.parametrize("ids", [(-1,), (0,), (60,), (-1, 60), (-1, 0, 59, 60)])
def test_ids_from_the_embedding_to_the_last_layer_are_accepted(ids: tuple[int, ...]) -> None:
    assert CaptureContract(ids, 61, 8).layer_ids == ids


@pytest.mark.parametrize(
    ("ids", "field"),
    [((61,), "layer_ids[0]"), ((2, -2), "layer_ids[1]"), ((2, 30, 61), "layer_ids[2]")],
)
def test_an_id_outside_the_target_is_refused_at_its_position(
    ids: tuple[int, ...], field: str
) -> None:
    err = refusal(CaptureContract, ids, 61, 8)
    assert err.field == field
    assert str(err).startswith(f"{field} = ")


@pytest.mark.parametrize(
    ("ids", "message"),
    [
        ((2, 2), "layer_ids[1] = 2 repeats layer_ids[0]"),
        ((2, 30, 58, 30), "layer_ids[3] = 30 repeats layer_ids[1]"),
        ((-1, 5, -1), "layer_ids[2] = -1 repeats layer_ids[0]"),
    ],
)
def test_a_duplicate_is_refused_naming_both_positions(ids: tuple[int, ...], message: str) -> None:
    err = refusal(CaptureContract, ids, 61, 8)
    assert str(err).startswith(message)
    assert err.field == message.split(" = ")[0]


@pytest.mark.parametrize(
    ("n", "field"), [(0, "num_layers"), (-1, "num_layers"), ("61", "num_layers")]
)
def test_a_bad_depth_is_refused(n: object, field: str) -> None:
    assert refusal(CaptureContract, (0,), n, 8).field == field


def test_depth_one_holds_the_embedding_and_layer_zero() -> None:
    assert CaptureContract((-1, 0), 1, 8).width == 16


@pytest.mark.parametrize("h", [1.5, "8", None, True])
def test_a_hidden_size_that_is_no_int_is_refused_naming_it(h: object) -> None:
    err = refusal(CaptureContract, (2,), 61, h)
    assert err.field == "hidden_size"
    assert str(err) == f"hidden_size must be a positive integer, got {h!r}"


@pytest.mark.parametrize("h", [0, -8])
def test_a_hidden_size_below_one_is_refused_naming_it(h: int) -> None:
    err = refusal(CaptureContract, (2,), 61, h)
    assert err.field == "hidden_size"
    assert str(err) == f"hidden_size must be >= 1, got {h}"


def test_hidden_size_one_is_the_narrowest() -> None:
    assert CaptureContract((2, 30), 61, 1).width == 2


@pytest.mark.parametrize("order", ["descending", "Ascending", "", None])
def test_an_unknown_order_is_refused_naming_the_known_ones(order: object) -> None:
    err = refusal(CaptureContract, (2,), 61, 8, order)
    assert err.field == "order"
    assert str(err) == f"order must be one of ascending, as_listed, got {order!r}"


def test_the_depth_is_checked_before_the_ids() -> None:
    assert refusal(CaptureContract, (99,), 0, 8).field == "num_layers"


# -- layout ---------------------------------------------------------------------------------


def test_segments_of_an_ascending_contract() -> None:
    c = CaptureContract([58, -1, 30], 61, 10)
    assert c.concat_ids == (-1, 30, 58)
    assert c.segments == (
        Segment(position=0, layer_id=-1, start=0, stop=10),
        Segment(position=1, layer_id=30, start=10, stop=20),
        Segment(position=2, layer_id=58, start=20, stop=30),
    )
    assert c.segment_of(30).slice == slice(10, 20)
    assert c.width == 30


def test_segments_of_an_as_listed_contract() -> None:
    c = CaptureContract([58, -1, 30], 61, 10, "as_listed")
    assert c.concat_ids == (58, -1, 30)
    assert [(s.position, s.layer_id, s.start, s.stop) for s in c.segments] == [
        (0, 58, 0, 10),
        (1, -1, 10, 20),
        (2, 30, 20, 30),
    ]


def test_segment_of_an_absent_layer_is_refused_naming_the_contract_ids() -> None:
    c = CaptureContract([58, 2, 30], 61, 8)
    err = refusal(c.segment_of, 31)
    assert err.field == "layer_id"
    assert str(err) == "layer 31 is not in this contract's layer_ids [58, 2, 30]"


def test_describe_lists_the_layers_in_concatenation_order() -> None:
    assert CaptureContract([58, 2, 30], 61, 7168).describe() == (
        "[layer 2, layer 30, layer 58] of 61 x 7168 (ascending, width 21504)"
    )
    assert CaptureContract([60, -1], 61, 4, "as_listed").describe() == (
        "[layer 60 (last, pre-norm), embedding (-1)] of 61 x 4 (as_listed, width 8)"
    )


# -- validate ---------------------------------------------------------------------------------


def test_validate_returns_the_tensor_of_the_right_width() -> None:
    c = CaptureContract([2, 30, 58], 61, 8)
    for shape in [(24,), (1, 24), (2, 5, 24)]:
        t = SimpleNamespace(shape=shape)
        assert c.validate(t) is t


@pytest.mark.parametrize("captured", [[1, 2, 3], None, SimpleNamespace(shape=())])
def test_validate_refuses_what_is_no_tensor(captured: object) -> None:
    err = refusal(CaptureContract([2, 30, 58], 61, 8).validate, captured)
    assert err.field == "captured"
    assert str(err) == (
        f"captured must be a tensor of shape [..., 24], got {type(captured).__name__}"
    )


def test_validate_names_the_segment_count_of_a_whole_number_of_segments() -> None:
    err = refusal(CaptureContract([2, 30, 58], 61, 8).validate, SimpleNamespace(shape=(2, 3, 32)))
    assert err.field == "captured"
    assert str(err) == (
        "captured width 32 != contract width 24 (3 x 8): it holds 4 segments of 8, the contract 3"
    )


def test_validate_names_a_width_that_is_no_multiple() -> None:
    err = refusal(CaptureContract([2, 30, 58], 61, 8).validate, SimpleNamespace(shape=(2, 3, 23)))
    assert str(err) == (
        "captured width 23 != contract width 24 (3 x 8): 23 is not a multiple of hidden_size 8"
    )


# -- the JSON schema ------------------------------------------------------------------------


def test_to_dict_is_the_schema() -> None:
    c = CaptureContract([58, 2, 30], 61, 7168, "as_listed")
    assert c.to_dict() == {
        "layer_ids": [58, 2, 30],
        "num_layers": 61,
        "hidden_size": 7168,
        "order": "as_listed",
    }
    assert list(c.to_dict()) == ["layer_ids", "num_layers", "hidden_size", "order"]
    assert json.loads(c.to_json()) == c.to_dict()
    assert c.to_json(indent=2).count("\n") == 9  # dumps keyword arguments reach json.dumps
    assert c.to_json(sort_keys=True).startswith('{"hidden_size": 7168')


def test_from_dict_builds_the_contract() -> None:
    c = CaptureContract.from_dict(dict(KIMI, order="as_listed", layer_ids=[58, 2, 30]))
    assert c == CaptureContract([58, 2, 30], 61, 7168, "as_listed")
    assert CaptureContract.from_json(json.dumps(KIMI).encode()) == CaptureContract(
        [2, 30, 58], 61, 7168
    )


@pytest.mark.parametrize("data", [[], "contract", None, 3])
def test_from_dict_refuses_what_is_no_object(data: object) -> None:
    err = refusal(CaptureContract.from_dict, data)
    assert err.field == "contract"
    assert str(err) == f"a contract must be a JSON object, got {type(data).__name__}"


@pytest.mark.parametrize(
    ("drop", "field"),
    [(["order"], "order"), (["num_layers", "order"], "num_layers"), (["layer_ids"], "layer_ids")],
)
def test_from_dict_refuses_a_missing_field_naming_all_missing(drop: list[str], field: str) -> None:
    data = {k: v for k, v in KIMI.items() if k not in drop}
    err = refusal(CaptureContract.from_dict, data)
    assert err.field == field
    assert str(err) == (
        f"contract is missing {', '.join(drop)}; a contract states all of "
        "layer_ids, num_layers, hidden_size, order"
    )


def test_from_dict_refuses_unknown_fields_naming_them() -> None:
    err = refusal(CaptureContract.from_dict, dict(KIMI, zeta=1, alpha=2))
    assert err.field == "alpha"
    assert str(err) == (
        "contract has unknown field(s) alpha, zeta; allowed: layer_ids, num_layers, hidden_size, order"
    )


@pytest.mark.parametrize("ids", [2, "2,30", (2, 30), {"2": 30}])
def test_from_dict_wants_layer_ids_as_a_json_list(ids: object) -> None:
    err = refusal(CaptureContract.from_dict, dict(KIMI, layer_ids=ids))
    assert err.field == "layer_ids"
    assert str(err) == f"layer_ids must be a JSON list, got {ids!r}"


def test_from_dict_passes_every_field_through_the_checks() -> None:
    assert refusal(CaptureContract.from_dict, dict(KIMI, hidden_size=0)).field == "hidden_size"
    assert refusal(CaptureContract.from_dict, dict(KIMI, order="x")).field == "order"
    assert refusal(CaptureContract.from_dict, dict(KIMI, num_layers=58)).field == "layer_ids[2]"


@pytest.mark.parametrize("text", ["{", "", b"\xff\xfe{", "nan("])
def test_from_json_refuses_invalid_json(text: str | bytes) -> None:
    err = refusal(CaptureContract.from_json, text)
    assert err.field == "contract"
    assert str(err).startswith("contract is not valid JSON: ")


@pytest.mark.parametrize("text", [{"layer_ids": [2]}, None, 3, ["{}"]])
def test_from_json_wants_text_and_names_what_it_got(text: object) -> None:
    err = refusal(CaptureContract.from_json, text)
    assert err.field == "contract"
    assert str(err).startswith(
        f"from_json takes the JSON text (str or bytes), got {type(text).__name__}; "
    )


def test_from_json_refuses_json_nested_too_deep() -> None:
    err = refusal(CaptureContract.from_json, "[" * 100_000 + "]" * 100_000)
    assert err.field == "contract"
    assert str(err) == "contract nests JSON too deep; a contract is one flat object"


def test_from_json_accepts_a_bytearray() -> None:
    text = bytearray(b'{"layer_ids": [2], "num_layers": 4, "hidden_size": 8, "order": "ascending"}')
    assert CaptureContract.from_json(text) == CaptureContract((2,), 4, 8)


def test_from_json_of_valid_json_that_is_no_object() -> None:
    assert refusal(CaptureContract.from_json, "[2, 30, 58]").field == "contract"


# -- examples and strategy ------------------------------------------------------------------


def test_examples_are_the_documented_public_contracts() -> None:
    assert [
        (c.layer_ids, c.num_layers, c.hidden_size, c.order) for c in CaptureContract.published()
    ] == [
        ((2, 30, 58), 61, 7168, "ascending"),
        ((1, 15, 28), 32, 4096, "ascending"),
        ((1, 46, 90), 94, 4096, "ascending"),
        ((23, 29, 35), 36, 2880, "ascending"),
    ]


def test_contract_for_defaults_to_ascending() -> None:
    assert CaptureContract([30, 2], 61, 8) == CaptureContract((30, 2), 61, 8, "ascending")


@given(CaptureContract.contracts())
def test_the_strategy_draws_valid_contracts(c: CaptureContract) -> None:
    assert isinstance(c, CaptureContract)
    assert CaptureContract.from_dict(c.to_dict()) == c


def test_examples_is_a_deprecated_alias_of_published() -> None:
    with pytest.warns(
        DeprecationWarning, match=r"examples\(\) is renamed CaptureContract\.published"
    ):
        assert CaptureContract.examples() == CaptureContract.published()
