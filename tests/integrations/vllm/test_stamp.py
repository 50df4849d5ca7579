"""The drafter stamp: ``eagle3-contracts stamp``, the reader, and which claim tools use."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eagle3_contracts.cli import main
from eagle3_contracts.config import examples
from eagle3_contracts.errors import ConfigError
from eagle3_contracts.stamp import ENV_TRAINED_WITH, STAMP_KEY, claim_source, read_stamp

KIMI = Path(examples.__file__).parent / "kimi-k2.5"


@pytest.fixture
def drafter(tmp_path: Path) -> Path:
    (tmp_path / "config.json").write_text((KIMI / "draft.json").read_text())
    return tmp_path


def _stamp(drafter: Path, *extra: str) -> int:
    return main(
        [
            "stamp",
            str(drafter),
            "--trained-with",
            "output",
            "--target",
            str(KIMI / "target.json"),
            *extra,
        ]
    )


def test_stamp_writes_the_canonical_contract_into_config_json(drafter: Path) -> None:
    before = json.loads((drafter / "config.json").read_text())
    assert _stamp(drafter) == 0
    after = json.loads((drafter / "config.json").read_text())
    assert {k: v for k, v in after.items() if k != STAMP_KEY} == before  # nothing else changed
    stamp = read_stamp(drafter)
    assert stamp is not None
    # the "output" reading: the ids [2, 30, 58] are layer outputs
    contract = stamp.contract
    assert contract.layer_ids == (2, 30, 58) and contract.num_layers == 61
    assert contract.width == 3 * 7168
    assert stamp.trained_with == "output"


def test_restamping_differently_needs_force(
    drafter: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _stamp(drafter) == 0
    args = [
        "stamp",
        str(drafter),
        "--trained-with",
        "boundary",
        "--target",
        str(KIMI / "target.json"),
    ]
    assert main(args) == 2
    assert "pass --force" in capsys.readouterr().err
    assert main([*args, "--force"]) == 0
    stamp = read_stamp(drafter)
    assert stamp is not None and stamp.contract.layer_ids == (1, 29, 57)


def test_stamp_needs_trained_with_and_target(
    drafter: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["stamp", str(drafter)]) == 2
    assert "--trained-with" in capsys.readouterr().err


def test_claim_prefers_the_stamp_then_the_flag_then_the_env(drafter: Path) -> None:
    env = {ENV_TRAINED_WITH: "vllm"}
    assert claim_source(drafter, None, env).kind == "env"
    assert claim_source(drafter, "specforge", env).kind == "--trained-with"
    assert claim_source(drafter, None, {}).kind == "none"
    _stamp(drafter)
    claim = claim_source(drafter, "vllm", env)
    assert claim.kind == "stamp" and claim.stamp is not None
    assert "stamp in" in claim.describe() and "output" in claim.describe()


@pytest.mark.parametrize(
    ("block", "message"),
    [
        ("nope", "must be a JSON object"),
        ({"schema": "other/9"}, "schema"),
        (
            {
                "schema": "eagle3-contracts.stamp/1",
                "layer_ids": [],
                "num_layers": 4,
                "hidden_size": 8,
            },
            "non-empty",
        ),
        (
            {
                "schema": "eagle3-contracts.stamp/1",
                "layer_ids": [4],
                "num_layers": 4,
                "hidden_size": 8,
            },
            "not canonical ids",
        ),
        (
            {
                "schema": "eagle3-contracts.stamp/1",
                "layer_ids": [1],
                "num_layers": 4,
                "hidden_size": 8,
                "width": 9,
            },
            "disagrees",
        ),
        (
            {
                "schema": "eagle3-contracts.stamp/1",
                "layer_ids": [1, 2, 1],
                "num_layers": 4,
                "hidden_size": 8,
            },
            "repeats layer_ids",
        ),
    ],
)
def test_a_malformed_stamp_is_refused(drafter: Path, block: object, message: str) -> None:
    data = json.loads((drafter / "config.json").read_text())
    data[STAMP_KEY] = block
    (drafter / "config.json").write_text(json.dumps(data))
    with pytest.raises(ConfigError, match=message):
        read_stamp(drafter)


def test_unstamped_reads_none(drafter: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert read_stamp(drafter) is None
    assert main(["stamp", str(drafter), "--show"]) == 1  # nothing to show is not a success
    assert "not stamped" in capsys.readouterr().out


def test_check_reads_the_stamp_first_and_says_so(
    drafter: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    target = str(KIMI / "target.json")
    monkeypatch.delenv(ENV_TRAINED_WITH, raising=False)
    main(["check", str(drafter / "config.json"), "--target", target, "--serve-with", "vllm"])
    assert "training claim: no stamp, no --trained-with" in capsys.readouterr().err
    monkeypatch.setenv(ENV_TRAINED_WITH, "output")
    main(["check", str(drafter / "config.json"), "--target", target, "--serve-with", "vllm"])
    assert f"training claim: no stamp; {ENV_TRAINED_WITH}=output" in capsys.readouterr().err
    assert _stamp(drafter) == 0
    capsys.readouterr()
    args = ["check", str(drafter / "config.json"), "--target", target, "--trained-with", "boundary"]
    main([*args, "--serve-with", "vllm"])
    err = capsys.readouterr().err
    assert "training claim: stamp in" in err and "--trained-with boundary ignored" in err
