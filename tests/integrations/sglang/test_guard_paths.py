"""Offline: what the SGLang hooks say at engine start and at the first prefill, per path.

No SGLang here: the runner, graph runner and batches are the smallest objects with the fields
the hooks read. The same paths through SGLang's own classes (the prefill graph runner, the
layer-boundary residual stream) are in tests/engines/sglang/test_guard_paths.py.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch
from torch import nn

from eagle3_contracts.integrations.sglang import forward_hooks
from eagle3_contracts.integrations.sglang import hooks as sg_hooks
from tests.integrations._hooks import armed_hooks, lines


class _Algorithm:
    def __init__(self, name: str) -> None:
        self.name = name

    def is_eagle3(self) -> bool:
        return self.name == "EAGLE3"


class _GraphRunner:
    """A prefill graph runner's replay vote (``can_replay_locally``), always yes."""

    prefill_backend_name = "breakable"

    def can_replay_locally(self, **kwargs: Any) -> bool:
        return True


class _Target(nn.Module):
    def __init__(self, num_layers: int = 4) -> None:
        super().__init__()
        self.model = nn.Module()
        self.model.layers = nn.ModuleList(nn.Identity() for _ in range(num_layers))


def _runner(
    algorithm: str = "EAGLE3", *, pp: int = 1, draft: bool = False, graph: Any = None
) -> SimpleNamespace:
    return SimpleNamespace(
        model=_Target(),
        spec_algorithm=_Algorithm(algorithm),
        is_draft_worker=draft,
        pp_group=SimpleNamespace(world_size=pp),
        prefill_cuda_graph_runner=graph,
    )


def _register(model_runner: Any, draft_path: str | None = None) -> list[Any]:
    """What ``finalize_cuda_graph_capture(model_runner)`` does: one factory call per spec."""
    return [sg_hooks.hook_factory(spec["config"]) for spec in forward_hooks(draft_path)]


@pytest.fixture
def guarded(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    yield from armed_hooks(monkeypatch, caplog, "strict")


def _lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return lines(caplog)


def test_engine_start_says_armed_with_the_runner_and_what_is_recorded(
    guarded: None, caplog: pytest.LogCaptureFixture
) -> None:
    graph = _GraphRunner()
    hooks = _register(_runner(graph=graph))
    assert all(h is not None for h in hooks)
    (line,) = _lines(caplog)
    assert line.startswith("eagle3-contracts [sglang==0.5.23")
    assert "armed: guard strict, dump off" in line
    assert "breakable prefill CUDA graph: the first prefill runs eager, later ones replay" in line
    assert "the embedding and 4 decoder layers (full residual streams, first 32 tokens)" in line


def _write_draft(directory: Path, architecture: str) -> str:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.json").write_text(json.dumps({"architectures": [architecture]}))
    return str(directory)


@pytest.mark.parametrize(
    ("runner", "release", "architecture", "reason"),
    [
        (_runner("EAGLE"), "0.5.23", None, "speculative algorithm EAGLE, not EAGLE3"),
        (_runner(pp=2), "0.5.23", None, "pipeline parallel (pp size 2)"),
        (_runner(), "0.5.99", None, "sglang==0.5.99 is a release eagle3-contracts has not been"),
        # a shipped table answers check for 0.5.21, but the hooks never ran in its runner
        (_runner(), "0.5.21", None, "sglang==0.5.21 is a release eagle3-contracts has not been"),
        (_runner(), "0.5.23", "LlamaForCausalLMEagle", "['LlamaForCausalLMEagle'], not an EAGLE-3"),
    ],
)
def test_not_applicable_is_one_line_and_no_hooks(
    guarded: None,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    runner: Any,
    release: str,
    architecture: str | None,
    reason: str,
) -> None:
    monkeypatch.setattr(sg_hooks, "sglang_release", lambda: release)
    draft = _write_draft(tmp_path / "draft", architecture) if architecture else None
    graph = _GraphRunner()
    runner.prefill_cuda_graph_runner = graph
    assert _register(runner, draft) == [None, None, None]
    (line,) = _lines(caplog)
    assert "not applicable: " in line and reason in line and line.endswith("serving untouched")
    assert "can_replay_locally" not in vars(graph)  # prefill graphs untouched


def test_the_drafters_runner_gets_no_hooks_and_no_line(
    guarded: None, caplog: pytest.LogCaptureFixture
) -> None:
    assert _register(_runner(draft=True)) == [None, None, None]
    assert _lines(caplog) == [] and sg_hooks.session() is None


def _batch(mode: str = "extend") -> SimpleNamespace:
    forward_mode = SimpleNamespace(
        is_extend=lambda: mode in ("extend", "verify"), is_target_verify=lambda: mode == "verify"
    )
    return SimpleNamespace(forward_mode=forward_mode)


def test_first_prefill_is_kept_off_the_graph_then_graphs_replay(guarded: None) -> None:
    graph = _GraphRunner()
    _register(_runner(graph=graph))
    session = sg_hooks.session()
    assert session is not None
    assert graph.can_replay_locally() is False  # the recorded prefill runs eager
    assert session.eager_prefills == 1
    session.on_logits(nn.Identity(), (torch.zeros(3), None, None, _batch("verify"), None), None)
    assert graph.can_replay_locally() is False  # a verify is not the first prefill
    session.on_logits(nn.Identity(), (torch.zeros(3), None, None, _batch(), None), None)
    assert session.done and "can_replay_locally" not in vars(graph)  # the class's own again
    assert graph.can_replay_locally() is True
    assert "no aux hidden states" in session.first_prefill


def _recorded(session: sg_hooks.Session, batch: Any, rows: int = 5, hidden: int = 8) -> Any:
    """The embedding and layer hooks fired in a forward of ``batch``; returns the stream."""
    stream = torch.randn(rows, hidden)
    session.on_embedding(nn.Identity(), (), stream)
    for _ in range(4):
        stream = stream + torch.randn(rows, hidden)
        session.on_layer(nn.Identity(), (torch.arange(rows), stream, batch), stream)
    return stream


def test_a_replayed_prefill_is_never_judged_even_strict(
    guarded: None, caplog: pytest.LogCaptureFixture
) -> None:
    """The layers recorded belong to an earlier eager forward; this prefill was replayed."""
    _register(_runner())
    session = sg_hooks.session()
    assert session is not None
    stale = _batch()
    _recorded(session, stale)
    aux = torch.randn(5, 16)
    session.on_logits(nn.Identity(), (torch.zeros(5), aux, None, _batch(), [aux]), None)  # no raise
    assert session.verdict is None
    line = _lines(caplog)[-1]
    assert "cannot observe: the decoder layers did not run as Python modules" in line
    assert "set --disable-prefill-cuda-graph" in line


def test_a_token_shard_is_never_judged(guarded: None, caplog: pytest.LogCaptureFixture) -> None:
    _register(_runner())
    session = sg_hooks.session()
    assert session is not None
    batch = _batch()
    _recorded(session, batch, rows=3)
    aux = torch.randn(6, 16)
    session.on_logits(nn.Identity(), (torch.zeros(6), aux, None, batch, [aux]), None)
    assert session.verdict is None
    assert "the decoder layers ran on 3 token rows, the aux states hold 6" in _lines(caplog)[-1]


class _Stream:
    """A layer-boundary residual stream's ``snapshot`` (full stream of an owed output)."""

    def __init__(self, result: torch.Tensor | Exception) -> None:
        self.result = result

    def snapshot(self, hidden: Any) -> torch.Tensor:
        if isinstance(self.result, Exception):
            raise self.result
        return self.result


def test_read_stream_takes_the_snapshot_of_an_owed_output() -> None:
    full = torch.randn(3, 4)
    handle = object()
    batch = SimpleNamespace(residual_stream=_Stream(full), forward_mode=None)
    stream, why = sg_hooks.read_stream((handle, None), (None, None, batch))
    assert stream is full and why == ""
    batch.residual_stream = _Stream(NotImplementedError("a finalize handoff"))
    stream, why = sg_hooks.read_stream(handle, (batch,))
    assert stream is None and "a finalize handoff" in why


def test_launch_with_a_non_eagle3_drafter_is_one_line_and_still_launches(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from eagle3_contracts.cli import main, sglang_launch

    launched: list[list[str]] = []
    monkeypatch.setattr(sglang_launch.os, "execv", lambda path, argv: launched.append(argv))
    monkeypatch.setattr(sglang_launch, "_check_sglang", lambda python: None)  # "py" stands in
    monkeypatch.setenv("EAGLE3_CONTRACTS_GUARD", "warn")
    draft = _write_draft(tmp_path / "draft", "LlamaForCausalLMEagle")
    argv = ["--model-path", "M", "--speculative-draft-model-path", draft]
    assert main(["sglang-launch", "--python", "py", "--", *argv]) == 0
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "['LlamaForCausalLMEagle'], not an EAGLE-3 drafter: the hooks stay off" in line
    assert launched and launched[0][3:7] == argv  # SGLang runs all the same


def _stamped(directory: Path, trained: tuple[int, ...], num_layers: int, hidden: int) -> str:
    from eagle3_contracts.contract import CaptureContract
    from eagle3_contracts.stamp import Stamp, write_stamp

    _write_draft(directory, "LlamaForCausalLMEagle3")
    contract = CaptureContract(trained, num_layers, hidden, "as_listed")
    write_stamp(directory, Stamp(contract, trained_with="specforge-hf"))
    return str(directory)


def _dump_places(tmp_path: Path) -> dict[str, Path]:
    a_file = tmp_path / "a-file"
    a_file.write_text("not a folder")
    return {"under a file": a_file / "dumps", "a file": a_file}


@pytest.mark.parametrize("place", ["under a file", "a file"])
def test_a_dump_that_cannot_be_written_never_weakens_strict(
    guarded: None,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    tmp_path: Path,
    place: str,
) -> None:
    """The dump's write error is logged as such; the proven MISMATCH still stops serving."""
    from eagle3_contracts.integrations._guard.verdict import WiringMismatch

    monkeypatch.setenv("EAGLE3_CONTRACTS_DUMP", str(_dump_places(tmp_path)[place]))
    draft = _stamped(tmp_path / "draft", (0, 1, 2), num_layers=4, hidden=8)
    _register(_runner(), draft)
    session = sg_hooks.session()
    assert session is not None and session.active
    batch, rows = _batch(), 5
    stream = torch.randn(rows, 8)
    session.on_embedding(nn.Identity(), (), stream)
    states = []
    for _ in range(4):
        stream = stream + torch.randn(rows, 8)
        states.append(stream)
        session.on_layer(nn.Identity(), (torch.arange(rows), stream, batch), stream)
    aux = torch.cat(states[1:], dim=-1)  # layers 1, 2, 3: one layer late for (0, 1, 2)
    logits = nn.Identity()
    target = {"model_type": "llama", "num_hidden_layers": 4, "hidden_size": 8, "vocab_size": 64}
    logits.config = SimpleNamespace(to_dict=lambda: dict(target))  # the target's config
    with pytest.raises(WiringMismatch, match="MISMATCH"):
        session.on_logits(logits, (torch.arange(rows), aux, None, batch, [aux]), None)
    assert session.verdict is not None and session.verdict.status == "mismatch"
    lines = _lines(caplog)
    assert any("dump: cannot write in" in line and "serving continues" in line for line in lines)
    assert not any("cannot observe" in line for line in lines), lines


def test_the_hook_factory_takes_a_bad_token_count(
    guarded: None, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """``"²"`` passes ``str.isdigit`` and fails ``int``: the factory still arms a strict guard
    on the default count and says why."""
    monkeypatch.setenv("EAGLE3_CONTRACTS_GUARD_TOKENS", "\u00b2")
    hooks = _register(_runner())
    session = sg_hooks.session()
    assert all(h is not None for h in hooks) and session is not None and session.active
    assert session.settings.strict and session.settings.guard_tokens == 32
    assert any("is not a whole number from 1 to 65536; using 32" in line for line in _lines(caplog))
