"""The demo replays the Kimi story and its key verdicts hold (run in-process, once)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eagle3_contracts.cli import main
from eagle3_contracts.config.plan import FindingKind
from eagle3_contracts.dumps.demo import run_demo


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory):
    out = tmp_path_factory.mktemp("demo")
    return run_demo(out_dir=out), out


def test_demo_behaves_as_scripted(demo) -> None:
    result, _ = demo
    assert result.as_scripted and result.exit_code == 0
    assert [s.outcome for s in result.steps] == [
        "pass",
        "pass",
        "pass",
        "mismatch",
        "pass",
        "mismatch",
    ]
    assert "demo behaved as scripted" in result.render_text()


def test_shapes_pass_but_diagnosis_names_the_embedding(demo) -> None:
    result, _ = demo
    assert "PASS" in result.step("3.").text
    report = result.step("4.").report
    training, serving = report.dumps
    assert training.ok and training.found == (2, 30, 58)
    assert serving.found == (-1, 2, 30)
    assert serving.findings[0].kind == FindingKind.EMBEDDING_INSERTED.value
    assert "layer 58 was dropped" in serving.findings[0].message
    assert "capture code itself deviates" in serving.cause
    assert not report.comparison.same


def test_correct_capture_passes(demo) -> None:
    report = demo[0].step("5.").report
    assert report.ok and report.comparison.same
    assert report.dumps[1].found == (2, 30, 58)


def test_sglang_25454_caught_with_fix(demo) -> None:
    report = demo[0].step("6.").report
    serving = report.dumps[1]
    assert serving.found == (1, 29, 57)
    assert serving.findings[0].kind == FindingKind.SHIFTED.value
    assert "[3, 31, 59]" in serving.fix  # ids that make post-#25454 SGLang feed 2, 30, 58
    assert report.exit_code == 1


def test_printed_rerun_command_reproduces(demo, capsys: pytest.CaptureFixture[str]) -> None:
    """The CLI rebuilds the same random model from the kept config.json and seed."""
    _, out = demo
    code = main(
        [
            "diagnose",
            "--dump",
            str(Path(out) / "training.safetensors"),
            "--dump",
            str(Path(out) / "serving_sglang25454.safetensors"),
            "--target",
            str(Path(out) / "config.json"),
            "--seed",
            "0",
            "--contract",
            str(Path(out) / "contract.json"),
            "--json",
        ]
    )
    report = json.loads(capsys.readouterr().out)
    assert code == 1
    assert report["dumps"][0]["ok"] and report["dumps"][1]["found"] == [1, 29, 57]
