"""The plugin inside real vLLM engines: the guard's verdict line, strict refusal, the
multi-process engine, a non-EAGLE-3 drafter, an unwritable dump directory.

Each case is a fresh process (the plugin reads its environment once per process).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from eagle3_contracts.stamp import Stamp, write_stamp
from tests.engines.vllm import harness
from tests.engines.vllm.conftest import target_for

pytestmark = pytest.mark.engine
ROOT = Path(__file__).resolve().parents[3]
BOUNDARIES = [2, 4, 6]  # top-level ids as vLLM reads them: canonical [1, 3, 5]


def _serve(
    target: Path, draft: Path, env: dict[str, str], method: str = "eagle3"
) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("EAGLE3_CONTRACTS_")}
    full.update({"HF_HUB_OFFLINE": "1", "VLLM_ENABLE_V1_MULTIPROCESSING": "0"})
    full.update(env)
    cmd = [sys.executable, "-m", "tests.engines.vllm.serve_once", str(target), str(draft), method]
    return subprocess.run(
        cmd, cwd=ROOT, env=full, capture_output=True, text=True, timeout=300, check=False
    )


def _guard_lines(out: subprocess.CompletedProcess[str]) -> list[str]:
    text = out.stdout + out.stderr
    return [line for line in text.splitlines() if "eagle3-contracts" in line]


@pytest.fixture(scope="module")
def stamped(engine_work: dict[str, Any]) -> dict[str, Path]:
    target, _ = target_for(engine_work, "llama")
    work = engine_work["work"]
    right = harness.build_drafter(harness.drafter_config(BOUNDARIES, None, 3), work / "guard-right")
    write_stamp(right, Stamp((1, 3, 5), harness.NUM_LAYERS, harness.HIDDEN, trained_with="vllm"))
    wrong = harness.build_drafter(harness.drafter_config(BOUNDARIES, None, 3), work / "guard-wrong")
    # trained on the outputs of layers 2, 4, 6 - 1 (SpecForge reading of the same ids)
    write_stamp(
        wrong, Stamp((2, 4, 5), harness.NUM_LAYERS, harness.HIDDEN, trained_with="specforge")
    )
    return {"target": target, "right": right, "wrong": wrong}


def test_guard_ok_in_the_default_multiprocess_engine(stamped: dict[str, Path]) -> None:
    out = _serve(
        stamped["target"],
        stamped["right"],
        {"EAGLE3_CONTRACTS_GUARD": "warn", "VLLM_ENABLE_V1_MULTIPROCESSING": "1"},
    )
    assert "SERVED" in out.stdout, out.stdout + out.stderr[-3000:]
    lines = _guard_lines(out)
    ok = [x for x in lines if "guard [vllm==0.32.0:v1, llama.py:LlamaForCausalLM]: OK:" in x]
    assert len(ok) == 1, lines
    assert "[layer 1, layer 3, layer 5 (last, pre-norm)] = trained [1, 3, 5]" in ok[0]
    assert "stamp in the drafter's config.json" in ok[0]


def test_guard_warn_reports_a_mismatch_and_serving_continues(stamped: dict[str, Path]) -> None:
    out = _serve(stamped["target"], stamped["wrong"], {"EAGLE3_CONTRACTS_GUARD": "warn"})
    assert "SERVED" in out.stdout, out.stdout + out.stderr[-3000:]
    mismatch = [x for x in _guard_lines(out) if ": MISMATCH: the drafter's fc receives" in x]
    assert len(mismatch) == 1, _guard_lines(out)
    assert "segment 0 is layer 1, trained on layer 2" in mismatch[0]
    assert "eagle_aux_hidden_state_layer_ids = [3, 5, 6]" in mismatch[0]


def test_guard_strict_refuses_to_start_on_a_mismatch(stamped: dict[str, Path]) -> None:
    out = _serve(stamped["target"], stamped["wrong"], {"EAGLE3_CONTRACTS_GUARD": "strict"})
    assert out.returncode != 0 and "SERVED" not in out.stdout
    text = out.stdout + out.stderr
    assert "refusing to start" in text and "WiringMismatch" in text, text[-3000:]


def test_unwritable_dump_dir_is_one_line_and_serving_continues(stamped: dict[str, Path]) -> None:
    out = _serve(
        stamped["target"], stamped["right"], {"EAGLE3_CONTRACTS_DUMP": "/proc/eagle3-no-such-dir"}
    )
    assert "SERVED" in out.stdout, out.stdout + out.stderr[-3000:]
    warnings = [x for x in _guard_lines(out) if "dump: cannot write" in x]
    assert len(warnings) == 1, _guard_lines(out)


def test_non_eagle3_drafter_is_not_applicable(stamped: dict[str, Path]) -> None:
    out = _serve(stamped["target"], stamped["right"], {"EAGLE3_CONTRACTS_GUARD": "strict"}, "ngram")
    assert "SERVED" in out.stdout, out.stdout + out.stderr[-3000:]
    lines = _guard_lines(out)
    assert len(lines) == 1 and "not applicable" in lines[0] and "'ngram'" in lines[0], lines
