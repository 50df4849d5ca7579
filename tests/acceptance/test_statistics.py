"""The figures: the serving walk, pooled rates with intervals over prompts, paired gaps."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from eagle3_contracts.acceptance.measure import Acceptance, Counts, _served_walk, paired_gap, ratio
from eagle3_contracts.errors import ContractError


def test_the_walk_drafts_again_after_the_accepted_tokens_and_the_bonus() -> None:
    # anchors 0..5; at 0: 2 accepted -> next draft at 3; at 3: 0 -> 4; at 4: 3 -> 8 (end)
    acc = torch.tensor(
        [[1, 1, 0], [1, 0, 0], [0, 0, 0], [0, 0, 0], [1, 1, 1], [1, 1, 1]], dtype=torch.bool
    )
    hits, drafts = _served_walk(acc)
    assert drafts == 3
    assert hits.tolist() == [2, 2, 1]


@given(
    lengths=st.lists(st.integers(0, 4), min_size=1, max_size=40),
)
def test_walk_counts_are_a_chain(lengths: list[int]) -> None:
    k = 4
    acc = torch.tensor([[j < m for j in range(k)] for m in lengths], dtype=torch.bool)
    hits, drafts = _served_walk(acc)
    assert 1 <= drafts <= len(lengths)
    assert all(hits[j] >= hits[j + 1] for j in range(k - 1))
    assert hits[0] <= drafts


def test_ratio_pools_and_its_interval_shrinks_with_prompts() -> None:
    hits = torch.tensor([3, 5, 4, 6])
    trials = torch.tensor([10, 10, 10, 10])
    r = ratio(hits, trials)
    assert r.value == pytest.approx(18 / 40)
    wide = ratio(hits, trials).half_width
    narrow = ratio(hits.repeat(9), trials.repeat(9)).half_width
    assert narrow < wide / 2.5
    assert math.isnan(ratio(hits[:1], trials[:1]).half_width)


def _acc(hits: list[list[int]], anchors: list[int]) -> Acceptance:
    h, a = torch.tensor(hits), torch.tensor(anchors)
    return Acceptance((1, 2), 2, Counts(h, a, h.clone(), a.clone()))


def test_paired_gap_uses_per_prompt_differences() -> None:
    a = _acc([[8, 5], [6, 3], [9, 7]], [10, 10, 10])
    b = _acc([[6, 2], [4, 1], [7, 5]], [10, 10, 10])
    gap = paired_gap(a, b)
    assert gap.value == pytest.approx(0.2)
    assert gap.half_width == pytest.approx(0.0)  # every prompt lost exactly 2 of 10
    with pytest.raises(ContractError):
        paired_gap(a, _acc([[1, 1]], [10]))


def test_summary_figures_agree_with_each_other() -> None:
    a = _acc([[8, 5], [6, 3]], [10, 10])
    assert a.first.value == pytest.approx(0.7)
    assert [r.value for r in a.per_position()] == pytest.approx([0.7, 0.4])
    assert a.chain_rate().value == pytest.approx(0.55)
    assert a.accept_length().value == pytest.approx(2.1)
