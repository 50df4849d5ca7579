"""Set-up of the plugin tests, which run pytest sessions in-process (pytester).

``pytester`` restores ``sys.modules`` after each inner session and each test, dropping every
module first imported meanwhile; it already keeps ``zope`` and ``readline``, whose import-time
state cannot be redone. torch is such a package: some of its modules register a torch library
when imported (``torch/distributed/_functional_collectives.py``, pulled in by the first
``torch.testing.assert_close``; ``torch/_inductor/test_operators.py``), and imported a second
time in the same worker they register twice and torch raises. torch's modules are kept too.
"""

from __future__ import annotations

import pytest
from _pytest.pytester import Pytester, SysModulesSnapshot

KEPT = ("zope", "readline", "torch")  # pytester's own two, and torch


def _snapshot(self: Pytester) -> SysModulesSnapshot:
    return SysModulesSnapshot(preserve=lambda name: name.startswith(KEPT))


@pytest.fixture(autouse=True)
def _torch_outlives_pytester(monkeypatch: pytest.MonkeyPatch) -> None:
    """Set up before ``pytester`` (autouse first), so its snapshots keep torch's modules; a
    pytest whose Pytester lost this method fails here, loudly."""
    monkeypatch.setattr(Pytester, "_Pytester__take_sys_modules_snapshot", _snapshot)
