"""``eagle3-contracts fix`` through the installed entry point: print, --write round trip,
several releases, conflicts, the training claim."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.hub._cache import DRAFT, TARGET, add_repo, config_bytes

ENTRY = str(Path(sys.executable).with_name("eagle3-contracts"))
TOP = "eagle_aux_hidden_state_layer_ids"
ENV = {
    **{k: v for k, v in os.environ.items() if k != "EAGLE3_CONTRACTS_TRAINED_WITH"},
    "PYTHONPATH": os.pathsep.join(sys.path),
}


def cli(*argv: object, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [ENTRY, *map(str, argv)], env=env or ENV, capture_output=True, text=True, timeout=120
    )


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    draft = tmp_path / "drafter"
    draft.mkdir()
    (draft / "config.json").write_text(json.dumps(DRAFT, indent=2) + "\n")
    (tmp_path / "target.json").write_text(json.dumps(TARGET))
    deepseek = dict(TARGET, model_type="deepseek_v3", architectures=["DeepseekV3ForCausalLM"])
    (tmp_path / "deepseek.json").write_text(json.dumps(deepseek))
    top = {k: v for k, v in DRAFT.items() if k != "eagle_config"} | {TOP: [1, 3, 5]}
    (tmp_path / "top.json").write_text(json.dumps(top, indent=4))
    return {
        "draft": draft,
        "config": draft / "config.json",
        "target": tmp_path / "target.json",
        "deepseek": tmp_path / "deepseek.json",
        "top": tmp_path / "top.json",
    }


def test_print_gives_the_minimal_edit_and_writes_nothing(files) -> None:
    before = files["config"].read_text()
    done = cli(
        "fix",
        files["draft"],
        "--target",
        files["target"],
        "--serve-with",
        "vllm==0.33.0",
        "--trained-with",
        "specforge",
    )
    assert done.returncode == 0, done.stderr
    assert files["config"].read_text() == before and not list(files["draft"].glob("*.bak*"))
    # the original text, then the one new member in the style of the last one
    assert done.stdout == before[: before.rindex("\n}")] + f',\n  "{TOP}": [1, 3, 5]\n}}\n'
    assert f"set {TOP} = [1, 3, 5] (for vllm==0.33.0:v2 llama.py)" in done.stderr
    assert "pin the training claim" not in done.stderr  # specforge reads the nested ids


def test_write_round_trip_then_check_says_ok(files) -> None:
    before = files["config"].read_text()
    args = (
        "--target",
        files["target"],
        "--serve-with",
        "sglang==0.5.23",
        "vllm==0.33.0",
        "--trained-with",
        "specforge",
    )
    assert cli("check", files["draft"], *args).returncode == 1  # vLLM reads no ids today
    done = cli("fix", files["draft"], *args, "--write")
    assert done.returncode == 0, done.stderr
    assert "ok as it is: sglang==0.5.23 llama.py" in done.stdout
    assert "re-check: ok for sglang==0.5.23 llama.py, vllm==0.33.0:v2 llama.py" in done.stdout
    assert (files["draft"] / "config.json.bak").read_text() == before
    fixed = json.loads(files["config"].read_text())
    assert fixed == {**DRAFT, TOP: [1, 3, 5]}  # both fields: each release reads its own
    again = cli("check", files["draft"], *args)
    assert again.returncode == 0, again.stdout
    second = cli("fix", files["draft"], *args, "--write")
    assert second.returncode == 0 and "nothing to write" in second.stdout
    assert not (files["draft"] / "config.json.bak1").exists()


def test_existing_backup_is_never_overwritten(files) -> None:
    (files["draft"] / "config.json.bak").write_text("mine")
    done = cli(
        "fix",
        files["draft"],
        "--target",
        files["target"],
        "--serve-with",
        "vllm==0.33.0",
        "--trained-with",
        "specforge",
        "--write",
    )
    assert done.returncode == 0, done.stderr
    assert (files["draft"] / "config.json.bak").read_text() == "mine"
    assert json.loads((files["draft"] / "config.json.bak1").read_text()) == DRAFT


def test_one_field_two_answers_is_a_refusal_naming_both(files) -> None:
    """sglang 0.5.12 and 0.5.14 read the same nested field in different orders for
    deepseek_v2.py: no one config serves both."""
    before = files["top"].read_text()
    done = cli(
        "fix",
        files["top"],
        "--target",
        files["deepseek"],
        "--serve-with",
        "sglang==0.5.12,sglang==0.5.14",
        "--trained-with",
        "speculators",
        "--write",
    )
    assert done.returncode == 2 and done.stdout == ""
    line = done.stderr.strip().splitlines()[-1]
    assert "no one config serves both" in line
    assert "sglang==0.5.12 deepseek_v2.py" in line and "sglang==0.5.14 deepseek_v2.py" in line
    assert files["top"].read_text() == before
    each = cli(
        "fix",
        files["top"],
        "--target",
        files["deepseek"],
        "--serve-with",
        "sglang==0.5.14",
        "--trained-with",
        "speculators",
    )
    assert each.returncode == 0, each.stderr
    assert json.loads(each.stdout)["eagle_config"] == {TOP: [3, 5, 1]}
    assert each.stdout.startswith(before[: before.rindex("\n}")])  # indent 4 kept


def test_no_training_claim_is_refused(files) -> None:
    done = cli("fix", files["draft"], "--target", files["target"], "--serve-with", "vllm==0.33.0")
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert "needs the training claim" in done.stderr
    env = {**ENV, "EAGLE3_CONTRACTS_TRAINED_WITH": "specforge"}
    from_env = cli(
        "fix", files["draft"], "--target", files["target"], "--serve-with", "vllm==0.33.0", env=env
    )
    assert from_env.returncode == 0 and "EAGLE3_CONTRACTS_TRAINED_WITH" in from_env.stderr
    stamped = cli(
        "stamp", files["draft"], "--trained-with", "specforge", "--target", files["target"]
    )
    assert stamped.returncode == 0, stamped.stderr
    from_stamp = cli(
        "fix",
        files["draft"],
        "--target",
        files["target"],
        "--serve-with",
        "vllm==0.33.0",
        "--write",
    )
    assert from_stamp.returncode == 0, from_stamp.stderr
    assert json.loads(files["config"].read_text())[TOP] == [1, 3, 5]


def test_hub_id_prints_but_never_writes(tmp_path: Path, files) -> None:
    cache = tmp_path / "hub"
    add_repo(cache, "org/draft", {"config.json": config_bytes(DRAFT)})
    env = {**ENV, "HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1"}
    args = (
        "--target",
        files["target"],
        "--serve-with",
        "vllm==0.33.0",
        "--trained-with",
        "specforge",
    )
    printed = cli("fix", "org/draft", *args, env=env)
    assert printed.returncode == 0 and json.loads(printed.stdout)[TOP] == [1, 3, 5]
    refused = cli("fix", "org/draft", *args, "--write", env=env)
    assert refused.returncode == 2 and "never written" in refused.stderr


def test_unfixable_release_is_refused_with_the_reason(files) -> None:
    done = cli(
        "fix",
        files["top"],
        "--target",
        files["target"],
        "--serve-with",
        "sglang==0.5.23",
        "--trained-with",
        "specforge",
    )
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert "sglang==0.5.23 llama.py" in done.stderr


KIMI = Path(__file__).parents[2] / "eagle3_contracts" / "config" / "examples" / "kimi-k2.5"


def test_a_claim_read_from_the_ids_is_pinned_in_the_same_write(tmp_path: Path) -> None:
    """specforge-hf reads the claim from the very field the fix rewrites: the fix stamps the
    original training in the same write, so ``check`` with the same arguments afterwards says
    ok (unpinned, it read [3, 31, 59] as trained and asked for [4, 32, 60])."""
    draft = tmp_path / "kimi"
    draft.mkdir()
    (draft / "config.json").write_text((KIMI / "draft.json").read_text())
    args = (
        "--target",
        KIMI / "target.json",
        "--trained-with",
        "specforge-hf",
        "--serve-with",
        "sglang==0.5.23",
    )
    assert cli("check", draft, *args).returncode == 1  # sglang 0.5.23 feeds [1, 29, 57]
    done = cli("fix", draft, *args, "--write")
    assert done.returncode == 0, done.stderr
    assert "set eagle_config.eagle_aux_hidden_state_layer_ids = [3, 31, 59]" in done.stdout
    assert (
        "pin the training claim: eagle3_contract = canonical [2, 30, 58] of L=61, H=7168 "
        "(trained with specforge-hf)" in done.stdout
    )
    written = json.loads((draft / "config.json").read_text())
    assert written["eagle_config"]["eagle_aux_hidden_state_layer_ids"] == [3, 31, 59]
    assert written["eagle3_contract"]["layer_ids"] == [2, 30, 58]
    assert written["eagle3_contract"]["native_ids"] == [2, 30, 58]
    again = cli("check", draft, *args)
    assert again.returncode == 0, again.stdout
    assert "trained with stamp (specforge-hf): canonical [2, 30, 58]" in again.stdout
    assert cli("fix", draft, *args, "--write").stdout.endswith(
        "is read correctly by every release\n"
    )
