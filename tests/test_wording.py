"""One table of finding wording: check, diagnose and the guards say a finding in the same words.

``differences.WORDING`` holds every ``FindingKind``'s label and sentence; these tests hold it
complete and check that ``config.plan.compare`` (check's details) and ``dumps.diagnose`` word
the same difference with the same sentence (the guard's side is in
``tests/integrations/vllm/test_verdict.py``).
"""

from __future__ import annotations

import dataclasses

import pytest

from eagle3_contracts import compare, resolve
from eagle3_contracts.config.readers import IDS_FIELD
from eagle3_contracts.differences import (
    WORDING,
    FindingKind,
    classify,
    ids_text,
    label,
    say,
    state_name,
    text_table,
)
from eagle3_contracts.dumps.diagnose import describe_difference

KIMI = {"num_hidden_layers": 61, "hidden_size": 7168, "model_type": "kimi_k25"}
TRAINED = resolve({"eagle_config": {IDS_FIELD: [2, 30, 58]}}, KIMI, "trtllm")


def test_every_kind_has_a_label_and_the_classified_kinds_a_sentence() -> None:
    assert set(WORDING) == set(FindingKind)
    for kind, words in WORDING.items():
        assert words.label, kind
        assert words.sentence or words.renderer, kind  # a shared sentence, or its one renderer


@pytest.mark.parametrize("kind", [k for k in FindingKind if k not in (FindingKind.SHIFTED,)])
def test_the_short_label_is_the_kind_in_words(kind: FindingKind) -> None:
    want = kind.value.replace("-", " ")
    if kind is FindingKind.CRASHES:
        want = "crashes (fc-width-mismatch)"
    assert label(kind, crash="fc-width-mismatch") == want


@pytest.mark.parametrize("shift", [-2, -1, 1, 3])
def test_a_shift_is_labelled_with_its_sign(shift: int) -> None:
    assert label(FindingKind.SHIFTED, shift=shift) == f"shifted {shift:+d}"


@pytest.mark.parametrize(
    ("served", "kinds"),
    [
        ((1, 29, 57), {FindingKind.SHIFTED}),
        ((-1, 2, 30), {FindingKind.EMBEDDING_INSERTED, FindingKind.LAYER_MISSING}),
        ((30, 2, 58), {FindingKind.ORDER_DIFFERS}),
        ((2, 30, 59), {FindingKind.LAYER_MISSING, FindingKind.EXTRA_LAYER}),
        ((30, 2, 59), {FindingKind.ORDER_DIFFERS}),  # the partial order: shared layers only
    ],
)
def test_check_and_diagnose_say_a_difference_in_the_same_sentence(
    served: tuple[int, ...], kinds: set[FindingKind]
) -> None:
    plan = dataclasses.replace(TRAINED, feed=dataclasses.replace(TRAINED.feed, canonical=served))
    checked = {f.kind: f.message for f in compare(TRAINED, plan)}
    diagnosed = {
        f.kind: f.message
        for f in describe_difference(
            TRAINED.layer_ids, served, 61, want_name="trained", got_name="served"
        )
    }
    assert kinds <= set(checked)
    for kind in kinds:
        # diagnose says check's sentence, then (at most) the failure it usually is
        assert diagnosed[kind] == checked[kind] or diagnosed[kind].startswith(checked[kind] + "; ")


def test_diagnose_adds_the_usual_cause_of_a_shift_after_checks_sentence() -> None:
    (shift, *_segments) = describe_difference([2, 30, 58], [1, 29, 57], 61)
    assert shift.message == (
        "shifted by -1: every state is 1 layer early ([1, 29, 57] instead of [2, 30, 58]); ids "
        "read as loop indices / layer inputs where layer outputs were meant: the sglang#25454 / "
        "vllm#43671 off-by-one"
    )


def test_a_post_norm_segment_is_worded_as_check_words_it() -> None:
    found = describe_difference([2, 30, 60], [2, 30, None], 61, got_name="dump", post_norm=[2])
    post = next(f for f in found if f.kind is FindingKind.POST_NORM_FED)
    assert post.message.startswith(
        "dump feeds the final post-norm state, which the drafter never saw; segment 2: "
        "hidden_states[-1] used as the last layer (TorchSpec#87)"
    )


def test_a_width_difference_names_both_widths() -> None:
    (width, *_rest) = describe_difference([2, 30, 58], [2, 30], 61, hidden_size=32)
    assert width.kind is FindingKind.WIDTH_DIFFERS
    assert (
        width.message
        == "width differs: the drafter's fc takes 96 (3 x 32), found feeds 64 (2 x 32)"
    )


def test_a_crash_label_without_its_class_says_the_weight_load() -> None:
    assert label(FindingKind.CRASHES) == "crashes (weight-load)"


def test_a_shift_label_without_a_shift_says_zero_not_a_guess() -> None:
    assert label(FindingKind.SHIFTED) == "shifted +0"


def test_report_tables_pad_columns_and_refuse_ragged_rows() -> None:
    assert text_table([("id", "stage"), ("layer 30", "2")], indent="  ") == [
        "  id        stage",
        "  layer 30  2",
    ]
    with pytest.raises(ValueError):
        text_table([("id",), ("layer 30", "2")])  # a cell no column holds


def test_unidentified_ids_and_states_have_their_own_words() -> None:
    assert ids_text([None, 2, -1]) == "[?, 2, -1]"
    assert state_name(None, 61) == "no layer"
    assert state_name(-1, 61) == "embedding (-1)" and state_name(5, 61) == "layer 5"


def test_a_segment_is_said_with_the_caller_s_labels_when_given() -> None:
    want, got = (2, 30, 58), (2, None, 58)
    (seg,) = [d for d in classify(want, got) if d.kind is FindingKind.SEGMENT]
    assert say(seg, want, got, 61) == "segment 1: trained layer 30, served no layer"
    labelled = say(seg, want, got, 61, got_labels=["a", "the final post-norm state", "c"])
    assert labelled == "segment 1: trained layer 30, served the final post-norm state"


def test_an_inserted_embedding_names_the_layer_it_pushed_off_the_end() -> None:
    want, got = (2, 30, 58), (-1, 2, 30)
    (inserted,) = [d for d in classify(want, got) if d.kind is FindingKind.EMBEDDING_INSERTED]
    said = say(inserted, want, got, 61, cause=True)
    assert said.endswith(
        "; at segment 0, so the segments after it moved one position right and layer 58 was "
        "dropped: the embedding counted as a layer, EAGLE#239"
    )
    nothing_dropped = say(dataclasses.replace(inserted, displaced=None), want, got, 61, cause=True)
    assert nothing_dropped.endswith("; at segment 0")


@pytest.mark.parametrize(
    ("want", "got", "said"),
    [
        ((2, 30), (2, 30, 58), "segment 2: trained nothing, served layer 58"),
        ((2, 30, 58), (2, 30), "segment 2: trained layer 58, served nothing"),
        ((2, None, 58), (2, 29, 58), "segment 1: trained an unidentified state, served layer 29"),
        ((2, 30, 58), (2, 29, 58), "segment 1: trained layer 30, served layer 29"),
    ],
)
def test_a_segment_says_both_sides_even_where_one_holds_nothing(
    want: tuple[int | None, ...], got: tuple[int, ...], said: str
) -> None:
    (seg,) = [d for d in classify(want, got) if d.kind is FindingKind.SEGMENT]
    assert say(seg, want, got, 61) == said


def test_a_shift_with_no_named_bug_gets_the_kind_s_cause() -> None:
    want, got = (2, 30, 58), (4, 32, 60)
    (shifted,) = [d for d in classify(want, got) if d.kind is FindingKind.SHIFTED]
    assert say(shifted, want, got, 61, cause=True).endswith("; an offset rule mismatch")
