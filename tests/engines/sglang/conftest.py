"""Session set-up of the SGLang engine suite (``pytest -m engine tests/engines/sglang`` inside a
``.venv-sglang-<release>``; see README.md here).

The import stubs (``stubs/``) and ``SGLANG_USE_CPU_ENGINE=1`` are put in place by the
``sglang_runtime`` fixture, i.e. only when an engine test runs: the default run deselects these
tests and must not see a stub ``torchvision``.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

STUBS = Path(__file__).resolve().parent / "stubs"
RECORD_ENV = "EAGLE3_RECORD_ENGINE_GOLDENS"


class _Session(dict[str, Any]):
    """The session's state (short repr: hypothesis prints it with every failing example)."""

    def __repr__(self) -> str:
        return f"<sglang {self.get('release')} session, {len(self.get('observed', []))} cases>"


@pytest.fixture(scope="session")
def sglang_runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Stubs on sys.path, CPU engine forced, gloo groups up; yields the session's state."""
    os.environ["SGLANG_USE_CPU_ENGINE"] = "1"
    if str(STUBS) not in sys.path:
        sys.path.insert(0, str(STUBS))
    try:
        import sglang  # noqa: F401
    except ImportError as exc:
        pytest.fail(
            f"sglang is not importable ({exc}): run this suite in .venv-sglang-<release> "
            "(tox -e engine-sglang, or see tests/engines/sglang/README.md)",
            pytrace=False,
        )
    from tests.engines.sglang import harness

    harness.init_runtime()
    state = _Session(release=harness.release(), pairs={}, observed=[])
    yield state
    out = tmp_path_factory.getbasetemp() / f"sglang-{state['release']}-observations.json"
    out.write_text(json.dumps(state["observed"], indent=1))
    print(f"\nSGLang {state['release']}: {len(state['observed'])} cases observed; summary {out}")
