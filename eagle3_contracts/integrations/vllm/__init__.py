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
  ``MISMATCH`` (with the fix) or ``UNJUDGED`` (no claim to judge against). ``strict`` raises
  ``WiringMismatch`` inside the engine on anything but ``OK``, which stops it.

The claim comes from the drafter's stamp (``eagle3-contracts stamp``), else from
``EAGLE3_CONTRACTS_TRAINED_WITH``; the line says which. ``EAGLE3_CONTRACTS_GUARD_TOKENS``
(default 32) bounds how many prefill tokens are recorded per layer. A non-EAGLE-3 drafter
gets one "not applicable" line; anything that goes wrong is one warning line and serving
continues, unless the guard is ``strict``.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
from types import ModuleType
from typing import Any

from eagle3_contracts.integrations.vllm.settings import (
    ENV_DUMP,
    ENV_GUARD,
    ENV_GUARD_TOKENS,
    Settings,
    read_settings,
)

RUNNER_MODULES = {
    "vllm.v1.worker.gpu_model_runner": "v1",  # GPUModelRunner, CPUModelRunner's base
}
_PATCHED = "_eagle3_contracts_patched"


def _logger() -> Any:
    """vLLM's logger tree (its handler and format); plain logging where vLLM is absent."""
    try:
        from vllm.logger import init_logger
    except ImportError:
        import logging

        return logging.getLogger("vllm.eagle3_contracts")
    return init_logger("vllm.eagle3_contracts")


def _patch(module: ModuleType, settings: Settings, kind: str) -> None:
    runner_cls = getattr(module, "GPUModelRunner", None)
    if runner_cls is None or getattr(runner_cls, _PATCHED, False):
        return
    original = runner_cls._setup_eagle3_aux_hidden_state_outputs

    def _setup_eagle3_aux_hidden_state_outputs(self: Any) -> None:
        original(self)
        log = _logger()
        try:
            from eagle3_contracts.integrations.vllm.engine import attach

            attach(self, settings, log, kind)
        except Exception as exc:
            problem = f"{type(exc).__name__}: {' '.join(str(exc).split())}"
            if settings.strict:
                from eagle3_contracts.errors import ContractViolation

                if isinstance(exc, ContractViolation):
                    raise
                raise ContractViolation(
                    f"eagle3-contracts guard (strict): cannot observe this engine: {problem}"
                ) from exc
            log.warning(
                "eagle3-contracts: cannot observe this engine (%s); serving continues", problem
            )

    runner_cls._setup_eagle3_aux_hidden_state_outputs = _setup_eagle3_aux_hidden_state_outputs
    setattr(runner_cls, _PATCHED, True)


class _PatchOnImport(importlib.abc.MetaPathFinder):
    """Patch a runner module right after it is first imported (keeps ``register`` cheap)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name not in RUNNER_MODULES:
            return None
        sys.meta_path.remove(self)  # once: the module is imported once per process
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        exec_module = loader.exec_module
        settings, kind = self.settings, RUNNER_MODULES[name]

        def patched_exec(module: ModuleType) -> None:
            exec_module(module)
            _patch(module, settings, kind)

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
    waiting = False
    for name, kind in RUNNER_MODULES.items():
        module = sys.modules.get(name)
        if module is not None:
            _patch(module, settings, kind)
        else:
            waiting = True
    if waiting and not any(isinstance(f, _PatchOnImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _PatchOnImport(settings))


__all__ = ["ENV_DUMP", "ENV_GUARD", "ENV_GUARD_TOKENS", "read_settings", "register"]
