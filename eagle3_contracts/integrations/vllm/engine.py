"""Inside the engine: attach to vLLM's model runner, observe the first prefill, dump and guard.

Loaded only when ``EAGLE3_CONTRACTS_DUMP`` or ``EAGLE3_CONTRACTS_GUARD`` is set (see
``eagle3_contracts.integrations.vllm``). Facts of vLLM 0.32.0 this relies on (file:line of
the installed wheel):

* ``v1/worker/gpu_model_runner.py:5230-5249`` ``_setup_eagle3_aux_hidden_state_outputs`` runs
  once after the target and the drafter are loaded (``cpu_model_runner.py:62-78`` on CPU): the
  plugin wraps it to attach.
* ``model_executor/models/interfaces.py:1577-1578`` ``_set_aux_hidden_state_layers`` stores
  ``tuple(sorted(set(layers)))``; ``1601-1611`` ``_maybe_add_hidden_state`` appends
  ``hidden + residual`` at boundary 0 before the layer loop and ``idx + 1`` after each layer
  (``llama.py:428-441``, ``qwen2.py:423-434``, ``qwen3_moe.py:505-515``).
* ``v1/spec_decode/llm_base_proposer.py:536-552`` ``propose`` calls
  ``self.model.combine_hidden_states(target_hidden_states)``: its argument is exactly the
  concatenation the drafter's ``fc`` receives (``llama_eagle3.py:396-418``); the plugin wraps
  that method on the drafter instance, so it sees the tensor before the fc (whose weight reads
  empty on CPU after oneDNN repacking) and before any crash inside it.
* ``compilation/decorators.py:524-529``: a ``@support_torch_compile`` model with
  ``do_not_compile`` set runs its eager ``forward``; the plugin sets it for the one recorded
  step only, so module hooks fire even where the target is compiled, and removes the hooks
  before the next step.

The plugin never raises inside the engine unless the guard is ``strict``.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from eagle3_contracts.conventions.hf import TOP_LEVEL as IDS_FIELD
from eagle3_contracts.conventions.names import engine_name
from eagle3_contracts.errors import ContractError
from eagle3_contracts.integrations.vllm.settings import Settings
from eagle3_contracts.integrations.vllm.verdict import (
    GuardVerdict,
    Recorded,
    WiringMismatch,
    identify_recorded,
    judge,
    vllm_fix,
)
from eagle3_contracts.layer_ids import EMBEDDING
from eagle3_contracts.stamp import ENV_TRAINED_WITH, STAMP_KEY, parse_stamp

PREFIX = "eagle3-contracts"


def one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


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
    """The drafter's ids as configured (both places vLLM may read) and ``num_aux_hidden_states``."""
    nested = getattr(hf_config, "eagle_config", None)
    return {
        "top_level": getattr(hf_config, IDS_FIELD, None),
        "nested": nested.get(IDS_FIELD) if isinstance(nested, dict) else None,
        "num_aux_hidden_states": getattr(hf_config, "num_aux_hidden_states", None),
    }


def _stream(hidden: Any, residual: Any) -> torch.Tensor | None:
    if not isinstance(hidden, torch.Tensor):
        return None
    return hidden if not isinstance(residual, torch.Tensor) else hidden + residual


def _arg(args: tuple[Any, ...], kwargs: dict[str, Any], index: int, name: str) -> Any:
    if name in kwargs:
        return kwargs[name]
    return args[index] if len(args) > index else None


@dataclass
class Session:
    """One engine process's observation of its first prefill."""

    settings: Settings
    log: Any  # a logging.Logger
    runner: Any
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
    state: str = "waiting"  # waiting -> recorded -> done
    input_ids: torch.Tensor | None = None
    positions: torch.Tensor | None = None
    states: dict[int, torch.Tensor] = field(default_factory=dict)
    final_norm: torch.Tensor | None = None
    forwards: int = 0
    seconds: float = 0.0  # time spent in the plugin's own work (hooks, dump, verdict)
    verdict: GuardVerdict | None = None
    dump_path: Path | None = None

    # -- the recorded step ------------------------------------------------------------------
    def wrap_execute(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def execute_model(scheduler_output: Any, *args: Any, **kwargs: Any) -> Any:
            tokens = getattr(scheduler_output, "total_num_scheduled_tokens", 0) or 0
            if self.state != "waiting" or tokens <= 0:
                return original(scheduler_output, *args, **kwargs)
            handles, restore = self._arm()
            try:
                return original(scheduler_output, *args, **kwargs)
            except Exception as exc:
                self.log.warning(
                    "%s: the target's first prefill raised %s", PREFIX, one_line(exc)[:300]
                )
                raise
            finally:
                for handle in handles:
                    handle.remove()
                restore()
                self.state = "recorded"

        return execute_model

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

        def restore() -> None:
            if compiled:
                self.holder.do_not_compile = False

        if compiled:  # run this one step eagerly so the hooks fire
            self.holder.do_not_compile = True
        self.seconds += time.perf_counter() - start
        return handles, restore

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
                except Exception as exc:
                    if self.settings.strict:
                        raise WiringMismatch(
                            f"{PREFIX} guard (strict): could not verify the wiring: {one_line(exc)}"
                        ) from exc
                    self.log.warning(
                        "%s: could not observe the drafter input (%s); serving continues",
                        PREFIX,
                        one_line(exc),
                    )
                finally:
                    self.seconds += time.perf_counter() - start
            return original(hidden_states)

        return combine_hidden_states

    def observe(self, captured: torch.Tensor) -> None:
        if captured.dim() != 2:
            raise ContractError(f"drafter input has shape {list(captured.shape)}, not [T, k*H]")
        if self.settings.dump_dir:
            self.dump(captured)
        if self.settings.guard:
            self.guard(captured)

    def dump(self, captured: torch.Tensor) -> None:
        from eagle3_contracts.dumps.format import write_dump

        tokens = int(captured.shape[0])
        if self.input_ids is None or int(self.input_ids.shape[0]) < tokens:
            raise ContractError("the first prefill's token ids were not recorded")
        claimed = [b for b in sorted(set(self.collected)) if 0 <= b <= self.num_layers]
        metadata = {
            "engine": "vllm",
            "model_file": self.where.split(", ", 1)[1],
            "configured_layer_ids": json.dumps(self.configured),
            "collected_boundaries": json.dumps(list(self.collected)),
            "fc_states": json.dumps(self.fc_states),
            "num_layers": str(self.num_layers),
            "positions": json.dumps(
                [] if self.positions is None else self.positions[..., :tokens].tolist()
            ),
        }
        directory = Path(self.settings.dump_dir or ".")
        path = directory / f"vllm-drafter-input-{os.getpid()}-{time.time_ns()}.safetensors"
        try:
            directory.mkdir(parents=True, exist_ok=True)
            self.dump_path = write_dump(
                path,
                captured.detach(),
                self.input_ids[:tokens],
                layer_ids=claimed,
                convention=self.convention,
                system=f"{self.convention} drafter fc input (eagle3-contracts vLLM plugin)",
                hidden_size=self.hidden_size,
                extra_metadata=metadata,
            )
        except OSError as exc:
            self.log.warning(
                "%s dump: cannot write %s (%s); dumping off, serving continues",
                PREFIX,
                directory,
                exc.strerror or one_line(exc),
            )
            return
        self.log.info(
            "%s dump: wrote %s (%d tokens, %d x %d, boundaries %s as %s)",
            PREFIX,
            self.dump_path,
            tokens,
            captured.shape[-1] // self.hidden_size,
            self.hidden_size,
            claimed,
            self.convention,
        )

    def guard(self, captured: torch.Tensor) -> None:
        start = time.perf_counter()
        recorded = Recorded(dict(self.states), self.num_layers, self.final_norm)
        found = identify_recorded(captured.detach().to("cpu"), recorded, self.hidden_size)
        self.verdict = judge(
            found,
            expected=self.expected,
            claim=self.claim,
            fc_states=self.fc_states,
            where=self.where,
        )
        cost = self.seconds + time.perf_counter() - start  # hooks, copies, identification
        line = f"{self.verdict.line} [guard: {cost * 1e3:.1f} ms in this prefill]"
        if self.verdict.ok:
            self.log.info("%s", line)
            return
        self.log.warning("%s", line)
        if self.settings.strict:
            raise WiringMismatch(self.verdict.line)


def _claim(
    draft_cfg: Any, target_cfg: Any, settings: Settings
) -> tuple[tuple[int, ...] | None, str]:
    """The trained canonical ids and a phrase saying where they come from."""
    stamp = parse_stamp(getattr(draft_cfg, STAMP_KEY, None), source="drafter config.json")
    if stamp is not None:
        return (
            stamp.layer_ids,
            f"stamp in the drafter's config.json, trained with {stamp.trained_with}",
        )
    if settings.trained_with:
        from eagle3_contracts.config.plan import resolve

        plan = resolve(draft_cfg.to_dict(), target_cfg.to_dict(), settings.trained_with)
        return plan.layer_ids, f"no stamp; {ENV_TRAINED_WITH}={settings.trained_with}"
    return None, f"no stamp and no {ENV_TRAINED_WITH}: the trained layers are unknown"


def predict_at_start(session: Session) -> None:
    """Before any request: what vLLM's own aux-layer list will feed (boundary ``b`` is
    canonical ``b - 1``; ``interfaces.py:1601-1611``), against the fc width and the claim.
    A certain mismatch is one warning line; ``strict`` refuses to start on it."""
    n = session.num_layers
    predicted = tuple(b - 1 for b in sorted(set(session.collected)) if 0 <= b <= n)
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
            f"fix: {vllm_fix(session.expected, n)}"
        )
    if not problems:
        return
    line = (
        f"{PREFIX} guard [{session.where}]: MISMATCH predicted at start-up ({session.claim}): "
        f"{'; '.join(problems)}"
    )
    session.log.warning("%s", line)
    if session.settings.strict:
        raise WiringMismatch(f"{line} (EAGLE3_CONTRACTS_GUARD=strict: refusing to start)")


def attach(runner: Any, settings: Settings, log: Any, runner_kind: str) -> Session | None:
    """Attach to a loaded model runner; ``None`` (one log line) when not applicable."""
    import vllm

    spec = getattr(runner, "speculative_config", None)
    method = getattr(spec, "method", None)
    if spec is None or method != "eagle3":
        what = "no speculative decoding" if spec is None else f"speculative method {method!r}"
        log.info("%s: not applicable (%s, not an EAGLE-3 drafter); vLLM untouched", PREFIX, what)
        return None
    drafter: Any = getattr(getattr(runner, "drafter", None), "model", None)
    if drafter is not None and hasattr(drafter, "unwrap"):
        drafter = drafter.unwrap()
    if not isinstance(drafter, nn.Module) or not hasattr(drafter, "combine_hidden_states"):
        log.info("%s: not applicable (the drafter has no combine_hidden_states)", PREFIX)
        return None
    target = runner.get_model()
    holder = inner_model(target)
    layers = getattr(holder, "layers", None)
    if layers is None:
        raise ContractError(f"{type(holder).__name__} has no decoder layers to observe")
    pp = runner.vllm_config.parallel_config.pipeline_parallel_size
    if pp > 1 and settings.guard:
        raise ContractError(
            "the guard records one process's layers: pipeline parallel is unsupported"
        )
    draft_cfg = spec.draft_model_config.hf_config
    target_cfg = runner.model_config.hf_config
    text_cfg = (
        target_cfg.get_text_config() if hasattr(target_cfg, "get_text_config") else target_cfg
    )
    hidden = int(getattr(draft_cfg, "target_hidden_size", None) or text_cfg.hidden_size)
    fc_states = getattr(getattr(drafter, "model", None), "num_aux_hidden_states", None)
    convention = engine_name("vllm", vllm.__version__, runner_kind)
    expected, claim = _claim(draft_cfg, target_cfg, settings)
    session = Session(
        settings=settings,
        log=log,
        runner=runner,
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
    )
    if settings.guard:
        predict_at_start(session)
    session.drafter.combine_hidden_states = session.wrap_combine(
        session.drafter.combine_hidden_states
    )
    runner.execute_model = session.wrap_execute(runner.execute_model)
    wanted = " and ".join(
        x
        for x in (
            f"dump to {settings.dump_dir}" if settings.dump_dir else "",
            f"guard ({settings.guard})" if settings.guard else "",
        )
        if x
    )
    log.info(
        "%s: attached to %s (collects boundaries %s, fc built for %s states; %s): %s at the "
        "first prefill",
        PREFIX,
        session.where,
        list(session.collected),
        session.fc_states,
        claim,
        wanted,
    )
    return session
