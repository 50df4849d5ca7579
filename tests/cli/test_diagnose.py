"""``eagle3-contracts diagnose`` end to end: exit 0/1/2, one-line errors, targets from disk."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from eagle3_contracts.capture.hooks import capture_hidden_states, seeded_input_ids
from eagle3_contracts.capture.targets import load_target
from eagle3_contracts.cli import main
from eagle3_contracts.dumps.format import write_dump
from eagle3_contracts.testing.hf_models import build_tiny_hf, tiny_hf_config
from tests.dumps.cases import BAD_DUMPS, BadDump

pytestmark = pytest.mark.usefixtures("wide_output")  # content, not layout (test_width.py)

SEED = 3


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A tiny llama saved as a weights directory and as a bare config, and dumps from it."""
    tmp = tmp_path_factory.mktemp("diag")
    config = tiny_hf_config("llama", num_layers=5, hidden_size=32)
    model = build_tiny_hf(config, seed=SEED)
    (tmp / "config.json").write_text(config.to_json_string())
    model.save_pretrained(tmp / "model")  # config.json + model.safetensors
    ids = seeded_input_ids(96, 1, 6, seed=0)

    def dump(name: str, canonical: tuple[int, ...], claim: list[int], convention: str) -> Path:
        captured = capture_hidden_states(model, ids, canonical)
        return write_dump(
            tmp / name, captured, ids, layer_ids=claim, convention=convention, system="t"
        )

    contract = tmp / "contract.json"
    contract.write_text(
        json.dumps(
            {"layer_ids": [1, 2, 3], "num_layers": 5, "hidden_size": 32, "order": "ascending"}
        )
    )
    return {
        "dir": tmp,
        "config": tmp / "config.json",
        "model": tmp / "model",
        "contract": contract,
        "good": dump("good.safetensors", (1, 2, 3), [2, 3, 4], "vllm"),
        "early": dump("early.safetensors", (0, 1, 2), [1, 2, 3], "canonical"),
    }


def _run(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_weights_directory_ok(world, capsys) -> None:
    code, out, err = _run(capsys, "diagnose", "--dump", world["good"], "--target", world["model"])
    assert code == 0, err
    assert "weights from" in out and "RANDOM" not in out
    assert "verdict: OK" in out
    assert err == ""  # no progress bars, no warnings


def test_config_is_random_init_with_seed_stated(world, capsys) -> None:
    code, out, _ = _run(
        capsys, "diagnose", "--dump", world["good"], "--target", world["config"], "--seed", SEED
    )
    assert code == 0
    assert f"RANDOM INIT (seed {SEED})" in out
    code, out, _ = _run(capsys, "diagnose", "--dump", world["good"], "--target", world["config"])
    assert code == 1  # default seed 0 is another model: nothing matches, and it says so
    assert "--seed not given: the default seed 0 applied" in out
    assert "wrong target" in out


def test_two_dumps_json(world, capsys) -> None:
    argv = "diagnose --dump {good} --dump {early} --target {model} --contract {contract} --json"
    code, out, _ = _run(capsys, *argv.format(**world).split())
    assert code == 1
    report = json.loads(out)
    assert report["exit_code"] == 1
    training, serving = report["dumps"]
    assert training["ok"] and training["found"] == [1, 2, 3]
    assert serving["found"] == [0, 1, 2]
    assert serving["findings"][0]["kind"] == "shifted"
    assert report["comparison"]["same"] is False


def test_ids_override(world, capsys) -> None:
    argv = "diagnose --dump {early} --target {model} --ids 1,2,3 --convention vllm"
    code, out, _ = _run(capsys, *argv.format(**world).split())
    assert code == 0, out  # vllm boundaries 1,2,3 = canonical 0,1,2
    assert "--ids 1,2,3 --convention vllm" in out


def _drafter(tmp: Path, name: str, ids: list[int] | None) -> Path:
    """A drafter directory whose config.json carries a stamp of canonical ``ids`` (or none)."""
    from eagle3_contracts.contract import CaptureContract
    from eagle3_contracts.stamp import Stamp, write_stamp

    folder = tmp / name
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLMEagle3"]}))
    if ids is not None:
        write_stamp(folder, Stamp(CaptureContract(tuple(ids), 5, 32), trained_with="specforge"))
    return folder


def test_draft_stamp_is_the_claim(world, capsys, tmp_path: Path) -> None:
    """`--draft` judges the dump against the drafter's stamp, and says that it did."""
    right = _drafter(tmp_path, "right", [1, 2, 3])
    code, out, err = _run(
        capsys, "diagnose", "--dump", world["good"], "--target", world["model"], "--draft", right
    )
    assert code == 0, out + err
    assert "training claim: stamp in" in out and "canonical [1, 2, 3]" in out
    wrong = _drafter(tmp_path, "wrong", [0, 1, 2])
    code, out, _ = _run(
        capsys, "diagnose", "--dump", world["good"], "--target", world["model"], "--draft", wrong
    )
    assert code == 1, out  # the dump holds canonical 1, 2, 3; the drafter was trained on 0, 1, 2


def test_draft_without_stamp_says_the_dump_is_the_claim(world, capsys, tmp_path: Path) -> None:
    bare = _drafter(tmp_path, "bare", None)
    code, out, _ = _run(
        capsys, "diagnose", "--dump", world["good"], "--target", world["model"], "--draft", bare
    )
    assert code == 0, out
    assert "no training claim for" in out and "the dumps' own metadata is the claim" in out


@pytest.mark.parametrize("case", BAD_DUMPS, ids=lambda c: c.name)
def test_bad_dump_exit_2_one_line(world, capsys, tmp_path: Path, case: BadDump) -> None:
    path = case.make(tmp_path)
    code, out, err = _run(capsys, "diagnose", "--dump", path, "--target", world["model"])
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("eagle3-contracts: error: ")
    assert (case.cli_expect or case.expect) in err


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


# (name, extra argv or target builder, expected fragment of the one-line error)
USAGE_CASES = (
    (
        "no-weights",
        lambda w, t: ["--target", _write(t / "m" / "config.json", w["config"].read_text()).parent],
        "has no *.safetensors weights",
    ),
    ("pickle-weights", lambda w, t: ["--target", _pickled_dir(w, t)], "only pickle-based weights"),
    ("no-config", lambda w, t: ["--target", _mkdir(t / "empty")], "has no config.json"),
    ("missing-target", lambda w, t: ["--target", t / "absent"], "no such file or directory"),
    ("config-not-json", lambda w, t: ["--target", _write(t / "c.json", "{nope")], "not valid JSON"),
    (
        "config-no-type",
        lambda w, t: ["--target", _write(t / "c.json", '{"hidden_size": 8}')],
        "no model_type",
    ),
    (
        "config-unknown-type",
        lambda w, t: ["--target", _write(t / "c.json", '{"model_type": "nosuch"}')],
        "cannot build model_type 'nosuch'",
    ),
    (
        "ids-no-convention",
        lambda w, t: ["--target", w["model"], "--ids", "1,2"],
        "--ids needs --convention",
    ),
    (
        "convention-no-ids",
        lambda w, t: ["--target", w["model"], "--convention", "vllm"],
        "--convention applies to --ids",
    ),
    (
        "bad-ids",
        lambda w, t: ["--target", w["model"], "--ids", "1,x", "--convention", "vllm"],
        "comma-separated integers",
    ),
    (
        "unknown-convention",
        lambda w, t: ["--target", w["model"], "--ids", "1,2,3", "--convention", "nosuch"],
        "unknown system name 'nosuch'",
    ),
    (
        "ids-and-contract",
        lambda w, t: [
            "--target",
            w["model"],
            "--ids",
            "1",
            "--convention",
            "vllm",
            "--contract",
            w["contract"],
        ],
        "not allowed with argument",
    ),
    (
        "contract-other-target",
        lambda w, t: [
            "--target",
            w["model"],
            "--contract",
            _write(
                t / "k.json",
                json.dumps(
                    {"layer_ids": [1], "num_layers": 61, "hidden_size": 32, "order": "ascending"}
                ),
            ),
        ],
        "the contract is for 61 x 32",
    ),
    (
        "contract-bad",
        lambda w, t: ["--target", w["model"], "--contract", _write(t / "k.json", "[]")],
        "must be a JSON object",
    ),
    (
        "three-dumps",
        lambda w, t: ["--target", w["model"], "--dump", w["good"], "--dump", w["good"]],
        "give one --dump, or two",
    ),
    (
        "unreachable-claim",
        lambda w, t: ["--target", w["model"], "--ids", "5", "--convention", "canonical"],
        "outside [-1, 4]",
    ),
)


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def _pickled_dir(world: dict[str, Path], tmp: Path) -> Path:
    d = _mkdir(tmp / "pt")
    _write(d / "config.json", world["config"].read_text())
    torch.save({"w": torch.zeros(1)}, d / "pytorch_model.bin")
    return d


@pytest.mark.parametrize("case", USAGE_CASES, ids=lambda c: c[0])
def test_usage_errors_exit_2_one_line(world, capsys, tmp_path: Path, case) -> None:
    _, argv, expect = case
    code, out, err = _run(capsys, "diagnose", "--dump", world["good"], *argv(world, tmp_path))
    assert code == 2, out
    assert err.count("\n") == 1 and expect in err, err


def test_load_target_matches_in_process_model(world) -> None:
    loaded = load_target(world["model"])
    assert not loaded.random_init and loaded.num_layers == 5 and loaded.hidden_size == 32
    rebuilt = load_target(world["config"], seed=SEED)
    assert rebuilt.random_init and rebuilt.seed == SEED
    for a, b in zip(loaded.model.parameters(), rebuilt.model.parameters(), strict=True):
        assert torch.equal(a, b)


def test_bad_contract_file_is_named(world, capsys, tmp_path: Path) -> None:
    bad = _write(tmp_path / "contract.json", "{bad")
    code, out, err = _run(
        capsys, "diagnose", "--dump", world["good"], "--target", world["model"], "--contract", bad
    )
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and f"--contract {bad}: contract is not valid JSON" in err


def test_demo_out_that_cannot_be_created_is_a_usage_error(capsys, tmp_path: Path) -> None:
    blocker = _write(tmp_path / "file", "not a directory")
    code, out, err = _run(capsys, "demo", "--out", blocker / "sub")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and f"--out {blocker / 'sub'}: cannot create the directory" in err
