"""Our torch work's thread count on a shared machine: the free cores, unless the user chose."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from eagle3_contracts.capture import threads
from eagle3_contracts.capture.threads import (
    THREAD_VARIABLES,
    fair_threads,
    fair_torch_threads,
    other_runnable,
)


def _machine(monkeypatch: pytest.MonkeyPatch, cores: int, others: int | None) -> None:
    monkeypatch.setattr(threads, "usable_cores", lambda: cores)
    monkeypatch.setattr(threads, "other_runnable", lambda: others)


@pytest.mark.parametrize(
    ("cores", "others", "current", "expected"),
    [
        (2, 0, 2, 2),  # idle: torch's default stands
        (2, 1, 2, 1),
        (2, 2, 2, 1),  # two busy processes on 2 cores: one thread, never zero
        (2, 9, 2, 1),
        (16, 4, 8, 8),  # never more than torch would use
        (16, 12, 8, 4),
    ],
)
def test_the_free_cores_decide_without_a_user_setting(
    monkeypatch: pytest.MonkeyPatch, cores: int, others: int, current: int, expected: int
) -> None:
    _machine(monkeypatch, cores, others)
    choice = fair_threads(current, environ={})
    assert choice.threads == expected
    assert f"{others} other runnable" in choice.reason


@pytest.mark.parametrize("name", THREAD_VARIABLES)
def test_a_users_thread_setting_wins(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    _machine(monkeypatch, 2, 9)
    choice = fair_threads(2, environ={name: "2"})
    assert choice.threads == 2 and choice.reason == f"{name}=2 (yours)"


def test_an_unknown_run_queue_keeps_torchs_default(monkeypatch: pytest.MonkeyPatch) -> None:
    _machine(monkeypatch, 2, None)
    assert fair_threads(2, environ={}).threads == 2


def test_the_run_queue_is_read_from_loadavg_without_this_process(tmp_path: Path) -> None:
    loadavg = tmp_path / "loadavg"
    loadavg.write_text("14.14 12.01 6.85 3/161 24669\n")
    assert other_runnable(str(loadavg)) == 2
    loadavg.write_text("garbage\n")
    assert other_runnable(str(loadavg)) is None
    assert other_runnable(str(tmp_path / "missing")) is None


def test_the_scoped_choice_is_restored_after(monkeypatch: pytest.MonkeyPatch) -> None:
    before = torch.get_num_threads()
    _machine(monkeypatch, 64, 63)
    for name in THREAD_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    torch.set_num_threads(2)  # the process's own setting (an engine's, a user's)
    try:
        with fair_torch_threads() as choice:
            assert choice.threads == 1 and torch.get_num_threads() == 1
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
