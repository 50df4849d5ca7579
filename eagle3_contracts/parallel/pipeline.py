"""Pipeline-parallel EAGLE-3 capture on real ``torch.distributed`` processes, and its verification.

The target's decoder layers are split over S stages (``LayerPartition``); rank ``s`` runs stage
``s``. Each stage receives the stream state and the aux states captured so far from stage
``s - 1``, runs its layers through a *stage function*, and sends the state and the aux list on;
the last stage *assembles* the capture the drafter is fed. That is how the engines do it, and
where they went wrong:

* stage-local indexing: a stage compared its local loop index with global ids (vllm#36151);
* last-stage-only capture: earlier stages never captured (sglang#39644);
* aux states dropped at a stage boundary: a stage forwarded only the stream (vllm#45985).

A ``PipelineSystem`` bundles a stage function and an assemble function; ``REFERENCE`` captures
every id on the stage that owns it, by global index, and assembles in the contract's order. It
gives exactly (``torch.equal``) the single-process ``capture_hidden_states``.
``verify_pipeline_capture`` runs a system on S processes and raises ``ContractViolation`` naming
the stage and id at fault; ``eagle3_contracts.parallel.faults`` holds the real bugs as systems.

Every aux state carries the id its stage *claims* and the stage that captured it: engines keep
an unlabelled list, so labels never change what is assembled by position; they let the
diagnosis say where a state came from.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Union

import torch
from torch import Tensor

from eagle3_contracts.capture.hooks import seeded_input_ids
from eagle3_contracts.contract import CaptureContract
from eagle3_contracts.errors import ContractError, ContractViolation
from eagle3_contracts.layer_ids import EMBEDDING, describe
from eagle3_contracts.parallel.launch import ProcessGroupPool, RankContext, _resolve
from eagle3_contracts.parallel.partition import LayerPartition
from eagle3_contracts.testing.synthetic import SyntheticConfig, build_synthetic

if TYPE_CHECKING:
    from torch import nn

State = Union[Tensor, tuple[Tensor, Union[Tensor, None]]]  # noqa: UP007 - as in models.py
NO_LABEL = -(2**31)  # wire value of an aux state whose stage claimed no id


# -- what travels between stages -----------------------------------------------------------
@dataclass(frozen=True)
class Aux:
    """One captured aux state on its way to the last stage."""

    layer_id: int | None  # the canonical id the capturing stage claims it holds
    stage: int  # the stage that captured it
    state: Tensor  # [B, T, H]


@dataclass(frozen=True)
class StageContext:
    """What a stage function knows: its stage, the partition, the contract, the model."""

    stage: int
    partition: LayerPartition
    contract: CaptureContract
    model: Any  # a target with enter / run_layer / stream (SyntheticTarget or equivalent)
    attention_mask: Tensor | None = None

    @property
    def layers(self) -> range:
        """Global indices of the layers this stage runs."""
        return self.partition.stage_range(self.stage)

    @property
    def is_first(self) -> bool:
        return self.stage == 0

    @property
    def is_last(self) -> bool:
        return self.stage == self.partition.pp_size - 1

    @property
    def layer_ids(self) -> tuple[int, ...]:
        """The contract's canonical ids (global)."""
        return self.contract.layer_ids


StageFn = Callable[[StageContext, State, list[Aux]], tuple[State, list[Aux]]]
"""``(ctx, state_in, aux_in) -> (state_out, aux_out)``; ``aux_out`` is what is sent on."""
AssembleFn = Callable[[list[Aux], CaptureContract], Tensor]
"""``(aux at the last stage, contract) -> [B, T, k*H]``, the tensor the drafter is fed."""


@dataclass(frozen=True)
class PipelineSystem:
    """A pipeline-parallel capture implementation: per-stage capture plus final assembly."""

    # -- identity -----------------------------------------------------------------------
    name: str
    description: str
    # -- behaviour ----------------------------------------------------------------------
    stage: StageFn = dataclasses.field(repr=False)
    assemble: AssembleFn = dataclasses.field(repr=False)
    # -- provenance ---------------------------------------------------------------------
    reproduces: str | None = None  # the public report a faulty system reproduces


# -- the reference system -------------------------------------------------------------------
def capture_stage(ctx: StageContext, state: State, aux: list[Aux]) -> tuple[State, list[Aux]]:
    """Run the stage's layers; capture each contract id this stage owns, by *global* index.

    ``-1`` (the stream entering layer 0) is captured on stage 0 before its first layer.
    Everything received is forwarded.
    """
    model, wanted, out = ctx.model, set(ctx.layer_ids), list(aux)
    if ctx.is_first and EMBEDDING in wanted:
        out.append(Aux(EMBEDDING, ctx.stage, model.stream(state)))
    for i in ctx.layers:
        state = model.run_layer(i, state, ctx.attention_mask)
        if i in wanted:
            out.append(Aux(i, ctx.stage, model.stream(state)))
    return state, out


def assemble_by_contract(aux: list[Aux], contract: CaptureContract) -> Tensor:
    """Concatenate in ``contract.concat_ids`` order, finding each state by its id."""
    by_id = {a.layer_id: a.state for a in aux}
    missing = [n for n in contract.concat_ids if n not in by_id]
    if missing:
        raise ContractViolation(
            f"ids {missing} never reached the last stage; received {[a.layer_id for a in aux]}",
            findings=tuple(f"layer {n} missing at the last stage" for n in missing),
        )
    return torch.cat([by_id[n] for n in contract.concat_ids], dim=-1)


def assemble_in_arrival_order(aux: list[Aux], contract: CaptureContract) -> Tensor:
    """Engine-style: ``torch.cat`` of whatever arrived, in arrival order (labels ignored)."""
    return torch.cat([a.state for a in aux], dim=-1)


REFERENCE = PipelineSystem(
    "reference",
    "each stage captures the contract ids it owns by global index and forwards every aux "
    "state; the last stage concatenates in the contract's order",
    capture_stage,
    assemble_by_contract,
)


# -- transport over torch.distributed --------------------------------------------------------
def _send(state: State, aux: list[Aux], dst: int) -> None:
    import torch.distributed as dist

    if isinstance(state, tuple):
        hidden, residual = state
        tensors = [hidden] + ([] if residual is None else [residual])
        kind = 1 if residual is None else 2
    else:
        tensors, kind = [state], 0
    header = [kind, len(aux)]
    for a in aux:
        header += [NO_LABEL if a.layer_id is None else a.layer_id, a.stage]
    dist.send(torch.tensor([len(header)], dtype=torch.int64), dst)
    dist.send(torch.tensor(header, dtype=torch.int64), dst)
    for t in tensors + [a.state for a in aux]:
        dist.send(t.contiguous(), dst)


def _recv(src: int, shape: Sequence[int], dtype: torch.dtype) -> tuple[State, list[Aux]]:
    import torch.distributed as dist

    n = torch.empty(1, dtype=torch.int64)
    dist.recv(n, src)
    header = torch.empty(int(n.item()), dtype=torch.int64)
    dist.recv(header, src)
    kind, count, *rest = header.tolist()

    def take() -> Tensor:
        t = torch.empty(tuple(shape), dtype=dtype)
        dist.recv(t, src)
        return t

    if kind == 0:
        state: State = take()
    elif kind == 1:
        state = (take(), None)
    else:
        hidden = take()
        state = (hidden, take())
    aux = []
    for j in range(count):
        label, stage = rest[2 * j], rest[2 * j + 1]
        aux.append(Aux(None if label == NO_LABEL else label, stage, take()))
    return state, aux


# -- model specs: how each rank builds the same target ---------------------------------------
ModelSpec = Union[SyntheticConfig, str]  # noqa: UP007
"""A ``SyntheticConfig`` (every rank builds it from its seed) or ``"module:factory"``, an
importable zero-argument callable returning a target with ``enter``/``run_layer``/``stream``."""


def _spec_to_wire(model: ModelSpec) -> dict[str, Any]:
    if isinstance(model, SyntheticConfig):
        return {"synthetic": dataclasses.asdict(model)}
    if isinstance(model, str) and ":" in model:
        return {"factory": model}
    raise ContractError(
        f"model must be a SyntheticConfig or an importable 'module:factory' string, got "
        f"{type(model).__name__}",
        field="model",
    )


def check_model_fits(model: SyntheticConfig, contract: CaptureContract) -> None:
    """``ContractError`` unless ``model`` has the contract's depth and width."""
    for name, want in (("num_layers", contract.num_layers), ("hidden_size", contract.hidden_size)):
        if getattr(model, name) != want:
            raise ContractError(
                f"model.{name} = {getattr(model, name)} but the contract says {want}",
                field=f"model.{name}",
            )


def build_model(spec: dict[str, Any]) -> nn.Module:
    """Build the target a wire spec describes (same weights on every rank)."""
    if "synthetic" in spec:
        return build_synthetic(SyntheticConfig(**spec["synthetic"]))
    model: nn.Module = _resolve(spec["factory"])()
    return model


def _system_path(system: PipelineSystem | str) -> str:
    if isinstance(system, str):
        return system
    for module_name in ("eagle3_contracts.parallel.pipeline", "eagle3_contracts.parallel.faults"):
        module = __import__(module_name, fromlist=["_"])
        for name, value in vars(module).items():
            if value is system:
                return f"{module_name}:{name}"
    raise ContractError(
        f"system {system.name!r} must be reachable by name from the ranks: pass "
        f"'module:ATTRIBUTE' naming the PipelineSystem at the top level of an importable module",
        field="system",
    )


def _resolve_system(path: str) -> PipelineSystem:
    system = _resolve(path)
    if not isinstance(system, PipelineSystem):
        raise ContractError(
            f"{path} is a {type(system).__name__}, not a PipelineSystem", field="system"
        )
    return system


# -- the job each rank runs ----------------------------------------------------------------
def pipeline_job(
    ctx: RankContext,
    *,
    system: str,
    model: dict[str, Any],
    contract: dict[str, Any],
    sizes: list[int],
    input_ids: Tensor,
    attention_mask: Tensor | None,
) -> dict[str, Any] | None:
    """One pipeline run: rank ``s`` is stage ``s`` (ranks beyond the last stage sit out)."""
    from eagle3_contracts.capture.hooks import capture_hidden_states, reference_states

    partition = LayerPartition(tuple(sizes))
    stage = ctx.rank
    if stage >= partition.pp_size:
        return None
    the_system = _resolve_system(system)
    the_contract = CaptureContract.from_dict(contract)
    target: Any = build_model(model)  # a SyntheticTarget or a factory model with its interface
    sctx = StageContext(stage, partition, the_contract, target, attention_mask)
    with torch.no_grad():
        if stage == 0:
            state, received = target.enter(input_ids, attention_mask), list[Aux]()
        else:
            shape = (*input_ids.shape, the_contract.hidden_size)
            state, received = _recv(stage - 1, shape, next(target.parameters()).dtype)
        state, out = the_system.stage(sctx, state, list(received))
        log = {
            "stage": stage,
            "received": [(a.layer_id, a.stage) for a in received],
            "sent": [(a.layer_id, a.stage) for a in out],
        }
        if not sctx.is_last:
            _send(state, out, stage + 1)
            return log
        # nothing arrived: the drafter is fed an empty capture (width 0), as an engine would
        captured = (
            the_system.assemble(out, the_contract)
            if out
            else torch.empty((*input_ids.shape, 0), dtype=next(target.parameters()).dtype)
        )
        ids = list(range(EMBEDDING, partition.num_layers))
        truth = reference_states(target, input_ids, ids, attention_mask=attention_mask)
        log["holds"] = [_exact_identity(a.state, truth) for a in out]
        log["captured"] = captured
        log["reference"] = capture_hidden_states(
            target,
            input_ids,
            list(the_contract.layer_ids),
            order=the_contract.order,
            attention_mask=attention_mask,
        )
        return log


def _exact_identity(state: Tensor, truth: dict[int, Tensor]) -> int | None:
    return next((n for n, ref in truth.items() if torch.equal(state, ref)), None)


# -- the result and its diagnosis ------------------------------------------------------------
@dataclass(frozen=True)
class StageLog:
    """What one stage received and sent on (ids as claimed, with the capturing stage)."""

    stage: int
    layers: range
    received: tuple[tuple[int | None, int], ...]
    sent: tuple[tuple[int | None, int], ...]

    @property
    def captured(self) -> tuple[int | None, ...]:
        """Ids this stage captured itself (claimed labels)."""
        return tuple(label for label, origin in self.sent if origin == self.stage)

    @property
    def dropped(self) -> tuple[tuple[int | None, int], ...]:
        """Aux states received but not sent on."""
        return tuple(a for a in self.received if a not in self.sent)


@dataclass(frozen=True)
class PipelineRun:
    """One multi-process pipeline capture: the assembled tensor and what each stage did."""

    system: str
    contract: CaptureContract
    partition: LayerPartition
    captured: Tensor  # what the last stage assembled, [B, T, width]
    reference: Tensor  # single-process capture_hidden_states on the last stage's process
    stages: tuple[StageLog, ...]
    arrived: tuple[tuple[int | None, int], ...]  # (claimed id, origin stage) at the last stage
    holds: tuple[int | None, ...]  # per arrival: canonical id its content equals exactly

    @property
    def exact(self) -> bool:
        return self.captured.shape == self.reference.shape and torch.equal(
            self.captured, self.reference
        )

    def findings(self) -> tuple[str, ...]:
        """Each problem, naming the id, the stage that owns it and the likely cause."""
        return diagnose_pipeline(self)


def diagnose_pipeline(run: PipelineRun) -> tuple[str, ...]:
    """Findings for a run (empty when the capture equals the single-process reference)."""
    if run.exact:
        return ()
    local_stages = _stage_local_stages(run)
    found: list[str] = []
    used: set[int] = set()
    arrivals = list(zip(run.arrived, run.holds, strict=True))
    for n in run.contract.concat_ids:
        exact = [i for i, (_, holds) in enumerate(arrivals) if holds == n and i not in used]
        if exact:
            used.add(exact[0])
        else:
            found.append(_missing_id(run, n, local_stages))
    found += [
        _extra_state(run.partition, label, origin, holds, local_stages)
        for i, ((label, origin), holds) in enumerate(arrivals)
        if i not in used
    ]
    found += _shape_findings(run, bool(found))
    return tuple(found)


def _stage_local_stages(run: PipelineRun) -> list[int]:
    """Stages seen capturing layer ``start + j`` under the label ``j``: a stage-local index."""
    p = run.partition
    return sorted(
        {
            origin
            for (label, origin), holds in zip(run.arrived, run.holds, strict=True)
            if holds is not None
            and label is not None
            and holds != label
            and holds >= 0
            and p.stage_of(holds) == origin
            and p.local_index(holds) == label
        }
    )


def _missing_id(run: PipelineRun, n: int, local_stages: list[int]) -> str:
    """Why canonical ``n`` of the contract did not arrive on the last stage."""
    p = run.partition
    last = p.pp_size - 1
    owner = p.stage_of(n)
    where = f"{describe(n, p.num_layers)} (owned by stage {owner}, layers {_span(p, owner)})"
    captured_on = [s.stage for s in run.stages if n in s.captured]
    if captured_on:
        dropper = next((s for s in run.stages if any(a[0] == n for a in s.dropped)), None)
        at = (
            f"stage {dropper.stage} received it but did not send it on"
            if dropper is not None
            else "it never reached the last stage"
        )
        return (
            f"{where}: captured on stage {captured_on[0]}, but {at}: aux states dropped "
            f"at a stage boundary (vllm#45985); forward the aux states with the stream"
        )
    if owner != last and not any(s.captured for s in run.stages if s.stage != last):
        return (
            f"{where}: never captured; no stage before the last (stage {last}) captured "
            f"anything: last-stage-only capture (sglang#39644); every stage must capture "
            f"the ids it owns"
        )
    if owner > 0 and n >= p.sizes[owner]:
        seen = f" (seen on stage {', '.join(map(str, local_stages))})" if local_stages else ""
        hedge = "" if local_stages else "consistent with "
        return (
            f"{where}: never captured; a local loop index on stage {owner} runs "
            f"0..{p.sizes[owner] - 1} and never equals the global id {n}: {hedge}stage-local "
            f"indexing (vllm#36151){seen}; compare start_layer + local index with the ids"
        )
    if owner in local_stages:
        return (
            f"{where}: never captured; stage {owner} matched its local loop index instead: "
            f"stage-local indexing (vllm#36151); compare start_layer + local index with the "
            f"ids"
        )
    return f"{where}: never captured by stage {owner}, which runs layer {n}"


def _extra_state(
    p: LayerPartition, label: int | None, origin: int, holds: int | None, local_stages: list[int]
) -> str:
    """A state that arrived on the last stage but no contract id accounts for."""
    what = "no canonical state" if holds is None else describe(holds, p.num_layers)
    if origin in local_stages and holds is not None and label == p.local_index(holds):
        return (
            f"stage {origin} captured {what} as layer {label}, its local index there: "
            f"stage-local indexing (vllm#36151); compare start_layer + local index with "
            f"the ids"
        )
    return f"an extra state from stage {origin} (claimed layer {label}) holds {what}"


def _shape_findings(run: PipelineRun, found_any: bool) -> list[str]:
    """The assembled width, or (every state there) the concatenation order."""
    c = run.contract
    width = run.captured.shape[-1] if run.captured.dim() else 0
    if width != c.width:
        return [
            f"the last stage assembled width {width}, the contract needs {c.width} "
            f"({len(c.layer_ids)} x {c.hidden_size})"
        ]
    if not found_any:
        held = ", ".join("?" if h is None else str(h) for h in run.holds)
        return [
            f"every state arrived but the concatenation differs from the contract's {c.order} "
            f"order {list(c.concat_ids)} (the last stage held [{held}] in arrival order)"
        ]
    return []


def _span(p: LayerPartition, stage: int) -> str:
    r = p.stage_range(stage)
    return f"{r.start}-{r.stop - 1}" if len(r) > 1 else str(r.start)


# -- public entry points ---------------------------------------------------------------------
def run_pipeline(
    system: PipelineSystem | str,
    model: ModelSpec,
    contract: CaptureContract,
    partition: LayerPartition,
    *,
    input_ids: Tensor | None = None,
    attention_mask: Tensor | None = None,
    pool: ProcessGroupPool | None = None,
) -> PipelineRun:
    """Run ``system`` on ``partition.pp_size`` real gloo processes and collect what happened.

    ``pool``: reuse running ranks (its ``world_size`` must be >= the stage count); without it a
    pool of exactly ``pp_size`` ranks is started and stopped for this call.
    """
    if not isinstance(contract, CaptureContract):
        raise ContractError(
            f"contract must be a CaptureContract, got {contract!r}", field="contract"
        )
    if not isinstance(partition, LayerPartition):
        raise ContractError(
            f"partition must be a LayerPartition, got {partition!r}", field="partition"
        )
    if partition.num_layers != contract.num_layers:
        raise ContractError(
            f"partition covers {partition.num_layers} layers ({partition.describe()}) but the "
            f"contract's target has {contract.num_layers}",
            field="partition",
        )
    wire_model = _spec_to_wire(model)
    if isinstance(model, SyntheticConfig):
        check_model_fits(model, contract)
        if input_ids is None:
            input_ids = seeded_input_ids(model.vocab_size)
    if input_ids is None:
        raise ContractError("input_ids is required for a factory model", field="input_ids")
    path = _system_path(system)
    _resolve_system(path)  # fail here, not in every rank
    kwargs = dict(
        system=path,
        model=wire_model,
        contract=contract.to_dict(),
        sizes=list(partition.sizes),
        input_ids=input_ids,
        attention_mask=attention_mask,
    )
    if pool is not None and pool.world_size < partition.pp_size:
        raise ContractError(
            f"the pool has {pool.world_size} ranks but the partition has {partition.pp_size} "
            f"stages",
            field="pool",
        )
    if pool is None:
        with ProcessGroupPool(partition.pp_size) as own:
            results = own.run(pipeline_job, **kwargs)
    else:
        results = pool.run(pipeline_job, **kwargs)
    logs = [r for r in results if r is not None]
    last = logs[-1]
    stages = tuple(
        StageLog(
            log["stage"],
            partition.stage_range(log["stage"]),
            tuple(map(tuple, log["received"])),
            tuple(map(tuple, log["sent"])),
        )
        for log in logs
    )
    return PipelineRun(
        system=path,
        contract=contract,
        partition=partition,
        captured=last["captured"],
        reference=last["reference"],
        stages=stages,
        arrived=stages[-1].sent,
        holds=tuple(last["holds"]),
    )


def pipeline_capture(
    system: PipelineSystem | str,
    model: ModelSpec,
    contract: CaptureContract,
    partition: LayerPartition,
    **kwargs: Any,
) -> Tensor:
    """The tensor the last stage assembles (``[B, T, width]``); see ``run_pipeline``."""
    return run_pipeline(system, model, contract, partition, **kwargs).captured


@dataclass(frozen=True)
class PipelineReport:
    """``verify_pipeline_capture`` success: the run, which stage owns each id, and the check."""

    run: PipelineRun
    ownership: tuple[tuple[int, int], ...]  # (canonical id, stage) in concatenation order

    def render_text(self) -> str:
        p = self.run.partition
        owners = ", ".join(f"{describe(n, p.num_layers)} -> stage {s}" for n, s in self.ownership)
        return (
            f"{self.run.system}: {p.describe()}; {owners}; the capture equals the single-process "
            f"capture exactly"
        )


def verify_pipeline_capture(
    system: PipelineSystem | str,
    model: ModelSpec,
    contract: CaptureContract,
    partition: LayerPartition,
    **kwargs: Any,
) -> PipelineReport:
    """Run ``system`` over ``partition`` on real processes; raise ``ContractViolation`` unless
    the assembled capture equals the single-process ``capture_hidden_states`` exactly.

    The violation's ``findings`` name each id at fault, the stage that owns it and the cause
    (stage-local indexing, last-stage-only capture, aux dropped at a boundary, ...).
    """
    run = run_pipeline(system, model, contract, partition, **kwargs)
    findings = run.findings()
    if findings:
        raise ContractViolation(
            f"pipeline capture {run.system} over {partition.describe()} does not give the "
            f"single-process capture of {contract.describe()}: " + "; ".join(findings),
            findings=findings,
        )
    ownership = tuple((n, partition.stage_of(n)) for n in contract.concat_ids)
    return PipelineReport(run, ownership)


__all__ = [
    "REFERENCE",
    "Aux",
    "PipelineReport",
    "PipelineRun",
    "PipelineSystem",
    "StageContext",
    "StageLog",
    "assemble_by_contract",
    "assemble_in_arrival_order",
    "capture_stage",
    "diagnose_pipeline",
    "pipeline_capture",
    "run_pipeline",
    "verify_pipeline_capture",
]
