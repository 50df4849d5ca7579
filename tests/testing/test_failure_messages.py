"""What a user's failing test prints: an ``eagle3_verify`` failure is the message at the
caller's line (not the verifier's source), a missing golden says how to write it."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

WRONG_CAPTURE = """
import pytest
from eagle3_contracts import capture_hidden_states
from eagle3_contracts.errors import ContractViolation


def shifted(model, input_ids):  # one layer early: the classic off-by-one
    return capture_hidden_states(model, input_ids, (0, 2, 4))


def test_wrong(eagle3_verify):
    eagle3_verify(shifted)


def test_still_catchable(eagle3_verify):
    with pytest.raises(ContractViolation, match="one layer early"):
        eagle3_verify(shifted)
"""


def test_a_verify_failure_is_the_message_at_the_callers_line(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_wrong=WRONG_CAPTURE)
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-p", "no:randomly", "-W", "ignore"
    )
    result.assert_outcomes(failed=1, passed=1)
    out = result.stdout.str()
    failure = out[out.index("_ test_wrong _") : out.index("short test summary")]
    assert "eagle3_contracts/capture/verify.py" not in failure
    assert "eagle3_contracts/testing/pytest_plugin.py" not in failure
    assert len(failure.splitlines()) < 25, failure
    result.stdout.fnmatch_lines(
        ["*eagle3_verify(shifted)*", "E *ContractViolation: *every segment is one layer early*"]
    )


GOLDEN_TEST = """
from eagle3_contracts.testing.golden_cases import assert_capture_golden


def test_capture(eagle3_golden):
    segments = [
        {"position": p, "layer_id": n, "identified": n, "near_miss": None, "shape": [2, 8],
         "dtype": "float32", "stats": {"norm": 1.5 + p, "mean": 0.1}}
        for p, n in enumerate((-1, 1, 3))
    ]
    assert_capture_golden({"case": "a", "concat_order": [-1, 1, 3], "segments": segments},
                          eagle3_golden)


def test_plain(eagle3_golden):
    assert {"case": "b", "concat_order": [1], "segments": []} == eagle3_golden
"""


def test_a_missing_golden_says_to_run_snapshot_update(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\ntestpaths = tests\n")
    (pytester.path / "tests").mkdir()
    (pytester.path / "tests" / "test_demo.py").write_text(GOLDEN_TEST)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "0", "-rf")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            "FAILED tests/test_demo.py::test_capture - AssertionError: no golden*",
        ]
    )
    result.stdout.fnmatch_lines(
        ["E * no golden stored yet: write it with `pytest --snapshot-update*"]
    )
    written = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-n", "0", "--snapshot-update"
    )
    written.assert_outcomes(passed=2)
