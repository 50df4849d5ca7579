"""k chained drafts from every anchor position of one sequence, in one batched pass per step.

At anchor ``a`` (a position the target has verified), draft step 1 takes the fed target states
of positions ``0..a`` and the embeddings of tokens ``1..a+1`` (causal attention over the
drafter's own keys: its KV cache after the verification pass) and predicts the token after
``a+1``. Step ``j >= 2`` takes the previous step's pre-norm state and token ``a+j`` at position
``a+j-1``, attending to the step-1 keys of ``0..a`` and the keys of steps ``2..j`` at this anchor:
what vLLM's proposer loop computes (``v1/spec_decode/llm_base_proposer.py`` lines 687-761, the
positions advanced by one per step). A draft is only ever kept when every earlier draft equals
the target's token, so feeding the target's tokens (teacher forcing) gives the same chain.

The same function serves training (``logits``, differentiable) and measurement.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from eagle3_contracts.acceptance.drafter import Eagle3Drafter, attend


def chain_logits(
    drafter: Eagle3Drafter,
    states: Tensor,
    embeds: Tensor,
    anchors: Tensor,
    k: int,
) -> list[Tensor]:
    """Draft-vocabulary logits ``[len(anchors), draft_vocab]`` of each of ``k`` steps.

    ``states``: fed target states ``[T, num_states * H]``; ``embeds``: token embeddings
    ``[T, H]``; ``anchors``: positions with ``anchors + k <= T - 1``.
    """
    t = states.shape[0]
    pos = torch.arange(t - 1, device=states.device)
    hidden = drafter.combine(states[: t - 1])
    q, k1, v1, residual = drafter.qkv(hidden, embeds[1:t], pos)
    causal = pos[None, :] <= pos[:, None]
    normed, carry = drafter.finish(attend(q, k1, v1, causal), residual)
    out = [drafter.logits(normed[anchors])]
    carry = carry[anchors]
    scale = 1.0 / math.sqrt(drafter.shape.head_dim)
    seen = pos[None, :] <= anchors[:, None]  # step-1 keys each anchor's chain attends to
    keys: list[Tensor] = []
    values: list[Tensor] = []
    for j in range(2, k + 1):
        qj, kj, vj, residual = drafter.qkv(carry, embeds[anchors + j], anchors + (j - 1))
        keys.append(kj)
        values.append(vj)
        s1 = torch.einsum("ahd,mhd->ahm", qj, k1) * scale
        s1 = s1.masked_fill(~seen[:, None, :], float("-inf"))
        own = torch.stack([(qj * kk).sum(-1) for kk in keys], dim=-1) * scale
        w = torch.softmax(torch.cat([s1, own], dim=-1), dim=-1)
        m = k1.shape[0]
        attn = torch.einsum("ahm,mhd->ahd", w[..., :m], v1)
        for i, vv in enumerate(values):
            attn = attn + w[..., m + i, None] * vv
        normed, carry = drafter.finish(attn, residual)
        out.append(drafter.logits(normed))
    return out


def accepted(
    drafter: Eagle3Drafter,
    states: Tensor,
    embeds: Tensor,
    greedy: Tensor,
    anchors: Tensor,
    k: int,
) -> Tensor:
    """``[len(anchors), k]`` bool: draft ``j`` and every earlier one equal the target's
    greedy tokens ``greedy[a + j]`` (the chain vLLM's rejection sampler keeps when greedy)."""
    with torch.no_grad():
        steps = chain_logits(drafter, states, embeds, anchors, k)
    hits = torch.stack(
        [
            drafter.to_target_ids(logits.argmax(-1)) == greedy[anchors + j + 1]
            for j, logits in enumerate(steps)
        ],
        dim=-1,
    )
    return hits.cumprod(dim=-1).bool()
