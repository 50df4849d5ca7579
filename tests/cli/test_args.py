"""Names and lists parse the same everywhere: ``--serve-with "a b"`` in one argument, a DRAFT
typed after ``--serve-with``, a target config given as the drafter, comma lists in the ini
(tests/testing/test_pytest_plugin.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eagle3_contracts.cli import build_parser, main
from eagle3_contracts.config import examples
from eagle3_contracts.conventions.lists import split_names

NAMES = ("sglang==0.5.23", "vllm", "vllm==0.33.0:v1", "sglang-legacy", "trtllm", "specforge")


@given(
    names=st.lists(st.sampled_from(NAMES), min_size=1, max_size=5),
    seps=st.lists(st.sampled_from([",", " ", ", ", " ,", "\t", ",,"]), min_size=4, max_size=4),
    split_at=st.integers(0, 5),
)
def test_any_mix_of_commas_spaces_and_arguments_names_the_same_list(
    names: list[str], seps: list[str], split_at: int
) -> None:
    text = names[0] + "".join(seps[i % 4] + n for i, n in enumerate(names[1:]))
    assert split_names([text]) == names
    assert split_names(names) == names
    cut = min(split_at, len(names))
    assert split_names([" ".join(names[:cut]), ",".join(names[cut:])]) == names


def test_spaces_around_the_operators_stay_in_one_name() -> None:
    assert split_names(["vllm == 0.33.0 : v1, sglang"]) == ["vllm==0.33.0:v1", "sglang"]
    assert split_names(["", " , "]) == []


def _rows(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[str], str]:
    code = main(["check", *argv, "--json"])
    out, err = capsys.readouterr()
    return code, [r["system"] for r in json.loads(out)["rows"]] if out else [], err


def test_serve_with_in_one_argument_names_two_systems(capsys: pytest.CaptureFixture[str]) -> None:
    draft, target = examples.load("kimi-k2.5")
    common = (draft, "--target", target, "--trained-with", "specforge")
    code, one, _ = _rows(capsys, *common, "--serve-with", "sglang==0.5.23 vllm")
    assert (code, one) == (0, ["sglang==0.5.23", "vllm"])
    assert _rows(capsys, *common, "--serve-with", "sglang==0.5.23", "vllm")[:2] == (0, one)


@pytest.mark.parametrize("command", ["check", "fix", "accept"])
def test_a_draft_after_serve_with_is_the_draft(command: str) -> None:
    from eagle3_contracts.cli._args import serving_names

    argv = [command, "--target", "t.json", "--serve-with", "sglang==0.5.23", "vllm", "d/x.json"]
    args = build_parser().parse_args(argv)
    assert serving_names(args) == ["sglang==0.5.23", "vllm"]
    assert args.draft == "d/x.json"


def test_a_draft_after_serve_with_is_checked(capsys: pytest.CaptureFixture[str]) -> None:
    draft, target = examples.load("kimi-k2.5")
    tail = ("--target", target, "--trained-with", "specforge")
    code, systems, _ = _rows(capsys, *tail, "--serve-with", "sglang==0.5.23", "vllm", draft)
    assert (code, systems) == (0, ["sglang==0.5.23", "vllm"])


def test_two_drafts_or_a_path_among_the_names_is_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    draft, target = examples.load("kimi-k2.5")
    code = main(["check", draft, "--target", target, "--serve-with", "vllm", "other/draft.json"])
    _, err = capsys.readouterr()
    assert code == 2 and len(err.splitlines()) == 1
    assert "--serve-with takes system names, got 'other/draft.json'" in err


def test_fix_without_any_draft_says_it_is_required(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["fix", "--target", "t.json", "--serve-with", "vllm"])
    _, err = capsys.readouterr()
    assert code == 2 and err.count("\n") == 1 and "DRAFT is required" in err


@pytest.mark.parametrize("command", ["check", "fix", "stamp"])
def test_a_target_config_given_as_the_drafter_is_refused(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, target = examples.load("kimi-k2.5")
    folder = tmp_path / "model"
    folder.mkdir()
    shutil.copy(target, folder / "config.json")
    before = (folder / "config.json").read_bytes()
    argv = [command, str(folder), "--target", target, "--trained-with", "specforge"]
    code = main([*argv, "--serve-with", "vllm"] if command == "fix" else argv)
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and len(err.splitlines()) == 1
    assert "looks like a target model's config (KimiK25ForConditionalGeneration, 61 layers" in err
    assert "as DRAFT and this one as --target" in err
    assert (folder / "config.json").read_bytes() == before
    assert sorted(p.name for p in folder.iterdir()) == ["config.json"]


def test_a_drafter_without_ids_is_still_a_drafter(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The engines' defaults apply to a drafter that writes no ids: it is checked, not refused."""
    _, target = examples.load("kimi-k2.5")
    draft = tmp_path / "config.json"
    draft.write_text(
        json.dumps({"architectures": ["LlamaForCausalLMEagle3"], "num_hidden_layers": 1})
    )
    code, systems, err = _rows(capsys, str(draft), "--target", target, "--serve-with", "vllm")
    assert code != 2 and systems == ["vllm"] and "looks like a target" not in err
