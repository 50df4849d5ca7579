"""Engine suites (tests/engines/<engine>/) run a real serving engine in its own virtual
environment: only with ``-m engine`` (``tox -e engine-vllm``, ``.ci/run``). The default run
(``pytest -n 2``) deselects them: they are reported as deselected, never as passed or skipped.
"""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if "engine" in (config.getoption("markexpr") or ""):
        return  # the run names the marker itself (-m engine, -m "not engine"): pytest decides
    engine = [item for item in items if item.get_closest_marker("engine") is not None]
    if engine:
        config.hook.pytest_deselected(items=engine)
        items[:] = [item for item in items if item.get_closest_marker("engine") is None]
