"""Tensor-parallel EAGLE-3 capture on real ``torch.distributed`` processes.

Each decoder block of a synthetic target is sharded Megatron-style over ``tp_size`` ranks:
attention by heads (``qkv`` column-parallel, ``o`` row-parallel) and the MLP (``up``
column-parallel, ``down`` row-parallel); each row-parallel product is a partial sum that an
all-reduce completes. Every rank then holds the same residual stream, and a capture taken
*after* the all-reduce is identical on every rank and equal to the unsharded model's capture.

Not bit-exact: the all-reduce adds the ranks' partial matmul results, while the unsharded matmul
accumulates the same products in one inner loop; fp32 addition is not associative, so the two
differ in the last bits (observed max abs error ~1e-6 on unit-scale states). With
``tp_size == 1`` there is no reduction and the capture is bit-exact. Equality *across ranks* is
exact: after the all-reduce every rank holds the same bits.

The fault: a capture taken *before* the all-reduce (a rank reading ``residual + partial`` where
an engine defers the all-reduce into the next layer's fused add-norm) holds that rank's own
partial sum: ranks disagree and none equals the reference.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor
from torch.nn import functional as F

from eagle3_contracts.capture.hooks import seeded_input_ids
from eagle3_contracts.contract import CaptureContract
from eagle3_contracts.errors import ContractError, ContractViolation
from eagle3_contracts.layer_ids import EMBEDDING, describe
from eagle3_contracts.parallel.launch import ProcessGroupPool, RankContext
from eagle3_contracts.parallel.pipeline import check_model_fits
from eagle3_contracts.testing.synthetic import (
    SyntheticConfig,
    SyntheticTarget,
    _attention_bias,
    build_synthetic,
)

# fp32 tolerance for sharded vs unsharded (torch.testing's fp32 defaults)
RTOL = 1.3e-6
ATOL = 1e-5


@dataclass(frozen=True)
class CapturePoint:
    """Where a tensor-parallel rank reads the stream after a layer."""

    name: str
    description: str
    before_all_reduce: bool  # True: reads residual + this rank's partial MLP output
    reproduces: str | None = None
    affects: Callable[[CaptureContract, int], bool] = field(
        default=lambda contract, tp_size: False, repr=False, compare=False
    )


AFTER_ALL_REDUCE = CapturePoint(
    "after all-reduce",
    "each layer's output is read after the row-parallel all-reduce (every rank identical)",
    before_all_reduce=False,
)
BEFORE_ALL_REDUCE = CapturePoint(
    "before all-reduce",
    "a rank reads residual + its own partial MLP sum, before the all-reduce completes it",
    before_all_reduce=True,
    reproduces="deferred/fused all-reduce read too early",
    affects=lambda contract, tp_size: tp_size > 1 and any(n >= 0 for n in contract.layer_ids),
)
CAPTURE_POINTS: dict[str, CapturePoint] = {p.name: p for p in (AFTER_ALL_REDUCE, BEFORE_ALL_REDUCE)}


def check_tp_size(config: SyntheticConfig, tp_size: object) -> int:
    """``tp_size`` must divide the attention heads (and so the MLP width ``2H``)."""
    heads = config.num_heads
    if isinstance(tp_size, bool) or not isinstance(tp_size, int) or tp_size < 1:
        raise ContractError(f"tp_size must be a positive integer, got {tp_size!r}", field="tp_size")
    if heads % tp_size:
        ok = [k for k in range(1, heads + 1) if heads % k == 0]
        raise ContractError(
            f"tp_size = {tp_size} does not divide the {heads} attention heads of a "
            f"hidden_size {config.hidden_size} target; use one of {ok}",
            field="tp_size",
        )
    return tp_size


# -- one sharded layer ------------------------------------------------------------------------
def _all_reduce(t: Tensor, group: Any, tp_size: int) -> Tensor:
    if tp_size > 1:
        import torch.distributed as dist

        dist.all_reduce(t, group=group)
    return t


def sharded_layer(
    target: SyntheticTarget,
    i: int,
    x: Tensor,
    attention_mask: Tensor | None,
    *,
    rank: int,
    tp_size: int,
    group: Any,
) -> tuple[Tensor, Tensor, Tensor]:
    """Run layer ``i`` on ``rank``'s shard: ``(stream_out, pre_mlp, partial_stream)``.

    ``pre_mlp`` is the stream after attention (identical on every rank); ``partial_stream`` is
    ``pre_mlp + this rank's partial MLP output`` (what a capture before the all-reduce sees).
    """
    block: Any = target.layers[i]  # a synthetic Block (nn.ModuleList erases its type)
    b, t, h = x.shape
    heads, hd = target.config.num_heads, h // target.config.num_heads
    local = heads // tp_size
    bias = _attention_bias(attention_mask, t, x)
    # attention: qkv column-parallel by heads, o row-parallel, all-reduce
    w_qkv = block.attn.qkv.weight.view(3, heads, hd, h)[:, rank * local : (rank + 1) * local]
    qkv = F.linear(block.input_norm(x), w_qkv.reshape(3 * local * hd, h))
    q, k, v = (y.transpose(1, 2) for y in qkv.view(b, t, 3, local, hd).unbind(2))
    scores = q @ k.transpose(-1, -2) / math.sqrt(hd) + bias
    out = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, t, local * hd)
    w_o = block.attn.o.weight[:, rank * local * hd : (rank + 1) * local * hd]
    x = x + _all_reduce(F.linear(out, w_o), group, tp_size)
    # MLP: up column-parallel, down row-parallel, all-reduce
    width = block.mlp.up.weight.shape[0] // tp_size
    rows = slice(rank * width, (rank + 1) * width)
    partial = F.linear(
        F.gelu(F.linear(block.post_norm(x), block.mlp.up.weight[rows])),
        block.mlp.down.weight[:, rows],
    )
    partial_stream = x + partial
    return x + _all_reduce(partial.clone(), group, tp_size), x, partial_stream


# -- the job each rank runs -------------------------------------------------------------------
def tensor_parallel_job(
    ctx: RankContext,
    *,
    model: dict[str, Any],
    contract: dict[str, Any],
    tp_size: int,
    capture_point: str,
    input_ids: Tensor,
    attention_mask: Tensor | None,
) -> dict[str, Any] | None:
    """Ranks ``0..tp_size-1`` run the sharded target and capture; the others sit out."""
    if ctx.rank >= tp_size:
        return None
    point = CAPTURE_POINTS[capture_point]
    the_contract = CaptureContract.from_dict(contract)
    target = build_synthetic(SyntheticConfig(**model))
    group = ctx.group(tp_size) if tp_size > 1 else None
    wanted = set(the_contract.layer_ids)
    states: dict[int, Tensor] = {}
    pre: dict[int, Tensor] = {}
    with torch.no_grad():
        x = target.stream(target.enter(input_ids, attention_mask))
        if EMBEDDING in wanted:
            states[EMBEDDING] = x.clone()
        for i in range(target.config.num_layers):
            x, before_mlp, partial_stream = sharded_layer(
                target, i, x, attention_mask, rank=ctx.rank, tp_size=tp_size, group=group
            )
            if i in wanted:
                states[i] = partial_stream if point.before_all_reduce else x.clone()
                pre[i] = before_mlp
    concat = the_contract.concat_ids
    return {
        "rank": ctx.rank,
        "captured": torch.cat([states[n] for n in concat], dim=-1),
        "pre_mlp": {n: pre[n] for n in pre},
    }


# -- result and diagnosis ---------------------------------------------------------------------
@dataclass(frozen=True)
class TensorParallelRun:
    """Per-rank captures of one tensor-parallel run and the unsharded reference."""

    contract: CaptureContract
    tp_size: int
    capture_point: CapturePoint
    captured: tuple[Tensor, ...]  # one [B, T, width] capture per rank
    pre_mlp: tuple[dict[int, Tensor], ...]  # per rank: stream before each layer's MLP add
    reference: Tensor  # capture_hidden_states of the unsharded model (single process)

    @property
    def identical_across_ranks(self) -> bool:
        return all(torch.equal(c, self.captured[0]) for c in self.captured[1:])

    @property
    def max_abs_error(self) -> float:
        """Largest ``|rank capture - reference|`` over every rank."""
        return max(float((c - self.reference).abs().max()) for c in self.captured)

    @property
    def close(self) -> bool:
        return all(torch.allclose(c, self.reference, rtol=RTOL, atol=ATOL) for c in self.captured)

    def findings(self) -> tuple[str, ...]:
        return diagnose_tensor_parallel(self)


def diagnose_tensor_parallel(run: TensorParallelRun) -> tuple[str, ...]:
    """Per id: do the ranks agree, and do they equal the unsharded capture? And if not, why."""
    c, found = run.contract, []
    for seg in c.segments:
        n, cols = seg.layer_id, seg.slice
        ref = run.reference[..., cols]
        per_rank = [cap[..., cols] for cap in run.captured]
        agree = all(torch.equal(x, per_rank[0]) for x in per_rank[1:])
        close = [torch.allclose(x, ref, rtol=RTOL, atol=ATOL) for x in per_rank]
        if agree and all(close):
            continue
        what = describe(n, c.num_layers)
        if not agree and n in run.pre_mlp[0]:
            pre = run.pre_mlp[0][n]
            completed = pre + sum(x - pre for x in per_rank)
            if torch.allclose(completed, ref, rtol=1e-4, atol=1e-4):
                worst = max(
                    range(run.tp_size), key=lambda r: float((per_rank[r] - ref).abs().max())
                )
                err = float((per_rank[worst] - ref).abs().max())
                found.append(
                    f"{what}: the {run.tp_size} ranks captured different states (rank {worst} "
                    f"is off by {err:.3g}); each holds its own partial MLP sum, and the partials "
                    f"add up to the reference: captured before the all-reduce; read the stream "
                    f"after the all-reduce (after the fused all-reduce + add-norm)"
                )
                continue
        bad = [r for r, ok in enumerate(close) if not ok]
        if not agree:
            found.append(f"{what}: the ranks captured different states")
        if bad:
            err = max(float((per_rank[r] - ref).abs().max()) for r in bad)
            found.append(
                f"{what}: rank(s) {bad} differ from the unsharded capture by up to {err:.3g} "
                f"(tolerance rtol={RTOL}, atol={ATOL})"
            )
    return tuple(found)


def run_tensor_parallel(
    model: SyntheticConfig,
    contract: CaptureContract,
    tp_size: int,
    *,
    capture_point: CapturePoint | str = AFTER_ALL_REDUCE,
    input_ids: Tensor | None = None,
    attention_mask: Tensor | None = None,
    pool: ProcessGroupPool | None = None,
) -> TensorParallelRun:
    """Run the sharded target on ``tp_size`` gloo processes; compare with the unsharded one."""
    from eagle3_contracts.capture.hooks import capture_hidden_states

    if not isinstance(model, SyntheticConfig):
        raise ContractError(
            f"model must be a SyntheticConfig (its blocks are sharded here), got "
            f"{type(model).__name__}",
            field="model",
        )
    tp_size = check_tp_size(model, tp_size)
    if not isinstance(contract, CaptureContract):
        raise ContractError(
            f"contract must be a CaptureContract, got {contract!r}", field="contract"
        )
    check_model_fits(model, contract)
    point = CAPTURE_POINTS.get(capture_point) if isinstance(capture_point, str) else capture_point
    if point is None:
        raise ContractError(
            f"capture_point must be one of {', '.join(CAPTURE_POINTS)}, got {capture_point!r}",
            field="capture_point",
        )
    if input_ids is None:
        input_ids = seeded_input_ids(model.vocab_size)
    kwargs = dict(
        model=dataclasses.asdict(model),
        contract=contract.to_dict(),
        tp_size=tp_size,
        capture_point=point.name,
        input_ids=input_ids,
        attention_mask=attention_mask,
    )
    if pool is not None and pool.world_size < tp_size:
        raise ContractError(
            f"the pool has {pool.world_size} ranks, tp_size is {tp_size}", field="pool"
        )
    if pool is None:
        with ProcessGroupPool(tp_size) as own:
            results = own.run(tensor_parallel_job, **kwargs)
    else:
        results = pool.run(tensor_parallel_job, **kwargs)
    results = [r for r in results if r is not None]
    reference = capture_hidden_states(
        build_synthetic(model),
        input_ids,
        list(contract.layer_ids),
        order=contract.order,
        attention_mask=attention_mask,
    )
    return TensorParallelRun(
        contract=contract,
        tp_size=tp_size,
        capture_point=point,
        captured=tuple(r["captured"] for r in results),
        pre_mlp=tuple(r["pre_mlp"] for r in results),
        reference=reference,
    )


def verify_tensor_parallel_capture(
    model: SyntheticConfig, contract: CaptureContract, tp_size: int, **kwargs: Any
) -> TensorParallelRun:
    """Run ``run_tensor_parallel``; raise ``ContractViolation`` unless every rank's capture is
    identical and within fp32 tolerance of the unsharded capture. Returns the run."""
    run = run_tensor_parallel(model, contract, tp_size, **kwargs)
    findings = run.findings()
    if findings:
        raise ContractViolation(
            f"tensor-parallel capture ({run.capture_point.name}, tp_size={tp_size}) of "
            f"{contract.describe()} is wrong: " + "; ".join(findings),
            findings=findings,
        )
    return run
