"""The vLLM plugin's first-prefill session on a small stand-in runner (torch only, no vLLM).

The stand-in runner has V2's shape: ``execute_model(scheduler_output, intermediate_tensors,
dummy_run)`` runs the target and keeps its aux states; ``sample_tokens`` hands them to the
drafter's ``combine_hidden_states``; a ``cudagraph_manager`` whose ``dispatch`` answers a graph
mode and whose replay runs no module hook; layers that return ``(hidden, residual)`` like
vLLM's decoder layers; optionally sequence-parallel layers that return only this rank's token
shard. The engine suite (``tests/engines/vllm``) runs the same session in real vLLM engines.
"""

from __future__ import annotations

import enum
import logging
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest
import torch
from torch import nn

from eagle3_contracts.integrations._guard.settings import Settings
from eagle3_contracts.integrations._guard.verdict import WiringMismatch
from eagle3_contracts.integrations.vllm.engine import Placement, Session

L, H = 4, 16
COLLECTED = (2, 3, 4)  # boundaries: canonical [1, 2, 3]


class Mode(enum.Enum):
    NONE = 0
    PIECEWISE = 1


@dataclass(frozen=True)
class Desc:
    cg_mode: Mode
    num_tokens: int
    num_reqs: int | None
    num_active_loras: int = 0
    num_ubatches: int = 1


class Layer(nn.Module):
    def __init__(self, shard: int | None = None) -> None:
        super().__init__()
        self.lin = nn.Linear(H, H)
        self.shard = shard  # sequence parallel: keep only the first `shard` rows (TP rank 0)

    def forward(self, positions: torch.Tensor, hidden: torch.Tensor, residual: Any) -> Any:
        stream = hidden if residual is None else hidden + residual
        out = torch.tanh(self.lin(stream))
        if self.shard is not None:
            return out[: self.shard], stream[: self.shard]
        return out, stream


class Holder(nn.Module):
    def __init__(self, shard: int | None) -> None:
        super().__init__()
        self.embed = nn.Embedding(64, H)
        self.layers = nn.ModuleList(Layer(shard if i >= 1 else None) for i in range(L))
        self.norm = nn.LayerNorm(H)
        self.aux_hidden_state_layers = COLLECTED

    def forward(self, input_ids: torch.Tensor, positions: torch.Tensor) -> Any:
        hidden, residual, aux, full = self.embed(input_ids), None, [], input_ids.shape[0]
        for idx, layer in enumerate(self.layers):
            if idx in self.aux_hidden_state_layers:
                aux.append(self._gathered(hidden, residual, full))
            hidden, residual = layer(positions, hidden, residual)
        aux.append(self._gathered(hidden, residual, full))  # boundary L
        return self.norm(hidden + residual), aux

    def _gathered(self, hidden: torch.Tensor, residual: Any, full: int) -> torch.Tensor:
        """An aux state; sequence-parallel tests replace it by the all-gathered stream."""
        return hidden if residual is None else hidden + residual


class Target(nn.Module):
    def __init__(self, shard: int | None = None) -> None:
        super().__init__()
        self.model = Holder(shard)

    def forward(self, input_ids: torch.Tensor, positions: torch.Tensor) -> Any:
        return self.model(input_ids, positions)


class Drafter(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.model = SimpleNamespace(num_aux_hidden_states=len(COLLECTED))
        self.seen: list[torch.Tensor] = []

    def combine_hidden_states(self, hidden_states: torch.Tensor) -> torch.Tensor:
        self.seen.append(hidden_states)
        return hidden_states


class GraphManager:
    """Answers PIECEWISE; its replay runs the target with no module hook (as a graph does)."""

    def __init__(self) -> None:
        self.replays = 0

    def dispatch(self, num_reqs: int, num_tokens: int, *args: Any, **kwargs: Any) -> Desc:
        return Desc(Mode.PIECEWISE, num_tokens, num_reqs)


class Runner:
    def __init__(self, target: Target, drafter: Drafter, graphs: bool = False) -> None:
        self.target, self.drafter = target, drafter
        self.cudagraph_manager = GraphManager() if graphs else None
        self.aux: list[torch.Tensor] = []
        self.execute_model_state = None

    def execute_model(self, scheduler_output: Any, intermediate_tensors: Any = None,
                      dummy_run: bool = False) -> None:  # fmt: skip
        ids = scheduler_output.ids
        pos = torch.arange(ids.shape[0])
        manager = self.cudagraph_manager
        mode = manager.dispatch(1, ids.shape[0]).cg_mode if manager else Mode.NONE
        if mode is Mode.PIECEWISE:
            manager.replays += 1
            saved = [(m, m._forward_hooks, m._forward_pre_hooks) for m in self.target.modules()]
            for m, _, _ in saved:
                m._forward_hooks, m._forward_pre_hooks = {}, {}
            try:
                _, self.aux = self.target(ids, pos)
            finally:
                for m, hooks, pre in saved:
                    m._forward_hooks, m._forward_pre_hooks = hooks, pre
        else:
            _, self.aux = self.target(ids, pos)

    def sample_tokens(self) -> torch.Tensor:
        return self.drafter.combine_hidden_states(torch.cat(self.aux, dim=-1))


class Log:
    def __init__(self) -> None:
        self.lines: list[tuple[int, str]] = []

    def _add(self, level: int, fmt: str, *args: Any) -> None:
        self.lines.append((level, fmt % args))

    def info(self, fmt: str, *args: Any) -> None:
        self._add(logging.INFO, fmt, *args)

    def warning(self, fmt: str, *args: Any) -> None:
        self._add(logging.WARNING, fmt, *args)


def _session(
    runner: Runner, mode: str = "warn", placement: Placement | None = None
) -> tuple[Session, Log]:
    log = Log()
    session = Session(
        settings=Settings(dump_dir=None, guard=mode),
        log=log,
        runner=runner,
        runner_kind="v2",
        placement=placement or Placement(0, 0, 1, False),
        target=runner.target,
        holder=runner.target.model,
        drafter=runner.drafter,
        num_layers=L,
        hidden_size=H,
        collected=COLLECTED,
        fc_states=len(COLLECTED),
        configured={},
        where="vllm==0.32.0:v2, stand-in",
        convention="vllm==0.32.0:v2",
        expected=(1, 2, 3),
        claim="stamp",
    )
    runner.drafter.combine_hidden_states = session.wrap_combine(  # type: ignore[method-assign]
        runner.drafter.combine_hidden_states
    )
    runner.execute_model = session.wrap_execute(runner.execute_model)  # type: ignore[method-assign]
    return session, log


def _step(runner: Runner, ids: list[int], dummy: bool = False) -> None:
    runner.execute_model(
        SimpleNamespace(ids=torch.tensor(ids), total_num_scheduled_tokens=len(ids)),
        dummy_run=dummy,
    )
    runner.sample_tokens()


def _text(log: Log) -> str:
    return "\n".join(line for _, line in log.lines)


PROMPT = [3, 17, 29, 41, 53, 7, 11]


def test_a_dummy_run_is_skipped_and_the_real_prefill_judged() -> None:
    torch.manual_seed(0)
    runner = Runner(Target(), Drafter())
    session, log = _session(runner)
    _step(runner, [0] * 9, dummy=True)  # V2 _dummy_run: execute_model(..., dummy_run=True)
    assert session.state == "waiting" and not log.lines
    _step(runner, PROMPT)
    assert session.verdict is not None and session.verdict.ok, _text(log)
    assert session.input_ids is not None and session.input_ids.tolist() == PROMPT


def test_the_recorded_step_runs_eagerly_and_graphs_are_used_after() -> None:
    torch.manual_seed(0)
    runner = Runner(Target(), Drafter(), graphs=True)
    session, log = _session(runner)
    _step(runner, PROMPT)
    assert session.verdict is not None and session.verdict.ok, _text(log)
    assert "ran eagerly: CUDA graph PIECEWISE" in _text(log)
    assert runner.cudagraph_manager is not None and runner.cudagraph_manager.replays == 0
    assert "dispatch" not in vars(runner.cudagraph_manager)  # restored: the class's own
    _step(runner, [5])
    assert runner.cudagraph_manager.replays == 1


@pytest.mark.parametrize("mode", ["warn", "strict"])
def test_a_replayed_step_is_cannot_observe_never_a_verdict(mode: str) -> None:
    """A graph the plugin could not turn eager (V1's FULL prefill graph): no module ran."""
    torch.manual_seed(0)
    runner = Runner(Target(), Drafter(), graphs=True)
    session, log = _session(runner, mode)
    session._eager_dispatch = lambda original: original  # type: ignore[method-assign]
    _step(runner, PROMPT)  # strict must not raise: nothing is proven
    assert session.verdict is None
    (line,) = [x for level, x in log.lines if level == logging.WARNING]
    assert "cannot observe: the first prefill ran as a CUDA-graph replay" in line
    assert "enforce_eager=True" in line


def test_layers_that_did_not_run_their_forward_are_cannot_observe_in_strict() -> None:
    torch.manual_seed(0)
    runner = Runner(Target(), Drafter())
    session, log = _session(runner, "strict")
    original = session._layer_hook
    session._layer_hook = lambda i: (lambda *a: None) if i == 2 else original(i)  # type: ignore[method-assign]
    _step(runner, PROMPT)
    assert session.verdict is None
    assert (
        "cannot observe: the target's layers ran without their Python forward for canonical 2"
        in _text(log)
    )


def test_sequence_parallel_shards_are_compared_on_rank_0s_rows() -> None:
    """MoE layers return TP rank 0's token shard (the first 4 of 7 tokens) while the aux
    states are the full, gathered stream: compared on the shard's rows, OK."""
    torch.manual_seed(0)
    full = Runner(Target(), Drafter())
    _, aux = full.target(torch.tensor(PROMPT), torch.arange(len(PROMPT)))
    sharded = Target(shard=4)
    sharded.load_state_dict(full.target.state_dict())
    runner = Runner(sharded, Drafter())
    gathered = iter(aux)
    sharded.model._gathered = lambda h, r, n: next(gathered)  # type: ignore[method-assign]
    session, log = _session(runner, "strict", Placement(0, 0, 2, True))
    _step(runner, PROMPT)
    assert session.verdict is not None and session.verdict.ok, _text(log)
    assert "compared on TP rank 0's shard, the first 4 tokens" in _text(log)


def test_shards_without_sequence_parallel_are_cannot_observe() -> None:
    torch.manual_seed(0)
    full = Runner(Target(), Drafter())
    _, aux = full.target(torch.tensor(PROMPT), torch.arange(len(PROMPT)))
    sharded = Target(shard=4)
    sharded.load_state_dict(full.target.state_dict())
    gathered = iter(aux)
    sharded.model._gathered = lambda h, r, n: next(gathered)  # type: ignore[method-assign]
    runner = Runner(sharded, Drafter())
    session, log = _session(runner, "strict")
    _step(runner, PROMPT)
    assert session.verdict is None
    assert "cannot observe: the layers returned different token counts" in _text(log)


def test_a_proven_mismatch_still_stops_a_strict_server() -> None:
    torch.manual_seed(0)
    runner = Runner(Target(), Drafter())
    session, _ = _session(runner, "strict")
    session.expected = (0, 2, 3)
    with pytest.raises(WiringMismatch, match="MISMATCH"):
        _step(runner, PROMPT)


def _fake_vllm(monkeypatch: pytest.MonkeyPatch, version: str, tp_rank: int = 0) -> None:
    """Stand-in ``vllm`` modules: the release number and the TP rank ``attach`` reads."""
    vllm = ModuleType("vllm")
    vllm.__version__ = version  # type: ignore[attr-defined]
    state = ModuleType("vllm.distributed.parallel_state")
    state.get_tensor_model_parallel_rank = lambda: tp_rank  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "vllm", vllm)
    monkeypatch.setitem(sys.modules, "vllm.distributed", ModuleType("vllm.distributed"))
    monkeypatch.setitem(sys.modules, "vllm.distributed.parallel_state", state)


def _engine_runner(tp: int = 1, method: str = "eagle3") -> Runner:
    runner = Runner(Target(), Drafter())
    parallel = SimpleNamespace(
        tensor_parallel_size=tp, pipeline_parallel_size=1, use_sequence_parallel_moe=False
    )
    runner.vllm_config = SimpleNamespace(parallel_config=parallel)  # type: ignore[attr-defined]
    runner.speculative_config = SimpleNamespace(method=method)  # type: ignore[attr-defined]
    runner.speculator = SimpleNamespace(model=runner.drafter)  # type: ignore[attr-defined]
    return runner


@pytest.mark.parametrize(
    ("version", "tp_rank", "method", "expected"),
    [
        ("0.34.0", 0, "eagle3", "[vllm==0.34.0:v2, rank 0, TP 0/2]: not applicable: "
         "vllm==0.34.0 is a release eagle3-contracts has not been checked against (checked: "
         "0.27.0, 0.28.0, 0.29.0, 0.30.0, 0.31.0, 0.32.0, 0.33.0); serving untouched"),
        ("0.33.0", 0, "mtp", "not applicable: speculative method 'mtp', not an EAGLE-3 drafter"),
        ("0.32.0", 1, "eagle3", "[vllm==0.32.0:v2, rank 0, TP 1/2]: armed: guard strict, dump "
         "off; runner: model runner V2 (Runner), not recording on this rank; records: nothing "
         "here: TP rank 0 of 2 records and judges for the group"),
    ],
)  # fmt: skip
def test_a_rank_that_does_not_record_says_why_in_one_line_and_leaves_vllm_untouched(
    monkeypatch: pytest.MonkeyPatch, version: str, tp_rank: int, method: str, expected: str
) -> None:
    from eagle3_contracts.integrations.vllm.engine import attach

    _fake_vllm(monkeypatch, version, tp_rank)
    runner = _engine_runner(tp=2, method=method)
    execute, combine = runner.execute_model, runner.drafter.combine_hidden_states
    log = Log()
    assert attach(runner, Settings(dump_dir=None, guard="strict"), log, "v2") is None
    (line,) = [x for _, x in log.lines]
    assert expected in line, line
    assert runner.execute_model == execute  # serving untouched
    assert runner.drafter.combine_hidden_states == combine


@pytest.mark.parametrize(
    "error", [OSError(28, "No space left on device"), RuntimeError("safetensors: write failed")]
)
def test_a_dump_that_cannot_be_written_never_weakens_strict(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, error: Exception
) -> None:
    """Whatever the dump's write raises, it is one warning and the guard still judges."""
    import eagle3_contracts.dumps.format as dump_format

    def fail(*args: Any, **kwargs: Any) -> Any:
        raise error

    monkeypatch.setattr(dump_format, "write_dump", fail)
    torch.manual_seed(0)
    runner = Runner(Target(), Drafter())
    session, log = _session(runner, "strict")
    session.settings = Settings(dump_dir=str(tmp_path / "dumps"), guard="strict")
    session.expected = (0, 2, 3)
    with pytest.raises(WiringMismatch, match="MISMATCH"):
        _step(runner, PROMPT)
    text = _text(log)
    assert "dump: cannot write" in text and "serving continues" in text
    assert "cannot observe" not in text, text
