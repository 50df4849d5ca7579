"""Inside an SGLang scheduler process: the ``--forward-hooks`` factory, dump and guard.

SGLang facts this relies on (0.5.23 wheel, ``sglang/srt/``; the hook mechanics are the same in
0.5.12, 0.5.13, 0.5.14 and 0.5.17):

* ``model_executor/hook_manager.py`` ``register_forward_hooks``: ``hook_factory(config)`` per
  spec, the hook registered with ``register_forward_hook`` on every matching module; a factory
  returning ``None`` registers nothing (so the hooks cost nothing unless asked for). 0.5.23
  calls it from ``model_runner_components/cuda_graph_setup.py:452-459``
  ``finalize_cuda_graph_capture(model_runner)``, after every graph is captured: the factory
  finds that ``model_runner`` among its callers' locals (``find_model_runner``).
* ``LogitsProcessor.forward(input_ids, hidden_states, lm_head, forward_batch,
  aux_hidden_states)``: ``aux_hidden_states`` (a list of ``[T, H]`` or one packed ``[T, k*H]``)
  is what the target hands the drafter.
* Prefill CUDA graphs: on CUDA the prefill backend defaults to ``breakable``
  (``model_executor/cuda_graph_config.py:119`` ``default_prefill_backend``). A replayed prefill
  swaps the layer stack's ``forward`` for the graph replay
  (``runner/prefill_cuda_graph_runner.py:2213-2214``) and runs the outer ``model.forward``
  eagerly (``:2249``): the logits-processor hook fires, the embedding and layer hooks do not.
  ``model_runner.py:2036-2061`` replays only when ``PrefillCudaGraphRunner.can_run_graph`` is
  true, which asks ``can_replay_locally`` (``prefill_cuda_graph_runner.py:1450``); the
  attention-DP vote asks the same method (``managers/scheduler_components/dp_attn.py:456``),
  so every DP rank takes the same path. The guard makes ``can_replay_locally`` answer False
  until its first prefill is recorded (that prefill runs on the eager runner, every hook
  fires), then removes its wrapper: later prefills replay as before.
* Deferred sums under TP (``layers/layer_boundary/exit.py``): a layer's output may be an
  opaque handle whose contribution is still an ``UnreducedOutput``. The stream after the layer
  is ``forward_batch.residual_stream.snapshot(handle)`` (``residual/stream.py:209``): the
  owed sum completed on a copy (an all-reduce over the TP group, on every rank in the same
  layer order) plus the residual. That is how SGLang's own capture reads a captured layer
  (``layer_boundary/stage.py:299-319`` ``capture_output``), so the guard compares like with
  like: full streams against the full aux states, on every rank.
* Otherwise a decoder layer returns the residual stream, or ``(hidden, residual)`` whose sum
  is the stream (fused residual). The per-release model-level suite (``tests/engines/sglang``)
  checks, per model file, that the recorded stream equals HF's ``hidden_states``.
"""

from __future__ import annotations

import functools
import logging
import os
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from eagle3_contracts.config.readers import DraftConfig, read_draft_config
from eagle3_contracts.conventions import engine_name
from eagle3_contracts.errors import ConfigError, ContractError, ContractViolation
from eagle3_contracts.integrations._guard.claim import guard_claim
from eagle3_contracts.integrations._guard.report import (
    PREFIX,
    armed_line,
    cannot_observe_line,
    not_applicable_line,
    one_line,
)
from eagle3_contracts.integrations._guard.settings import CHECKED_RELEASES as _CHECKED
from eagle3_contracts.integrations._guard.settings import Settings, read_settings, unchecked
from eagle3_contracts.integrations._guard.start import guard_start
from eagle3_contracts.integrations._guard.verdict import (
    GuardVerdict,
    Recorded,
    WiringMismatch,
    identify_recorded,
    judge,
    proven_fix_for,
)
from eagle3_contracts.integrations.sglang import draft_problem
from eagle3_contracts.layer_ids import EMBEDDING

Hook = Callable[[nn.Module, tuple[Any, ...], Any], Any]
DISABLE_PREFILL_GRAPH = "--disable-prefill-cuda-graph"
"""0.5.23 ``arg_groups/fields/exec_.py:662`` (``--cuda-graph-backend-prefill=disabled``)."""


def _logger() -> logging.Logger:
    return logging.getLogger("sglang.eagle3_contracts")


class Unobservable(Exception):
    """The first prefill was seen incompletely: say why and what to set, judge nothing."""

    def __init__(self, why: str, what_to_set: str) -> None:
        super().__init__(why)
        self.why = why
        self.what_to_set = what_to_set


# -- reading a decoder layer's output ---------------------------------------------------------


def read_stream(output: Any, args: tuple[Any, ...] = ()) -> tuple[torch.Tensor | None, str]:
    """The full residual stream after a decoder layer, or ``None`` and why it cannot be read.

    * 0.5.2x layer-boundary stages keep the residual on the batch
      (``forward_batch.residual_stream``): ``snapshot`` of the layer's output handle completes
      any owed sum on a copy and adds the residual; streams without ``snapshot`` are read as
      ``residual`` plus a plain, settled contribution;
    * otherwise the layer's output, or ``hidden + residual`` (fused residual).
    """
    handle = output[0] if isinstance(output, (tuple, list)) and output else output
    batch = next((a for a in args if hasattr(a, "residual_stream")), None)
    holder = getattr(batch, "residual_stream", None)
    if holder is not None and hasattr(holder, "snapshot"):
        try:
            return holder.snapshot(handle), ""
        except NotImplementedError as exc:
            return None, (
                "a decoder layer's output owes work only its producer can do or updates the "
                f"residual non-linearly ({one_line(exc)})"
            )
        except RuntimeError:
            pass  # not this stream's output: read the output itself
    elif holder is not None and hasattr(holder, "pending"):
        return _read_pending(holder)
    return _read_output(output)


def _read_pending(holder: Any) -> tuple[torch.Tensor | None, str]:
    """A layer-boundary stream without ``snapshot``: its residual plus a settled plain add."""
    residual, pending = getattr(holder, "residual", None), holder.pending
    if not isinstance(residual, torch.Tensor):
        return None, "the layer-boundary stream holds no residual"
    if pending is None:
        return residual, ""
    value = getattr(pending, "value", None)
    plain = type(getattr(pending, "update", None)).__name__ == "PlainAdd"
    if isinstance(value, torch.Tensor) and plain and getattr(pending, "owed", None) is None:
        return residual + value, ""
    return None, "a decoder layer's output still owes its tensor-parallel sum"


def _read_output(output: Any) -> tuple[torch.Tensor | None, str]:
    """The layer's own output: the stream, or ``(hidden, residual)`` summed (fused residual)."""
    if isinstance(output, torch.Tensor):
        return output, ""
    if isinstance(output, (tuple, list)) and output and isinstance(output[0], torch.Tensor):
        hidden = output[0]
        residual = output[1] if len(output) > 1 else None
        if residual is None:
            return hidden, ""
        if isinstance(residual, torch.Tensor) and residual.shape == hidden.shape:
            return hidden + residual, ""
    return None, f"a decoder layer returned {type(output).__name__}, not a stream"


def settle_finalize(output: Any, args: tuple[Any, ...]) -> Any:
    """A layer output whose MoE finalize is handed off (a fused-kernel ``DeferredFinalize``,
    which ``snapshot`` cannot read) completed now, as SGLang completes every captured layer
    (``layer_boundary/stage.py:317-318`` ``stream.complete``): the output that replaces it (the
    next layer then reads a settled stream), or ``None`` when there is nothing to settle."""
    handle = output[0] if isinstance(output, (tuple, list)) and output else output
    batch = next((a for a in args if hasattr(a, "residual_stream")), None)
    holder = getattr(batch, "residual_stream", None)
    pending = getattr(holder, "pending", None)
    owed = getattr(pending, "owed", None)
    update = getattr(pending, "update", None)
    if owed is None or "Finalize" not in type(owed).__name__:
        return None
    if holder is None or not getattr(update, "is_plain_add", False):
        return None
    done = holder.complete(handle)
    if isinstance(output, tuple):
        return (done, *output[1:])
    if isinstance(output, list):
        return [done, *output[1:]]
    return done


def stream_of(output: Any, args: tuple[Any, ...] = ()) -> torch.Tensor | None:
    """The residual stream after a decoder layer, or ``None`` where it cannot be read."""
    return read_stream(output, args)[0]


# -- the engine around the hooks --------------------------------------------------------------


def _target_depth(target: Mapping[str, Any]) -> int | None:
    """The target's depth as ``check`` reads it (``config.readers``: top level or a nested
    language-model section); None when its config does not say."""
    from eagle3_contracts.config.readers import read_target_config

    try:
        return read_target_config(target).num_layers
    except ConfigError:
        return None


def sglang_release() -> str:
    from importlib.metadata import version

    return version("sglang")


def find_model_runner(max_depth: int = 12) -> Any:
    """The model runner registering the hooks: a caller's ``model_runner`` (0.5.23
    ``finalize_cuda_graph_capture``) or ``self`` (releases that register from the runner),
    recognised by its ``model`` and ``spec_algorithm``; ``None`` when there is none."""
    frame: Any = sys._getframe(1)
    for _ in range(max_depth):
        if frame is None:
            return None
        for name in ("model_runner", "self"):
            candidate = frame.f_locals.get(name)
            if hasattr(candidate, "spec_algorithm") and isinstance(
                getattr(candidate, "model", None), nn.Module
            ):
                return candidate
        frame = frame.f_back
    return None


def _rank() -> str:
    try:
        from sglang.srt.distributed import parallel_state as ps

        rank, size = ps.get_tensor_model_parallel_rank(), ps.get_tensor_model_parallel_world_size()
    except Exception:
        return ""
    return f", tp rank {rank}/{size}"


def _pp_size(runner: Any) -> int:
    group = getattr(runner, "pp_group", None)
    return int(getattr(group, "world_size", 1) or 1)


def layer_stack(model: nn.Module) -> nn.Module | None:
    """The module holding the decoder ``layers`` (``model.model``, ``language_model.model``)."""
    for path in ("model", "language_model.model", "language_model"):
        holder: Any = model
        for part in path.split("."):
            holder = getattr(holder, part, None)
        if isinstance(holder, nn.Module) and hasattr(holder, "layers"):
            return holder
    return None


# -- one process's session --------------------------------------------------------------------


def _timed(hook: Callable[..., Any]) -> Callable[..., Any]:
    """A hook that does nothing once the session is done and adds its CPU time to ``seconds``."""

    @functools.wraps(hook)
    def timed(self: Session, module: nn.Module, args: tuple[Any, ...], output: Any) -> Any:
        if self.done:
            return None
        start = time.process_time()
        try:
            return hook(self, module, args, output)
        finally:
            self.seconds += time.process_time() - start

    return timed


@dataclass
class Session:
    """One scheduler process: what the hooks recorded in the current forward."""

    settings: Settings
    draft_path: str | None
    where: str = "sglang"
    release: str = ""  # the installed sglang (read at engine start, not in the prefill)
    log: logging.Logger = field(default_factory=_logger)
    active: bool = True  # False: not applicable here, no hooks
    target_only: bool = False  # the model runner was found: only the target is hooked
    done: bool = False
    embedding: torch.Tensor | None = None
    layers: list[torch.Tensor | None] = field(default_factory=list)
    rows: list[int] = field(default_factory=list)  # token rows of each layer's stream
    unread: str = ""  # why a layer's stream could not be read in this forward
    layer_batch: Any = None  # the forward batch the layer hooks saw last
    model_file: str = ""
    verdict: GuardVerdict | None = None
    dump_path: Path | None = None
    first_prefill: str = ""  # the line printed at the first prefill
    restore_graphs: Callable[[], None] | None = None
    eager_prefills: int = 0  # prefills the guard kept off the prefill graph
    seconds: float = 0.0  # CPU time spent in the hooks (recording, identifying, judging)
    answers: str = ""  # the table answering for the installed code (``answering_release``)

    # -- the hooks ------------------------------------------------------------------------
    @_timed
    def on_embedding(self, module: nn.Module, args: tuple[Any, ...], output: Any) -> None:
        if self.done or not isinstance(output, torch.Tensor):
            return
        self.embedding = output[: self.settings.guard_tokens].detach().float().clone()
        self.layers, self.rows, self.unread, self.layer_batch = [], [], "", None

    @_timed
    def on_layer(self, module: nn.Module, args: tuple[Any, ...], output: Any) -> Any:
        if self.done or self.embedding is None:
            return None
        settled = settle_finalize(output, args)
        stream, why = read_stream(output if settled is None else settled, args)
        self.layer_batch = next((a for a in args if hasattr(a, "forward_mode")), None)
        if stream is None:
            self.unread = self.unread or why
            self.layers.append(None)
            self.rows.append(-1)
        else:
            self.layers.append(stream[: self.settings.guard_tokens].detach().float().clone())
            self.rows.append(int(stream.shape[0]))
        self.model_file = type(module).__module__.rsplit(".", 1)[-1] + ".py"
        return settled  # replaces the layer's output only where a finalize was settled

    @_timed
    def on_logits(self, module: nn.Module, args: tuple[Any, ...], output: Any) -> None:
        if self.done or len(args) < 4:
            return
        batch = args[3]
        mode = getattr(batch, "forward_mode", None)
        if mode is None or not mode.is_extend() or mode.is_target_verify():
            return
        aux = args[4] if len(args) > 4 else None
        no_aux = aux is None or len(aux) == 0
        if no_aux and not self.target_only:
            return  # the drafter's own logits processor (its runner was not told apart)
        self.done = True
        self._restore_graphs()
        try:
            if no_aux:
                raise Unobservable(
                    "the target handed the drafter no aux hidden states in its first prefill",
                    "check that --speculative-algorithm EAGLE3 is set",
                )
            self._observe(module, args[0], batch, aux)
        except ContractViolation:
            raise  # strict and a proven mismatch
        except Unobservable as exc:
            self._say_cannot_observe(exc.why, exc.what_to_set)
        except Exception as exc:
            self._say_cannot_observe(
                f"{one_line(exc)} while reading the first prefill",
                "serving continues; check offline with `eagle3-contracts check`",
            )

    # -- engine start ---------------------------------------------------------------------
    def keep_prefill_eager(self, graph_runner: Any) -> str:
        """Keep the first recorded prefill off SGLang's prefill CUDA graph; describe the runner."""
        backend = getattr(graph_runner, "prefill_backend_name", None) or "prefill"
        original = getattr(graph_runner, "can_replay_locally", None)
        if not callable(original):
            return (
                f"{type(graph_runner).__name__} (a prefill graph the guard cannot keep eager: "
                "a replayed first prefill is reported as cannot observe)"
            )
        session = self

        def can_replay_locally(*args: Any, **kwargs: Any) -> bool:
            if not session.done:
                session.eager_prefills += 1
                return False
            return bool(original(*args, **kwargs))

        graph_runner.can_replay_locally = can_replay_locally

        def restore() -> None:
            if vars(graph_runner).get("can_replay_locally") is can_replay_locally:
                del graph_runner.can_replay_locally

        self.restore_graphs = restore
        return f"{backend} prefill CUDA graph: the first prefill runs eager, later ones replay"

    def _restore_graphs(self) -> None:
        if self.restore_graphs is not None:
            self.restore_graphs()
            self.restore_graphs = None

    # -- the work -------------------------------------------------------------------------
    def _say_cannot_observe(self, why: str, what_to_set: str) -> None:
        self.first_prefill = cannot_observe_line(self._where(), why, what_to_set)
        self.log.warning("%s", self.first_prefill)

    def _where(self) -> str:
        return f"{self.where}, {self.model_file}" if self.model_file else self.where

    def _check_complete(self, batch: Any, captured: torch.Tensor) -> None:
        """Raise ``Unobservable`` unless this forward's layers were all recorded in full."""
        offline = "check the wiring offline: eagle3-contracts check DRAFT --target T --serve-with "
        offline += self.where.split(",")[0]
        if not self.layers or (self.layer_batch is not None and self.layer_batch is not batch):
            raise Unobservable(
                "the decoder layers did not run as Python modules in this prefill (replayed "
                "from a CUDA graph), so their hooks recorded nothing of it",
                f"set {DISABLE_PREFILL_GRAPH} to observe it, or {offline}",
            )
        if self.embedding is None:
            raise Unobservable(
                "the embedding hook did not fire in this prefill", f"{offline} instead"
            )
        if self.unread:
            raise Unobservable(self.unread, f"{offline} instead")
        shards = sorted({r for r in self.rows if r != captured.shape[0]})
        if shards:
            raise Unobservable(
                f"the decoder layers ran on {shards[0]} token rows, the aux states hold "
                f"{captured.shape[0]} (a token shard: sequence or data parallel attention)",
                f"{offline} instead",
            )

    def _observe(self, module: nn.Module, input_ids: torch.Tensor, batch: Any, aux: Any) -> None:
        captured = aux if isinstance(aux, torch.Tensor) else torch.cat(list(aux), dim=-1)
        self._check_complete(batch, captured)
        assert self.embedding is not None
        hidden = int(self.embedding.shape[-1])
        release = self.release or sglang_release()
        config: Any = getattr(module, "config", None)
        target: dict[str, Any] = config.to_dict() if config is not None else {}
        found = self._identify(captured, hidden, target)
        if self.settings.dump_dir is not None:
            try:
                self._dump(captured, input_ids, found, hidden, release)
            except Exception as exc:  # a dump that cannot be written never weakens the guard
                self.log.warning(
                    "%s dump: cannot write in %s (%s); dumping off, serving continues [%s]",
                    PREFIX,
                    self.settings.dump_dir,
                    getattr(exc, "strerror", None) or one_line(exc)[:300],
                    self._where(),
                )
        if self.settings.guard is not None:
            self._guard(found, release, target)

    def _identify(self, captured: torch.Tensor, hidden: int, target: Mapping[str, Any]) -> Any:
        depth = _target_depth(target)
        if depth is not None and depth != len(self.layers):
            raise Unobservable(
                f"recorded {len(self.layers)} decoder layers of {depth} (pipeline parallel "
                "stages are not observed)",
                "check the wiring offline with eagle3-contracts check",
            )
        assert self.embedding is not None
        states = {EMBEDDING: self.embedding, **{i: s for i, s in enumerate(self.layers)}}
        recorded = Recorded(states, len(self.layers))  # type: ignore[arg-type]
        return identify_recorded(captured.float(), recorded, hidden)

    def _dump(
        self,
        captured: torch.Tensor,
        input_ids: torch.Tensor,
        found: Any,
        hidden: int,
        release: str,
    ) -> None:
        from eagle3_contracts.dumps.format import write_dump

        ids = list(found.layer_ids) if found is not None else []
        if not ids or any(i is None for i in ids):
            self.log.warning(
                "%s dump: not written: a segment is no layer of the target (%s)",
                PREFIX,
                found.render_text() if found is not None else "no identification",
            )
            return
        directory = Path(self.settings.dump_dir or ".")
        directory.mkdir(parents=True, exist_ok=True)
        tokens = int(self.embedding.shape[0]) if self.embedding is not None else captured.shape[0]
        path = directory / f"sglang-{release}-pid{os.getpid()}-first-prefill.safetensors"
        self.dump_path = write_dump(
            path,
            captured[:tokens].detach().float(),
            input_ids[:tokens].detach(),
            layer_ids=ids,
            convention="canonical",
            system=f"sglang=={release} target aux states for the drafter (eagle3-contracts "
            "--forward-hooks; ids identified against the recorded residual stream)",
            hidden_size=hidden,
            extra_metadata={
                "serve": engine_name("sglang", release),
                "model_file": self.model_file,
            },
        )
        self.log.info("%s dump: wrote %s [%s]", PREFIX, self.dump_path, self._where())

    def _guard(self, found: Any, release: str, target: Mapping[str, Any]) -> None:
        draft = self._draft()
        expected, claim = guard_claim(draft, target, self.settings)
        verdict = judge(
            found,
            expected=expected,
            claim=claim,
            fc_states=None,
            where=self._where(),
            fix=proven_fix_for(
                self.answers or engine_name("sglang", release),
                {} if draft is None else dict(draft.raw),
                target,
            ),
        )
        self.verdict = verdict
        self.first_prefill = verdict.line
        if verdict.ok:
            self.log.info("%s", verdict.line)
            return
        self.log.warning("%s", verdict.line)
        if self.settings.strict and verdict.status == "mismatch":
            raise WiringMismatch(verdict.line)

    def _draft(self) -> DraftConfig | None:
        """The drafter's config (``None`` without its directory): read once per judgement."""
        if not self.draft_path:
            return None
        return read_draft_config(Path(self.draft_path) / "config.json")


_SESSION: Session | None = None


def session() -> Session | None:
    """This process's session (``None`` until a factory ran with dump or guard asked for)."""
    return _SESSION


CHECKED_RELEASES = _CHECKED["sglang"]
"""The SGLang releases whose runner the hooks were written against (``_guard.settings``)."""


def _preload(settings: Settings) -> None:
    """Import at engine start what the first prefill uses, so that prefill pays no imports."""
    import eagle3_contracts.config.readers
    import eagle3_contracts.conventions.predict
    import eagle3_contracts.stamp

    if settings.dump_dir is not None:
        import eagle3_contracts.dumps.format  # noqa: F401


def _runner_problem(runner: Any) -> str | None:
    """Why the hooks stay off in this model runner (``None``: they apply, or no runner). The
    DFlash family's target hands its aux states to the logits processor as EAGLE-3's does
    (0.5.23 ``models/llama.py:943-953`` ``set_dflash_layers_to_capture``, ``:619-631``)."""
    if runner is None:
        return None
    algorithm = runner.spec_algorithm
    family = getattr(algorithm, "is_dflash_family", None)  # 0.5.23 spec_info.py:126-127
    if not algorithm.is_eagle3() and not (callable(family) and family()):
        return f"speculative algorithm {algorithm.name}, not EAGLE3 (nor DFLASH, DSPARK)"
    if _pp_size(runner) > 1:
        return (
            f"pipeline parallel (pp size {_pp_size(runner)}): one process sees only its "
            "stage's layers"
        )
    return None


def _described(made: Session, runner: Any) -> str:
    """The prefill path of this runner, kept eager for the recorded prefill where it can be."""
    if runner is None:
        return (
            "not found from the hook registration (a prefill replayed from a CUDA graph is "
            "reported as cannot observe)"
        )
    graph_runner = getattr(runner, "prefill_cuda_graph_runner", None)
    if graph_runner is None or type(graph_runner).__name__ == "EagerRunner":
        return "eager prefill"
    return made.keep_prefill_eager(graph_runner)


def _target_config(runner: Any) -> dict[str, Any] | None:
    """The target's config as the runner loaded it (``model_config.hf_config``, else the
    model's ``config``); ``None`` where neither is there (the first prefill reads it then)."""
    loaded = getattr(getattr(runner, "model_config", None), "hf_config", None)
    loaded = (
        loaded if loaded is not None else getattr(getattr(runner, "model", None), "config", None)
    )
    to_dict = getattr(loaded, "to_dict", None)
    return dict(to_dict()) if callable(to_dict) else None


def start(settings: Settings, draft_path: str | None, runner: Any) -> Session:
    """The process's session and its one engine-start line (armed, or not applicable)."""
    release = sglang_release()
    where = f"sglang=={release}{_rank()}"
    log = _logger()
    for problem in settings.problems:
        log.warning("%s: %s", PREFIX, problem)
    made = Session(settings, draft_path, where, release, log, target_only=runner is not None)
    reason = unchecked("sglang", release) or _runner_problem(runner) or draft_problem(draft_path)
    if reason is not None:
        made.active = False
        made.first_prefill = not_applicable_line(where, reason)
        log.warning("%s", made.first_prefill)
        return made
    _preload(settings)
    drafter = ""
    if settings.guard is not None:  # the fix is searched with the installed code's table
        made.answers, drafter = guard_start(
            log, where, ("sglang", release, ""), settings, made._draft, _target_config(runner)
        )
    model = getattr(runner, "model", None)
    stack = layer_stack(model) if isinstance(model, nn.Module) else None
    layers: Any = getattr(stack, "layers", None)
    depth = f"{len(layers)} decoder layers" if layers is not None else "the decoder layers"
    records = (
        f"at the first prefill, the embedding and {depth} (full residual streams, first "
        f"{settings.guard_tokens} tokens) and the drafter's input{drafter}"
    )
    described = _described(made, runner)
    log.info(
        "%s",
        armed_line(
            where,
            guard=settings.guard,
            dump=settings.dump_dir,
            runner=described,
            records=records,
        ),
    )
    return made


def hook_factory(config: Mapping[str, Any]) -> Hook | None:
    """``--forward-hooks`` factory: ``None`` (no hook) unless dump or guard is asked for, on the
    target's model runner only, and where the guard applies."""
    global _SESSION
    settings = read_settings()
    if settings is None or (settings.dump_dir is None and settings.guard is None):
        return None
    runner = find_model_runner()
    if runner is not None and getattr(runner, "is_draft_worker", False):
        return None  # the drafter's runner: the target's runner has this rank's line
    role = config.get("role")
    if role not in ("embedding", "layers", "logits"):
        raise ContractError(
            f"forward_hooks config role must be one of embedding, layers, logits, got {role!r}",
            field="forward_hooks",
        )
    if _SESSION is None:
        _SESSION = start(settings, config.get("draft_path"), runner)
    if not _SESSION.active:
        return None
    hooks: dict[str, Hook] = {
        "embedding": _SESSION.on_embedding,
        "layers": _SESSION.on_layer,
        "logits": _SESSION.on_logits,
    }
    return hooks[role]


def reset() -> None:
    """Forget this process's session (tests)."""
    global _SESSION
    if _SESSION is not None:
        _SESSION._restore_graphs()
    _SESSION = None
