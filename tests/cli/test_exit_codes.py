"""The CLI's exit codes: 0 ok, 1 mismatch, 2 bad input, 3 a crash (a bug to report)."""

from __future__ import annotations

from pathlib import Path

import pytest

from eagle3_contracts.cli import EXIT_INTERNAL, main
from eagle3_contracts.cli import stages as stages_cmd
from eagle3_contracts.config import examples


def _crash(args: object) -> int:
    raise RuntimeError("boom\nsecond line")


KIMI_TARGET = Path(examples.__file__).parent / "kimi-k2.5" / "target.json"
ARGV = ["stages", "--num-layers", "8", "--ids", "1,2", "--pp-size", "2"]


def test_a_crash_exits_3_with_one_line_asking_for_a_report(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A crash once exited 1, the code for "mismatch", with a traceback."""
    monkeypatch.setattr(stages_cmd, "run", _crash)
    assert main(ARGV) == EXIT_INTERNAL == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("eagle3-contracts: internal error (a bug in eagle3-contracts; ")
    assert "please report it" in err and "RuntimeError: boom second line" in err
    assert err.rstrip().endswith("rerun with --debug for the traceback")


@pytest.mark.parametrize("where", ["before", "after"])
def test_debug_prints_the_traceback(
    where: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(stages_cmd, "run", _crash)
    argv = ["--debug", *ARGV] if where == "before" else [*ARGV, "--debug"]
    assert main(argv) == EXIT_INTERNAL
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and "RuntimeError: boom" in err
    assert err.strip().splitlines()[-1].startswith("eagle3-contracts: internal error")


def test_bad_input_stays_exit_2_and_a_mismatch_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["stages", "--num-layers", "8", "--ids", "1,x", "--pp-size", "2"]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    mismatch = ["stages", "--ids", "3,31,59", "--pp-size", "4", "--convention", "sglang"]
    assert main([*mismatch, "--target", str(KIMI_TARGET)]) == 1
    capsys.readouterr()
    assert main([*mismatch, "--num-layers", "61"]) == 2  # which model file's rule? --target
    assert "--target" in capsys.readouterr().err


def test_help_documents_the_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    import eagle3_contracts.cli as cli

    assert "3 an internal error" in (cli.__doc__ or "")
    with pytest.raises(SystemExit):
        main(["stages", "--help"])
    assert "--debug" in capsys.readouterr().out


def test_check_help_names_every_embedded_example(capsys: pytest.CaptureFixture[str]) -> None:
    """`check --help` once named only kimi-k2.5."""
    from eagle3_contracts.config import examples

    with pytest.raises(SystemExit):
        main(["check", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert len(examples.names()) >= 3
    for name in examples.names():
        assert name in out
