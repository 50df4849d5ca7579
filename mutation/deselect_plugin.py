"""pytest plugin of the mutation run: leaves out the tests listed in ``mutation-deselect.txt``
(in the rootdir), which ``mutation/run.py --skip-failing`` writes with the tests that fail on
the unmutated tree. A file instead of command-line options: mutmut reruns every mutant when
its pytest options change, not when this list does."""

from __future__ import annotations

from pathlib import Path

import pytest


def _listed(config: pytest.Config) -> set[str]:
    path = Path(str(config.rootpath)) / "mutation-deselect.txt"
    return set(path.read_text().split()) if path.exists() else set()


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    rel = collection_path.relative_to(config.rootpath).as_posix()
    return True if rel in _listed(config) else None  # a module that fails to import


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    listed = _listed(config)
    gone = [item for item in items if item.nodeid in listed]
    if gone:
        config.hook.pytest_deselected(items=gone)
        items[:] = [item for item in items if item.nodeid not in listed]
