"""The goldens plugin in real pytest sessions (pytester): what an update may and may not do."""

from __future__ import annotations

import pytest

from eagle3_contracts.testing.goldens import GOLDEN_KEY

pytest_plugins = ["pytester"]

CAPTURE_TEST = """
import os

from eagle3_contracts.testing.golden_cases import assert_capture_golden

IDENTIFIED = int(os.environ.get("DEMO_IDENTIFIED", "3"))


def test_capture(eagle3_golden):
    segments = [
        {"position": p, "layer_id": n, "identified": IDENTIFIED if n == 3 else n,
         "near_miss": None, "shape": [2, 8], "dtype": "float32",
         "stats": {"norm": 1.5 + p, "mean": 0.1}}
        for p, n in enumerate((-1, 1, 3))
    ]
    record = {"case": "a", "concat_order": [-1, 1, 3], "segments": segments}
    assert_capture_golden(record, eagle3_golden)
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeini("[pytest]\ntestpaths = tests\n")
    (pytester.path / "tests").mkdir()
    (pytester.path / "tests" / "test_demo.py").write_text(CAPTURE_TEST)
    return pytester


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "0", *args)


def test_a_refused_golden_write_leaves_the_existing_golden_byte_identical(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """syrupy once counted a refused write's golden as unused and delete it."""
    written = _run(project, "--snapshot-update")
    written.assert_outcomes(passed=1)
    golden = project.path / "goldens" / "test_demo" / "test_capture.json"
    before = golden.read_bytes()
    assert GOLDEN_KEY.encode() in before

    monkeypatch.setenv("DEMO_IDENTIFIED", "2")  # a wrong capture: segment 2 holds layer 2
    refused = _run(project, "--snapshot-update")
    refused.assert_outcomes(failed=1)
    refused.stdout.fnmatch_lines(
        ["*not writing this golden: segment 2 should be layer 3 but is 2*"]
    )
    assert "deleted" not in refused.stdout.str()
    assert golden.read_bytes() == before

    monkeypatch.setenv("DEMO_IDENTIFIED", "3")  # and the kept golden still passes
    _run(project).assert_outcomes(passed=1)


FILTERED_TEST = """
from syrupy.filters import props


def test_filtered(eagle3_golden):
    assert {"a": 1, "b": 2} == eagle3_golden(exclude=props("b"))
"""


def test_syrupy_filters_and_matchers_are_refused_loudly(project: pytest.Pytester) -> None:
    """exclude/include/matcher were once ignored silently."""
    (project.path / "tests" / "test_demo.py").write_text(FILTERED_TEST)
    result = _run(project, "--snapshot-update")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*GoldenExtension does not apply syrupy's exclude*"])
    assert not (project.path / "goldens").exists()


def test_a_plain_assertion_is_not_refused() -> None:
    from eagle3_contracts.testing.goldens import GoldenExtension

    text = GoldenExtension().serialize({"a": 1}, matcher=None)
    assert '"a": 1' in text
    with pytest.raises(TypeError, match="does not apply syrupy's matcher"):
        GoldenExtension().serialize({"a": 1}, matcher=lambda data, path: data)
