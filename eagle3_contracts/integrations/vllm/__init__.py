"""vLLM general plugin: dump and guard what a live engine feeds an EAGLE-3 drafter.

Registered under vLLM's ``vllm.general_plugins`` entry-point group, so vLLM loads it in every
process it starts (front end, engine core, workers: ``vllm/plugins/__init__.py:77-91``). It
does nothing unless one of these is set:

* ``EAGLE3_CONTRACTS_DUMP=DIR``: at the first prefill, write a dump (our safetensors format,
  ``eagle3_contracts.dumps.format``) of exactly what enters the drafter's ``fc``, with the token
  ids, the positions, and metadata: the ids as configured, the boundaries vLLM collects, the
  convention ``vllm==<version>:<runner>`` and the model file.
* ``EAGLE3_CONTRACTS_GUARD=warn|strict``: at the first prefill, record the target's own
  residual stream at every layer in that same forward and identify each segment of the
  drafter's input against it (no reference model, no extra forward). One log line: ``OK``,
  ``MISMATCH`` (with the fix), ``UNJUDGED`` (no claim to judge against) or ``cannot observe``
  (the step was not fully seen: why, and what to set). ``strict`` raises ``WiringMismatch``
  inside the engine only on a proven ``MISMATCH``, which stops it.

Both model runners are covered: V1 (``v1/worker/gpu_model_runner.py``) and V2
(``v1/worker/gpu/model_runner.py``, vLLM's GPU default; ``engine`` documents each path). At
engine start every rank logs one line: ``armed`` (engine, release, runner, mode, what will be
recorded), ``armed, not recording on this rank`` (TP rank > 0: rank 0 judges for the group),
or ``not applicable`` with the reason (no EAGLE-3 drafter, pipeline parallel, a release or
runner the plugin was not checked against). The claim comes from the drafter's stamp
(``eagle3-contracts stamp``), else from ``EAGLE3_CONTRACTS_TRAINED_WITH``; the line says which.
``EAGLE3_CONTRACTS_GUARD_TOKENS`` (default 32) bounds how many prefill tokens are recorded per
layer. Anything that goes wrong is one warning line and serving continues.
"""

from __future__ import annotations

import functools
import importlib.abc
import importlib.util
import sys
from types import ModuleType
from typing import Any

from eagle3_contracts.integrations._guard.settings import (
    ENV_DUMP,
    ENV_GUARD,
    ENV_GUARD_TOKENS,
    Settings,
    read_settings,
)

RUNNER_MODULES = {
    # V1 GPUModelRunner (and CPUModelRunner, its subclass): attach after the aux layers are set
    "vllm.v1.worker.gpu_model_runner": ("v1", "_setup_eagle3_aux_hidden_state_outputs"),
    # V2 GPUModelRunner (v1/worker/cpu/model_runner.py CPUModelRunner subclasses it): attach
    # after load_model (model_runner.py:378-420 sets the aux layers and loads the drafter)
    "vllm.v1.worker.gpu.model_runner": ("v2", "load_model"),
}
_PATCHED = "_eagle3_contracts_patched"
_ATTACHED = "_eagle3_contracts_attached"


def _logger() -> Any:
    """vLLM's logger tree (its handler and format); plain logging where vLLM is absent."""
    try:
        from vllm.logger import init_logger
    except ImportError:
        import logging

        return logging.getLogger("vllm.eagle3_contracts")
    return init_logger("vllm.eagle3_contracts")


def _attach_once(runner: Any, settings: Settings, kind: str) -> None:
    """Attach to one runner (once: ``load_model`` may run again on a reload); never raises
    unless ``strict`` and a mismatch is proven (``WiringMismatch``)."""
    if getattr(runner, _ATTACHED, False):
        return
    setattr(runner, _ATTACHED, True)
    log = _logger()
    try:
        from eagle3_contracts.integrations.vllm.engine import attach

        attach(runner, settings, log, kind)
    except Exception as exc:
        from eagle3_contracts.integrations._guard.verdict import WiringMismatch

        if isinstance(exc, WiringMismatch):
            raise
        problem = f"{type(exc).__name__}: {' '.join(str(exc).split())}"
        from eagle3_contracts.integrations._guard.report import not_applicable_line

        where = f"vllm {kind} runner {type(runner).__name__}"
        log.warning("%s", not_applicable_line(where, f"cannot observe this engine ({problem})"))


def _patch(module: ModuleType, settings: Settings, kind: str, method: str) -> None:
    runner_cls = getattr(module, "GPUModelRunner", None)
    if runner_cls is None or getattr(runner_cls, _PATCHED, False):
        return
    original = getattr(runner_cls, method, None)
    if original is None:
        from eagle3_contracts.integrations._guard.report import not_applicable_line

        reason = (
            f"{module.__name__}.GPUModelRunner has no {method} (this vLLM's model runner "
            f"{kind} is not one the plugin was checked against)"
        )
        _logger().warning("%s", not_applicable_line(f"vllm {kind} runner", reason))
        setattr(runner_cls, _PATCHED, True)
        return

    @functools.wraps(original)
    def attaching(self: Any, *args: Any, **kwargs: Any) -> Any:
        result = original(self, *args, **kwargs)
        _attach_once(self, settings, kind)
        return result

    setattr(runner_cls, method, attaching)
    setattr(runner_cls, _PATCHED, True)


class _PatchOnImport(importlib.abc.MetaPathFinder):
    """Patch each runner module right after it is first imported (keeps ``register`` cheap)."""

    def __init__(self, settings: Settings, pending: set[str]) -> None:
        self.settings = settings
        self.pending = pending

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name not in self.pending:
            return None
        self.pending.discard(name)  # once: a module is imported once per process
        if not self.pending:
            sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        exec_module = loader.exec_module
        settings, (kind, method) = self.settings, RUNNER_MODULES[name]

        def patched_exec(module: ModuleType) -> None:
            exec_module(module)
            _patch(module, settings, kind, method)

        loader.exec_module = patched_exec  # type: ignore[method-assign]
        return spec


def register() -> None:
    """The ``vllm.general_plugins`` entry point: a no-op unless dump or guard is asked for.

    vLLM calls it unguarded (``plugins/__init__.py:89-91``): it never raises.
    """
    try:
        settings = read_settings()
        if settings is None:
            return
        for problem in settings.problems:
            _logger().warning("eagle3-contracts: %s", problem)
        if settings.dump_dir is None and settings.guard is None:
            return
        _install(settings)
    except Exception as exc:  # a broken plugin must never stop vLLM
        _logger().warning(
            "eagle3-contracts: plugin not installed (%s: %s); vLLM untouched",
            type(exc).__name__,
            " ".join(str(exc).split()),
        )


def _install(settings: Settings) -> None:
    pending = set()
    for name, (kind, method) in RUNNER_MODULES.items():
        module = sys.modules.get(name)
        if module is not None:
            _patch(module, settings, kind, method)
        else:
            pending.add(name)
    if pending and not any(isinstance(f, _PatchOnImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _PatchOnImport(settings, pending))


__all__ = ["ENV_DUMP", "ENV_GUARD", "ENV_GUARD_TOKENS", "read_settings", "register"]
