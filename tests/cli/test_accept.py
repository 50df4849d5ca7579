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
    report = json.loads(out, parse_constant=lambda c: pytest.fail(f"{c} in the JSON"))
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


def _copy_with(tmp_path: Path, source: Path, name: str, **changes: object) -> Path:
    """A copy of a fixture directory with top-level config.json members set (None: deleted)."""
    folder = tmp_path / name
    shutil.copytree(source, folder)
    config = json.loads((folder / "config.json").read_text())
    for key, value in changes.items():
        if value is None:
            config.pop(key, None)
        else:
            config[key] = value
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def _damaged_tensor(folder: Path, name: str, value: object) -> None:
    import torch
    from safetensors.torch import load_file, save_file

    file = folder / "model.safetensors"
    tensors = load_file(str(file))
    if value is None:
        del tensors[name]
    elif value == "nan":
        tensors[name] = tensors[name].clone()
        tensors[name].view(-1)[3] = float("nan")
    else:
        tensors[name] = torch.zeros(*value)  # type: ignore[misc]
    save_file(tensors, str(file))


UNSTAMPED = ["--trained-with", "specforge==0.2.0"]


@pytest.mark.parametrize(
    ("case", "fragment"),
    [
        ("deeper-config", "num_hidden_layers is 14 but the weights hold layers 0-11"),
        ("stamp-for-another-depth", "stamp was made for a 12 x 64 target, this target is 14"),
        ("wider-config", "hidden_size disagrees with the weights: the embedding is 1024 x 64"),
        ("nan-drafter", "fc.weight holds NaN"),
        ("wrong-shape-drafter", "midlayer.self_attn.v_proj.weight has shape [3, 5]"),
        ("nan-target", "model.layers.4.mlp.up_proj.weight holds NaN"),
        ("string-rope-theta", "rope_theta must be a positive number, got 'abc'"),
        ("garbage-tokenizer", "tokenizer.json: not a tokenizer the tokenizers library reads"),
        ("device-meta", "--device meta: the oracle runs on cpu or cuda"),
        ("huge-seed", "--seed 99999999999999999999999 is outside"),
        ("deep-jsonl", "line 1: JSON nested too deeply"),
        (
            "long-prompt",
            "prompt 1 has 100000 tokens: with 16 new tokens it passes the target's 1024",
        ),
        ("new-tokens-cap", "--new-tokens 100000000 with --num-drafts 2: need"),
        ("one-prompt", "--num-prompts 1: the intervals are over prompts; give at least 2"),
        ("one-prompt-file", "1 prompt(s): the intervals are over prompts and need at least 2"),
        ("missing-target-tensor", "1 tensor group(s) MISSING, first model.layers.3.mlp.up_proj"),
        (
            "narrower-mlp-config",
            "3 tensor group(s) MISMATCH, first model.layers.{0...11}.mlp.down_proj.weight",
        ),
        ("observed-negative", "--observed -0.19 is not a rate"),
        ("observed-over-one", "--observed 1.9 is not a rate"),
        ("metrics-without-counters", "holds no spec-decode figures"),
        ("metrics-unreachable", "cannot read http://127.0.0.1:9/metrics"),
    ],
)
def test_hostile_input_is_refused_before_measuring(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, case: str, fragment: str
) -> None:
    """Each is one stderr line naming the field, exit 2: never a figure measured on weights
    transformers filled at random, never a traceback, never NaN in the JSON."""
    draft, target, extra = DRAFTER, TARGET, list(FAST)
    if case in ("deeper-config", "stamp-for-another-depth"):
        target = _copy_with(tmp_path, TARGET, "deep", num_hidden_layers=14)
        if case == "deeper-config":
            draft = _copy_with(tmp_path, DRAFTER, "unstamped", eagle3_contract=None)
            extra += UNSTAMPED
    elif case == "wider-config":
        target = _copy_with(tmp_path, TARGET, "wide", hidden_size=128)
        draft = _copy_with(tmp_path, DRAFTER, "unstamped", eagle3_contract=None)
        extra += UNSTAMPED
    elif case == "nan-drafter":
        draft = _copy_with(tmp_path, DRAFTER, "nan")
        _damaged_tensor(draft, "fc.weight", "nan")
    elif case == "wrong-shape-drafter":
        draft = _copy_with(tmp_path, DRAFTER, "shape")
        _damaged_tensor(draft, "midlayer.self_attn.v_proj.weight", (3, 5))
    elif case == "nan-target":
        target = _copy_with(tmp_path, TARGET, "nan")
        _damaged_tensor(target, "model.layers.4.mlp.up_proj.weight", "nan")
    elif case == "string-rope-theta":
        draft = _copy_with(tmp_path, DRAFTER, "rope", rope_theta="abc")
    elif case == "garbage-tokenizer":
        target = _copy_with(tmp_path, TARGET, "tok")
        (target / "tokenizer.json").write_text("garbage{")
        (tmp_path / "p.jsonl").write_text('"hello"\n"world"\n')
        extra += ["--prompts", tmp_path / "p.jsonl"]
    elif case == "device-meta":
        extra += ["--device", "meta"]
    elif case == "huge-seed":
        extra += ["--seed", "99999999999999999999999"]
    elif case == "deep-jsonl":
        (tmp_path / "p.jsonl").write_text("[" * 100_000 + "]" * 100_000 + "\n")
        extra += ["--prompts", tmp_path / "p.jsonl"]
    elif case == "long-prompt":
        (tmp_path / "p.jsonl").write_text(json.dumps([7] * 100_000) + "\n[1, 2]\n")
        extra += ["--prompts", tmp_path / "p.jsonl"]
    elif case == "new-tokens-cap":
        extra += ["--new-tokens", "100000000"]
    elif case == "one-prompt":
        extra += ["--num-prompts", "1"]
    elif case == "one-prompt-file":
        (tmp_path / "p.jsonl").write_text("[1, 2, 3]\n")
        extra += ["--prompts", tmp_path / "p.jsonl"]
    elif case == "missing-target-tensor":
        target = _copy_with(tmp_path, TARGET, "missing")
        _damaged_tensor(target, "model.layers.3.mlp.up_proj.weight", None)
    elif case == "narrower-mlp-config":
        target = _copy_with(tmp_path, TARGET, "narrow", intermediate_size=96)
    elif case == "observed-negative":
        extra += ["--observed=-0.19"]
    elif case == "observed-over-one":
        extra += ["--observed", "1.9"]
    elif case == "metrics-without-counters":
        (tmp_path / "m.txt").write_text("vllm:num_requests_running 0.0\n")
        extra += ["--engine-metrics", tmp_path / "m.txt"]
    elif case == "metrics-unreachable":
        extra += ["--engine-metrics", "http://127.0.0.1:9/metrics"]
    code, out, err = _run(capsys, "accept", draft, "--target", target, *extra, "--json")
    assert (code, out) == (2, ""), err
    assert err.count("\n") == 1 and fragment in err, err


def test_accept_and_check_refuse_a_stamp_for_another_depth_alike(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    target = _copy_with(tmp_path, TARGET, "deep", num_hidden_layers=14)
    refusals = []
    for command in ("check", "accept"):
        code, out, err = _run(capsys, command, DRAFTER, "--target", target)
        refusals.append((code, out, err))
    assert refusals[0] == refusals[1]
    assert refusals[0][0] == 2 and "re-stamp it" in refusals[0][2]


def test_an_observed_rate_is_explained_and_the_last_line_is_the_result(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = _run(capsys, "accept", DRAFTER, "--target", TARGET, "--observed", "0.19", *FAST)
    lines = out.splitlines()
    assert "candidates, best fit first:" in lines
    assert lines[-1].startswith("result: ") and lines[-1].endswith(f"(exit {code})")
    assert code in (0, 1)
    code, out, _ = _run(capsys, "accept", DRAFTER, "--target", TARGET, "--json", *FAST)
    report = json.loads(out)
    assert report["result"] == "ok: no row costs measurable acceptance" and code == 0
    assert report["explanation"] is None and report["exit_code"] == 0
