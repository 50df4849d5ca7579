"""``eagle3-contracts stages`` and ``stages_report`` (no processes)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eagle3_contracts.cli import main
from eagle3_contracts.config import examples
from eagle3_contracts.parallel import LayerPartition, pipeline_risks
from eagle3_contracts.parallel.report import stages_report

pytestmark = pytest.mark.usefixtures("wide_output")  # content, not layout (test_width.py)


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["stages", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_kimi_over_four_stages_text(capsys) -> None:
    code, out, err = run_cli(capsys, "--num-layers", "61", "--ids", "2,30,58", "--pp-size", "4")
    assert code == 0 and err == ""
    assert out.splitlines()[0] == (
        "61 layers over 4 pipeline stages: 0-14 | 15-29 | 30-45 | 46-60 "
        "(vllm rule, default; --pp-rule or --pp-partition to change)"
    )
    assert "  layer 30  2      30-45         0" in out
    assert "last-stage-only capture (sglang#39644) would lose: layer 2, layer 30" in out
    assert "stage-local indexing (vllm#36151) would lose: layer 30, layer 58" in out
    assert "stage 3 would capture layer 48 as 2" in out


KIMI_TARGET = str(Path(examples.__file__).parent / "kimi-k2.5" / "target.json")


def _deepseek(tmp_path: Path, num_layers: int) -> str:
    """A DeepSeek-V3-shaped target config (deepseek_v2.py in every SGLang release)."""
    path = tmp_path / "target.json"
    path.write_text(
        json.dumps(
            {
                "architectures": ["DeepseekV3ForCausalLM"],
                "model_type": "deepseek_v3",
                "num_hidden_layers": num_layers,
                "hidden_size": 16,
            }
        )
    )
    return str(path)


def test_sglang_convention_loses_ids_exit_1(capsys) -> None:
    code, out, _ = run_cli(
        capsys,
        "--target",
        KIMI_TARGET,
        "--ids",
        "3,31,59",
        "--pp-size",
        "4",
        "--convention",
        "sglang",
    )
    assert code == 1
    name = "sglang==0.5.23 deepseek_v2.py"  # the newest probed release, Kimi-K2.5's model file
    assert f"ids ({name}): 3, 31, 59 = canonical 2, 30, 58" in out
    assert f"(sglang rule, {name}'s default split)" in out  # the engine's own split, reported
    assert "LAYER-MISSING: not fed: layer 2, layer 30" in out
    # the ids are right: the fix is the partition, and the ids already there are never the fix
    fix = next(line for line in out.splitlines() if line.startswith("fix: "))
    assert fix.startswith(f"fix: no id list changes it: {name} already feeds canonical [2, 30, 58]")
    assert "--pp-partition whose last stage starts at layer 3 or earlier" in out


def test_a_model_file_name_without_a_target_is_refused_naming_target(capsys) -> None:
    for name in ("sglang", "sglang==0.5.23", "vllm-nested", "specforge"):
        code, out, err = run_cli(
            capsys, "--num-layers", "61", "--ids", "3,31,59", "--pp-size", "4", "--convention", name
        )
        assert code == 2 and out == "" and err.count("\n") == 1
        assert "--target" in err and "model file" in err


def test_sglang_with_every_id_on_the_last_stage_exit_0(capsys, tmp_path: Path) -> None:
    code, out, _ = run_cli(
        capsys,
        "--target",
        _deepseek(tmp_path, 8),
        "--ids",
        "6,7",
        "--pp-partition",
        "5,3",
        "--convention",
        "sglang",
    )
    assert code == 0 and "MISMATCH" not in out


def test_json_report(capsys) -> None:
    code, out, _ = run_cli(
        capsys, "--num-layers", "61", "--ids=-1,14,60", "--pp-partition", "15,15,16,15", "--json"
    )
    data = json.loads(out)
    assert code == 0 and data["exit_code"] == 0 and data["schema_version"] == 1
    assert data["split"] == "explicit --pp-partition"
    assert data["partition"] == {"sizes": [15, 15, 16, 15], "rule": "explicit", "num_layers": 61}
    assert data["ownership"][1] == {
        "id": 14,
        "native_id": 14,
        "stage": 0,
        "stage_layers": [0, 14],
        "local_index": 14,
        "stage_boundary": True,
    }
    assert data["risks"]["last_stage_only_lost"] == [-1, 14]


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--num-layers", "61", "--ids", "2,x", "--pp-size", "4"], "--ids item 1 ('x')"),
        (["--num-layers", "61", "--ids", "2", "--pp-partition", "15,15,16"], "sums to 46"),
        (
            ["--num-layers", "61", "--ids", "2", "--pp-partition", "30,31", "--pp-size", "4"],
            "2 stages",
        ),
        (["--num-layers", "61", "--ids", "2", "--pp-partition", "61,0"], "at least one layer"),
        (["--num-layers", "61", "--ids", "2"], "give --pp-size"),
        (["--num-layers", "3", "--ids", "2", "--pp-size", "4"], "exceeds num_layers"),
        (["--num-layers", "61", "--ids", "61", "--pp-size", "4"], "outside [-1, 60]"),
        (
            ["--num-layers", "61", "--ids", "2", "--pp-size", "4", "--pp-rule", "x"],
            "not a known split",
        ),
        (["--num-layers", "61", "--ids", "2", "--pp-size", "4", "--convention", "nope"], "unknown"),
        (["--ids", "2", "--pp-size", "4"], "--num-layers N or --target"),
        (
            ["--num-layers", "61", "--ids", "2", "--pp-partition", "30,31", "--pp-rule", "vllm"],
            "give one or the other",
        ),
    ],
)
def test_bad_input_exit_2_one_line(capsys, argv, words) -> None:
    code, out, err = run_cli(capsys, *argv)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and words in err, err


def test_report_agrees_with_risks() -> None:
    report = stages_report([2, 30, 58], 61, pp_size=4, pp_rule="sglang")
    assert report.partition == LayerPartition((15, 15, 15, 16))
    assert report.risks == pipeline_risks([2, 30, 58], report.partition)
    assert report.exit_code == 0 and report.behaviour is None


def test_sglang_capture_entering_the_next_layer_reaches_the_last_stage(
    capsys, tmp_path: Path
) -> None:
    """SGLang takes canonical N entering layer N + 1: the last layer of a non-final stage is
    captured on the next stage, so ``stages`` must agree with ``check --pp-size`` (plan.py)."""
    from eagle3_contracts.config.plan import resolve
    from eagle3_contracts.parallel import LayerPartition

    target = _deepseek(tmp_path, 8)
    code = main(
        ["stages", "--target", target, "--pp-size", "2", "--ids", "4", "--convention", "sglang"]
    )
    out = capsys.readouterr().out
    assert code == 0 and "MISSING" not in out
    assert "last-stage-only capture (sglang#39644) would lose: layer 3" in out  # another engine
    assert "OK: sglang==0.5.23 deepseek_v2.py feeds the drafter what it was trained on" in out
    draft = {"eagle_config": {"eagle_aux_hidden_state_layer_ids": [4]}}
    # sglang is answered for the target's model file: deepseek_v2.py (ids[0] != 1: loop indices)
    target = {"num_hidden_layers": 8, "hidden_size": 16, "architectures": ["DeepseekV3ForCausalLM"]}
    plan = resolve(draft, target, "sglang", partition=LayerPartition((4, 4)))
    assert plan.layer_ids == (3,)
    # one layer earlier (canonical 2, loop index 3) is captured on stage 0 and lost
    assert (
        main(
            [
                "stages",
                "--target",
                _deepseek(tmp_path, 8),
                "--pp-size",
                "2",
                "--ids",
                "3",
                "--convention",
                "sglang",
            ]
        )
        == 1
    )


@pytest.mark.parametrize("name", ["vllm==0.21.0", "trtllm"])
def test_unread_pipeline_behaviour_is_unknown_exit_1(capsys, name: str) -> None:
    """A release whose pipeline code was not read: ids captured on earlier stages are unknown
    and the command exits 1, as ``check --serve-with NAME --pp-size 4`` does; never ok."""
    argv = ("--target", KIMI_TARGET, "--ids", "2,30,58", "--pp-size", "4", "--convention", name)
    code, out, _ = run_cli(capsys, *argv)
    assert code == 1
    unknown = next(line for line in out.splitlines() if line.startswith("UNKNOWN: "))
    # a release's wording is check's finding; a registry entry's names the layers
    assert "carries states captured on earlier pipeline stages" in unknown or (
        "carries layer" in unknown and "(captured on earlier stages)" in unknown
    )
    assert "MISSING" not in out and "OK:" not in out
    code, out, _ = run_cli(capsys, *argv, "--json")
    data = json.loads(out)
    assert code == 1 and data["exit_code"] == 1 and data["lost"] == []
    assert data["unknown"] and set(data["unknown"]) < set(r["id"] for r in data["ownership"])
    checked = main(
        ["check", "--example", "kimi-k2.5", "--serve-with", name, "--pp-size", "4", "--json"]
    )
    report = json.loads(capsys.readouterr()[0])
    row = next(r for r in report["rows"] if r["system"].startswith(name))
    assert checked == 1 and row["verdict"] == "unknown", row
    assert row["findings"][0]["message"] == (
        f"unknown: no code read says whether {row['key']} carries states captured on earlier "
        "pipeline stages to the drafter"
    )


def test_unread_behaviour_on_one_stage_is_not_unknown(capsys) -> None:
    """Every id captured on the last stage: nothing depends on unread pipeline code (exit 0)."""
    code, out, _ = run_cli(
        capsys,
        "--target",
        KIMI_TARGET,
        "--ids",
        "10,30,58",
        "--pp-partition",
        "1,1,1,58",
        "--convention",
        "trtllm",
    )
    assert code == 0 and "UNKNOWN" not in out


KIMI_DRAFT = str(Path(examples.__file__).parent / "kimi-k2.5" / "draft.json")


def test_a_drafter_is_answered_as_check_answers_it_with_the_proven_fix(capsys) -> None:
    """``--draft`` with its training claim: stages prints check's finding and fix, at one stage
    and on a partition (where the fix adds the partition remedy)."""
    argv = ("--target", KIMI_TARGET, "--draft", KIMI_DRAFT, "--trained-with", "specforge-hf")
    code, out, _ = run_cli(capsys, *argv, "--pp-size", "1", "--convention", "sglang==0.5.23")
    assert code == 1
    assert "SHIFTED: " in out and "trained: specforge-hf: [layer 2, layer 30, layer 58]" in out
    fix = " ".join(out.split("fix: ", 1)[1].split())
    assert fix.startswith("set eagle_config.eagle_aux_hidden_state_layer_ids = [3, 31, 59]")
    main(["check", "--example", "kimi-k2.5", "--serve-with", "sglang==0.5.23", "--json"])
    row = json.loads(capsys.readouterr().out)["rows"][0]
    assert row["findings"][0]["fix_native_ids"] == [3, 31, 59]  # check's own fix, the same
    code, out, _ = run_cli(capsys, *argv, "--pp-size", "4", "--convention", "sglang==0.5.23")
    fix = " ".join(out.split("fix: ", 1)[1].split())
    assert code == 1 and "[3, 31, 59]" in fix and "--pp-partition whose last stage" in fix


def test_draft_needs_a_release_convention_and_a_target(capsys) -> None:
    for argv in (
        ("--num-layers", "61", "--draft", KIMI_DRAFT, "--pp-size", "1", "--convention", "sglang"),
        ("--target", KIMI_TARGET, "--draft", KIMI_DRAFT, "--pp-size", "1"),
        ("--target", KIMI_TARGET, "--ids", "2,30,58", "--draft", KIMI_DRAFT, "--pp-size", "1"),
    ):
        code, out, err = run_cli(capsys, *argv)
        assert code == 2 and out == "" and err.count("\n") == 1, (argv, err)
