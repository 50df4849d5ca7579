"""The shell scripts under scripts/ parse, and refuse clearly when their inputs are missing."""

from __future__ import annotations

import configparser
import os
import shutil
import subprocess
import sys
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


REQUIRE_CUDA = Path(__file__).resolve().parents[1] / "scripts" / "require_cuda.py"


def _require_cuda(env_path: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["CUDA_VISIBLE_DEVICES"] = ""  # no device, even on a CUDA host running this suite
    if env_path is not None:
        env["PYTHONPATH"] = str(env_path)
    return subprocess.run(
        [sys.executable, str(REQUIRE_CUDA)], capture_output=True, text=True, env=env, timeout=120
    )


def test_require_cuda_without_a_device_exits_2_with_one_line() -> None:
    done = _require_cuda()
    assert done.returncode == 2
    assert done.stdout == ""
    assert len(done.stderr.splitlines()) == 1
    assert "no CUDA device visible" in done.stderr
    assert "Traceback" not in done.stderr


def test_require_cuda_with_a_device_names_it(tmp_path: Path) -> None:
    fake = tmp_path / "torch"
    fake.mkdir()
    (fake / "__init__.py").write_text(
        "__version__ = '0'\n"
        "class version:\n    cuda = '12.8'\n"
        "class cuda:\n"
        "    is_available = staticmethod(lambda: True)\n"
        "    device_count = staticmethod(lambda: 2)\n"
        "    get_device_name = staticmethod(lambda i: f'Fake GPU {i}')\n"
    )
    done = _require_cuda(tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "tox -e gpu: 2 CUDA device(s), the first Fake GPU 0"


def test_tox_gpu_checks_for_cuda_before_pytest() -> None:
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(Path(__file__).resolve().parents[1] / "tox.ini")
    gpu = parser["testenv:gpu"]
    assert gpu.get("commands_pre", "").split() == ["python", "scripts/require_cuda.py"]
    assert "-m gpu" in gpu["commands"]
