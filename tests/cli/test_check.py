"""``eagle3-contracts check``: matrix, exit codes, stable JSON, one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from eagle3_contracts.cli import main
from eagle3_contracts.config import examples
from eagle3_contracts.config.check import SCHEMA_VERSION, check_drafter
from eagle3_contracts.config.readers import IDS_FIELD

ROW_KEYS = {
    "config",
    "reading",
    "system",
    "ok",
    "verdict",
    "layer_ids",
    "findings",
    "fix_native_ids",
    "fix",
    "stages",
    "plan",
}
TOP_KEYS = {
    "schema_version",
    "title",
    "ok",
    "exit_code",
    "draft",
    "target",
    "trained_with",
    "ambiguous",
    "readings",
    "rows",
    "drafter",
    "pipeline",
    "notes",
}


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["check", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def write(tmp_path: Path, name: str, data: object) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return str(path)


def test_kimi_example_matrix(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--example", "kimi-k2.5")
    assert code == 1
    lines = out.splitlines()
    row = lambda config, system: next(  # noqa: E731
        line for line in lines if line.startswith(config) and f" {system} " in line
    )
    assert "2, 30, 58" in row("draft.json", "sglang-legacy") and " ok " in row(
        "draft.json", "trtllm"
    )
    assert "shifted -1" in row("draft.json", "sglang") and "[3, 31, 59]" in row(
        "draft.json", "sglang"
    )
    assert "layer missing" in row("draft-fixed.json", "sglang-legacy")
    assert "hidden_states + None and fail" in out  # the released SGLang loop cannot feed -1
    assert "result: MISMATCH (exit 1)" in out


def test_llama_example_passes(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--example", "llama-3.1-8b")
    assert code == 0 and "result: OK (exit 0)" in out
    assert "needs d2t/t2d" in out  # reported, not silently passed


def test_json_shape(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--example", "kimi-k2.5", "--json")
    data = json.loads(out)
    assert code == data["exit_code"] == 1 and data["ok"] is False
    assert set(data) == TOP_KEYS and data["schema_version"] == SCHEMA_VERSION == 1
    assert data["trained_with"] == "specforge" and data["ambiguous"] is False
    assert len(data["rows"]) == 2 * 5  # two served configs x five engines
    for row in data["rows"]:
        assert set(row) == ROW_KEYS
        for finding in row["findings"]:
            assert set(finding) == {"kind", "message", "layers", "shift", "fix_native_ids", "fix"}
    sglang = next(r for r in data["rows"] if (r["config"], r["system"]) == ("draft.json", "sglang"))
    assert sglang["layer_ids"] == [1, 29, 57] and sglang["fix_native_ids"] == [3, 31, 59]
    assert sglang["findings"][0] == {
        "kind": "shifted",
        "message": "shifted by -1: every state is 1 layer early ([1, 29, 57] instead of [2, 30, 58])",
        "layers": [1, 29, 57],
        "shift": -1,
        "fix_native_ids": [3, 31, 59],
        "fix": "set eagle_config.eagle_aux_hidden_state_layer_ids = [3, 31, 59]",
    }
    assert data["target"] == {
        "source": data["target"]["source"],
        "num_layers": 61,
        "hidden_size": 7168,
        "vocab_size": 163840,
        "model_type": "kimi_k25",
    }


def test_ambiguous_without_trained_with(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    draft = write(tmp_path, "d.json", {"eagle_config": {IDS_FIELD: [2, 30, 58]}})
    code, out, _ = run(
        capsys, draft, "--num-layers", "61", "--hidden-size", "7168", "--serve-with", "trtllm"
    )
    assert code == 1 and "AMBIGUOUS" in out
    assert "reading 'output': canonical [2, 30, 58]" in out
    assert "reading 'boundary': canonical [1, 29, 57]" in out
    code, out, _ = run(
        capsys,
        draft,
        "--num-layers",
        "61",
        "--hidden-size",
        "7168",
        "--trained-with",
        "specforge",
        "--serve-with",
        "trtllm",
    )
    assert code == 0


def test_readings_that_agree_pass(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    draft = write(tmp_path, "d.json", {"hidden_size": 64})
    code, out, _ = run(capsys, draft, "--num-layers", "32", "--hidden-size", "64")
    assert code == 0 and "both readings" in out


def test_serve_with_commas_and_serve_config(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    draft, target = examples.load("qwen3-235b")
    other = str(Path(draft).with_name("draft-top-level.json"))
    code, out, _ = run(
        capsys,
        draft,
        "--target",
        target,
        "--trained-with",
        "specforge",
        "--serve-with",
        "vllm,sglang",
        "--serve-config",
        other,
        "--json",
    )
    rows = {(r["config"], r["system"]): r for r in json.loads(out)["rows"]}
    assert set(rows) == {
        (c, s) for c in ("draft.json", "draft-top-level.json") for s in ("vllm", "sglang")
    }
    assert rows[("draft.json", "vllm")]["ok"] and not rows[("draft-top-level.json", "vllm")]["ok"]
    assert code == 1


def test_pipeline_parallel(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys,
        "--example",
        "kimi-k2.5",
        "--serve-with",
        "sglang-legacy",
        "--pp-size",
        "4",
        "--json",
    )
    data = json.loads(out)
    row = next(r for r in data["rows"] if r["config"] == "draft.json")
    assert row["layer_ids"] == [58] and row["plan"]["pp_dropped"] == [2, 30]
    assert row["stages"] == [
        {"layer_id": 58, "stage": 3},
        {"layer_id": 2, "stage": 0},
        {"layer_id": 30, "stage": 2},
    ]
    assert data["pipeline"]["partitions"]["sglang-legacy"]["sizes"] == [15, 15, 15, 16]
    code, out, _ = run(
        capsys,
        "--example",
        "kimi-k2.5",
        "--serve-with",
        "sglang-legacy",
        "--pp-partition",
        "1,1,1,58",
    )
    assert code == 1 and "pipeline stages owning each id" in out


def test_check_drafter_api_for_the_plugin() -> None:
    draft, target = examples.load("kimi-k2.5")
    report = check_drafter(draft, target=target, trained_with="specforge", serve_with=("trtllm",))
    assert report.ok and [r.system for r in report.rows] == ["trtllm"]
    assert report.to_dict()["rows"][0]["verdict"] == "ok"
    assert "result: OK" in report.render_text()


@pytest.mark.parametrize(
    "argv",
    [
        ["/nonexistent/draft.json", "--num-layers", "4", "--hidden-size", "8"],
        ["{draft}", "--num-layers", "4"],
        ["{draft}", "--target", "{draft}", "--num-layers", "4", "--hidden-size", "8"],
        ["{draft}", "--num-layers", "4", "--hidden-size", "8", "--serve-with", "nope"],
        ["{draft}", "--num-layers", "4", "--hidden-size", "8", "--trained-with", "nope"],
        ["{draft}", "--num-layers", "0", "--hidden-size", "8"],
        ["{draft}", "--num-layers", "x", "--hidden-size", "8"],
        ["{bad}", "--num-layers", "4", "--hidden-size", "8"],
        ["{draft}", "--num-layers", "4", "--hidden-size", "8", "--pp-size", "9"],
        ["{draft}", "--num-layers", "4", "--hidden-size", "8", "--pp-partition", "1,x"],
        [
            "{draft}",
            "--num-layers",
            "4",
            "--hidden-size",
            "8",
            "--pp-partition",
            "1,1",
            "--pp-size",
            "3",
        ],
        [
            "{draft}",
            "--num-layers",
            "4",
            "--hidden-size",
            "8",
            "--weights",
            "/nonexistent.safetensors",
        ],
        ["--example", "nope"],
        ["--example", "kimi-k2.5", "{draft}"],
        [],
        [
            "{draft}",
            "--num-layers",
            "4",
            "--hidden-size",
            "8",
            "--serve-with",
            "sglang==0.0.0-bogus",
        ],
    ],
)
def test_bad_input_exits_2_with_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[str]
) -> None:
    draft = write(tmp_path, "draft.json", {"eagle_config": {IDS_FIELD: [1, 2]}})
    bad = tmp_path / "bad.json"
    bad.write_text('{"eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, "2"]}}')
    argv = [a.format(draft=draft, bad=bad) for a in argv]
    code, out, err = run(capsys, *argv)
    assert code == 2, (out, err)
    assert out == "" and err.count("\n") == 1 and err.startswith("eagle3-contracts: error: ")
    assert "Traceback" not in err


def test_list(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--list")
    assert code == 0 and "sglang-legacy:" in out and "kimi-k2.5" in out


def test_real_subprocess_is_torch_free() -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-X",
            "importtime",
            "-m",
            "eagle3_contracts",
            "check",
            "--example",
            "kimi-k2.5",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert json.loads(proc.stdout)["schema_version"] == 1
    imported = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines() if "|" in line}
    assert not {m for m in imported if m.split(".")[0] in {"torch", "safetensors", "numpy"}}
    assert "Traceback" not in proc.stderr


def test_readme_shows_the_current_kimi_matrix(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--example", "kimi-k2.5")
    assert code == 1
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("config "))
    table = "\n".join(lines[start : lines.index("", start)])
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    assert table in readme, "README.md's check matrix is stale: paste the current output"


@pytest.mark.parametrize("option", ["--num-layers", "--hidden-size", "--pp-size"])
def test_sizes_must_be_positive_and_the_option_is_named(
    capsys: pytest.CaptureFixture[str], option: str
) -> None:
    argv = (
        ["--example", "kimi-k2.5", option, "0"]
        if option == "--pp-size"
        else ["x.json", "--num-layers", "4", "--hidden-size", "8", option, "0"]
    )
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert f"argument {option}: must be a positive integer, got 0" in err
