"""The shell scripts under scripts/ parse, and refuse clearly when their inputs are missing."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPTS = sorted((Path(__file__).resolve().parents[1] / "scripts").glob("*.sh"))
BASH = shutil.which("bash") or "/bin/bash"


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_script_parses(script: Path) -> None:
    done = subprocess.run([BASH, "-n", str(script)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_gpu_goldens_without_a_bundle_exits_2_with_one_line(tmp_path: Path) -> None:
    lone = tmp_path / "gpu-goldens.sh"
    shutil.copy(Path(__file__).resolve().parents[1] / "scripts" / "gpu-goldens.sh", lone)
    done = subprocess.run(
        [BASH, str(lone), str(tmp_path / "out")], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0
    assert "gpu-goldens-pack.sh" in done.stderr
