"""The measurement: acceptance of one drafter on its target, per wiring, over prompts.

For each prompt the target writes its greedy continuation of ``new_tokens`` tokens; every
verified position of the continuation is an anchor from which the drafter drafts ``k`` tokens.

* ``per_position[j]``: the share of anchors whose first ``j+1`` drafts are all accepted;
  ``first`` = ``per_position[0]``, the first-draft top-1 agreement;
* ``chain_rate``: accepted drafts / drafted tokens = mean of ``per_position`` (vLLM's
  "acceptance rate"); ``accept_length``: 1 + sum of ``per_position`` (tokens per target step,
  the bonus token included, vLLM's "mean acceptance length");
* ``served``: the same figures on the anchors a serving engine visits (after accepting ``m``
  drafts it drafts again ``m + 1`` tokens later), comparable with the engine's counters;
* intervals: 95% normal intervals over prompts (ratio estimator, prompts as clusters).

``measure`` streams prompts in batches: all prompts of a batch continue in one batched greedy
generation that captures the fed states on the way (``target.run_targets``), and the k-draft
chains from every anchor of every row run batched (``chain.accepted``); it keeps a few counts
per prompt and wiring, never the tokens.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from eagle3_contracts.acceptance.chain import accepted
from eagle3_contracts.acceptance.drafter import Eagle3Drafter
from eagle3_contracts.acceptance.target import StateId, TargetBatch, fed_states, run_targets
from eagle3_contracts.errors import ContractError

Wiring = tuple[StateId, ...]
Z95 = 1.959964
BATCH_TOKENS = 8192
"""Padded tokens per batch (prompts x widest sequence): bounds the states kept and the
drafter's attention scores, ``batch x anchors x heads x T`` floats."""


@dataclass(frozen=True)
class Rate:
    """A rate over prompts with its 95% interval half-width."""

    value: float
    half_width: float

    def __str__(self) -> str:
        return f"{self.value:.3f} ± {self.half_width:.3f}"


def ratio(hits: Tensor, trials: Tensor) -> Rate:
    """Pooled ``sum(hits) / sum(trials)`` over prompts, with a cluster (per-prompt) interval."""
    n = float(trials.sum())
    if n == 0:
        return Rate(float("nan"), float("nan"))
    r = float(hits.sum()) / n
    m = hits.numel()
    if m < 2:
        return Rate(r, float("nan"))
    resid = hits.double() - r * trials.double()
    var = float((resid**2).sum()) / (m * (m - 1) * (n / m) ** 2)
    return Rate(r, Z95 * math.sqrt(var))


@dataclass(frozen=True)
class Counts:
    """Per-prompt counts of one wiring: ``[prompts, k]`` accepted at each position, anchors."""

    hits: Tensor  # [m, k] anchors whose first j+1 drafts were accepted
    anchors: Tensor  # [m]
    served_hits: Tensor  # [m, k] the same on the anchors a serving engine visits
    served_drafts: Tensor  # [m]


@dataclass(frozen=True)
class Acceptance:
    """The acceptance of one wiring (see the module docstring)."""

    wiring: Wiring
    k: int
    counts: Counts

    @property
    def prompts(self) -> int:
        return int(self.counts.anchors.numel())

    @property
    def anchors(self) -> int:
        return int(self.counts.anchors.sum())

    def per_position(self, served: bool = False) -> tuple[Rate, ...]:
        hits, n = self._pair(served)
        return tuple(ratio(hits[:, j], n) for j in range(self.k))

    @property
    def first(self) -> Rate:
        return ratio(self.counts.hits[:, 0], self.counts.anchors)

    def chain_rate(self, served: bool = False) -> Rate:
        hits, n = self._pair(served)
        return ratio(hits.sum(1), n * self.k)

    def accept_length(self, served: bool = False) -> Rate:
        hits, n = self._pair(served)
        r = ratio(hits.sum(1), n)
        return Rate(1.0 + r.value, r.half_width)

    def _pair(self, served: bool) -> tuple[Tensor, Tensor]:
        c = self.counts
        return (c.served_hits, c.served_drafts) if served else (c.hits, c.anchors)

    def to_dict(self) -> dict[str, object]:
        def rate(r: Rate) -> dict[str, float | None]:
            return {"value": finite(r.value), "ci95": finite(r.half_width)}

        return {
            "wiring": list(self.wiring),
            "k": self.k,
            "prompts": self.prompts,
            "anchors": self.anchors,
            "first": rate(self.first),
            "per_position": [rate(r) for r in self.per_position()],
            "chain_rate": rate(self.chain_rate()),
            "accept_length": rate(self.accept_length()),
            "served": {
                "drafts": int(self.counts.served_drafts.sum()),
                "per_position": [rate(r) for r in self.per_position(served=True)],
                "chain_rate": rate(self.chain_rate(served=True)),
                "accept_length": rate(self.accept_length(served=True)),
            },
        }


def finite(x: float) -> float | None:
    """``x`` rounded for JSON, ``None`` where undefined: JSON has no NaN."""
    return round(x, 4) if math.isfinite(x) else None


def paired_gap(a: Acceptance, b: Acceptance, *, position: int | None = 0) -> Rate:
    """``a`` minus ``b`` on the same prompts (paired interval): at one draft position, or in
    the accept rate (``position=None``: accepted / drafted tokens over all anchors)."""
    if not torch.equal(a.counts.anchors, b.counts.anchors) or a.k != b.k:
        raise ContractError("paired gaps need the same prompts and anchors", field="acceptance")
    if position is None:
        diff = a.counts.hits.sum(1) - b.counts.hits.sum(1)
        return ratio(diff, a.counts.anchors * a.k)
    return ratio(a.counts.hits[:, position] - b.counts.hits[:, position], a.counts.anchors)


def _served_walk(acc: Tensor) -> tuple[Tensor, int]:
    """Accepted-per-position counts and drafts over the anchors an engine visits."""
    k = acc.shape[1]
    lengths = acc.sum(1).tolist()
    hits = torch.zeros(k, dtype=torch.long)
    drafts, a = 0, 0
    while a < len(lengths):
        m = int(lengths[a])
        hits[:m] += 1
        drafts += 1
        a += m + 1
    return hits, drafts


def batch_counts(
    drafter: Eagle3Drafter, batch: TargetBatch, wiring: Wiring, k: int
) -> list[tuple[Tensor, int, Tensor, int]]:
    """Each prompt of a batch, one wiring: (hits[k], anchors, served hits[k], served drafts).

    The anchors of every row are the columns from its last prompt token to ``T - k - 1``: the
    same columns in every row (prompts are left-padded to one width)."""
    t = batch.tokens.shape[1]
    anchors = torch.arange(batch.prompt_end - 1, t - k, device=batch.tokens.device)
    embeds = batch.embeds
    if drafter.has_embedding:
        embeds = drafter.p("embed_tokens.weight")[batch.tokens]
    states = fed_states(batch, wiring)
    acc = accepted(drafter, states, embeds, batch.greedy, anchors, k, batch.pad).cpu()
    out = []
    for row in acc:
        served, drafts = _served_walk(row)
        out.append((row.long().sum(0), int(anchors.numel()), served, drafts))
    return out


def chunks(prompts: Iterable[list[int]], new_tokens: int, budget: int) -> Iterator[list[list[int]]]:
    """Consecutive prompts in batches of at most ``budget`` padded tokens (one prompt at least):
    memory stays bounded however many prompts stream in."""
    batch: list[list[int]] = []
    width = 0
    for prompt in prompts:
        wider = max(width, len(prompt) + new_tokens)
        if batch and wider * (len(batch) + 1) > budget:
            yield batch
            batch, wider = [], len(prompt) + new_tokens
        batch.append(prompt)
        width = wider
    if batch:
        yield batch


def check_wiring(drafter: Eagle3Drafter, wiring: Wiring, num_layers: int) -> Wiring:
    from eagle3_contracts.acceptance.target import FINAL, ZERO

    if len(wiring) != drafter.shape.num_states:
        raise ContractError(
            f"the wiring feeds {len(wiring)} states; the drafter's fc takes "
            f"{drafter.shape.num_states}",
            field="wiring",
        )
    for i in wiring:
        if i not in (FINAL, ZERO) and not (isinstance(i, int) and -1 <= i < num_layers):
            raise ContractError(
                f"state {i!r} is not a canonical id in [-1, {num_layers - 1}], {FINAL!r} or "
                f"{ZERO!r}",
                field="wiring",
            )
    return tuple(wiring)


def measure(
    model: nn.Module,
    drafter: Eagle3Drafter,
    prompts: Iterable[list[int]],
    wirings: Sequence[Wiring],
    *,
    num_layers: int,
    k: int = 4,
    new_tokens: int = 64,
    batch_tokens: int = BATCH_TOKENS,
    progress: Callable[[int], None] | None = None,
) -> dict[Wiring, Acceptance]:
    """Acceptance of each wiring on the same prompts (streamed in batches of at most
    ``batch_tokens`` padded tokens; ``progress(prompts done)`` after each batch)."""
    if k < 1 or new_tokens <= k:
        raise ContractError(
            f"need k >= 1 drafts and new_tokens > k, got k={k}, new_tokens={new_tokens}",
            field="k",
        )
    wirings = [check_wiring(drafter, w, num_layers) for w in dict.fromkeys(wirings)]
    needed = {i for w in wirings for i in w}
    rows: dict[Wiring, list[tuple[Tensor, int, Tensor, int]]] = {w: [] for w in wirings}
    stream = iter(prompts)
    first = list(itertools.islice(stream, 2))
    if len(first) < 2:
        raise ContractError(
            f"{len(first)} prompt(s): the intervals are over prompts and need at least 2 prompts",
            field="prompts",
        )
    done = 0
    for batch in chunks(itertools.chain(first, stream), new_tokens, batch_tokens):
        run = run_targets(model, batch, new_tokens, needed)
        for w in wirings:
            rows[w].extend(batch_counts(drafter, run, w, k))
        done += len(batch)
        if progress is not None:
            progress(done)
    out = {}
    for w, items in rows.items():
        counts = Counts(
            hits=torch.stack([i[0] for i in items]),
            anchors=torch.tensor([i[1] for i in items]),
            served_hits=torch.stack([i[2] for i in items]),
            served_drafts=torch.tensor([i[3] for i in items]),
        )
        out[w] = Acceptance(w, k, counts)
    return out
