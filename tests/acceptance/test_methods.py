"""``accept`` for drafters beyond EAGLE-3: the methods the oracle runs are run; the others are
refused before anything is loaded, in one line naming the method and why."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eagle3_contracts.acceptance.drafter import NOT_RUN, load_drafter
from eagle3_contracts.conventions import methods
from eagle3_contracts.errors import ConfigError
from tests.acceptance.conftest import MakeDrafter

DATA = Path(__file__).parent.parent / "conventions" / "data" / "methods"


@pytest.mark.parametrize(
    ("file", "label"),
    [
        ("specforge-qwen3-8b-dflash.json", "DFlash"),
        ("specforge-qwen3-8b-domino.json", "Domino"),
        ("specforge-qwen3-8b-dspark.json", "DSpark"),
        ("specforge-qwen3.6-27b-dflash2.json", "DFlash2"),
        ("nvidia-nemotron-3-nano-nvfp4-dflash.json", "Nemotron-3.5 draft"),
        ("specforge-qwen3-8b-peagle.json", "P-EAGLE"),
    ],
)
def test_cli_refuses_a_method_it_cannot_run_in_one_line(
    file: str, label: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from eagle3_contracts.cli import main

    draft = tmp_path / "drafter"
    draft.mkdir()
    (draft / "config.json").write_text((DATA / file).read_text())
    target = str(DATA / "targets" / "qwen3-8b.json")  # never read: the refusal comes first
    code = main(["accept", str(draft), "--target", target, "--serve-with", "sglang==0.5.23"])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and f"accept cannot run a {label} drafter: " in lines[0]
    assert NOT_RUN[methods.detect(json.loads((DATA / file).read_text())).name] in lines[0]


def test_every_method_is_run_or_refused_with_a_reason() -> None:
    runs = {m.name for m in methods.METHODS} - set(NOT_RUN)
    assert runs == {"eagle3", "eagle3.1"}
    assert all("does not run" in why or "do not run" in why for why in NOT_RUN.values())


def test_eagle31_norm_output_is_run(make_drafter: MakeDrafter) -> None:
    config = {"norm_output": True}
    assert methods.detect({**config, "architectures": ["LlamaForCausalLMEagle3"]}).name == (
        "eagle3.1"
    )
    drafter, _ = load_drafter(make_drafter(config=config))
    assert drafter.shape.norm_output  # the next step takes the normed state (read_shape)


@pytest.mark.parametrize("flag", ["fc_norm", "norm_before_fc"])
def test_eagle31_fc_norms_are_refused_naming_the_method(
    flag: str, make_drafter: MakeDrafter
) -> None:
    with pytest.raises(ConfigError, match=r"EAGLE-3\.1") as info:
        load_drafter(make_drafter(config={flag: True}))
    assert info.value.field == flag


def test_load_drafter_refuses_a_block_drafter_before_reading_weights(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text((DATA / "specforge-qwen3-8b-dspark.json").read_text())
    with pytest.raises(ConfigError, match="accept cannot run a DSpark drafter") as info:
        load_drafter(tmp_path)  # no safetensors here: the method is refused first
    assert info.value.field == "architectures"
