"""Run the installed ``eagle3-contracts`` console script, as a user's shell does."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def entry_point() -> str:
    """The console script beside this interpreter (the venv's), else the one on PATH."""
    beside = Path(sys.executable).parent / "eagle3-contracts"
    found = str(beside) if beside.exists() else shutil.which("eagle3-contracts")
    if found is None:  # the package is not installed: the README's setup was skipped
        raise RuntimeError("no eagle3-contracts console script; pip install -e . first")
    return found


def entry_env(
    extra: Mapping[str, str] | None = None, *, drop: tuple[str, ...] = ()
) -> dict[str, str]:
    """This environment with this checkout first on PYTHONPATH (the script imports this code)."""
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.setdefault("OMP_NUM_THREADS", "1")
    env.update(extra or {})
    return env


def run_entry(
    *argv: str,
    env: Mapping[str, str] | None = None,
    drop: tuple[str, ...] = (),
    cwd: str | os.PathLike[str] | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """``eagle3-contracts ARGV`` in a child process: exit code, stdout and stderr."""
    return subprocess.run(
        [entry_point(), *argv],
        capture_output=True,
        text=True,
        env=entry_env(env, drop=drop),
        cwd=cwd,
        timeout=timeout,
        check=False,
    )
