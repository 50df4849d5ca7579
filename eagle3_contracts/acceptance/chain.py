"""k chained drafts from every anchor position of a batch of sequences, one batched pass per step.

At anchor ``a`` (a position the target has verified), draft step 1 takes the fed target states
of positions ``0..a`` and the embeddings of tokens ``1..a+1`` (causal attention over the
drafter's own keys: its KV cache after the verification pass) and predicts the token after
``a+1``. Step ``j >= 2`` takes the previous step's pre-norm state and token ``a+j`` at position
``a+j-1``, attending to the step-1 keys of ``0..a`` and the keys of steps ``2..j`` at this anchor:
what vLLM's proposer loop computes (``v1/spec_decode/llm_base_proposer.py`` lines 687-761, the
positions advanced by one per step). A draft is only ever kept when every earlier draft equals
the target's token, so feeding the target's tokens (teacher forcing) gives the same chain.

Sequences are rows of one left-padded batch (``pad``: padding columns per row; RoPE positions
count from each row's first token, padded keys are never attended to); the anchors are columns,
the same in every row. The same function serves training (``logits``, differentiable) and
measurement.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from eagle3_contracts.acceptance.drafter import Eagle3Drafter


def chain_logits(
    drafter: Eagle3Drafter,
    states: Tensor,
    embeds: Tensor,
    anchors: Tensor,
    k: int,
    pad: Tensor | None = None,
) -> list[Tensor]:
    """Draft-vocabulary logits of each of ``k`` steps: ``[B, len(anchors), draft_vocab]``
    (``[len(anchors), draft_vocab]`` for one unbatched sequence).

    ``states``: fed target states ``[B, T, num_states * H]`` (or ``[T, ...]``); ``embeds``:
    token embeddings ``[B, T, H]``; ``anchors``: columns with ``pad <= anchors`` and
    ``anchors + k <= T - 1``; ``pad``: ``[B]`` left-padding columns (default none).
    """
    if states.dim() == 2:
        return [x[0] for x in chain_logits(drafter, states[None], embeds[None], anchors, k, pad)]
    b, t = states.shape[:2]
    dev = states.device
    s = drafter.shape
    cols = torch.arange(t - 1, device=dev)
    pad = torch.zeros(b, dtype=torch.long, device=dev) if pad is None else pad.to(dev)
    pos = (cols[None, :] - pad[:, None]).clamp(min=0)  # [B, T-1]
    valid = cols[None, :] >= pad[:, None]
    flat = b * (t - 1)
    q, k1, v1, residual = drafter.qkv(
        drafter.combine(states[:, : t - 1]).reshape(flat, -1),
        embeds[:, 1:t].reshape(flat, -1),
        pos.reshape(flat),
    )
    q, k1, v1 = (x.view(b, t - 1, s.num_heads, s.head_dim) for x in (q, k1, v1))
    seen = (cols[None, None, :] <= anchors[None, :, None]) & valid[:, None, :]  # [B, A, T-1]
    attn = nn.functional.scaled_dot_product_attention(
        q[:, anchors].transpose(1, 2), k1.transpose(1, 2), v1.transpose(1, 2), seen[:, None]
    ).transpose(1, 2)  # [B, A, h, d]
    n = b * anchors.numel()
    residual = residual.view(b, t - 1, -1)[:, anchors].reshape(n, -1)
    normed, carry = drafter.finish(attn.reshape(n, s.num_heads, s.head_dim), residual)
    out = [drafter.logits(normed).view(b, anchors.numel(), -1)]
    scale = 1.0 / math.sqrt(s.head_dim)
    anchor_pos = anchors[None, :] - pad[:, None]  # [B, A]
    keys: list[Tensor] = []
    values: list[Tensor] = []
    for j in range(2, k + 1):
        qj, kj, vj, residual = drafter.qkv(
            carry, embeds[:, anchors + j].reshape(n, -1), (anchor_pos + (j - 1)).reshape(n)
        )
        qj, kj, vj = (x.view(b, -1, s.num_heads, s.head_dim) for x in (qj, kj, vj))
        keys.append(kj)
        values.append(vj)
        s1 = torch.einsum("bahd,bmhd->bahm", qj, k1) * scale
        s1 = s1.masked_fill(~seen[:, :, None, :], float("-inf"))
        own = torch.stack([(qj * kk).sum(-1) for kk in keys], dim=-1) * scale
        w = torch.softmax(torch.cat([s1, own], dim=-1), dim=-1)
        m = k1.shape[1]
        attn = torch.einsum("bahm,bmhd->bahd", w[..., :m], v1)
        for i, vv in enumerate(values):
            attn = attn + w[..., m + i, None] * vv
        normed, carry = drafter.finish(attn.reshape(n, s.num_heads, s.head_dim), residual)
        out.append(drafter.logits(normed).view(b, anchors.numel(), -1))
    return out


def accepted(
    drafter: Eagle3Drafter,
    states: Tensor,
    embeds: Tensor,
    greedy: Tensor,
    anchors: Tensor,
    k: int,
    pad: Tensor | None = None,
) -> Tensor:
    """``[B, len(anchors), k]`` bool (``[len(anchors), k]`` unbatched): draft ``j`` and every
    earlier one equal the target's greedy tokens ``greedy[..., a + j]`` (the chain vLLM's
    rejection sampler keeps when greedy)."""
    with torch.no_grad():
        steps = chain_logits(drafter, states, embeds, anchors, k, pad)
    hits = torch.stack(
        [
            drafter.to_target_ids(logits.argmax(-1)) == greedy[..., anchors + j + 1]
            for j, logits in enumerate(steps)
        ],
        dim=-1,
    )
    return hits.cumprod(dim=-1).bool()
