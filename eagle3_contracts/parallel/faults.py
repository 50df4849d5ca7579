"""The real pipeline- and tensor-parallel capture bugs, as runnable faulty systems.

Each ``PipelineFault`` is data: the faulty ``PipelineSystem``, the public report it reproduces,
the words its diagnosis must contain, and ``affects(contract, partition)`` -- whether the bug
changes the capture for a layout at all (a stage-local loop is harmless when every id lives on
stage 0). The faulty systems concatenate what reaches the last stage in arrival order, as the
engines do, so ``affects`` holds for ascending contracts. Tests iterate ``PIPELINE_FAULTS``: affected layouts must be rejected with that
diagnosis, unaffected ones must pass. The tensor-parallel fault (a rank capturing before its
all-reduce) is ``eagle3_contracts.parallel.tensor.BEFORE_ALL_REDUCE``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from eagle3_contracts.contract import CaptureContract
from eagle3_contracts.layer_ids import EMBEDDING
from eagle3_contracts.parallel.partition import LayerPartition, pipeline_risks
from eagle3_contracts.parallel.pipeline import (
    Aux,
    PipelineSystem,
    StageContext,
    State,
    assemble_in_arrival_order,
    capture_stage,
)


def stage_local_stage(ctx: StageContext, state: State, aux: list[Aux]) -> tuple[State, list[Aux]]:
    """vllm#36151: ``for idx, layer in enumerate(islice(layers, start, end))`` -- ``idx``
    restarts at 0 on every stage and is compared with global ids."""
    model, wanted, out = ctx.model, set(ctx.layer_ids), list(aux)
    if ctx.is_first and EMBEDDING in wanted:
        out.append(Aux(EMBEDDING, ctx.stage, model.stream(state)))
    for local, i in enumerate(ctx.layers):
        state = model.run_layer(i, state, ctx.attention_mask)
        if local in wanted:
            out.append(Aux(local, ctx.stage, model.stream(state)))
    return state, out


def last_stage_only_stage(
    ctx: StageContext, state: State, aux: list[Aux]
) -> tuple[State, list[Aux]]:
    """sglang#39644: ``set_eagle3_layers_to_capture`` returns early unless
    ``pp_group.is_last_rank``, so earlier stages never capture."""
    if ctx.is_last:
        return capture_stage(ctx, state, aux)
    for i in ctx.layers:
        state = ctx.model.run_layer(i, state, ctx.attention_mask)
    return state, list(aux)


def drop_aux_stage(ctx: StageContext, state: State, aux: list[Aux]) -> tuple[State, list[Aux]]:
    """vllm#45985: a non-last stage returns ``IntermediateTensors({hidden_states, residual})``
    only; each stage starts a fresh aux list, so what earlier stages captured is lost."""
    return capture_stage(ctx, state, [])


STAGE_LOCAL = PipelineSystem(
    "stage-local indexing",
    "each stage compares its local loop index (0..k-1) with the global ids",
    stage_local_stage,
    assemble_in_arrival_order,
    reproduces="vllm#36151 (fixed by vllm#36731)",
)
LAST_STAGE_ONLY = PipelineSystem(
    "last-stage-only capture",
    "only the last pipeline stage captures aux states",
    last_stage_only_stage,
    assemble_in_arrival_order,
    reproduces="sglang#39644",
)
DROP_AUX = PipelineSystem(
    "aux dropped at stage boundaries",
    "every stage captures its own ids but forwards only the stream, not the aux states",
    drop_aux_stage,
    assemble_in_arrival_order,
    reproduces="vllm#45985",
)


@dataclass(frozen=True)
class PipelineFault:
    """A faulty system, the report it reproduces, and what its diagnosis must say."""

    # -- the fault ----------------------------------------------------------------------
    system: PipelineSystem
    attribute: str  # its name in this module (how the ranks find it)
    # -- expectations -------------------------------------------------------------------
    diagnosis: str  # words every finding list for an affected layout contains
    affects: Callable[[CaptureContract, LayerPartition], bool] = field(repr=False)  # changes it?

    @property
    def path(self) -> str:
        return f"{__name__}:{self.attribute}"


PIPELINE_FAULTS: tuple[PipelineFault, ...] = (
    PipelineFault(
        STAGE_LOCAL,
        "STAGE_LOCAL",
        "stage-local indexing (vllm#36151)",
        lambda c, p: pipeline_risks(c.layer_ids, p).stage_local_affected,
    ),
    PipelineFault(
        LAST_STAGE_ONLY,
        "LAST_STAGE_ONLY",
        "last-stage-only capture (sglang#39644)",
        lambda c, p: pipeline_risks(c.layer_ids, p).last_stage_only_affected,
    ),
    PipelineFault(
        DROP_AUX,
        "DROP_AUX",
        "dropped at a stage boundary (vllm#45985)",
        lambda c, p: pipeline_risks(c.layer_ids, p).last_stage_only_affected,
    ),
)
