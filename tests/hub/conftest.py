"""The Hub tests' shared fixture: an empty HF cache, offline unless a test says otherwise."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty cache at ``HF_HUB_CACHE`` with ``HF_HUB_OFFLINE=1``: nothing leaves the machine."""
    root = tmp_path / "hf" / "hub"
    root.mkdir(parents=True)
    monkeypatch.setenv("HF_HUB_CACHE", str(root))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return root
