"""The bad-input corpus (``bad_inputs.CASES``), each case in a limited child process.

Every case must give its exit code (2 for bad input), exactly one stderr line naming the
problem and no traceback, within ``TIME_LIMIT`` seconds and ``MEMORY_LIMIT`` bytes of address
space above what the (pre-loaded) interpreter maps: a hang, a memory blow-up or a crash fails.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from .bad_inputs import CASES, Case, build_world

TIME_LIMIT = 60.0  # seconds per case; the slowest takes ~1 s on a loaded 2-core machine
MEMORY_LIMIT = 1536 << 20  # address space a case may add to the warm interpreter's
ZYGOTE = Path(__file__).with_name("_zygote.py")


class Zygote:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.proc = subprocess.Popen(
            [sys.executable, str(ZYGOTE)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        ready = self.proc.stdout.readline()
        assert json.loads(ready) == {"ready": True}, ready

    def run(self, name: str, argv: list[str]) -> tuple[dict[str, object], str, str]:
        out, err = self.tmp / f"{name}.out", self.tmp / f"{name}.err"
        request = {
            "argv": argv,
            "out": str(out),
            "err": str(err),
            "timeout": TIME_LIMIT,
            "memory": MEMORY_LIMIT,
        }
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        result = json.loads(self.proc.stdout.readline())
        return result, out.read_text(errors="replace"), err.read_text(errors="replace")

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Zygote, dict[str, str]]]:
    tmp = tmp_path_factory.mktemp("bad-inputs")
    paths = build_world(tmp)
    zygote = Zygote(tmp)
    try:
        yield zygote, paths
    finally:
        zygote.close()


def test_the_corpus_is_large_and_names_are_unique() -> None:
    assert len(CASES) >= 80
    assert len({c.name for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_bad_input(case: Case, world: tuple[Zygote, dict[str, str]]) -> None:
    zygote, paths = world
    argv = [part.format(**paths) for part in case.argv]
    result, out, err = zygote.run(case.name, argv)
    assert not result["timed_out"], f"{case.name}: still running after {TIME_LIMIT} s"
    lines = err.strip().splitlines()
    assert "Traceback" not in err, err[-3000:]
    assert result["code"] == case.code, (result, err[-2000:])
    if case.code == 2:
        assert len(lines) == 1, err[-2000:]
        assert lines[0].startswith("eagle3-contracts: error: "), lines[0]
        assert case.expect in lines[0], lines[0]
    else:  # a finding (1) or a pass (0): a report on stdout, notes at most on stderr
        assert out.strip(), err[-2000:]
