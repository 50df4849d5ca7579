"""Inside the engine: attach to vLLM's model runner, observe the first prefill, dump and guard.

Loaded only when ``EAGLE3_CONTRACTS_DUMP`` or ``EAGLE3_CONTRACTS_GUARD`` is set (see
``eagle3_contracts.integrations.vllm``). Facts of vLLM 0.32.0 this relies on (file:line of
the installed wheel; 0.33.0 has the same code):

Both runners

* ``model_executor/models/interfaces.py:1577-1578`` ``_set_aux_hidden_state_layers`` stores
  ``tuple(sorted(set(layers)))``; ``1601-1611`` ``_maybe_add_hidden_state`` appends
  ``hidden + residual`` at boundary 0 before the layer loop and ``idx + 1`` after each layer
  (``llama.py:428-441``, ``qwen2.py:423-434``, ``qwen3_moe.py:505-515``).
* ``compilation/decorators.py:524-529``: a ``@support_torch_compile`` model with
  ``do_not_compile`` set runs its eager ``forward``; the plugin sets it for the one recorded
  step only, so module hooks fire even where the target is compiled.
* The drafter's ``combine_hidden_states`` receives exactly the concatenation its ``fc`` gets
  (``llama_eagle3.py:396-418``); the plugin wraps it on the drafter instance.

Model runner V1 (``v1/worker/gpu_model_runner.py``)

* ``5230-5249`` ``_setup_eagle3_aux_hidden_state_outputs`` runs once after the target and the
  drafter are loaded (``cpu_model_runner.py:62-78`` on CPU): the plugin wraps it to attach;
  the drafter is ``runner.drafter.model`` (``v1/spec_decode/llm_base_proposer.py:536-552``).

Model runner V2 (``v1/worker/gpu/model_runner.py``; ``v1/worker/cpu/model_runner.py``
``CPUModelRunner`` subclasses it)

* ``378-420`` ``load_model`` sets the aux layers (``spec_decode/eagle/eagle3_utils.py:15-32``)
  and loads the drafter: the plugin wraps it to attach; the drafter is
  ``runner.speculator.model`` and ``spec_decode/target_dependent_ar/speculator.py:210-214``
  ``propose`` (from ``sample_tokens``, ``model_runner.py:2239``) calls its
  ``combine_hidden_states(torch.cat(aux_hidden_states, -1))``.
* ``818-960`` ``_dummy_run`` (profiling, CUDA-graph capture, DP padding) calls
  ``execute_model(..., dummy_run=True)`` and ``propose(..., dummy_run=True)``: skipped.
* ``1783-1797`` the step's CUDA-graph mode comes from ``cudagraph_manager.dispatch``
  (``dp_utils.py:282``; ``cudagraph_utils.py:518-545`` returns ``CUDAGraphMode.NONE`` when no
  graph fits); ``1998-2046`` FULL replays the graph and PIECEWISE runs the compiled or
  breakable graph, neither calls the layers' Python ``forward``. The plugin answers ``NONE``
  for the recorded step only (under data parallelism ``dp_utils.py:156-171`` then runs every
  DP rank eagerly for that step), so graphs are still used after it.
* ``1291`` ``sort_batch_req_ids`` (``2435-2447``) orders a batch's rows (decode, short extend, then
  prefill by token count): the dump's rows are those of the first request in that order,
  located through the step's ``input_batch`` (``req_ids``, ``query_start_loc_np``).

Parallelism: under tensor parallelism every TP rank holds the same all-reduced residual stream,
so TP rank 0 records, dumps and judges for its group; the other ranks say so and record
nothing. Under sequence-parallel MoE (``config/parallel.py:764-781``, ``deepseek_v2.py:1395-1404``)
a MoE layer's output is a token shard (``models/utils.py:1084-1102``: rank ``r`` holds rows
``r*ceil(T/tp)`` on) while the aux states are all-gathered (``deepseek_v2.py:1560-1567``):
TP rank 0's shard is the first tokens, so it judges on those rows only.

The plugin never raises inside the engine unless the guard is ``strict`` and a mismatch is
proven; an incomplete observation is a ``cannot observe`` line, never a verdict.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from eagle3_contracts.conventions import engine_name
from eagle3_contracts.conventions.hf import TOP_LEVEL as IDS_FIELD
from eagle3_contracts.errors import ContractError
from eagle3_contracts.integrations._guard.claim import guard_claim
from eagle3_contracts.integrations._guard.report import (
    PREFIX,
    armed_line,
    cannot_observe_line,
    not_applicable_line,
    one_line,
)
from eagle3_contracts.integrations._guard.settings import Settings, unchecked
from eagle3_contracts.integrations._guard.start import guard_start
from eagle3_contracts.integrations._guard.verdict import (
    GuardVerdict,
    Recorded,
    WiringMismatch,
    identify_recorded,
    judge,
    no_release_fix,
    proven_fix_for,
)
from eagle3_contracts.layer_ids import EMBEDDING, from_boundary


def model_file(model: nn.Module) -> str:
    """``"llama.py:LlamaForCausalLM"``: the vLLM model file and class serving the target."""
    cls = type(model)
    return f"{cls.__module__.rsplit('.', 1)[-1]}.py:{cls.__name__}"


def inner_model(model: Any) -> Any:
    """The module holding ``layers``: vLLM's own unwrap rule (``interfaces.py:1700-1709``)."""
    parent: Any = model
    if hasattr(model, "get_language_model"):
        parent = model.get_language_model()
    elif hasattr(model, "language_model"):
        parent = model.language_model
    return getattr(parent, "model", parent)


def configured_ids(hf_config: Any) -> dict[str, Any]:
    """The drafter's ids as configured (every field V1 or V2 may read, present ones only for
    the V2-only forms) and ``num_aux_hidden_states``."""
    nested = getattr(hf_config, "eagle_config", None)
    out = {
        "top_level": getattr(hf_config, IDS_FIELD, None),
        "nested": nested.get(IDS_FIELD) if isinstance(nested, dict) else None,
        "num_aux_hidden_states": getattr(hf_config, "num_aux_hidden_states", None),
    }
    # eagle3_utils.py get_eagle3_aux_layers_from_config (model runner V2)
    dflash = getattr(hf_config, "dflash_config", None)
    extra = {
        "dflash_config": dflash if isinstance(dflash, dict) else None,
        "dspark_target_layer_ids": getattr(hf_config, "dspark_target_layer_ids", None),
        "target_layer_ids": getattr(hf_config, "target_layer_ids", None),
        "eagle_config.layer_ids": nested.get("layer_ids") if isinstance(nested, dict) else None,
    }
    out.update({k: v for k, v in extra.items() if v is not None})
    return out


def _stream(hidden: Any, residual: Any) -> torch.Tensor | None:
    if not isinstance(hidden, torch.Tensor):
        return None
    return hidden if not isinstance(residual, torch.Tensor) else hidden + residual


def _arg(args: tuple[Any, ...], kwargs: dict[str, Any], index: int, name: str) -> Any:
    if name in kwargs:
        return kwargs[name]
    return args[index] if len(args) > index else None


@dataclass(frozen=True)
class Placement:
    """Where this process sits in the engine's parallel layout."""

    rank: int  # global rank (torch.distributed), 0 when not distributed
    tp_rank: int
    tp_size: int
    sequence_parallel: bool  # sequence-parallel MoE: MoE layers output token shards

    @property
    def judges(self) -> bool:
        """TP rank 0 records and judges for its TP group (see the module docstring)."""
        return self.tp_rank == 0

    @property
    def label(self) -> str:
        tp = f", TP {self.tp_rank}/{self.tp_size}" if self.tp_size > 1 else ""
        return f"rank {self.rank}{tp}"


def placement_of(runner: Any) -> Placement:
    parallel = runner.vllm_config.parallel_config
    tp_size = int(getattr(parallel, "tensor_parallel_size", 1) or 1)
    tp_rank = 0
    if tp_size > 1:
        from vllm.distributed.parallel_state import get_tensor_model_parallel_rank

        tp_rank = int(get_tensor_model_parallel_rank())
    dist = torch.distributed
    rank = dist.get_rank() if dist.is_available() and dist.is_initialized() else 0
    sp = bool(getattr(parallel, "use_sequence_parallel_moe", False))
    return Placement(rank, tp_rank, tp_size, sp and tp_size > 1)


def _is_dummy(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """V2 ``execute_model(scheduler_output, intermediate_tensors, dummy_run, ...)``."""
    return bool(kwargs.get("dummy_run", args[1] if len(args) > 1 else False))


def _row_bounds(batch: Any) -> tuple[str, int, int] | None:
    """The first request of a V2 ``InputBatch`` (batch order): its id and token rows."""
    req_ids = list(getattr(batch, "req_ids", None) or ())
    starts = getattr(batch, "query_start_loc_np", None)
    if not req_ids or starts is None or len(starts) < 2:
        return None
    return str(req_ids[0]), int(starts[0]), int(starts[1])


@dataclass
class Session:
    """One engine process's observation of its first prefill."""

    settings: Settings
    log: Any  # a logging.Logger
    runner: Any
    runner_kind: str  # "v1" or "v2"
    placement: Placement
    target: Any  # vLLM's model classes (nn.Module subclasses with engine attributes)
    holder: Any
    drafter: Any
    num_layers: int
    hidden_size: int
    collected: tuple[int, ...]  # boundaries vLLM collects (its aux_hidden_state_layers)
    fc_states: int | None
    configured: dict[str, Any]
    where: str  # "vllm==0.32.0:v1, llama.py:LlamaForCausalLM"
    convention: str  # "vllm==0.32.0:v1"
    expected: tuple[int, ...] | None
    claim: str
    fix: Callable[[Sequence[int], int], str] = no_release_fix  # proven_fix_for the release
    answers: str = ""  # the table the fix is searched with: the installed code's
    state: str = "waiting"  # waiting -> recorded -> done
    input_ids: torch.Tensor | None = None
    positions: torch.Tensor | None = None
    states: dict[int, torch.Tensor] = field(default_factory=dict)
    final_norm: torch.Tensor | None = None
    forwards: int = 0
    bypassed: set[str] = field(default_factory=set)  # graph modes run eagerly for the step
    rows: tuple[str, int, int] | None = None  # V2: first request (id, start, end), batch order
    unsupported: str | None = None  # a runner feature seen at the first step the plugin lacks
    seconds: float = 0.0  # time spent in the plugin's own work (hooks, dump, verdict)
    verdict: GuardVerdict | None = None
    dump_path: Path | None = None

    def head(self) -> str:
        return f"{PREFIX} [{self.where}, {self.placement.label}]"

    def cannot_observe(self, why: str, what: str) -> None:
        """An incomplete observation: one line, never a verdict, never raised."""
        where = f"{self.where}, {self.placement.label}"
        self.log.warning("%s", cannot_observe_line(where, why, what))

    # -- the recorded step ------------------------------------------------------------------
    def wrap_execute(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def execute_model(scheduler_output: Any, *args: Any, **kwargs: Any) -> Any:
            tokens = getattr(scheduler_output, "total_num_scheduled_tokens", 0) or 0
            if self.state != "waiting" or tokens <= 0 or _is_dummy(args, kwargs):
                return original(scheduler_output, *args, **kwargs)
            self.unsupported = self._unsupported_feature()
            if self.unsupported:
                self.state = "done"
                self.cannot_observe(self.unsupported, "serving continues unobserved")
                return original(scheduler_output, *args, **kwargs)
            handles, restore = self._arm()
            try:
                out = original(scheduler_output, *args, **kwargs)
                if self.runner_kind == "v2":
                    state = getattr(self.runner, "execute_model_state", None)
                    self.rows = _row_bounds(getattr(state, "input_batch", None))
                return out
            except Exception as exc:
                self.log.warning(
                    "%s: the target's first prefill raised %s", self.head(), one_line(exc)[:300]
                )
                raise
            finally:
                for handle in handles:
                    handle.remove()
                restore()
                self.state = "recorded"

        return execute_model

    def _unsupported_feature(self) -> str | None:
        """V2 features set up after ``load_model`` whose row layout the plugin does not read."""
        if self.runner_kind != "v2":
            return None
        if getattr(self.runner, "pcp_manager", None) is not None:
            return (
                "model runner V2 with prefill context parallelism partitions the prefill rows "
                "(pcp_manager), which the plugin does not map"
            )
        if getattr(self.runner, "ubatch_runner", None) is not None:
            return (
                "model runner V2 with micro-batching (ubatch_runner) runs the target twice per "
                "step, which the plugin does not join"
            )
        return None

    def _arm(self) -> tuple[list[Any], Callable[[], None]]:
        start = time.perf_counter()
        # the target's top module: the inner model's class __call__ is replaced by
        # @support_torch_compile (decorators.py:524), which bypasses its module hooks
        handles = [self.target.register_forward_pre_hook(self._on_input, with_kwargs=True)]
        if self.settings.guard:
            layers = list(self.holder.layers)
            handles.append(layers[0].register_forward_pre_hook(self._on_entry, with_kwargs=True))
            for i, layer in enumerate(layers):
                handles.append(layer.register_forward_hook(self._layer_hook(i)))
            norm = getattr(self.holder, "norm", None)
            if isinstance(norm, nn.Module):
                handles.append(norm.register_forward_hook(self._on_norm))
        compiled = getattr(self.holder, "do_not_compile", True) is False
        if compiled:  # run this one step eagerly so the hooks fire
            self.holder.do_not_compile = True
            self.bypassed.add("torch.compile")
        manager: Any = getattr(self.runner, "cudagraph_manager", None)
        own = vars(manager) if manager is not None and hasattr(manager, "__dict__") else None
        previous = own.get("dispatch") if own is not None else None
        if own is not None and callable(getattr(manager, "dispatch", None)):
            manager.dispatch = self._eager_dispatch(manager.dispatch)

        def restore() -> None:
            if compiled:
                self.holder.do_not_compile = False
            if own is not None and "dispatch" in own:
                if previous is None:
                    del manager.dispatch
                else:
                    manager.dispatch = previous

        self.seconds += time.perf_counter() - start
        return handles, restore

    def _eager_dispatch(self, original: Callable[..., Any]) -> Callable[..., Any]:
        """V2's ``dispatch`` for the recorded step: what vLLM would run, turned into the eager
        descriptor it returns when no graph fits (``cudagraph_utils.py:539-545``)."""

        def dispatch(num_reqs: int, num_tokens: int, *args: Any, **kwargs: Any) -> Any:
            desc = original(num_reqs, num_tokens, *args, **kwargs)
            mode = getattr(desc, "cg_mode", None)
            if mode is None or getattr(mode, "name", "NONE") == "NONE":
                return desc
            self.bypassed.add(f"CUDA graph {mode.name}")
            return type(desc)(
                cg_mode=type(mode).NONE,
                num_tokens=num_tokens,
                num_reqs=num_reqs,
                num_active_loras=getattr(desc, "num_active_loras", 0),
                num_ubatches=getattr(desc, "num_ubatches", 1),
            )

        return dispatch

    def _keep(self, t: torch.Tensor) -> torch.Tensor:
        start = time.perf_counter()
        kept = t[: self.settings.guard_tokens].detach().to("cpu", copy=True)
        self.seconds += time.perf_counter() - start
        return kept

    def _on_input(self, module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        self.forwards += 1
        if self.forwards != 1:
            return
        ids = _arg(args, kwargs, 0, "input_ids")
        pos = _arg(args, kwargs, 1, "positions")
        self.input_ids = (
            ids.detach().to("cpu", copy=True) if isinstance(ids, torch.Tensor) else None
        )
        self.positions = (
            pos.detach().to("cpu", copy=True) if isinstance(pos, torch.Tensor) else None
        )

    def _on_entry(self, module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        if self.forwards == 1:
            stream = _stream(
                _arg(args, kwargs, 1, "hidden_states"), _arg(args, kwargs, 2, "residual")
            )
            if stream is not None:
                self.states[EMBEDDING] = self._keep(stream)

    def _layer_hook(self, index: int) -> Callable[..., None]:
        def hook(module: nn.Module, args: tuple[Any, ...], output: Any) -> None:
            if self.forwards != 1:
                return
            if isinstance(output, (tuple, list)) and len(output) == 2:
                stream = _stream(output[0], output[1])
            else:
                stream = _stream(output, None)
            if stream is not None:
                self.states[index] = self._keep(stream)

        return hook

    def _on_norm(self, module: nn.Module, args: tuple[Any, ...], output: Any) -> None:
        if self.forwards == 1 and self.final_norm is None:
            out = output[0] if isinstance(output, (tuple, list)) else output
            if isinstance(out, torch.Tensor):
                self.final_norm = self._keep(out)

    # -- the drafter's input ------------------------------------------------------------------
    def wrap_combine(self, original: Callable[[torch.Tensor], torch.Tensor]) -> Callable[..., Any]:
        def combine_hidden_states(hidden_states: torch.Tensor) -> torch.Tensor:
            if self.state == "recorded":
                self.state = "done"
                start = time.perf_counter()
                try:
                    self.observe(hidden_states)
                except WiringMismatch:
                    raise
                except Exception as exc:  # ours, not a proven mismatch: never stop serving
                    self.cannot_observe(
                        f"the drafter input could not be read ({one_line(exc)[:300]})",
                        "serving continues",
                    )
                finally:
                    self.seconds += time.perf_counter() - start
            return original(hidden_states)

        return combine_hidden_states

    def observe(self, captured: torch.Tensor) -> None:
        if captured.dim() != 2:
            self.cannot_observe(
                f"the drafter input has shape {list(captured.shape)}, not [T, k*H]",
                "serving continues",
            )
            return
        if self.forwards == 0:
            self.cannot_observe(
                "the first prefill ran as a CUDA-graph replay: no module forward of the target "
                "ran, so neither its inputs nor its layers were seen",
                "set enforce_eager=True (or compilation_config cudagraph_mode PIECEWISE) to "
                "observe it",
            )
            return
        if self.settings.dump_dir:
            self.dump(captured)
        if self.settings.guard:
            self.guard(captured)

    def dump(self, captured: torch.Tensor) -> None:
        from eagle3_contracts.dumps.format import write_dump

        start, end = (0, int(captured.shape[0])) if self.rows is None else self.rows[1:]
        rows = captured[start:end]
        tokens = int(rows.shape[0])
        if self.input_ids is None or int(self.input_ids.shape[0]) < end:
            self.cannot_observe(
                "the first prefill's token ids were not recorded", "no dump written"
            )
            return
        claimed = [b for b in sorted(set(self.collected)) if 0 <= b <= self.num_layers]
        positions = [] if self.positions is None else self.positions[..., start:end].tolist()
        metadata = {
            "engine": "vllm",
            "model_file": self.where.split(", ", 1)[1],
            "configured_layer_ids": json.dumps(self.configured),
            "collected_boundaries": json.dumps(list(self.collected)),
            "fc_states": json.dumps(self.fc_states),
            "num_layers": str(self.num_layers),
            "positions": json.dumps(positions),
        }
        if self.rows is not None:
            metadata["request"] = json.dumps(
                {"id": self.rows[0], "rows": [start, end], "order": "V2 input batch"}
            )
        directory = Path(self.settings.dump_dir or ".")
        path = directory / f"vllm-drafter-input-{os.getpid()}-{time.time_ns()}.safetensors"
        try:
            directory.mkdir(parents=True, exist_ok=True)
            self.dump_path = write_dump(
                path,
                rows.detach(),
                self.input_ids[start:end],
                layer_ids=claimed,
                convention=self.convention,
                system=f"{self.convention} drafter fc input (eagle3-contracts vLLM plugin)",
                hidden_size=self.hidden_size,
                extra_metadata=metadata,
            )
        except Exception as exc:  # a full disk, safetensors' own error: never the verdict
            self.log.warning(
                "%s dump: cannot write %s (%s); dumping off, serving continues",
                self.head(),
                directory,
                getattr(exc, "strerror", None) or one_line(exc)[:300],
            )
            return
        self.log.info(
            "%s dump: wrote %s (%d tokens, %d x %d, boundaries %s as %s)",
            self.head(),
            self.dump_path,
            tokens,
            captured.shape[-1] // self.hidden_size,
            self.hidden_size,
            claimed,
            self.convention,
        )

    def _comparable(self, captured: torch.Tensor) -> tuple[Recorded, torch.Tensor, str] | str:
        """The recording and the drafter input on the same token rows, or why they cannot be."""
        wanted = set(range(EMBEDDING, self.num_layers))
        missing = sorted(wanted - set(self.states))
        if missing:
            shown = ", ".join(str(m) for m in missing[:8]) + ("..." if len(missing) > 8 else "")
            return (
                f"the target's layers ran without their Python forward for canonical "
                f"{shown} (a graph replay or a layer path the plugin does not hook)"
            )
        counts = {int(t.shape[0]) for t in self.states.values()}
        rows = min(counts | {int(captured.shape[0])})
        note = ""
        if len(counts) > 1:
            if not self.placement.sequence_parallel:
                return (
                    f"the layers returned different token counts ({sorted(counts)}): this "
                    f"rank saw token shards the plugin cannot place"
                )
            # TP rank 0's shard is rows [0, ceil(T/tp)) (models/utils.py:1084-1102)
            note = (
                f" (sequence-parallel MoE: compared on TP rank 0's shard, the first {rows} tokens)"
            )
        states = {k: v[:rows] for k, v in self.states.items()}
        norm = None if self.final_norm is None else self.final_norm[:rows]
        return Recorded(states, self.num_layers, norm), captured[:rows], note

    def guard(self, captured: torch.Tensor) -> None:
        start = time.perf_counter()
        found_rows = self._comparable(captured.detach().to("cpu"))
        if isinstance(found_rows, str):
            self.cannot_observe(found_rows, "the guard does not judge; serving continues")
            return
        recorded, rows, note = found_rows
        found = identify_recorded(rows, recorded, self.hidden_size)
        self.verdict = judge(
            found,
            expected=self.expected,
            claim=self.claim + note,
            fc_states=self.fc_states,
            where=self.where,
            fix=self.fix,
        )
        cost = self.seconds + time.perf_counter() - start  # hooks, copies, identification
        eager = f"; ran eagerly: {', '.join(sorted(self.bypassed))}" if self.bypassed else ""
        line = f"{self.verdict.line} [{self.placement.label}; guard: {cost * 1e3:.1f} ms in this prefill{eager}]"
        if self.verdict.ok:
            self.log.info("%s", line)
            return
        self.log.warning("%s", line)
        if self.settings.strict and self.verdict.status == "mismatch":
            raise WiringMismatch(self.verdict.line)


def predict_at_start(session: Session) -> None:
    """Before any request: what vLLM's own aux-layer list will feed (boundary ``b`` is
    canonical ``b - 1``; ``interfaces.py:1601-1611``), against the fc width and the claim.
    A certain mismatch is one warning line; ``strict`` refuses to start on it."""
    n = session.num_layers
    predicted = tuple(from_boundary(b, n) for b in sorted(set(session.collected)) if 0 <= b <= n)
    problems = []
    if session.fc_states is not None and session.fc_states != len(predicted):
        problems.append(
            f"fc is built for {session.fc_states} states but vLLM collects {len(predicted)} "
            f"(boundaries {list(session.collected)} of {n} layers): it crashes at the first "
            f"speculative step"
        )
    if session.expected is not None and predicted != session.expected:
        problems.append(
            f"vLLM will feed canonical {list(predicted)}, trained on {list(session.expected)}; "
            f"fix: {session.fix(session.expected, n)}"
        )
    if not problems:
        return
    line = (
        f"{PREFIX} guard [{session.where}]: MISMATCH predicted at start-up ({session.claim}): "
        f"{'; '.join(problems)}"
    )
    session.log.warning("%s [%s]", line, session.placement.label)
    if session.settings.strict:
        raise WiringMismatch(f"{line} (EAGLE3_CONTRACTS_GUARD=strict: refusing to start)")


RUNNER_NAMES = {"v1": "model runner V1", "v2": "model runner V2"}


def _not_applicable(log: Any, where: str, reason: str) -> None:
    log.info("%s", not_applicable_line(where, reason))


def _drafter_of(runner: Any, runner_kind: str) -> Any:
    """V1: ``runner.drafter.model``; V2: ``runner.speculator.model``."""
    owner = getattr(runner, "speculator" if runner_kind == "v2" else "drafter", None)
    drafter: Any = getattr(owner, "model", None)
    if drafter is not None and hasattr(drafter, "unwrap"):
        drafter = drafter.unwrap()
    return drafter


def _method_of(spec: Any) -> str:
    """`` (a DFlash drafter)``: the drafter's method as ``check`` detects it, for the line of a
    speculative method the plugin does not observe (vLLM V2's DFlash speculator stages part of
    the prefill's aux states for its graph before ``combine_hidden_states``,
    ``v1/worker/gpu/spec_decode/dflash/speculator.py:405-418``: the call sees some rows only)."""
    config = getattr(getattr(spec, "draft_model_config", None), "hf_config", None)
    to_dict = getattr(config, "to_dict", None)
    if not callable(to_dict):
        return ""
    from eagle3_contracts.conventions import methods

    try:
        return f" (a {methods.detect(dict(to_dict())).label} drafter, checked by `check`)"
    except Exception:  # a config check cannot read is check's to report, not the plugin's
        return ""


def attach(runner: Any, settings: Settings, log: Any, runner_kind: str) -> Session | None:
    """Attach to a loaded model runner: one start line either way (armed, or not applicable
    with the reason); ``None`` when not applicable."""
    import vllm

    release = str(vllm.__version__).split("+", 1)[0]
    placement = placement_of(runner)
    label = f"vllm=={vllm.__version__}:{runner_kind}, {placement.label}"
    runner_name = f"{RUNNER_NAMES[runner_kind]} ({type(runner).__name__})"
    reason = unchecked("vllm", str(vllm.__version__))
    if reason is not None:
        _not_applicable(log, label, reason)
        return None
    spec = getattr(runner, "speculative_config", None)
    method = getattr(spec, "method", None)
    if spec is None or method != "eagle3":
        what = "no speculative decoding" if spec is None else f"speculative method {method!r}"
        _not_applicable(log, label, f"{what}, not an EAGLE-3 drafter{_method_of(spec)}")
        return None
    pp = runner.vllm_config.parallel_config.pipeline_parallel_size
    if pp > 1:
        _not_applicable(
            log,
            label,
            f"pipeline parallel ({pp} stages): the target's layers and the drafter are on "
            "different processes, which the plugin does not join",
        )
        return None
    drafter = _drafter_of(runner, runner_kind)
    if not isinstance(drafter, nn.Module) or not hasattr(drafter, "combine_hidden_states"):
        _not_applicable(
            log, label, f"the drafter {type(drafter).__name__} has no combine_hidden_states"
        )
        return None
    if not placement.judges:
        log.info(
            "%s",
            armed_line(
                label,
                guard=settings.guard,
                dump=settings.dump_dir,
                runner=f"{runner_name}, not recording on this rank",
                records=(
                    f"nothing here: TP rank 0 of {placement.tp_size} records and judges for the "
                    "group (every TP rank holds the same all-reduced residual stream; under "
                    "sequence-parallel MoE rank 0's layer shard is the first tokens)"
                ),
            ),
        )
        return None
    target = runner.get_model()
    holder = inner_model(target)
    layers = getattr(holder, "layers", None)
    if layers is None:
        raise ContractError(f"{type(holder).__name__} has no decoder layers to observe")
    draft_cfg = spec.draft_model_config.hf_config
    target_cfg = runner.model_config.hf_config
    text_cfg = (
        target_cfg.get_text_config() if hasattr(target_cfg, "get_text_config") else target_cfg
    )
    hidden = int(getattr(draft_cfg, "target_hidden_size", None) or text_cfg.hidden_size)
    fc_states = getattr(getattr(drafter, "model", None), "num_aux_hidden_states", None)
    convention = engine_name("vllm", vllm.__version__, runner_kind)
    expected, claim = guard_claim(
        draft_cfg.to_dict(), target_cfg.to_dict(), settings, where="the drafter's config.json"
    )
    answers = convention
    if settings.guard:
        answers, _ = guard_start(
            log,
            label,
            ("vllm", release, f":{runner_kind}"),
            settings,
            draft_cfg.to_dict,
            target_cfg.to_dict(),
            claim_where="the drafter's config.json",
        )
    session = Session(
        settings=settings,
        log=log,
        runner=runner,
        runner_kind=runner_kind,
        placement=placement,
        target=target,
        holder=holder,
        drafter=drafter,
        num_layers=len(layers),
        hidden_size=hidden,
        collected=tuple(getattr(holder, "aux_hidden_state_layers", ()) or ()),
        fc_states=int(fc_states) if isinstance(fc_states, int) else None,
        configured=configured_ids(draft_cfg),
        where=f"{convention}, {model_file(target)}",
        convention=convention,
        expected=expected,
        claim=claim,
        fix=proven_fix_for(answers, draft_cfg.to_dict(), target_cfg.to_dict()),
        answers=answers,
    )
    if settings.guard:
        predict_at_start(session)
    session.drafter.combine_hidden_states = session.wrap_combine(
        session.drafter.combine_hidden_states
    )
    runner.execute_model = session.wrap_execute(runner.execute_model)
    log.info("%s", armed(session, runner_name))
    return session


def armed(session: Session, runner_name: str) -> str:
    """The start line of a recording rank: engine, release, runner, mode, what is recorded."""
    settings = session.settings
    drafter_input = (
        "runner.speculator.model.combine_hidden_states"
        if session.runner_kind == "v2"
        else "runner.drafter.model.combine_hidden_states"
    )
    records = f"at the first real prefill, the drafter's input (the argument of {drafter_input})"
    if settings.guard:
        records += (
            f" and the target's residual stream at canonical -1..{session.num_layers - 1} "
            f"(first {settings.guard_tokens} tokens)"
        )
    if session.placement.sequence_parallel:
        records += ", judged on this rank's sequence-parallel shard (the first tokens)"
    records += (
        f"; collects boundaries {list(session.collected)}, fc built for {session.fc_states} "
        f"states; {session.claim}"
    )
    return armed_line(
        f"{session.where}, {session.placement.label}",
        guard=settings.guard,
        dump=settings.dump_dir,
        runner=(
            f"{runner_name}; dummy runs skipped; the recorded step runs eagerly (torch.compile "
            "and CUDA graphs bypassed for that step only)"
        ),
        records=records,
    )
