"""``eagle3-contracts accept`` on the tiny trained fixture: the rows per release, and bad input
as one line with exit 2."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from eagle3_contracts.acceptance.fixture import DRAFTER, TARGET
from eagle3_contracts.cli import main

FAST = ["--num-prompts", "3", "--new-tokens", "16", "--num-drafts", "2"]


def _run(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_rows_per_release_with_the_layers_each_feeds(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(
        capsys, "accept", DRAFTER, "--target", TARGET, "--serve-with", "sglang==0.5.23",
        "vllm==0.32.0:v1", "--wiring=-1,1,5", "--json", *FAST,
    )  # fmt: skip
    report = json.loads(out)
    assert report["trained"]["wiring"] == [2, 6, 9]
    assert "stamp" in report["trained"]["source"]
    rows = {r["label"]: r for r in report["rows"]}
    assert rows["sglang==0.5.23"]["acceptance"]["wiring"] == [2, 6, 9]
    assert rows["sglang==0.5.23"]["verdict"] == "ok"
    assert rows["sglang==0.5.23"]["gap_first"]["value"] == 0
    assert rows["vllm==0.32.0:v1"]["acceptance"]["wiring"] == [1, 5, 8]
    assert rows["vllm==0.32.0:v1"]["system"] == "vllm==0.32.0:v1 llama.py"
    assert rows["wiring [-1, 1, 5]"]["acceptance"]["wiring"] == [-1, 1, 5]
    costs = any(r["verdict"] == "COSTS" for r in report["rows"])
    assert code == (1 if costs else 0)
    trained = report["trained_acceptance"]
    assert trained["prompts"] == 3 and trained["k"] == 2
    assert len(trained["per_position"]) == 2


def test_text_output_names_each_release_and_its_cost(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(
        capsys, "accept", DRAFTER, "--target", TARGET, "--serve-with", "vllm==0.32.0:v1", *FAST
    )
    assert "trained [2, 6, 9]: first " in out
    assert "vllm==0.32.0:v1 llama.py feeds [1, 5, 8]: first " in out
    assert "    cost: first-draft agreement " in out and "accept rate " in out and code in (0, 1)


def _broken_drafter(tmp_path: Path, drop: str) -> Path:
    from safetensors.torch import load_file, save_file

    draft = tmp_path / f"no-{drop}"
    shutil.copytree(DRAFTER, draft)
    tensors = load_file(str(draft / "model.safetensors"))
    del tensors[drop]
    save_file(tensors, str(draft / "model.safetensors"))
    return draft


@pytest.mark.parametrize(
    ("case", "fragment"),
    [
        ("no-fc", "not an EAGLE-3 layout"),
        ("no-d2t", "has no d2t"),
        ("binary-prompts", "not UTF-8"),
        ("bad-jsonl", "not JSON"),
        ("no-stamp", "--trained-with"),
        ("bad-wiring", "--wiring item 1"),
        ("wrong-count", "the drafter's fc takes 3"),
        ("no-target", "no such file"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, case: str, fragment: str
) -> None:
    draft, extra = DRAFTER, []
    target = TARGET
    if case == "no-fc":
        draft = _broken_drafter(tmp_path, "fc.weight")
    elif case == "no-d2t":
        draft = _broken_drafter(tmp_path, "d2t")
    elif case == "binary-prompts":
        (tmp_path / "p.txt").write_bytes(bytes(range(128, 256)))
        extra = ["--prompts", tmp_path / "p.txt"]
    elif case == "bad-jsonl":
        (tmp_path / "p.jsonl").write_text("[1, 2]\n{oops\n")
        extra = ["--prompts", tmp_path / "p.jsonl"]
    elif case == "no-stamp":
        draft = tmp_path / "unstamped"
        shutil.copytree(DRAFTER, draft)
        config = json.loads((draft / "config.json").read_text())
        del config["eagle3_contract"]
        (draft / "config.json").write_text(json.dumps(config))
    elif case == "bad-wiring":
        extra = ["--wiring", "2,six,9"]
    elif case == "wrong-count":
        extra = ["--wiring", "2,6"]
    elif case == "no-target":
        target = tmp_path / "absent"
    code, out, err = _run(capsys, "accept", draft, "--target", target, *extra, *FAST)
    assert code == 2 and out == "", err
    assert err.count("\n") == 1 and fragment in err, err
