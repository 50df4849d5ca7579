"""The SGLang hooks armed offline, as the guard tests need them (no SGLang installed)."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from eagle3_contracts.integrations._guard import start as guard_start
from eagle3_contracts.integrations._guard.installed import Answering
from eagle3_contracts.integrations.sglang import hooks as sg_hooks

LOGGER = "sglang.eagle3_contracts"


def armed_hooks(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, mode: str
) -> Iterator[None]:
    """The guard in ``mode`` inside a stand-in sglang 0.5.23 whose files are the released
    wheel's (the installed path is ``test_installed_guards.py``, on a fake installed tree);
    no claim from the environment; the session forgotten before and after."""
    monkeypatch.setenv("EAGLE3_CONTRACTS_GUARD", mode)
    monkeypatch.delenv("EAGLE3_CONTRACTS_DUMP", raising=False)
    monkeypatch.delenv("EAGLE3_CONTRACTS_TRAINED_WITH", raising=False)
    monkeypatch.setattr(sg_hooks, "sglang_release", lambda: "0.5.23")
    monkeypatch.setattr(guard_start, "answering_release", lambda fw, v: Answering(f"{fw}=={v}", ""))
    caplog.set_level(logging.INFO, logger=LOGGER)
    sg_hooks.reset()
    yield
    sg_hooks.reset()


def lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    """What the hooks logged, in order."""
    return [r.getMessage() for r in caplog.records if r.name == LOGGER]
