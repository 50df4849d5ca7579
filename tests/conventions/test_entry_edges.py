"""The registry's rules at their edges (0, L-1, L, -1, empty, duplicates), on entries built here
so the rules are pinned independently of any one system's facts."""

from __future__ import annotations

import pytest

from eagle3_contracts import ContractError
from eagle3_contracts.conventions._entry import (
    Convention,
    DefaultRule,
    Meaning,
    OffsetRule,
    PostNorm,
)

L = 61


def entry(**kw) -> Convention:
    base = dict(
        name="x",
        system="X 1.0",
        role="engine",
        meaning=Meaning.OUTPUT,
        offset_rule=OffsetRule.IDENTITY,
        sources=("here",),
    )
    return Convention(**{**base, **kw})


OUTPUT = entry(name="out", id_paths=("a.ids", "ids"))
BOUNDARY = entry(name="bnd", meaning=Meaning.BOUNDARY, offset_rule=OffsetRule.BOUNDARY)
HF = entry(
    name="hf", meaning=Meaning.HF_INDEX, offset_rule=OffsetRule.HF_INDEX,
    post_norm_id=PostNorm.LAST_INDEX, last_output_reachable=False,
)  # fmt: skip
SGLANG = entry(
    name="sg", meaning=Meaning.CONDITIONAL, offset_rule=OffsetRule.PLUS_ONE_IF_FIRST_IS_ONE
)
NO_EMBED = entry(name="ne", system="NoEmbed", embedding_reachable=False)


def refusal(fn, *args) -> ContractError:
    with pytest.raises(ContractError) as err:
        fn(*args)
    return err.value


# -- list rules ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rule", "ids", "offset"),
    [
        (OffsetRule.IDENTITY, (2,), 1),
        (OffsetRule.PLUS_ONE_ALWAYS, (), 1),
        (OffsetRule.BOUNDARY, (2,), 0),
        (OffsetRule.HF_INDEX, (L,), 0),
        (OffsetRule.PLUS_ONE_IF_FIRST_IS_ONE, (1, 30), 1),
        (OffsetRule.PLUS_ONE_IF_FIRST_IS_ONE, (2, 1), 0),
        (OffsetRule.PLUS_ONE_IF_FIRST_IS_ONE, (0,), 0),
        (OffsetRule.PLUS_ONE_IF_FIRST_IS_ONE, (), 0),
        (OffsetRule.LOOP_IF_MAX_IS_L, (3, L), 0),
        (OffsetRule.LOOP_IF_MAX_IS_L, (L, 3), 0),
        (OffsetRule.LOOP_IF_MAX_IS_L, (3, L - 1), 1),
        (OffsetRule.LOOP_IF_MAX_IS_L, (), 1),
    ],
)
def test_offset_rules(rule: OffsetRule, ids: tuple[int, ...], offset: int) -> None:
    assert rule.offset(ids, L) == offset


@pytest.mark.parametrize(
    ("rule", "n", "native", "boundaries"),
    [
        (DefaultRule.REQUIRED, L, None, None),
        (DefaultRule.HARD_CODED, L, (2, 30, 58), (2, 30, 58)),
        (DefaultRule.BOUNDARIES_2_MID_LM3, L, (2, 30, 58), (2, 30, 58)),
        (DefaultRule.OUTPUTS_1_MIDM1_LM4, L, (1, 29, 57), (2, 30, 58)),
        (DefaultRule.OUTPUTS_CLAMPED, L, (1, 29, 57), (2, 30, 58)),
        (DefaultRule.OUTPUTS_CLAMPED, 4, (0, 1), (1, 2)),  # 4//2-1 = 1, 4-4 = 0: deduplicated
        (DefaultRule.OUTPUTS_CLAMPED, 1, (0, 1), (1, 2)),  # clamped at 0
        (DefaultRule.OUTPUTS_CLAMPED, 6, (1, 2), (2, 3)),  # 6//2-1 = 2 = 6-4
    ],
)
def test_defaults(rule: DefaultRule, n: int, native, boundaries) -> None:
    assert rule.native(n) == native
    assert rule.boundaries(n) == boundaries


def test_post_norm_natives() -> None:
    assert PostNorm.NONE.natives(L) == frozenset()
    assert PostNorm.MINUS_ONE.natives(L) == frozenset({-1})
    assert PostNorm.LAST_INDEX.natives(L) == frozenset({L, -1})


# -- the entry -----------------------------------------------------------------------------


def test_an_entry_needs_sources_and_a_known_order() -> None:
    with pytest.raises(ContractError) as err:
        entry(name="nosrc", sources=())
    assert err.value.field == "sources"
    assert str(err.value) == "convention 'nosrc' has no sources"
    with pytest.raises(ContractError) as err:
        entry(concat_order="descending")
    assert err.value.field == "concat_order"


def test_setting_and_configurable() -> None:
    assert OUTPUT.setting == "a.ids"
    assert entry(id_paths=("a",), id_setting="Api.layers").setting == "Api.layers"
    assert entry().setting == "(not configurable)"
    assert OUTPUT.configurable
    assert not entry(default=DefaultRule.HARD_CODED).configurable


def test_reachable_ranges_at_the_edges() -> None:
    assert OUTPUT.boundary_range(L) == range(0, L + 1)
    assert OUTPUT.canonical_range(L) == range(-1, L)
    assert NO_EMBED.boundary_range(L) == range(1, L + 1)
    assert HF.boundary_range(L) == range(0, L)
    assert HF.canonical_range(L) == range(-1, L - 1)


def test_describe_default_and_summary() -> None:
    assert OUTPUT.describe_default(L) == "none: ids are required"
    bnd = entry(default=DefaultRule.BOUNDARIES_2_MID_LM3)
    assert bnd.describe_default(L) == "boundaries (2, L//2, L-3) = (2, 30, 58) for L = 61"
    assert OUTPUT.summary() == (
        "out: output ids, rule identity; reads a.ids then ids; default none: ids are required; "
        "concat ascending"
    )
    assert (
        entry(name="e").summary().startswith("e: output ids, rule identity; reads no config field;")
    )


# -- to_canonical --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("conv", "native", "canonical"),
    [
        (OUTPUT, (-1, 0, L - 1), (-1, 0, L - 1)),
        (OUTPUT, (58, 2, 30), (58, 2, 30)),  # order kept
        (BOUNDARY, (0, 1, L), (-1, 0, L - 1)),
        (HF, (0, 1, L - 1), (-1, 0, L - 2)),
        (SGLANG, (1, 30, 58), (1, 30, 58)),
        (SGLANG, (3, 31, 59), (2, 30, 58)),
        (OUTPUT, (), ()),
    ],
)
def test_to_canonical(
    conv: Convention, native: tuple[int, ...], canonical: tuple[int, ...]
) -> None:
    assert conv.to_canonical(native, L) == canonical


@pytest.mark.parametrize(("conv", "native", "field"), [(OUTPUT, (2, L), "ids[1]"), (OUTPUT, (-2,), "ids[0]"),
                                                      (BOUNDARY, (-1,), "ids[0]"), (NO_EMBED, (5, -1), "ids[1]")])  # fmt: skip
def test_an_id_the_system_never_captures_is_refused_naming_boundary_and_range(
    conv: Convention, native: tuple[int, ...], field: str
) -> None:
    err = refusal(conv.to_canonical, native, L)
    assert err.field == field
    n = native[int(field[4])]
    lo = conv.canonical_range(L).start
    assert str(err).startswith(
        f"{field} = {n} in {conv.name} ({conv.offset_rule.value}) is boundary "
    )
    assert f"{conv.system} never captures for a {L}-layer target" in str(err)
    assert str(err).endswith(f"(it captures canonical {lo}..{L - 1})")


@pytest.mark.parametrize("native", [L, -1])
def test_the_post_norm_state_has_no_canonical_id(native: int) -> None:
    err = refusal(HF.to_canonical, (3, native), L)
    assert err.field == "ids[1]"
    assert str(err).startswith(f"ids[1] = {native} in hf names the final post-norm hidden state")
    assert f"(canonical {L - 1} is the pre-norm output" in str(err)


@pytest.mark.parametrize(
    ("ids", "field", "message"),
    [
        ("2,30", "ids", "ids must be a list of integers, got '2,30'"),
        (7, "ids", "ids must be a list of integers, got 7"),
        ((2, True), "ids[1]", "ids[1] must be an integer layer id, got bool True"),
        ([2.0], "ids[0]", "ids[0] must be an integer layer id, got float 2.0"),
    ],
)
def test_ids_that_are_no_int_list_are_refused(ids: object, field: str, message: str) -> None:
    for fn in (OUTPUT.to_canonical, OUTPUT.from_canonical):
        err = refusal(fn, ids, L)
        assert (err.field, str(err)) == (field, message)


def test_the_depth_is_checked() -> None:
    assert refusal(OUTPUT.to_canonical, (1,), 0).field == "num_layers"
    assert refusal(OUTPUT.from_canonical, (1,), 0).field == "num_layers"


# -- from_canonical ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("conv", "canonical", "native"),
    [
        (OUTPUT, (2, 30, 58), (2, 30, 58)),
        (OUTPUT, (-1, L - 1), (-1, L - 1)),
        (BOUNDARY, (-1, 30, L - 1), (0, 31, L)),
        (SGLANG, (2, 30, 58), (3, 31, 59)),  # not starting with 1: loop indices
        (SGLANG, (0, 29, 57), (30, 58, 1)),  # any first element may do; 1 first would be +1
        (entry(concat_order="as_listed"), (58, 2), (58, 2)),
        (OUTPUT, (), ()),
    ],
)
def test_from_canonical(conv: Convention, canonical, native) -> None:
    assert conv.from_canonical(canonical, L) == native
    back = conv.to_canonical(native, L)
    assert sorted(back) == sorted(canonical)


@pytest.mark.parametrize(
    ("conv", "canonical", "why"),
    [
        (NO_EMBED, (2, -1), "the embedding (canonical -1)"),
        (HF, (2, L - 1), f"canonical {L - 1}"),
        (OUTPUT, (2, L), f"{L} (not a canonical id for {L} layers)"),
        (OUTPUT, (2, -2), f"-2 (not a canonical id for {L} layers)"),
    ],
)
def test_from_canonical_refuses_what_the_system_cannot_feed(
    conv: Convention, canonical, why: str
) -> None:
    err = refusal(conv.from_canonical, canonical, L)
    assert err.field == "ids[1]"
    assert str(err).startswith(
        f"ids[1]: {why} cannot be fed by {conv.system}; it captures canonical "
    )


def test_from_canonical_says_when_no_native_list_works() -> None:
    # SGLang's ids[0] == 1 test: [0] is loop index 0 (canonical -1), [1] is +1 (canonical 1):
    # canonical 0 alone cannot be asked for
    err = refusal(SGLANG.from_canonical, (0,), L)
    assert err.field == "ids"
    assert str(err) == (
        f"no native id list makes X 1.0 feed canonical [0] (rule: {SGLANG.offset_rule.value})"
    )
