"""The CLI habits people expect, each through the installed ``eagle3-contracts`` script."""

from __future__ import annotations

import json
import os
import pty
import select
import shutil
import subprocess
from pathlib import Path

import pytest

import eagle3_contracts
from eagle3_contracts.config import examples
from eagle3_contracts.stamp import ENV_TRAINED_WITH, RETIRED_ENV_TRAINED_WITH, STAMP_KEY
from tests.cli._entry import entry_env, entry_point, run_entry

pytestmark = pytest.mark.usefixtures("wide_output")  # content, not layout (test_width.py)


KIMI = Path(examples.__file__).parent / "kimi-k2.5"


def test_version_names_the_package_version() -> None:
    from importlib.metadata import version

    done = run_entry("--version")
    assert done.returncode == 0
    assert done.stdout.strip() == f"eagle3-contracts {eagle3_contracts.__version__}"
    assert eagle3_contracts.__version__ == version("eagle3-contracts")  # one version, two places


# -- a closed pipe keeps the verdict -----------------------------------------------------------
def _closed_pipe_exit(*argv: str) -> int:
    """Run with stdout a pipe whose reader is already gone, as `| head -1` leaves it."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(
            [entry_point(), *argv],
            stdout=write_end,
            stderr=subprocess.PIPE,
            env=entry_env(),
            timeout=120,
            check=False,
        )
    finally:
        os.close(write_end)
    assert b"Traceback" not in done.stderr
    return done.returncode


@pytest.mark.parametrize(
    ("argv", "verdict"),
    [
        (("check", "--example", "kimi-k2.5"), 1),
        (("check", "--example", "kimi-k2.5", "--json"), 1),
        (("check", str(KIMI / "draft.json"), "--target", str(KIMI / "target.json"),
          "--trained-with", "specforge-hf", "--serve-with", "trtllm"), 0),
        (("stages", "--target", str(KIMI / "target.json"), "--ids", "3,31,59",
          "--pp-size", "4", "--convention", "sglang"), 1),
    ],
)  # fmt: skip
def test_a_closed_pipe_keeps_the_verdicts_exit_code(argv: tuple[str, ...], verdict: int) -> None:
    """`check --example kimi-k2.5 | head -1` exited 0 (a false green under pipefail)."""
    assert _closed_pipe_exit(*argv) == verdict


def test_head_under_pipefail_reports_the_mismatch() -> None:
    script = f"{entry_point()} check --example kimi-k2.5 | head -1"
    for _ in range(3):
        done = subprocess.run(
            ["bash", "-o", "pipefail", "-c", script],
            capture_output=True,
            text=True,
            env=entry_env(),
            timeout=120,
            check=False,
        )
        assert done.returncode == 1 and done.stdout.startswith("example kimi-k2.5")
        assert done.stderr == ""


# -- the last line is the verdict --------------------------------------------------------------
def _check_kimi(
    *extra: str, env: dict[str, str] | None = None, claim: str | None = None
) -> subprocess.CompletedProcess[str]:
    """`check` on the Kimi drafter (nested ids [2, 30, 58], no stamp); ``claim`` is the
    environment's training claim (None: the variable unset)."""
    env = dict(env or {})
    if claim is not None:
        env[ENV_TRAINED_WITH] = claim
    draft, target = str(KIMI / "draft.json"), str(KIMI / "target.json")
    drop = () if claim is not None else (ENV_TRAINED_WITH,)
    return run_entry("check", draft, "--target", target, *extra, env=env, drop=drop)


def test_a_run_without_a_training_claim_ends_ambiguous_not_mismatch() -> None:
    done = _check_kimi("--serve-with", "trtllm")
    assert done.returncode == 1
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith("result: AMBIGUOUS (no training claim") and "MISMATCH" not in last
    data = json.loads(_check_kimi("--json").stdout)
    assert data["verdict"] == "AMBIGUOUS" and data["ambiguous"] is True


def test_stages_prints_the_notes_it_points_at() -> None:
    target = str(KIMI / "target.json")
    argv = ("--ids", "3,31,59", "--pp-size", "4", "--convention", "vllm")
    done = run_entry("stages", "--target", target, *argv)
    lines = done.stdout.strip().splitlines()
    at = next(i for i, line in enumerate(lines) if line.endswith("(see notes)"))
    trained = next(i for i, line in enumerate(lines) if line.startswith("trained: "))
    notes = lines[at + 1 : trained]
    assert notes and all(line.startswith("  note: ") for line in notes)
    verdict = next(line for line in lines[trained:] if not line.startswith(("trained", " ")))
    assert verdict.startswith("UNKNOWN: ") and done.returncode == 1  # unread: never ok
    data = json.loads(run_entry("stages", "--target", target, *argv, "--json").stdout)
    assert [f"  note: {n}" for n in data["pipeline_notes"]] == notes


# -- one environment variable per idea ----------------------------------------------------------
def test_the_retired_trained_with_variable_is_refused_not_ignored() -> None:
    done = _check_kimi(env={RETIRED_ENV_TRAINED_WITH: "specforge-hf"})
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert f"{RETIRED_ENV_TRAINED_WITH}=specforge-hf is not read" in done.stderr
    assert ENV_TRAINED_WITH in done.stderr


def test_the_trained_with_variable_is_the_claim_without_a_stamp() -> None:
    done = _check_kimi("--serve-with", "trtllm", claim="specforge-hf")
    assert done.returncode == 0, done.stdout
    assert f"{ENV_TRAINED_WITH}=specforge-hf" in done.stderr


# -- stamp -------------------------------------------------------------------------------------
@pytest.fixture
def drafter(tmp_path: Path) -> Path:
    # the user's own formatting: 4-space indent, compact arrays, keys in their order
    text = (
        "{\n"
        '    "architectures": ["LlamaForCausalLMEagle3"],\n'
        '    "eagle_config": {"eagle_aux_hidden_state_layer_ids": [2, 30, 58]},\n'
        '    "hidden_size": 7168,\n'
        '    "num_hidden_layers": 1\n'
        "}\n"
    )
    (tmp_path / "config.json").write_text(text)
    return tmp_path


def _stamp(drafter: Path, trained_with: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return run_entry(
        "stamp",
        str(drafter),
        "--trained-with",
        trained_with,
        "--target",
        str(KIMI / "target.json"),
        *extra,
    )


def test_stamp_is_a_minimal_edit_that_keeps_the_files_formatting(drafter: Path) -> None:
    before = (drafter / "config.json").read_text()
    assert _stamp(drafter, "output").returncode == 0
    after = (drafter / "config.json").read_text()
    head = before.rstrip().removesuffix("}").rstrip()
    assert after.startswith(head + ",\n" + f'    "{STAMP_KEY}": {{\n')  # every byte kept
    assert '        "layer_ids": [2, 30, 58],\n' in after  # indented like its siblings
    data = json.loads(after)
    assert data[STAMP_KEY]["layer_ids"] == [2, 30, 58]
    # a forced re-stamp replaces only the block's value
    assert _stamp(drafter, "specforge-hf", "--force").returncode == 0
    again = (drafter / "config.json").read_text()
    assert again.startswith(head + ",\n") and again.count(STAMP_KEY) == 1
    assert json.loads(again)[STAMP_KEY]["trained_with"] == "specforge-hf"


def test_restamping_with_another_trainer_needs_force_even_with_the_same_ids(
    drafter: Path,
) -> None:
    """`output` and `specforge-hf` read [2, 30, 58] alike; the re-stamp used to replace the
    trainer silently because only the ids were compared."""
    assert _stamp(drafter, "output").returncode == 0
    done = _stamp(drafter, "specforge-hf")
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert "trained_with 'output' -> 'specforge-hf'" in done.stderr and "--force" in done.stderr
    assert json.loads((drafter / "config.json").read_text())[STAMP_KEY]["trained_with"] == "output"
    assert _stamp(drafter, "output").returncode == 0  # the same stamp again is fine


def test_stamp_show_on_an_unstamped_drafter_exits_1(drafter: Path) -> None:
    done = run_entry("stamp", str(drafter), "--show")
    assert done.returncode == 1 and "not stamped" in done.stdout


# -- sglang-launch ------------------------------------------------------------------------------
def test_sglang_launch_without_sglang_is_a_one_line_usage_error(tmp_path: Path) -> None:
    python = shutil.which("python3") or "/usr/bin/python3"  # a Python without sglang
    done = run_entry("sglang-launch", "--python", python, "--", "--model-path", "m")
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert f"SGLang is not installed for {python}" in done.stderr


def test_sglang_launch_names_a_python_it_could_not_run(tmp_path: Path) -> None:
    missing = str(tmp_path / "no-such-python")
    done = run_entry("sglang-launch", "--python", missing, "--", "--model-path", "m")
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert f"--python {missing}: cannot run it" in done.stderr


def test_sglang_launch_help_documents_its_environment() -> None:
    done = run_entry("sglang-launch", "--help")
    text = " ".join(done.stdout.split())
    assert done.returncode == 0
    for name in (
        "EAGLE3_CONTRACTS_GUARD=warn|strict",
        "EAGLE3_CONTRACTS_DUMP=DIR",
        ENV_TRAINED_WITH,
    ):
        assert name in text


# -- progress on a terminal, quiet when piped ------------------------------------------------
def _on_a_terminal(*argv: str, timeout: float = 300) -> tuple[int, str]:
    """Run with stdout and stderr on one pseudo-terminal; its exit code and everything shown."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [entry_point(), *argv], stdout=follower, stderr=follower, env=entry_env()
    )
    os.close(follower)
    shown = b""
    while True:
        ready, _, _ = select.select([leader], [], [], timeout)
        if not ready:
            proc.kill()
            raise AssertionError(f"no output for {timeout} s")
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal closed: the command ended
            break
        if not chunk:
            break
        shown += chunk
    os.close(leader)
    return proc.wait(timeout=timeout), shown.decode(errors="replace").replace("\r\n", "\n")


@pytest.mark.hf
def test_diagnose_shows_its_steps_on_a_terminal_and_nothing_when_piped(
    tmp_path: Path, tiny_llama, make_dump
) -> None:
    """demo and diagnose printed nothing for 30-70 s under load, then everything at once."""
    model, ids = tiny_llama
    model.config.to_json_file(tmp_path / "config.json")
    # the same random init diagnose builds from config.json with --seed 7
    from eagle3_contracts.testing.hf_models import build_tiny_hf

    rebuilt = build_tiny_hf(model.config, seed=7)
    dump = make_dump(tmp_path, "d.safetensors", rebuilt, ids, (0, 2), [0, 2], "canonical")
    argv = ("diagnose", "--dump", str(dump), "--target", str(tmp_path / "config.json"))
    code, shown = _on_a_terminal(*argv, "--seed", "7")
    assert code == 0, shown
    steps = [line for line in shown.splitlines() if line.startswith("[")]
    assert [s.split("] ", 1)[1].split(" ")[0] for s in steps[:4]] == [
        "importing",
        "torch",
        "reading",
        "loading",
    ]
    assert any("identifying the segments" in s for s in steps)
    assert shown.rstrip().endswith("result: OK (exit 0)")
    piped = run_entry(*argv, "--seed", "7")
    assert piped.returncode == 0 and piped.stderr == ""
    assert not any(line.startswith("[") for line in piped.stdout.splitlines())
    code, shown = _on_a_terminal(*argv, "--seed", "7", "--json")
    assert code == 0 and not any(line.startswith("[") for line in shown.splitlines())
    assert json.loads(shown)["schema_version"] == 1


@pytest.mark.hf
def test_diagnose_two_dumps_without_a_claim_prints_the_fix(
    tmp_path: Path, tiny_llama, make_dump
) -> None:
    """Without a claim each dump was checked against its own metadata: a serving dump one
    layer early was OK and no fix was printed."""
    model, ids = tiny_llama
    model.config.to_json_file(tmp_path / "config.json")
    train = make_dump(tmp_path, "t.safetensors", model, ids, (0, 2, 4), [0, 2, 4], "canonical")
    serve = make_dump(tmp_path, "s.safetensors", model, ids, (-1, 1, 3), [0, 2, 4], "vllm")
    argv = ("diagnose", "--dump", str(train), "--dump", str(serve))
    target = ("--target", str(tmp_path / "config.json"), "--seed", "7")
    done = run_entry(*argv, *target)
    assert done.returncode == 1, done.stderr
    assert "  fix: give vllm the ids [1, 3, 5] (they feed canonical [0, 2, 4])" in done.stdout
    assert done.stdout.strip().splitlines()[-1] == "result: MISMATCH (exit 1)"
    data = json.loads(run_entry(*argv, *target, "--json").stdout)
    assert data["schema_version"] == 1
    assert data["dumps"][1]["fix_setting"] == {
        "system": "vllm",
        "field": "eagle_aux_hidden_state_layer_ids",
        "ids": [1, 3, 5],
    }
