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

pytestmark = pytest.mark.usefixtures("wide_output")  # content, not layout (test_width.py)


ROW_KEYS = {
    "config",
    "reading",
    "system",
    "key",
    "kind",
    "unknown",
    "ok",
    "verdict",
    "layer_ids",
    "findings",
    "fix_native_ids",
    "fix",
    "fix_setting",
    "stages",
    "plan",
}
TOP_KEYS = {
    "schema_version",
    "title",
    "ok",
    "exit_code",
    "verdict",
    "unknown_rows",
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
    # engines are their newest probed release, answered for the target's model file
    assert "0.5.23 deepseek_v2.py" in row("draft.json", "sglang")
    assert "0.33.0:v2 deepseek_v2.py" in row("draft.json", "vllm")
    assert " ok " in row("draft.json", "trtllm")
    assert "shifted -1" in row("draft.json", "sglang") and "[3, 31, 59]" in row(
        "draft.json", "sglang"
    )
    assert "crashes (aux-count-short)" in row("draft-fixed.json", "sglang")
    assert "assumed: unversioned 'sglang' = the newest probed release sglang==0.5.23" in out
    assert "result: MISMATCH (exit 1)" in out
    code, out, _ = run(capsys, "--example", "kimi-k2.5", "--serve-with", "sglang-legacy")
    assert "crashes (embedding-residual-none)" in out  # stock 0.5.12: hidden_states + None


def test_llama_example_passes(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--example", "llama-3.1-8b")
    assert code == 0 and "result: OK (exit 0)" in out
    assert "needs d2t/t2d" in out  # reported, not silently passed


def test_json_shape(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--example", "kimi-k2.5", "--json")
    data = json.loads(out)
    assert code == data["exit_code"] == 1 and data["ok"] is False
    assert set(data) == TOP_KEYS and data["schema_version"] == SCHEMA_VERSION == 2
    assert data["trained_with"] == "specforge-hf" and data["ambiguous"] is False
    assert len(data["rows"]) == 2 * 3  # two served configs x three engines
    for row in data["rows"]:
        assert set(row) == ROW_KEYS
        for finding in row["findings"]:
            assert set(finding) == {"kind", "message", "layers", "shift", "fix_native_ids", "fix"}
    sglang = next(r for r in data["rows"] if (r["config"], r["system"]) == ("draft.json", "sglang"))
    assert sglang["layer_ids"] == [1, 29, 57] and sglang["fix_native_ids"] == [3, 31, 59]
    assert sglang["fix_setting"] == {  # the fix as data: who reads which field, which ids
        "system": "sglang",
        "field": "eagle_config.eagle_aux_hidden_state_layer_ids",
        "ids": [3, 31, 59],
    }
    trtllm = next(r for r in data["rows"] if (r["config"], r["system"]) == ("draft.json", "trtllm"))
    assert trtllm["ok"] and trtllm["fix_setting"] is None
    assert data["verdict"] == "MISMATCH"
    assert sglang["key"] == "sglang==0.5.23 deepseek_v2.py" and sglang["kind"] == "segments"
    assert sglang["findings"][0] == {
        "kind": "shifted",
        "message": "shifted by -1: every state is 1 layer early ([1, 29, 57] instead of [2, 30, 58])",
        "layers": [1, 29, 57],
        "shift": -1,
        "fix_native_ids": [3, 31, 59],
        "fix": "set eagle_config.eagle_aux_hidden_state_layer_ids = [3, 31, 59]: "
        "sglang==0.5.23 deepseek_v2.py then feeds them",
    }
    plan = sglang["plan"]
    assert (plan["release"], plan["runner"], plan["model_file"]) == (
        "sglang==0.5.23",
        None,
        "deepseek_v2.py",
    )
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
        "specforge-hf",
        "--serve-with",
        "trtllm",
    )
    assert code == 0


def test_readings_that_agree_pass(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    draft = write(tmp_path, "d.json", {"hidden_size": 64})
    target = write(
        tmp_path,
        "t.json",
        {"architectures": ["LlamaForCausalLM"], "num_hidden_layers": 32, "hidden_size": 64},
    )
    code, out, _ = run(capsys, draft, "--target", target)
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
    report = check_drafter(
        draft, target=target, trained_with="specforge-hf", serve_with=("trtllm",)
    )
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
            "sglang==0.5.23:v1",  # only vLLM has model runners
        ],
        ["{draft}", "--num-layers", "4", "--hidden-size", "8", "--serve-with", "vllm:v3"],
        # a DRAFT after --serve-with is the draft (tests/cli/test_args.py); two of them are not
        ["{draft}", "--serve-with", "sglang", "{draft}", "--num-layers", "4", "--hidden-size", "8"],
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
    assert code == 0 and "kimi-k2.5" in out
    # one alias table: the older names and what they stand for, never vllm = 0.21.0
    assert "aliases: sglang-legacy = sglang==0.5.12, sglang-gpt-oss = sglang==0.5.17, " in out
    assert "vllm-nested = vllm==0.33.0:v1" in out
    assert "unversioned 'vllm' = 0.33.0" in out and "0.21.0:" not in out


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
    assert json.loads(proc.stdout)["schema_version"] == 2
    imported = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines() if "|" in line}
    assert not {m for m in imported if m.split(".")[0] in {"torch", "safetensors", "numpy"}}
    assert "Traceback" not in proc.stderr


def test_readme_shows_the_current_kimi_matrix(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("COLUMNS")  # the README shows the 100-column default
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


def test_serve_with_space_separated_like_the_readme(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """README: `--serve-with sglang==0.5.23 vllm` (and the comma form) names two systems."""
    draft, target = examples.load("kimi-k2.5")
    for argv in (["sglang==0.5.23", "vllm"], ["sglang==0.5.23,vllm"]):
        code, out, _ = run(
            capsys,
            draft,
            "--target",
            target,
            "--trained-with",
            "specforge",
            "--serve-with",
            *argv,
            "--json",
        )
        rows = json.loads(out)["rows"]
        assert [r["system"] for r in rows] == ["sglang==0.5.23", "vllm"], argv
        assert rows[1]["key"] == "vllm==0.33.0:v2 deepseek_v2.py"
        assert code == 0  # SpecForge 0.2.0 trained [1, 29, 57]; both feed exactly that


def test_runner_is_selectable(capsys: pytest.CaptureFixture[str]) -> None:
    draft, target = examples.load("kimi-k2.5")
    _code, out, _ = run(
        capsys,
        draft,
        "--target",
        target,
        "--trained-with",
        "specforge-hf",
        "--serve-with",
        "vllm==0.33.0:v1",
        "vllm==0.22.0",
        "--json",
    )
    rows = json.loads(out)["rows"]
    assert [r["key"] for r in rows] == [
        "vllm==0.33.0:v1 deepseek_v2.py",
        "vllm==0.22.0:v1 deepseek_v2.py",  # 0.22.0 picks V2 only for dense Qwen3ForCausalLM
    ]
    assert all(
        r["fix"].startswith("set eagle_aux_hidden_state_layer_ids = [3, 31, 59]") for r in rows
    )


def test_a_partly_unknown_run_answers_every_other_row_and_exits_1(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """An unprobed release (or a model file the probe could not read) is one unknown row."""
    draft, target = examples.load("kimi-k2.5")
    code, out, _ = run(
        capsys,
        draft,
        "--target",
        target,
        "--trained-with",
        "specforge==0.2.0",
        "--serve-with",
        "sglang==0.5.23",
        "sglang==0.4.0",
    )
    assert code == 1
    assert "result: UNKNOWN (1 row(s) need reading; nothing proven wrong) (exit 1)" in out
    assert out.count("sglang==0.4.0 has no probed table") == 1  # one line, printed once
    assert out.count("probe refresh --release sglang==0.4.0") == 1  # naming the command
    assert "needs reading at" not in out


def test_a_stamp_is_read_before_trained_with(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The stamp records the canonical contract in config.json; check reads it first."""
    from eagle3_contracts.contract import CaptureContract
    from eagle3_contracts.stamp import Stamp, write_stamp

    draft, target = examples.load("kimi-k2.5")
    folder = tmp_path / "drafter"
    folder.mkdir()
    (folder / "config.json").write_text(Path(draft).read_text())
    write_stamp(
        folder,
        Stamp(CaptureContract((2, 30, 58), 61, 7168, "as_listed"), trained_with="specforge-hf"),
    )
    code, out, _ = run(
        capsys, str(folder), "--target", target, "--trained-with", "specforge", "--json"
    )
    data = json.loads(out)
    plan = data["readings"][0]["plan"]
    assert plan["layer_ids"] == [2, 30, 58]
    # a stamp is a fixed reading: its own answer, no release, no code cited, ids from the stamp
    assert (plan["kind"], plan["release"], plan["model_file"], plan["source"]) == (
        "segments",
        None,
        None,
        "",
    )
    assert plan["ids_source"] == "stamp"
    assert any(n.startswith("stamp in") for n in data["notes"])  # the stamped canonical ids
    sglang = next(r for r in data["rows"] if r["system"] == "sglang")
    assert sglang["verdict"] == "shifted -1" and code == 1


def test_a_reading_that_names_no_state_is_refused_not_shortened(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """[-1, 15, 28] read as boundaries names boundary -1, which exists nowhere: that reading is
    refused (no fix printed for it), never silently shortened to two ids."""
    draft = write(tmp_path, "d.json", {IDS_FIELD: [-1, 15, 28]})
    code, out, _ = run(
        capsys,
        draft,
        "--num-layers",
        "32",
        "--hidden-size",
        "64",
        "--serve-with",
        "trtllm",
        "--json",
    )
    data = json.loads(out)
    boundary = next(r for r in data["rows"] if r["reading"] == "boundary")
    assert boundary["verdict"] == "refused" and boundary["fix_native_ids"] is None
    assert code == 1


@pytest.mark.parametrize("trained", ["trtllm", "sglang==0.5.14"])
def test_a_trainer_release_is_refused_as_a_serving_engine(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, trained: str
) -> None:
    # it used to exit 2 with an unrelated serve-name error only when a fix was searched for
    # (layers differ: trtllm) and answer "ok" when they matched (sglang==0.5.14)
    draft = write(tmp_path, "d.json", {"eagle_config": {IDS_FIELD: [2, 30, 58]}})
    target = write(
        tmp_path,
        "t.json",
        {"architectures": ["DeepseekV3ForCausalLM"], "num_hidden_layers": 61, "hidden_size": 7168},
    )
    argv = [draft, "--target", target, "--trained-with", trained]
    code, _, err = run(capsys, *argv, "--serve-with", "specforge==0.2.0")
    assert code == 2
    assert err.strip() == (
        "eagle3-contracts: error: 'specforge==0.2.0' is a trainer release: it trains drafters and "
        "serves none; give it as --trained-with and name a serving engine release (e.g. "
        "'sglang==0.5.23', 'vllm==0.33.0:v1') as --serve-with"
    )
    assert run(capsys, *argv, "--serve-with", "sglang==0.5.23")[0] in (0, 1)


def test_a_config_with_only_target_layer_ids_is_answered_as_vllm_v2_reads_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """vLLM V2 (eagle3_utils.py get_eagle3_aux_layers_from_config) reads target_layer_ids
    + 1 as boundaries: canonical [3, 10, 20], not its default, so a SpecForge-trained drafter
    (default [1, 15, 28]) is a mismatch there, with a top-level fix V2 reads first."""
    draft = write(
        tmp_path,
        "draft.json",
        {"architectures": ["LlamaForCausalLMEagle3"], "hidden_size": 4096,
         "target_layer_ids": [3, 10, 20]},
    )  # fmt: skip
    target = write(
        tmp_path,
        "target.json",
        {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
         "num_hidden_layers": 32},
    )  # fmt: skip
    argv = (draft, "--target", target, "--trained-with", "specforge")
    code, out, _ = run(capsys, *argv, "--serve-with", "vllm==0.33.0:v2")
    row = next(x for x in out.splitlines() if x.startswith("vllm==0.33.0:v2 "))
    assert "3, 10, 20" in row and code == 1, out
    assert "eagle_aux_hidden_state_layer_ids = [2, 16, 29]" in row
    code, out, _ = run(capsys, *argv, "--serve-with", "vllm==0.33.0:v1")
    row = next(x for x in out.splitlines() if x.startswith("vllm==0.33.0:v1 "))
    assert "1, 15, 28" in row and code == 0, out  # V1 never reads target_layer_ids
