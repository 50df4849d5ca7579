"""``differences.classify`` and ``shift_words`` directly, at their edges.

``classify`` is the one place that decides how an observed feed of layer ids differs from the
expected one; ``check`` (plans), ``diagnose`` (dumps) and ``capture.verify`` only render its
answer. What is pinned here is what those callers (and users reading their JSON) rely on:
which ``FindingKind``s come back, in the module docstring's rule order, and the fields each
carries (``layers``, ``shift``, ``position``, ``displaced``, ``partial``, ``expected``,
``observed``). ``shift_words`` is the wording of a shift in user-facing messages.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eagle3_contracts.differences import Difference, FindingKind, classify, shift_words
from eagle3_contracts.layer_ids import EMBEDDING

K = FindingKind


def seg(position: int, expected: int | None, observed: int | None) -> Difference:
    return Difference(K.SEGMENT, position=position, expected=expected, observed=observed)


def kinds(diffs: tuple[Difference, ...]) -> list[FindingKind]:
    return [d.kind for d in diffs]


def one(diffs: tuple[Difference, ...], kind: FindingKind) -> Difference:
    found = [d for d in diffs if d.kind is kind]
    assert len(found) == 1, diffs
    return found[0]


# -- rule 1: no difference -----------------------------------------------------------------


@pytest.mark.parametrize("ids", [[], [0], [EMBEDDING], [EMBEDDING, 3, 7], [5, 5], [3, 1, 2]])
def test_identical_identified_feeds_differ_in_nothing(ids: list[int]) -> None:
    assert classify(ids, list(ids)) == ()
    assert classify(tuple(ids), ids) == ()  # any sequence


def test_identical_but_unidentified_segments_are_still_reported() -> None:
    # The same None at the same place is no proof the segment is right: it is reported.
    assert classify([1, None, 3], [1, None, 3]) == (seg(1, None, None),)
    assert classify([None], [None]) == (seg(0, None, None),)


# -- rule 2: width -------------------------------------------------------------------------


def test_one_segment_more_is_a_width_difference_and_an_extra_layer() -> None:
    assert classify([1, 2], [1, 2, 3]) == (
        Difference(K.WIDTH_DIFFERS),
        Difference(K.EXTRA_LAYER, (3,)),
        seg(2, None, 3),
    )


def test_one_segment_fewer_is_a_width_difference_and_a_missing_layer() -> None:
    assert classify([1, 2, 3], [1, 2]) == (
        Difference(K.WIDTH_DIFFERS),
        Difference(K.LAYER_MISSING, (3,)),
        seg(2, 3, None),
    )


def test_empty_against_non_empty() -> None:
    assert classify([], [5]) == (
        Difference(K.WIDTH_DIFFERS),
        Difference(K.EXTRA_LAYER, (5,)),
        seg(0, None, 5),
    )
    assert classify([5], []) == (
        Difference(K.WIDTH_DIFFERS),
        Difference(K.LAYER_MISSING, (5,)),
        seg(0, 5, None),
    )


def test_same_width_is_no_width_difference() -> None:
    assert classify([1, 2], [1, 3]) == (
        Difference(K.LAYER_MISSING, (2,)),
        Difference(K.EXTRA_LAYER, (3,)),
        seg(1, 2, 3),
    )


def test_a_width_difference_is_no_complete_reordering() -> None:
    # The shared layers reordered next to an extra one: a partial order difference only.
    assert classify([1, 2], [2, 1, 3]) == (
        Difference(K.WIDTH_DIFFERS),
        Difference(K.EXTRA_LAYER, (3,)),
        Difference(K.ORDER_DIFFERS, (1, 2), partial=True),
        seg(0, 1, 2),
        seg(1, 2, 1),
        seg(2, None, 3),
    )


def test_a_width_difference_with_a_uniform_shift_prefix_is_no_shift() -> None:
    d = classify([1, 2], [2, 3, 4])
    assert kinds(d)[0] is K.WIDTH_DIFFERS
    assert K.SHIFTED not in kinds(d)
    assert one(d, K.LAYER_MISSING).layers == (1,)
    assert one(d, K.EXTRA_LAYER).layers == (3, 4)


# -- rule 3: complete explanations (ORDER_DIFFERS, SHIFTED) ----------------------------------


def test_same_layers_in_another_order() -> None:
    assert classify([1, 2, 3], [3, 1, 2]) == (
        Difference(K.ORDER_DIFFERS, (3, 1, 2)),  # the observed order, not partial
        seg(0, 1, 3),
        seg(1, 2, 1),
        seg(2, 3, 2),
    )


def test_same_layers_with_duplicates_in_another_order() -> None:
    assert classify([1, 1, 2], [1, 2, 1]) == (
        Difference(K.ORDER_DIFFERS, (1, 2, 1)),
        seg(1, 1, 2),
        seg(2, 2, 1),
    )


def test_embedding_reordered_is_an_order_difference_not_an_insertion() -> None:
    # The embedding is expected: moving it is no EMBEDDING_INSERTED.
    assert classify([EMBEDDING, 2], [2, EMBEDDING]) == (
        Difference(K.ORDER_DIFFERS, (2, EMBEDDING)),
        seg(0, EMBEDDING, 2),
        seg(1, 2, EMBEDDING),
    )


@pytest.mark.parametrize("k", [-3, -1, 1, 2, 5])
def test_every_segment_the_same_number_of_layers_off_is_a_shift(k: int) -> None:
    want = [4, 9, 20]
    got = [n + k for n in want]
    assert classify(want, got) == (
        Difference(K.SHIFTED, tuple(got), shift=k),
        *(seg(p, w, g) for p, (w, g) in enumerate(zip(want, got, strict=True))),
    )


def test_a_shift_that_brings_in_the_embedding_also_inserts_it() -> None:
    # The EAGLE#239 pattern read as a shift: -1 fed, the last expected layer pushed off.
    assert classify([0, 1, 2], [EMBEDDING, 0, 1]) == (
        Difference(K.SHIFTED, (EMBEDDING, 0, 1), shift=-1),
        Difference(K.EMBEDDING_INSERTED, (EMBEDDING,), position=0, displaced=2),
        seg(0, 0, EMBEDDING),
        seg(1, 1, 0),
        seg(2, 2, 1),
    )


def test_a_shift_away_from_the_embedding_inserts_nothing() -> None:
    d = classify([EMBEDDING, 0, 1], [0, 1, 2])
    assert kinds(d) == [K.SHIFTED, K.SEGMENT, K.SEGMENT, K.SEGMENT]
    assert d[0].shift == 1


def test_a_complete_explanation_claims_no_missing_or_extra_layers() -> None:
    for want, got in [([1, 2, 3], [2, 3, 4]), ([1, 2, 3], [3, 2, 1])]:
        found = kinds(classify(want, got))
        assert K.LAYER_MISSING not in found and K.EXTRA_LAYER not in found


def test_a_single_segment_off_is_a_shift() -> None:
    assert classify([7], [6]) == (Difference(K.SHIFTED, (6,), shift=-1), seg(0, 7, 6))


# -- rule 4: the embedding inserted ----------------------------------------------------------


@pytest.mark.parametrize(
    ("got", "position"),
    [([3, EMBEDDING, 5], 1), ([3, 5, EMBEDDING], 2)],
)
def test_embedding_inserted_at_any_position_names_the_displaced_layer(
    got: list[int], position: int
) -> None:
    want = [3, 5, 7]
    d = classify(want, got)
    assert d[0] == Difference(K.EMBEDDING_INSERTED, (EMBEDDING,), position=position, displaced=7)
    assert d[1] == Difference(K.LAYER_MISSING, (7,))  # the embedding is no EXTRA_LAYER
    assert K.EXTRA_LAYER not in kinds(d)
    assert d[2:] == tuple(seg(p, want[p], got[p]) for p in range(position, 3))


def test_embedding_inserted_first_over_a_long_feed() -> None:
    want = [3, 5, 7, 9]
    d = classify(want, [EMBEDDING, 3, 5, 7])
    assert one(d, K.EMBEDDING_INSERTED) == Difference(
        K.EMBEDDING_INSERTED, (EMBEDDING,), position=0, displaced=9
    )


def test_embedding_replacing_one_layer_displaces_nothing() -> None:
    # Nothing moved right: the embedding took layer 5's place.
    d = classify([3, 5, 7], [3, EMBEDDING, 7])
    assert d == (
        Difference(K.EMBEDDING_INSERTED, (EMBEDDING,), position=1),
        Difference(K.LAYER_MISSING, (5,)),
        seg(1, 5, EMBEDDING),
    )


def test_embedding_among_other_layers_displaces_nothing() -> None:
    d = classify([1, 2, 3], [EMBEDDING, 5, 6])
    assert d[0] == Difference(K.EMBEDDING_INSERTED, (EMBEDDING,), position=0)
    assert one(d, K.LAYER_MISSING).layers == (1, 2, 3)
    assert one(d, K.EXTRA_LAYER).layers == (5, 6)


def test_embedding_fed_twice_is_reported_at_its_first_position() -> None:
    d = classify([1, 2, 3], [1, EMBEDDING, EMBEDDING])
    assert one(d, K.EMBEDDING_INSERTED) == Difference(
        K.EMBEDDING_INSERTED, (EMBEDDING,), position=1
    )


def test_embedding_inserted_with_a_wider_feed() -> None:
    assert classify([1, 2], [EMBEDDING, 1, 2]) == (
        Difference(K.WIDTH_DIFFERS),
        Difference(K.EMBEDDING_INSERTED, (EMBEDDING,), position=0),
        seg(0, 1, EMBEDDING),
        seg(1, 2, 1),
        seg(2, None, 2),
    )


def test_only_the_embedding_against_nothing_expected() -> None:
    assert classify([], [EMBEDDING]) == (
        Difference(K.WIDTH_DIFFERS),
        Difference(K.EMBEDDING_INSERTED, (EMBEDDING,), position=0),
        seg(0, None, EMBEDDING),
    )


def test_embedding_expected_and_observed_is_no_insertion() -> None:
    assert classify([EMBEDDING, 2], [EMBEDDING, 3]) == (
        Difference(K.LAYER_MISSING, (2,)),
        Difference(K.EXTRA_LAYER, (3,)),
        seg(1, 2, 3),
    )


def test_embedding_inserted_next_to_an_unidentified_segment() -> None:
    assert classify([1, 2, 3], [EMBEDDING, 1, None]) == (
        Difference(K.EMBEDDING_INSERTED, (EMBEDDING,), position=0),
        seg(0, 1, EMBEDDING),
        seg(1, 2, 1),
        seg(2, 3, None),
    )


# -- rule 5: the final post-norm state ---------------------------------------------------------


def test_post_norm_fed_at_an_unidentified_segment() -> None:
    assert classify([1, 2, 3], [1, 2, None], post_norm={2}) == (
        Difference(K.POST_NORM_FED, position=2),
        seg(2, 3, None),
    )


def test_post_norm_only_where_the_segment_is_unidentified_and_present() -> None:
    # 0 is identified, 3 and 7 are past the end: only 2 is the post-norm state.
    d = classify([1, 2, 3], [1, 2, None], post_norm=[7, 0, 3, 2])
    assert [x.position for x in d if x.kind is K.POST_NORM_FED] == [2]


def test_post_norm_positions_are_returned_in_ascending_order() -> None:
    d = classify([1, 2, 3], [None, 2, None], post_norm=[2, 0])
    assert d == (
        Difference(K.POST_NORM_FED, position=0),
        Difference(K.POST_NORM_FED, position=2),
        seg(0, 1, None),
        seg(2, 3, None),
    )


def test_post_norm_fed_as_an_extra_segment() -> None:
    assert classify([1, 2, 3], [1, 2, 3, None], post_norm=(3,)) == (
        Difference(K.WIDTH_DIFFERS),
        Difference(K.POST_NORM_FED, position=3),
        seg(3, None, None),
    )


def test_post_norm_after_an_inserted_embedding() -> None:
    assert kinds(classify([1, 2, 3], [EMBEDDING, 1, None], post_norm=[2])) == [
        K.EMBEDDING_INSERTED,
        K.POST_NORM_FED,
        K.SEGMENT,
        K.SEGMENT,
        K.SEGMENT,
    ]


def test_post_norm_ignored_when_nothing_is_unidentified() -> None:
    assert classify([1, 2], [1, 3], post_norm=[1]) == classify([1, 2], [1, 3])


# -- rule 6: set differences, only with every segment identified ------------------------------


def test_shared_layers_in_another_order_is_a_partial_order_difference() -> None:
    assert classify([1, 2, 3], [3, 1, 4]) == (
        Difference(K.LAYER_MISSING, (2,)),
        Difference(K.EXTRA_LAYER, (4,)),
        Difference(K.ORDER_DIFFERS, (1, 3), partial=True),  # in the expected order
        seg(0, 1, 3),
        seg(1, 2, 1),
        seg(2, 3, 4),
    )


def test_partial_order_difference_next_to_a_width_difference() -> None:
    assert classify([1, 2, 3], [3, 1]) == (
        Difference(K.WIDTH_DIFFERS),
        Difference(K.LAYER_MISSING, (2,)),
        Difference(K.ORDER_DIFFERS, (1, 3), partial=True),
        seg(0, 1, 3),
        seg(1, 2, 1),
        seg(2, 3, None),
    )


@pytest.mark.parametrize(
    ("want", "got", "missing"),
    [([1, 2, 3], [1, 1, 3], (2,)), ([1, 2], [1, 2, 2], ()), ([1, 1], [1, 2], ())],
)
def test_a_layer_fed_twice_is_no_order_difference(want: list, got: list, missing: tuple) -> None:
    # the shared layers keep their order: the repeat is a segment difference only
    d = classify(want, got)
    assert K.ORDER_DIFFERS not in kinds(d)
    assert (one(d, K.LAYER_MISSING).layers if missing else ()) == missing
    assert K.SEGMENT in kinds(d)


def test_a_repeat_does_not_hide_a_real_reordering() -> None:
    d = classify([1, 2, 3], [3, 1, 3])
    assert one(d, K.ORDER_DIFFERS) == Difference(K.ORDER_DIFFERS, (1, 3), partial=True)


def test_missing_and_extra_layers_keep_their_feed_order() -> None:
    d = classify([9, 1, 5, 2], [8, 0, 5, 7])
    assert one(d, K.LAYER_MISSING).layers == (9, 1, 2)  # expected order
    assert one(d, K.EXTRA_LAYER).layers == (8, 0, 7)  # observed order
    assert K.ORDER_DIFFERS not in kinds(d)


def test_an_unidentified_segment_claims_no_missing_layer() -> None:
    # The unidentified segment may be a corrupted copy of layer 2.
    assert classify([1, 2, 3], [1, None, 3]) == (seg(1, 2, None),)


def test_an_unidentified_expected_segment_claims_no_extra_layer() -> None:
    assert classify([1, None], [1, 2]) == (seg(1, None, 2),)


def test_unidentified_segments_in_both_claim_no_reordering() -> None:
    assert classify([1, None], [None, 1]) == (seg(0, 1, None), seg(1, None, 1))


def test_unidentified_segment_with_a_width_difference_claims_no_reordering() -> None:
    assert classify([1, 2], [2, 1, None]) == (
        Difference(K.WIDTH_DIFFERS),
        seg(0, 1, 2),
        seg(1, 2, 1),
        seg(2, None, None),
    )


# -- rule 7: segments ---------------------------------------------------------------------------


def test_segments_only_where_ids_differ_after_equal_ones() -> None:
    assert classify([1, 2, 3, 4], [1, 2, 3, 5])[-1] == seg(3, 4, 5)
    assert [d.position for d in classify([1, 2, 3, 4], [1, 6, 3, 5]) if d.kind is K.SEGMENT] == [
        1,
        3,
    ]


# -- properties ----------------------------------------------------------------------------------

ids = st.integers(min_value=-1, max_value=12)
maybe_ids = st.one_of(st.none(), ids)
feeds = st.lists(maybe_ids, max_size=6)

RANK = {
    K.WIDTH_DIFFERS: 0,
    K.SHIFTED: 1,
    K.EMBEDDING_INSERTED: 2,
    K.POST_NORM_FED: 3,
    K.LAYER_MISSING: 4,
    K.EXTRA_LAYER: 5,
    K.SEGMENT: 7,
}


def rank(d: Difference) -> int:
    if d.kind is K.ORDER_DIFFERS:
        return 6 if d.partial else 1
    return RANK[d.kind]


@given(feeds, feeds, st.sets(st.integers(min_value=0, max_value=7), max_size=3))
def test_findings_come_in_rule_order_with_segments_per_position(
    want: list[int | None], got: list[int | None], post_norm: set[int]
) -> None:
    d = classify(want, got, post_norm=post_norm)
    assert [rank(x) for x in d] == sorted(rank(x) for x in d)
    assert (K.WIDTH_DIFFERS in kinds(d)) == (len(want) != len(got))
    assert len(d) == len(set(d))
    segments = [x for x in d if x.kind is K.SEGMENT]
    for x in segments:
        assert x.position is not None
        assert x.expected == (want[x.position] if x.position < len(want) else None)
        assert x.observed == (got[x.position] if x.position < len(got) else None)
    reported = {x.position for x in segments}
    for p in range(max(len(want), len(got))):
        same = p < len(want) and p < len(got) and want[p] == got[p] and got[p] is not None
        assert (p not in reported) == same
    if None in want or None in got:
        claimed = {K.LAYER_MISSING, K.EXTRA_LAYER, K.SHIFTED, K.ORDER_DIFFERS}
        assert not claimed & set(kinds(d))
    for x in d:
        if x.kind is K.POST_NORM_FED:
            assert x.position in post_norm and got[x.position] is None


@given(st.lists(st.integers(min_value=0, max_value=30), min_size=1, max_size=5, unique=True))
def test_identified_feeds_equal_to_themselves_differ_in_nothing(want: list[int]) -> None:
    assert classify(want, want) == ()


@given(
    st.lists(st.integers(min_value=0, max_value=30), min_size=1, max_size=5, unique=True),
    st.integers(min_value=-4, max_value=4).filter(bool),
)
def test_a_uniform_shift_is_named_first_with_its_size(want: list[int], k: int) -> None:
    got = [n + k for n in want]
    d = classify(want, got)
    assert d[0] == Difference(K.SHIFTED, tuple(got), shift=k)
    assert len([x for x in d if x.kind is K.SEGMENT]) == len(want)


@given(st.permutations([0, 3, 4, 8, 11]))
def test_a_permutation_is_a_complete_order_difference(got: list[int]) -> None:
    want = [0, 3, 4, 8, 11]
    d = classify(want, got)
    if got == want:
        assert d == ()
    else:
        assert d[0] == Difference(K.ORDER_DIFFERS, tuple(got))
        assert all(x.kind is K.SEGMENT for x in d[1:])


@given(st.data())
def test_embedding_inserted_anywhere_displaces_the_last_expected_layer(data: st.DataObject) -> None:
    want = data.draw(
        st.lists(st.integers(min_value=0, max_value=30), min_size=1, max_size=5, unique=True)
    )
    p = data.draw(st.integers(min_value=0, max_value=len(want) - 1))
    got = [*want[:p], EMBEDDING, *want[p:-1]]
    d = classify(want, got)
    assert one(d, K.EMBEDDING_INSERTED) == Difference(
        K.EMBEDDING_INSERTED, (EMBEDDING,), position=p, displaced=want[-1]
    )
    assert K.EXTRA_LAYER not in kinds(d)


# -- shift_words ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shift", "words"),
    [
        (-1, "1 layer early"),
        (1, "1 layer late"),
        (-2, "2 layers early"),
        (2, "2 layers late"),
        (-7, "7 layers early"),
        (12, "12 layers late"),
    ],
)
def test_shift_words(shift: int, words: str) -> None:
    assert shift_words(shift) == words


def test_shift_words_refuses_no_shift() -> None:
    with pytest.raises(ValueError, match="shift of 0"):
        shift_words(0)
