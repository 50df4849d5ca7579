"""The plugin inside real vLLM engines: the guard's verdict line, strict refusal, the
multi-process engine, a non-EAGLE-3 drafter, an unwritable dump directory.

Each case is a fresh process (the plugin reads its environment once per process).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.engines.vllm import harness

pytestmark = pytest.mark.engine


def _serve(
    target: Path, draft: Path, env: dict[str, str], method: str = "eagle3"
) -> subprocess.CompletedProcess[str]:
    return harness.serve_fresh(target, draft, env, method)


def test_guard_ok_in_the_default_multiprocess_engine(stamped: dict[str, Path]) -> None:
    out = _serve(
        stamped["target"],
        stamped["right"],
        {"EAGLE3_CONTRACTS_GUARD": "warn", "VLLM_ENABLE_V1_MULTIPROCESSING": "1"},
    )
    assert "SERVED" in out.stdout, out.stdout + out.stderr[-3000:]
    lines = harness.plugin_lines(out)
    ok = [x for x in lines if f"guard [{harness.SERVE}, llama.py:LlamaForCausalLM]: OK:" in x]
    assert len(ok) == 1, lines
    assert "[layer 1, layer 3, layer 5 (last, pre-norm)] = trained [1, 3, 5]" in ok[0]
    assert "stamp in the drafter's config.json" in ok[0]


def test_guard_warn_reports_a_mismatch_and_serving_continues(stamped: dict[str, Path]) -> None:
    out = _serve(stamped["target"], stamped["wrong"], {"EAGLE3_CONTRACTS_GUARD": "warn"})
    assert "SERVED" in out.stdout, out.stdout + out.stderr[-3000:]
    mismatch = [
        x for x in harness.plugin_lines(out) if ": MISMATCH: the drafter's fc receives" in x
    ]
    assert len(mismatch) == 1, harness.plugin_lines(out)
    assert "not fed: layer 2, layer 4; fed but not trained on: layer 1, layer 3" in mismatch[0]
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
    warnings = [x for x in harness.plugin_lines(out) if "dump: cannot write" in x]
    assert len(warnings) == 1, harness.plugin_lines(out)


def test_non_eagle3_drafter_is_not_applicable(stamped: dict[str, Path]) -> None:
    out = _serve(stamped["target"], stamped["right"], {"EAGLE3_CONTRACTS_GUARD": "strict"}, "ngram")
    assert "SERVED" in out.stdout, out.stdout + out.stderr[-3000:]
    lines = harness.plugin_lines(out)
    assert len(lines) == 1 and "not applicable" in lines[0] and "'ngram'" in lines[0], lines
