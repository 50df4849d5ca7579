"""Fixtures of the command-line tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def wide_output(monkeypatch: pytest.MonkeyPatch) -> None:
    """A terminal wide enough that no line wraps: for tests that read the content of long lines
    and rows (how reports fit the terminal is tests/cli/test_width.py's)."""
    monkeypatch.setenv("COLUMNS", "1000")
