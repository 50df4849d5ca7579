"""``accept`` for drafters beyond EAGLE-3: the methods the oracle runs are run; the others are
refused before anything is loaded, in one line naming the method and why."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

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


def _add_tensors(folder: Path, tensors: dict[str, torch.Tensor]) -> Path:
    from safetensors.torch import save_file

    save_file(tensors, str(folder / "norms.safetensors"))  # read with model.safetensors
    return folder


def _gains(n: int, size: int, seed: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    return 1 + 0.3 * torch.randn(n, size, generator=gen)


def _rms(x: torch.Tensor, w: torch.Tensor, eps: float) -> torch.Tensor:
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def test_eagle31_norm_output_is_run(make_drafter: MakeDrafter) -> None:
    config = {"norm_output": True}
    assert methods.detect({**config, "architectures": ["LlamaForCausalLMEagle3"]}).name == (
        "eagle3.1"
    )
    drafter, _ = load_drafter(make_drafter(config=config))
    assert drafter.shape.norm_output  # the next step takes the normed state (read_shape)


def test_eagle31_fc_norm_normalises_each_state_before_fc(make_drafter: MakeDrafter) -> None:
    # vLLM 0.33.0 llama_eagle3.py:411-416: one RMSNorm per chunk, fc_norm read at the top level
    gains = _gains(3, 16, seed=1)
    folder = make_drafter(config={"fc_norm": True})
    _add_tensors(folder, {f"fc_norm.{i}.weight": gains[i].contiguous() for i in range(3)})
    drafter, _ = load_drafter(folder)
    states = torch.randn(4, 48, generator=torch.Generator().manual_seed(2))
    eps = drafter.shape.rms_norm_eps
    chunks = [_rms(c, gains[i], eps) for i, c in enumerate(states.chunk(3, dim=-1))]
    want = torch.cat(chunks, dim=-1) @ drafter.p("fc.weight").T
    torch.testing.assert_close(drafter.combine(states), want)
    plain, _ = load_drafter(make_drafter("plain"))
    assert not torch.allclose(plain.combine(states), drafter.combine(states))


def test_eagle31_norm_before_fc_in_eagle_config_is_one_norm(make_drafter: MakeDrafter) -> None:
    # vLLM 0.33.0 llama_eagle3.py:184-188 reads eagle_config first; 405-407 applies input_norm
    gain = _gains(1, 48, seed=3)[0]
    folder = make_drafter(config={"eagle_config": {"norm_before_fc": True}})
    drafter, _ = load_drafter(_add_tensors(folder, {"input_norm.weight": gain}))
    states = torch.randn(4, 48, generator=torch.Generator().manual_seed(4))
    want = _rms(states, gain, drafter.shape.rms_norm_eps) @ drafter.p("fc.weight").T
    torch.testing.assert_close(drafter.combine(states), want)


@pytest.mark.parametrize(
    ("config", "tensor", "field"),
    [
        ({"eagle_config": {"fc_norm": True}}, "fc_norm.0.weight", "fc_norm"),  # top level only
        ({}, "input_norm.weight", "norm_before_fc"),
    ],
)
def test_a_norm_the_flags_leave_unused_is_refused(
    config: dict, tensor: str, field: str, make_drafter: MakeDrafter
) -> None:
    size = 48 if tensor == "input_norm.weight" else 16
    folder = _add_tensors(make_drafter(config=config), {tensor: torch.ones(size)})
    with pytest.raises(ConfigError, match=r"not set where vLLM 0\.33\.0 reads it") as info:
        load_drafter(folder)
    assert info.value.field == field


def test_cli_runs_an_eagle31_drafter(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import shutil

    from eagle3_contracts.acceptance.fixture import DRAFTER, TARGET
    from eagle3_contracts.cli import main

    draft = tmp_path / "eagle31"
    shutil.copytree(DRAFTER, draft)
    config = json.loads((draft / "config.json").read_text())
    (draft / "config.json").write_text(json.dumps({**config, "fc_norm": True}))
    states = load_drafter(DRAFTER)[0].shape.num_states
    hidden = load_drafter(DRAFTER)[0].shape.target_hidden_size
    _add_tensors(draft, {f"fc_norm.{i}.weight": torch.ones(hidden) for i in range(states)})
    argv = ["accept", str(draft), "--target", str(TARGET), "--json", "--num-prompts", "3",
            "--new-tokens", "16", "--num-drafts", "2"]  # fmt: skip
    code = main(argv)
    out, err = capsys.readouterr()
    assert code in (0, 1), err
    report = json.loads(out)
    assert report["trained_acceptance"]["prompts"] == 3
    assert report["trained"]["wiring"] == [2, 6, 9]  # the fixture's stamp, fed as trained
    assert 0.0 <= report["trained_acceptance"]["chain_rate"]["value"] <= 1.0


def test_load_drafter_refuses_a_block_drafter_before_reading_weights(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text((DATA / "specforge-qwen3-8b-dspark.json").read_text())
    with pytest.raises(ConfigError, match="accept cannot run a DSpark drafter") as info:
        load_drafter(tmp_path)  # no safetensors here: the method is refused first
    assert info.value.field == "architectures"
