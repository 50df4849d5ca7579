"""The batched chain equals vLLM's proposer loop run one anchor at a time with a KV cache."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from eagle3_contracts.acceptance.chain import accepted, chain_logits
from eagle3_contracts.acceptance.drafter import Eagle3Drafter, load_drafter
from tests.acceptance.conftest import MakeDrafter


def _reference(
    drafter: Eagle3Drafter, states: torch.Tensor, embeds: torch.Tensor, anchor: int, k: int
) -> list[torch.Tensor]:
    """One anchor as vLLM runs it: a verification pass over positions 0..anchor writes the KV
    cache; each later draft appends one entry at the next position and attends to all of it."""
    scale = 1.0 / math.sqrt(drafter.shape.head_dim)
    keys: list[torch.Tensor] = []
    values: list[torch.Tensor] = []
    hidden = drafter.combine(states[: anchor + 1])
    token_pos = torch.arange(anchor + 1)
    out = []
    carry = None
    for j in range(k):
        if j == 0:
            q, kk, vv, res = drafter.qkv(hidden, embeds[1 : anchor + 2], token_pos)
        else:
            pos = torch.tensor([anchor + j])
            q, kk, vv, res = drafter.qkv(carry, embeds[anchor + 1 + j][None], pos)
        keys.append(kk)
        values.append(vv)
        kc, vc = torch.cat(keys), torch.cat(values)
        rows = []
        for i in range(q.shape[0]):
            visible = kc.shape[0] - q.shape[0] + i + 1  # causal over the cache
            s = torch.einsum("hd,mhd->hm", q[i], kc[:visible]) * scale
            rows.append(torch.einsum("hm,mhd->hd", torch.softmax(s, -1), vc[:visible]))
        normed, carried = drafter.finish(torch.stack(rows), res)
        out.append(drafter.logits(normed[-1:])[0])
        carry = carried[-1:]
    return out


@pytest.mark.parametrize("norm_before_residual", [False, True])
def test_batched_chain_equals_the_cached_loop(
    make_drafter: MakeDrafter, norm_before_residual: bool
) -> None:
    path = make_drafter(config={"norm_before_residual": norm_before_residual}, seed=3)
    drafter, _ = load_drafter(path)
    gen = torch.Generator().manual_seed(5)
    t, k = 14, 4
    states = torch.randn(t, 48, generator=gen)
    embeds = torch.randn(t, 16, generator=gen)
    anchors = torch.arange(2, t - k)
    with torch.no_grad():
        batched = chain_logits(drafter, states, embeds, anchors, k)
        for n, a in enumerate(anchors.tolist()):
            ref = _reference(drafter, states, embeds, a, k)
            for j in range(k):
                torch.testing.assert_close(batched[j][n], ref[j], rtol=1e-4, atol=1e-5)


def test_accepted_is_a_chain_over_the_targets_greedy_tokens(make_drafter: MakeDrafter) -> None:
    drafter, _ = load_drafter(make_drafter(seed=1, vocab=64, draft_vocab=40))
    gen = torch.Generator().manual_seed(2)
    t, k = 12, 3
    states, embeds = torch.randn(t, 48, generator=gen), torch.randn(t, 16, generator=gen)
    anchors = torch.arange(0, t - k)
    with torch.no_grad():
        drafts = [
            drafter.to_target_ids(x.argmax(-1))
            for x in chain_logits(drafter, states, embeds, anchors, k)
        ]
    greedy = torch.randint(0, 64, (t,), generator=gen)
    # make draft 1 right everywhere, draft 2 right at even anchors, draft 3 right nowhere
    for n, a in enumerate(anchors.tolist()):
        greedy[a + 1] = drafts[0][n]
    got = accepted(drafter, states, embeds, greedy, anchors, k)
    assert got[:, 0].all()
    for n, a in enumerate(anchors.tolist()):
        assert bool(got[n, 1]) == bool(drafts[1][n] == greedy[a + 2])
        assert not got[n, 2] or bool(got[n, 1])  # a chain: never accepted after a rejection


def test_draft_ids_map_through_d2t(tmp_path: Path, make_drafter: MakeDrafter) -> None:
    drafter, _ = load_drafter(make_drafter(vocab=64, draft_vocab=16, seed=4))
    assert drafter.d2t is not None
    ids = torch.arange(16)
    mapped = drafter.to_target_ids(ids)
    assert torch.equal(mapped, ids + drafter.d2t)
    assert mapped.max() < 64 and torch.all(mapped[1:] > mapped[:-1])
