"""The guard on the paths a GPU deployment takes, through the release's own classes, on CPU.

* **Prefill CUDA graphs** (0.5.23 defaults to the breakable backend on CUDA,
  ``model_executor/cuda_graph_config.py:119``). The release's ``PrefillCudaGraphRunner``
  decides (``can_run_graph`` -> ``can_replay_locally``) and replays (``_execute_body_capture``:
  the layer stack's ``forward`` swapped for the replay, the outer ``forward`` and the logits
  processor eager). Stand-ins, the only things not run as released:
  - ``GraphReplay``, the captured CUDA graph: it runs the layer stack's own ``forward`` with
    every Python forward hook suppressed, which is what a graph replay does (no module
    ``__call__`` runs); with ``buffer_registry``, its static-buffer table (none here);
  - ``_dispatch``: ``model_runner.py:2036-2061`` (replay when ``can_run_graph``, else the
    eager runner's ``model.forward``), since ``ModelRunner`` needs a device memory pool to
    build; the runner's construction (``__init__`` captures graphs) is replaced by setting the
    fields its decision and replay read (``_graph_runner``).
* **Tensor parallelism with a deferred sum** (``layers/layer_boundary/exit.py``): the release's
  ``ResidualStream``, ``UnreducedOutput`` and ``OwedOutput``. Stand-in: ``OtherRanks``, the TP
  group's all-reduce (NCCL across GPUs), adding the other ranks' partials.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch

from tests.engines.sglang import harness
from tests.engines.sglang.test_forward_hooks import _stamped_draft
from tests.engines.sglang.test_model_conformance import L
from tests.integrations._hooks import LOGGER
from tests.integrations.sglang.test_guard_paths import _lines

pytestmark = pytest.mark.engine

IDS = (1, 3, 4)


GRAPH_RUNNER = "sglang.srt.model_executor.runner.prefill_cuda_graph_runner"
RESIDUAL_STREAM = "sglang.srt.layers.layer_boundary.residual.stream"


def _release_has(state: dict[str, Any], module: str) -> None:
    """Skip on a release without the class this test drives (older releases have no prefill
    graph runner or layer-boundary stream: that path does not exist there)."""
    import importlib.util

    try:
        found = importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        found = False
    if not found:
        pytest.skip(f"sglang {state['release']} has no {module}: the path does not exist there")


class GraphReplay:
    """Stand-in for the captured CUDA graph: the layer stack's math, no Python hooks."""

    def __init__(self, layer_model: torch.nn.Module) -> None:
        self.layer_model = layer_model
        self.replays = 0

    def replay(self, shape_key: Any, batch: Any, **kwargs: Any) -> Any:
        self.replays += 1
        modules = list(self.layer_model.modules())
        saved = [dict(m._forward_hooks) for m in modules]
        for m in modules:
            m._forward_hooks.clear()
        try:
            forward = type(self.layer_model).forward
            return forward(self.layer_model, batch.input_ids, batch.positions, batch)
        finally:
            for m, hooks in zip(modules, saved, strict=True):
                m._forward_hooks.update(hooks)


def _graph_runner(pair: harness.Pair, max_tokens: int = 64) -> Any:
    """The release's PrefillCudaGraphRunner, breakable backend, with graphs 'captured' for up
    to ``max_tokens`` tokens (the fields ``can_run_graph`` and ``_execute_body_capture`` read)."""
    from sglang.srt.model_executor.forward_batch_info import CaptureHiddenMode
    from sglang.srt.model_executor.forward_context import get_forward_context
    from sglang.srt.model_executor.runner.prefill_cuda_graph_runner import PrefillCudaGraphRunner

    runner = PrefillCudaGraphRunner.__new__(PrefillCudaGraphRunner)
    layer_model = pair.sglang.model
    fields: dict[str, Any] = {
        "model_runner": SimpleNamespace(
            model=pair.sglang,
            pp_group=SimpleNamespace(is_first_rank=True),
            attn_backend=get_forward_context().attn_backend,
        ),
        "layer_model": layer_model,
        "backend": GraphReplay(layer_model),
        "buffer_registry": SimpleNamespace(has_slot=lambda name: False),
        "prefill_backend_name": "breakable",
        "capture_hidden_mode": CaptureHiddenMode.FULL,
        "capture_num_tokens": [8 * 2**i for i in range(max(1, max_tokens // 8).bit_length())],
        "max_num_tokens": max_tokens,
        "max_context_size": None,
        "max_seq_len": None,
        "enable_lora": False,
        "enable_cp_bcg_capture": False,
        "has_mha_companion_layers": False,
        "is_dsv41_model": False,
        "_is_full_backend": False,
        "_capture_chunked_prefix": False,
        "_captured_attn_metadata_max_bs": None,
        "_backend_can_run_prefill_cuda_graph": None,
        "_qwen_bcg_hc_sidechannel": False,
        "_qwen_bcg_mtp_draft": False,
        "_use_draft_input_embeds": False,
        "attention_layers": [],
        "quant_config": None,
        "moe_layers": [],
        "moe_fusions": [],
        "dsa_indexers": [],
        "mha_companion_layers": [],
    }
    for name, value in fields.items():
        setattr(runner, name, value)
    return runner


def _model_runner(pair: harness.Pair, graph_runner: Any) -> SimpleNamespace:
    """The ModelRunner fields the hooks read at registration (the target's runner)."""
    from sglang.srt.speculative.spec_info import SpeculativeAlgorithm

    return SimpleNamespace(
        model=pair.sglang,
        spec_algorithm=SpeculativeAlgorithm.EAGLE3,
        is_draft_worker=False,
        pp_group=SimpleNamespace(world_size=1),
        prefill_cuda_graph_runner=graph_runner,
    )


def _finalize(model_runner: Any, draft: Path | None) -> None:
    """``finalize_cuda_graph_capture(model_runner)``'s registration
    (``cuda_graph_setup.py:458-459``), with our specs as ``--forward-hooks``."""
    from sglang.srt.model_executor.hook_manager import register_forward_hooks

    from eagle3_contracts.integrations.sglang import forward_hooks

    register_forward_hooks(model_runner.model, forward_hooks(None if draft is None else str(draft)))


def _dispatch(graph_runner: Any, pair: harness.Pair, input_ids: torch.Tensor) -> str:
    """One EXTEND through ``model_runner.py:2036-2061``: replay or the eager runner."""
    from sglang.srt.model_executor.runner.shape_key import ShapeKey

    batch = harness.forward_batch(input_ids, capture=True)
    t = int(input_ids.shape[0])
    with torch.no_grad():
        if graph_runner.can_run_graph(batch):
            graph_runner._execute_body_capture(batch, batch, t, t, ShapeKey(size=t))
            return "graph"
        pair.sglang.forward(input_ids, batch.positions, batch)
        return "eager"


@pytest.fixture
def strict_guard(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> Iterator[None]:
    from eagle3_contracts.integrations.sglang import hooks

    monkeypatch.setenv("EAGLE3_CONTRACTS_GUARD", "strict")
    monkeypatch.delenv("EAGLE3_CONTRACTS_DUMP", raising=False)
    monkeypatch.delenv("EAGLE3_CONTRACTS_TRAINED_WITH", raising=False)
    caplog.set_level(logging.INFO, logger=LOGGER)
    hooks.reset()
    yield
    hooks.reset()


def _pair_capturing(ids: tuple[int, ...]) -> harness.Pair:
    pair = harness.build_pair(harness.BY_FILE["llama.py"], L)
    pair.sglang.set_eagle3_layers_to_capture(list(ids))
    return pair


@pytest.mark.parametrize(("trained", "status"), [(IDS, "ok"), ((0, 2, 4), "mismatch")])
def test_prefill_graph_first_prefill_runs_eager_and_is_judged(
    sglang_runtime: dict[str, Any],
    strict_guard: None,
    caplog: pytest.LogCaptureFixture,
    tmp_path: Path,
    trained: tuple[int, ...],
    status: str,
) -> None:
    """Default GPU launch: the first prefill is judged (eager), later ones replay the graph."""
    from eagle3_contracts.integrations._guard.verdict import WiringMismatch
    from eagle3_contracts.integrations.sglang import hooks

    _release_has(sglang_runtime, GRAPH_RUNNER)
    pair = _pair_capturing(IDS)
    graph_runner = _graph_runner(pair)
    _finalize(_model_runner(pair, graph_runner), _stamped_draft(tmp_path / "d", pair, trained))
    lines = _lines(caplog)
    armed = [x for x in lines if "armed:" in x]
    assert len(armed) == 1 and "armed: guard strict" in armed[0], lines
    # besides it, engine start says only what check proves before any request, or that the
    # installed files are not the released wheel's (integrations/_guard/start.py)
    said = ("armed:", "MISMATCH predicted at start-up", "differ from the released wheel")
    assert all(any(s in x for s in said) for x in lines), lines
    assert "breakable prefill CUDA graph: the first prefill runs eager" in armed[0]
    assert f"{L} decoder layers" in armed[0]
    if status == "mismatch":
        with pytest.raises(WiringMismatch, match="MISMATCH"):
            _dispatch(graph_runner, pair, pair.input_ids)
        return
    assert _dispatch(graph_runner, pair, pair.input_ids) == "eager"
    session = hooks.session()
    assert session is not None and session.verdict is not None
    assert session.verdict.status == "ok", session.verdict.line
    assert session.verdict.fed == IDS
    assert session.eager_prefills == 1
    later = torch.randint(2, harness.VOCAB, (11,))
    assert [_dispatch(graph_runner, pair, later) for _ in range(2)] == ["graph", "graph"]
    assert graph_runner.backend.replays == 2  # graphs are used after the recorded step
    assert "can_replay_locally" not in vars(graph_runner)


def test_a_prefill_replayed_after_an_earlier_forward_is_never_judged(
    sglang_runtime: dict[str, Any],
    strict_guard: None,
    caplog: pytest.LogCaptureFixture,
    tmp_path: Path,
) -> None:
    """Where the guard cannot keep the prefill eager (the hooks registered outside a model
    runner), a replayed prefill leaves the layer hooks holding an earlier forward (here one
    without aux states): comparing the aux states against it would be a false MISMATCH."""
    from sglang.srt.model_executor.hook_manager import register_forward_hooks

    from eagle3_contracts.integrations.sglang import forward_hooks, hooks

    _release_has(sglang_runtime, GRAPH_RUNNER)
    pair = harness.build_pair(harness.BY_FILE["llama.py"], L)
    graph_runner = _graph_runner(pair)
    draft = _stamped_draft(tmp_path / "d", pair, IDS)
    register_forward_hooks(pair.sglang, forward_hooks(str(draft)))
    earlier = (pair.input_ids + 1) % harness.VOCAB  # as many tokens, other ones
    with torch.no_grad():  # an eager forward before EAGLE-3 capture is on
        pair.sglang.forward(
            earlier, torch.arange(harness.SEQ_LEN), harness.forward_batch(earlier, capture=False)
        )
    pair.sglang.set_eagle3_layers_to_capture(list(IDS))
    assert _dispatch(graph_runner, pair, pair.input_ids) == "graph"  # no raise, even strict
    session = hooks.session()
    assert session is not None and session.done and session.verdict is None
    line = _lines(caplog)[-1]
    assert "cannot observe: the decoder layers did not run as Python modules" in line, line
    assert "set --disable-prefill-cuda-graph" in line


class OtherRanks:
    """Stand-in for the TP group's all-reduce: adds the other ranks' partial sums."""

    def __init__(self, partials: list[torch.Tensor]) -> None:
        self.partials = partials
        self.calls = 0

    def all_reduce(self, partial: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        return partial + sum(self.partials)


def test_a_deferred_tp_sum_is_read_as_the_full_stream(sglang_runtime: dict[str, Any]) -> None:
    """0.5.23 under TP: a layer's output handle owes its all-reduce to the next layer. The
    guard reads the full stream (residual + all ranks' partials) without settling the owed
    sum SGLang still performs, as SGLang's own capture does (``stage.py:299-319``)."""
    _release_has(sglang_runtime, RESIDUAL_STREAM)
    from sglang.srt.layers.layer_boundary.output import UnreducedOutput
    from sglang.srt.layers.layer_boundary.residual.add_norm import PLAIN_ADD
    from sglang.srt.layers.layer_boundary.residual.stream import OwedOutput, ResidualStream

    from eagle3_contracts.integrations.sglang import hooks

    residual, mine = torch.randn(5, 8), torch.randn(5, 8)
    others = [torch.randn(5, 8) for _ in range(7)]  # --tp 8
    group = OtherRanks(others)
    stream = ResidualStream(residual)
    handle = stream.record(UnreducedOutput(mine, group=group), PLAIN_ADD)  # type: ignore[arg-type]
    assert isinstance(handle, OwedOutput)
    batch = SimpleNamespace(residual_stream=stream, forward_mode=None)
    full = hooks.stream_of((handle, None), (torch.arange(5), handle, batch))
    assert full is not None, "the guard cannot read a deferred sum: 'cannot observe' at --tp 8"
    torch.testing.assert_close(full, residual + mine + sum(others))
    assert stream.pending is not None and stream.pending.owed is not None  # still owed
    assert torch.equal(stream.pending.value, mine)  # the partial SGLang reduces later
    assert group.calls == 1


def test_a_handed_off_moe_finalize_is_settled_and_read(sglang_runtime: dict[str, Any]) -> None:
    """A fused MoE kernel may hand its finalize to the next layer (``DeferredFinalize``), which
    ``snapshot`` cannot read: the guard completes it in the recorded prefill, as SGLang does for
    every captured layer, and the next layer reads the settled stream."""
    _release_has(sglang_runtime, RESIDUAL_STREAM)
    from sglang.srt.layers.layer_boundary.output import DeferredFinalize
    from sglang.srt.layers.layer_boundary.residual.add_norm import PLAIN_ADD
    from sglang.srt.layers.layer_boundary.residual.stream import ResidualStream

    from eagle3_contracts.integrations.sglang import hooks

    class KernelFinalize(DeferredFinalize, frozen=True):  # stand-in: the fused kernel's handoff
        routed: Any
        shared: Any

        def complete(self) -> torch.Tensor:
            return self.routed + self.shared

    residual, routed, shared = torch.randn(5, 8), torch.randn(5, 8), torch.randn(5, 8)
    stream = ResidualStream(residual)
    handle = stream.record(KernelFinalize(routed, shared), PLAIN_ADD)  # type: ignore[arg-type]
    batch = SimpleNamespace(residual_stream=stream, forward_mode=None)
    topk = torch.zeros(5, 2)
    assert hooks.read_stream((handle, topk), (handle, batch))[0] is None
    settled = hooks.settle_finalize((handle, topk), (handle, batch))
    assert isinstance(settled, tuple) and settled[1] is topk
    full, why = hooks.read_stream(settled, (settled[0], batch))
    assert why == "" and full is not None
    torch.testing.assert_close(full, residual + routed + shared)
    assert stream.input(settled[0])[0] is settled[0]  # the next layer accepts the settled output
