"""Offline: the sglang-launch command line, the hook specs, the factory and the stream reader.

No SGLang here: the hooks' behaviour inside each release's own model code is the engine
suite's (tests/engines/sglang/test_forward_hooks.py).
"""

from __future__ import annotations

import fnmatch
import json
import shlex
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from eagle3_contracts.cli import main
from eagle3_contracts.cli.sglang_launch import sglang_command
from eagle3_contracts.integrations.sglang import HOOK_FACTORY, forward_hooks
from eagle3_contracts.integrations.sglang import hooks as sg_hooks


def _hooks_of(command: list[str]) -> list[dict[str, object]]:
    i = command.index("--forward-hooks")
    specs = json.loads(command[i + 1])
    assert isinstance(specs, list)
    return specs


def test_command_adds_the_hooks_and_reads_the_draft_path(tmp_path: Path) -> None:
    cmd = sglang_command(
        "py",
        ["--", "--model-path", "M", "--speculative-draft-model-path", str(tmp_path), "--tp", "8"],
    )
    assert cmd[:3] == ["py", "-m", "sglang.launch_server"]
    assert cmd[3:9] == [
        "--model-path",
        "M",
        "--speculative-draft-model-path",
        str(tmp_path),
        "--tp",
        "8",
    ]
    specs = _hooks_of(cmd)
    assert [s["hook_factory"] for s in specs] == [HOOK_FACTORY] * 3
    assert {s["config"]["draft_path"] for s in specs} == {str(tmp_path)}  # type: ignore[index]


def test_command_merges_given_forward_hooks_and_reads_no_stamp_from_a_missing_folder() -> None:
    mine = [{"name": "mine", "target_modules": ["x"], "hook_factory": "m:f"}]
    cmd = sglang_command(
        "py",
        ["--model-path", "M", f"--forward-hooks={json.dumps(mine)}",
         "--speculative-draft-model-path", "/nonexistent/draft"],
    )  # fmt: skip
    specs = _hooks_of(cmd)
    assert specs[0] == mine[0] and len(specs) == 4
    assert cmd.count("--forward-hooks") == 1
    assert specs[1]["config"]["draft_path"] is None  # type: ignore[index]  # no folder, no Hub id


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["sglang-launch", "--"], "arguments after --"),
        (["sglang-launch", "--", "--model-path", "M", "--forward-hooks", "{"], "not valid JSON"),
        (
            ["sglang-launch", "--", "--model-path", "M", "--forward-hooks", "[" * 100_000],
            "nests JSON deeper than 64 levels",
        ),
        (
            ["sglang-launch", "--", "--model-path", "M", "--forward-hooks", "[" * (2 << 20)],
            "over the 1048576 limit",
        ),
        (["sglang-launch", "--", "--model-path", "M", "--forward-hooks", "{}"], "JSON list"),
        (["sglang-launch", "--", "--model-path", "M", "--forward-hooks"], "needs a value"),
    ],
)
def test_bad_input_exits_2_with_one_line(
    argv: list[str], needle: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert needle in err and len(err.strip().splitlines()) == 1


def test_bad_guard_mode_is_a_usage_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("EAGLE3_CONTRACTS_GUARD", "loud")
    assert main(["sglang-launch", "--print-command", "--", "--model-path", "M"]) == 2
    assert "EAGLE3_CONTRACTS_GUARD" in capsys.readouterr().err


def test_print_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["sglang-launch", "--print-command", "--python", "py", "--", "--model-path", "M"]) == 0
    )
    words = shlex.split(capsys.readouterr().out)
    assert words[:5] == ["py", "-m", "sglang.launch_server", "--model-path", "M"]
    assert len(_hooks_of(words)) == 3


@pytest.mark.parametrize(
    ("name", "role"),
    [
        ("model.embed_tokens", "embedding"),
        ("language_model.model.embed_tokens", "embedding"),
        ("model.layers.0", "layers"),
        ("model.layers.60", "layers"),
        ("language_model.model.layers.117", "layers"),
        ("logits_processor", "logits"),
        ("language_model.logits_processor", "logits"),
        ("model.layers.3.mlp", None),
        ("model.layers.3.self_attn.attn", None),
        ("vision_tower.encoder.layers.3", None),
        ("model.norm", None),
    ],
)
def test_specs_match_exactly_the_modules_they_observe(name: str, role: str | None) -> None:
    matched = [
        s["config"]["role"]  # type: ignore[index]
        for s in forward_hooks(None)
        if any(fnmatch.fnmatch(name, p) for p in s["target_modules"])  # type: ignore[attr-defined]
    ]
    assert matched == ([] if role is None else [role])


def test_factory_is_inert_without_dump_or_guard(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EAGLE3_CONTRACTS_DUMP", raising=False)
    monkeypatch.delenv("EAGLE3_CONTRACTS_GUARD", raising=False)
    sg_hooks.reset()
    assert sg_hooks.hook_factory({"role": "layers"}) is None
    assert sg_hooks.session() is None


def test_factory_gives_one_session_and_rejects_an_unknown_role(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("EAGLE3_CONTRACTS_GUARD", "warn")
    monkeypatch.setattr(sg_hooks, "sglang_release", lambda: "0.5.23")
    sg_hooks.reset()
    try:
        layer = sg_hooks.hook_factory({"role": "layers", "draft_path": None})
        logits = sg_hooks.hook_factory({"role": "logits", "draft_path": None})
        session = sg_hooks.session()
        assert session is not None
        assert layer == session.on_layer and logits == session.on_logits
        with pytest.raises(Exception, match="role must be one of"):
            sg_hooks.hook_factory({"role": "norm"})
    finally:
        sg_hooks.reset()


def test_stream_of_each_layer_output_form() -> None:
    h, r = torch.randn(3, 4), torch.randn(3, 4)
    assert torch.equal(sg_hooks.stream_of(h), h)  # type: ignore[arg-type]
    assert torch.equal(sg_hooks.stream_of((h, r)), h + r)  # type: ignore[arg-type]
    assert torch.equal(sg_hooks.stream_of((h, None)), h)  # type: ignore[arg-type]
    assert sg_hooks.stream_of((h, torch.randn(3, 5))) is None
    assert sg_hooks.stream_of("x") is None

    class PlainAdd:
        pass

    v = torch.randn(3, 4)
    pending = SimpleNamespace(value=v, update=PlainAdd(), owed=None)
    batch = SimpleNamespace(residual_stream=SimpleNamespace(residual=r, pending=pending))
    assert torch.equal(sg_hooks.stream_of(h, (None, h, batch)), r + v)  # type: ignore[arg-type]
    owed = SimpleNamespace(
        residual_stream=SimpleNamespace(
            residual=r, pending=SimpleNamespace(value=v, update=PlainAdd(), owed=object())
        )
    )
    assert sg_hooks.stream_of(h, (owed,)) is None
    settled = SimpleNamespace(residual_stream=SimpleNamespace(residual=r, pending=None))
    assert torch.equal(sg_hooks.stream_of(h, (settled,)), r)  # type: ignore[arg-type]


def test_a_hub_id_draft_is_read_from_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The hooks read the stamp from the cached snapshot of a Hub-id drafter (offline)."""
    from tests.hub._cache import DRAFT, add_repo, config_bytes

    snapshot = add_repo(tmp_path / "hub", "org/draft", {"config.json": config_bytes(DRAFT)})
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    argv = ["sglang-launch", "--print-command", "--python", "py", "--", "--model-path", "M"]
    assert main([*argv, "--speculative-draft-model-path", "org/draft"]) == 0
    hooks = _hooks_of(shlex.split(capsys.readouterr().out))
    assert {h["config"]["draft_path"] for h in hooks} == {str(snapshot)}


def test_a_hub_id_draft_missing_from_the_cache_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    argv = ["sglang-launch", "--print-command", "--", "--model-path", "M"]
    assert main([*argv, "--speculative-draft-model-path", "org/missing"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "org/missing" in err and "HF_HUB_OFFLINE" in err


@pytest.mark.parametrize(
    ("kind", "needle"), [("fifo", "FIFO"), ("dev-zero", "character device"), ("deep", "deeper")]
)
def test_an_unreadable_drafter_config_is_refused_not_read(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    kind: str,
    needle: str,
) -> None:
    """The drafter's config.json is read bounded: a FIFO would block forever, /dev/zero read
    until memory runs out; each is one line, exit 2, and SGLang is not started."""
    import os

    from eagle3_contracts.cli import sglang_launch

    launched: list[list[str]] = []
    monkeypatch.setattr(sglang_launch.os, "execv", lambda path, argv: launched.append(argv))
    monkeypatch.setattr(sglang_launch, "_check_sglang", lambda python: None)
    monkeypatch.setenv("EAGLE3_CONTRACTS_GUARD", "strict")
    draft = tmp_path / "draft"
    draft.mkdir()
    config = draft / "config.json"
    if kind == "fifo":
        os.mkfifo(config)
    elif kind == "dev-zero":
        config.symlink_to("/dev/zero")
    else:
        config.write_text("[" * 5000 + "]" * 5000)
    argv = ["--model-path", "M", "--speculative-draft-model-path", str(draft)]
    assert main(["sglang-launch", "--python", "py", "--", *argv]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert needle in line and str(config) in line
    assert not launched
