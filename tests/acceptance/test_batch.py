"""The batched oracle equals the oracle run one prompt at a time: left padding, attention masks
and per-row positions change nothing a prompt measures, and batches stay within their budget."""

from __future__ import annotations

import pytest
import torch

from eagle3_contracts.acceptance.fixture import DRAFTER, TARGET, TRAINED
from eagle3_contracts.acceptance.measure import chunks, measure
from eagle3_contracts.errors import ContractError

WIRINGS = [TRAINED, (-1, 1, 5), (2, 6, "final")]


@pytest.fixture(scope="module")
def loaded() -> tuple:
    from eagle3_contracts.acceptance.drafter import load_drafter
    from eagle3_contracts.capture.targets import load_target

    torch.set_num_threads(1)
    target = load_target(TARGET)
    drafter, _ = load_drafter(DRAFTER)
    return target, drafter


def _prompts(vocab: int) -> list[list[int]]:
    gen = torch.Generator().manual_seed(7)
    lengths = [1, 6, 3, 9, 2]
    return [torch.randint(0, vocab, (n,), generator=gen).tolist() for n in lengths]


def test_a_batch_of_unequal_prompts_measures_what_each_prompt_alone_measures(
    loaded: tuple,
) -> None:
    target, drafter = loaded
    prompts = _prompts(target.vocab_size)
    kw = {"num_layers": target.num_layers, "k": 3, "new_tokens": 20}
    batched = measure(target.model, drafter, prompts, WIRINGS, **kw)
    heard: list[int] = []
    alone = measure(
        target.model, drafter, prompts, WIRINGS, batch_tokens=1, progress=heard.append, **kw
    )
    assert heard == [1, 2, 3, 4, 5]  # prompts done, after each batch
    for w in WIRINGS:
        a, b = batched[w].counts, alone[w].counts
        assert torch.equal(a.anchors, b.anchors) and a.anchors.tolist() == [18] * 5
        assert torch.equal(a.hits, b.hits), w
        assert torch.equal(a.served_hits, b.served_hits) and torch.equal(
            a.served_drafts, b.served_drafts
        )
    assert int(batched[TRAINED].counts.hits[:, 0].sum()) > 0  # the trained drafter drafts


def test_batches_hold_at_most_the_budget_and_every_prompt_once() -> None:
    prompts = [[1] * n for n in (3, 5, 2, 8, 1, 1, 4)]
    got = list(chunks(iter(prompts), 10, 40))
    assert [p for b in got for p in b] == prompts
    for batch in got:
        assert len(batch) == 1 or len(batch) * (max(map(len, batch)) + 10) <= 40
    assert [len(b) for b in got] == [2, 2, 2, 1]


def test_one_prompt_is_refused_before_anything_runs(loaded: tuple) -> None:
    target, drafter = loaded
    with pytest.raises(ContractError, match="at least 2 prompts") as err:
        measure(target.model, drafter, iter([[1, 2, 3]]), [TRAINED],
                num_layers=target.num_layers, k=2, new_tokens=8)  # fmt: skip
    assert err.value.field == "prompts"
