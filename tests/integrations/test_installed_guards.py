"""Both guards answer for the engine code installed in their own environment, offline.

A fake installed engine (a temporary site folder on ``sys.path`` with a dist-info and the few
files the probe reads) stands in for the engine the guard runs inside. Where those files are
the released wheel's, the release's table answers; where one is patched, the guard names it at
engine start and searches its fix with the table probed from the installed code (the user's
cache, keyed by the files' hash), as ``check --serve-with <engine>==installed`` does.
"""

from __future__ import annotations

import importlib.machinery
import json
import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest
import torch
from torch import nn

from eagle3_contracts.errors import ContractError
from eagle3_contracts.integrations._guard.installed import answering_release
from eagle3_contracts.integrations._guard.settings import CHECKED_RELEASES, Settings
from eagle3_contracts.integrations._guard.verdict import WiringMismatch, proven_fix_for
from eagle3_contracts.integrations.sglang import forward_hooks
from eagle3_contracts.integrations.sglang import hooks as sg_hooks
from eagle3_contracts.probe.installed import resolve
from tests.integrations._hooks import LOGGER
from tests.integrations.test_method_guards import _Config
from tests.probe.test_installed import PATCH, RELEASED, VERSION, _install
from tests.probe.test_installed import env as env  # the released wheel's table, a site folder

L, H = 4, 8
TARGET = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "num_hidden_layers": L,
    "hidden_size": H,
    "vocab_size": 64,
}
TRAINED = (0, 1, 2)


def _patched() -> dict[str, str]:
    files = dict(RELEASED)
    files["sglang/srt/models/llama.py"] = files["sglang/srt/models/llama.py"].replace(*PATCH)
    return files


def _stamped(directory: Path) -> str:
    from eagle3_contracts.contract import CaptureContract
    from eagle3_contracts.stamp import Stamp, write_stamp

    directory.mkdir(parents=True)
    (directory / "config.json").write_text(json.dumps({"architectures": ["LlamaEagle3"]}))
    contract = CaptureContract(TRAINED, L, H, "as_listed")
    write_stamp(directory, Stamp(contract, trained_with="specforge-hf"))
    return str(directory)


@pytest.fixture
def sglang_guard(
    env: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> Iterator[Path]:
    """A strict guard; the fake release counts as one the hooks were checked against."""
    monkeypatch.setenv("EAGLE3_CONTRACTS_GUARD", "strict")
    monkeypatch.delenv("EAGLE3_CONTRACTS_DUMP", raising=False)
    monkeypatch.delenv("EAGLE3_CONTRACTS_TRAINED_WITH", raising=False)
    monkeypatch.setitem(CHECKED_RELEASES, "sglang", (*CHECKED_RELEASES["sglang"], VERSION))
    caplog.set_level(logging.INFO, logger=LOGGER)
    sg_hooks.reset()
    yield env
    sg_hooks.reset()


def _lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER]


def _first_prefill(draft: str) -> sg_hooks.Session:
    """Register the hooks as a release that registers them outside its model runner does (no
    runner found: every hook armed), then a first prefill fed layers 1, 2, 3 (trained on 0, 1,
    2): one layer late."""
    for spec in forward_hooks(draft):
        sg_hooks.hook_factory(spec["config"])
    session = sg_hooks.session()
    assert session is not None and session.active
    torch.manual_seed(0)
    rows = 5
    batch = SimpleNamespace(
        forward_mode=SimpleNamespace(is_extend=lambda: True, is_target_verify=lambda: False)
    )
    stream = torch.randn(rows, H)
    session.on_embedding(nn.Identity(), (), stream)
    states = []
    for _ in range(L):
        stream = stream + torch.randn(rows, H)
        states.append(stream)
        session.on_layer(nn.Identity(), (torch.arange(rows), stream, batch), stream)
    aux = torch.cat(states[1:], dim=-1)
    logits = nn.Identity()
    logits.config = SimpleNamespace(to_dict=lambda: dict(TARGET))  # type: ignore[assignment]
    with pytest.raises(WiringMismatch, match="MISMATCH"):
        session.on_logits(logits, (torch.arange(rows), aux, None, batch, [aux]), None)
    return session


def test_sglang_hooks_on_the_released_files_answer_as_the_release(
    sglang_guard: Path, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    _install(sglang_guard, RELEASED)
    session = _first_prefill(_stamped(tmp_path / "draft"))
    assert session.answers == f"sglang=={VERSION}"
    assert not any("differ from the released wheel" in line for line in _lines(caplog))
    wheel_fix = proven_fix_for(f"sglang=={VERSION}", {"architectures": ["LlamaEagle3"]}, TARGET)
    assert session.verdict is not None
    assert session.verdict.line.endswith(f"fix: {wheel_fix(TRAINED, L)}")


def test_sglang_hooks_name_a_patched_file_and_fix_with_the_installed_code(
    sglang_guard: Path, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    _install(sglang_guard, _patched())
    session = _first_prefill(_stamped(tmp_path / "draft"))
    installed = resolve("sglang")
    assert installed.differs == ("llama.py",)
    assert session.answers == installed.release == f"sglang=={VERSION}+installed.{installed.digest}"
    start = [line for line in _lines(caplog) if "differ from the released wheel" in line]
    assert start == [f"eagle3-contracts [sglang=={VERSION}]: {installed.note()}"]
    assert "llama.py" in start[0]
    draft = {"architectures": ["LlamaEagle3"]}
    patched_fix = proven_fix_for(installed.release, draft, TARGET)(TRAINED, L)
    wheel_fix = proven_fix_for(f"sglang=={VERSION}", draft, TARGET)(TRAINED, L)
    # the wheel's setter adds one (ids [0, 1, 2] feed outputs 0, 1, 2); the patched one does
    # not, so the same layers need ids one higher
    assert "[1, 2, 3]" in patched_fix and "[0, 1, 2]" in wheel_fix
    assert session.verdict is not None
    assert session.verdict.line.endswith(f"fix: {patched_fix}")
    assert list(Path.cwd().iterdir()) == []  # the probe wrote to the user cache only


def test_a_comparison_that_cannot_be_made_is_a_note_and_the_release_answers(
    env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No engine installed where the guard looks (a source checkout without metadata): the
    release's table answers and the note says why the installed files were not compared."""
    found = answering_release("sglang", "0.5.23")
    assert found.release == "sglang==0.5.23" and not found.patched
    assert "could not be compared with the released wheel" in found.note
    assert "no sglang package is installed" in found.note
    with pytest.raises(ContractError):
        resolve("sglang")  # what the note reports, as check --serve-with reports it


def test_a_running_version_other_than_the_installed_metadata_is_said(env: Path) -> None:
    _install(env, RELEASED)
    found = answering_release("sglang", "0.5.23")
    assert found.release == "sglang==0.5.23"
    assert f"the distribution metadata says {VERSION}, the running engine 0.5.23" in found.note


# -- the vLLM plugin ------------------------------------------------------------------------


def _fake_vllm(monkeypatch: pytest.MonkeyPatch, site: Path, version: str) -> None:
    """The ``vllm`` module ``attach`` reads (its version), installed in ``site``: its files on
    disk (a patched ``llama.py``) and its dist-info, found by ``probe.installed.locate``."""
    models = site / "vllm" / "model_executor" / "models"
    models.mkdir(parents=True)
    (site / "vllm" / "__init__.py").write_text("raise ImportError('never imported')\n")
    (models / "llama.py").write_text("class LlamaForCausalLM:  # a local edit\n    pass\n")
    meta = site / f"vllm-{version}.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text(f"Metadata-Version: 2.1\nName: vllm\nVersion: {version}\n")
    module = ModuleType("vllm")
    module.__version__ = version  # type: ignore[attr-defined]
    spec = importlib.machinery.ModuleSpec("vllm", None, is_package=True)
    spec.submodule_search_locations = [str(site / "vllm")]
    module.__spec__ = spec
    monkeypatch.setitem(sys.modules, "vllm", module)


def test_the_vllm_plugin_names_a_patched_file_and_fixes_with_the_installed_code(
    env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from eagle3_contracts.integrations.vllm.engine import attach
    from tests.integrations.vllm.test_session import Drafter, Log, Runner, Target

    _fake_vllm(monkeypatch, env, "0.33.0")  # a shipped release: the wheel's files are known
    target_cfg = _Config({**TARGET, "num_hidden_layers": 4, "hidden_size": 16})
    draft_cfg = _Config(
        {"architectures": ["LlamaForCausalLMEagle3"], "eagle_aux_hidden_state_layer_ids": [1]}
    )
    runner: Any = Runner(Target(), Drafter())
    runner.vllm_config = SimpleNamespace(
        parallel_config=SimpleNamespace(
            tensor_parallel_size=1, pipeline_parallel_size=1, use_sequence_parallel_moe=False
        )
    )
    runner.speculative_config = SimpleNamespace(
        method="eagle3", draft_model_config=SimpleNamespace(hf_config=draft_cfg)
    )
    runner.speculator = SimpleNamespace(model=runner.drafter)
    runner.model_config = SimpleNamespace(hf_config=target_cfg)
    runner.get_model = lambda: runner.target
    log = Log()
    session = attach(runner, Settings(dump_dir=None, guard="warn"), log, "v2")
    assert session is not None
    installed = resolve("vllm")
    assert installed.differs == ("llama.py",)
    assert session.answers == f"{installed.release}:v2"
    assert session.convention == "vllm==0.33.0:v2"  # what ran is still labelled as released
    said = [line for _, line in log.lines if "differ from the released wheel" in line]
    assert len(said) == 1 and "llama.py" in said[0] and installed.release in said[0]
    want = (0, 1, 2)
    fix = session.fix(want, 4)
    released = proven_fix_for("vllm==0.33.0:v2", draft_cfg.to_dict(), target_cfg.to_dict())
    assert fix == proven_fix_for(session.answers, draft_cfg.to_dict(), target_cfg.to_dict())(
        want, 4
    )
    # the released llama.py is proven to take [1, 2, 3]; the patched one no longer declares the
    # capture, so no id list is proven for it and the fix says why instead of the wheel's ids
    assert released(want, 4) == "eagle_aux_hidden_state_layer_ids = [1, 2, 3]"
    assert fix != released(want, 4) and installed.release in fix


# -- the public API -------------------------------------------------------------------------


def test_the_public_check_drafter_serves_with_the_installed_engine(env: Path) -> None:
    import eagle3_contracts as e3
    from eagle3_contracts.config.check import check_drafter as release_names_only

    _install(env, _patched())
    draft = {"eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, 15, 28]}}
    target = {"architectures": ["LlamaForCausalLM"], "num_hidden_layers": 32, "hidden_size": 64}
    report = e3.check_drafter(
        draft, target=target, trained_with="specforge-hf", serve_with="sglang==installed"
    )
    installed = resolve("sglang")
    assert [row.system for row in report.rows] == [installed.release]
    assert installed.note() in report.notes and "llama.py" in installed.note()
    released = e3.check_drafter(
        draft, target=target, trained_with="specforge-hf", serve_with=[f"sglang=={VERSION}"]
    )
    # the wheel adds one to the ids (loop index i+1 = output i); the patched setter does not
    assert released.rows[0].plan.layer_ids == (1, 15, 28)
    assert report.rows[0].plan.layer_ids == (0, 14, 27) and not report.ok
    with pytest.raises(ContractError) as err:
        release_names_only(draft, target=target, serve_with=("sglang==installed",))
    assert err.value.field == "serve_with" and "eagle3_contracts.check_drafter" in str(err.value)


# -- the pytest plugin ----------------------------------------------------------------------

pytest_plugins = ["pytester"]


def _plugin_repo(pytester: pytest.Pytester, serve: str) -> None:
    folder = pytester.path / "drafters" / "kimi"
    folder.mkdir(parents=True)
    draft = {"eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, 15, 28]}}
    target = {"architectures": ["LlamaForCausalLM"], "num_hidden_layers": 32, "hidden_size": 64}
    (folder / "config.json").write_text(json.dumps(draft))
    (folder / "target.json").write_text(json.dumps(target))
    pytester.makeini(
        "[pytest]\ntestpaths = drafters\neagle3_configs = drafters/*/config.json\n"
        f"eagle3_serve_with = {serve}\neagle3_trained_with = specforge-hf\n"
    )


def test_the_pytest_plugin_serves_with_the_installed_engine(
    env: Path, pytester: pytest.Pytester
) -> None:
    """``eagle3_serve_with = sglang==installed``: the released files pass (the wheel adds one:
    ids [1, 15, 28] feed the trained outputs), the patched setter fails with the installed
    table's fix."""
    _install(env, _patched())
    _plugin_repo(pytester, f"sglang=={VERSION}, sglang==installed")
    result = pytester.runpytest("-p", "no:cacheprovider", "-v")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            f"*serve[[]sglang=={VERSION}[]] PASSED*",
            "*serve[[]sglang==installed[]] FAILED*",
            "*1 layer early*",
            "*eagle_config.eagle_aux_hidden_state_layer_ids = [[]2, 16, 29[]]*",
        ]
    )


def test_the_pytest_plugin_without_the_engine_installed_is_one_usage_error(
    env: Path, pytester: pytest.Pytester
) -> None:
    _plugin_repo(pytester, "vllm==installed")
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*eagle3_serve_with 'vllm==installed'*no vllm package is installed*"]
    )
