"""The guards on drafters beyond EAGLE-3 (DFlash, DFlash2, Domino, DSpark, EAGLE-3.1, P-EAGLE,
Nemotron-3.5 drafts with both encodings), offline: the SGLang hooks through their factory on a
stand-in model runner (SGLang 0.5.23 hands a DFlash drafter the target's aux states through the
logits processor as it does EAGLE-3's: ``models/llama.py:619-631, 943-953``), the vLLM plugin's
engine-start line. The guard says the method it detected, agrees with ``check`` row for row
(same simulation, claim and proven fix), names a silent fallback guess that differs from the
trained taps, and names a drafter the release cannot load."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st
from torch import nn

from eagle3_contracts.config.check import CheckReport, CheckRow, check_drafter
from eagle3_contracts.config.readers import read_target_config
from eagle3_contracts.contract import CaptureContract
from eagle3_contracts.conventions import methods
from eagle3_contracts.conventions.predict import predict_feed
from eagle3_contracts.integrations._guard import start as guard_start
from eagle3_contracts.integrations._guard.installed import Answering
from eagle3_contracts.integrations._guard.verdict import WiringMismatch
from eagle3_contracts.integrations.sglang import forward_hooks
from eagle3_contracts.integrations.sglang import hooks as sg_hooks
from eagle3_contracts.stamp import Stamp, write_stamp
from eagle3_contracts.testing.strategies import METHOD_NAMES, method_configs
from tests.integrations._hooks import armed_hooks, lines

SG = "sglang==0.5.23"
DATA = Path(__file__).parents[1] / "conventions" / "data" / "methods"


def _load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((DATA / name).read_text())
    return data


class _Config(dict[str, Any]):
    """A config as an engine loaded it (``hf_config``): attributes and ``to_dict``."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def to_dict(self) -> dict[str, Any]:
        return dict(self)


class _Algorithm:
    """SGLang 0.5.23 ``SpeculativeAlgorithm``'s two questions (``spec_info.py:111-127``)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def is_eagle3(self) -> bool:
        return self.name == "EAGLE3"

    def is_dflash_family(self) -> bool:
        return self.name in ("DFLASH", "DSPARK")


def _algorithm(draft: dict[str, Any]) -> str:
    method = methods.detect(draft)
    return "DSPARK" if method is methods.DSPARK else "DFLASH" if method.block else "EAGLE3"


@pytest.fixture
def hooks_env(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    yield from armed_hooks(monkeypatch, caplog, "warn")


def _lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return lines(caplog)


def _drafter(
    directory: Path, config: dict[str, Any], trained: tuple[int, ...] | None, target: dict[str, Any]
) -> str:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.json").write_text(json.dumps(config))
    if trained is not None:
        sizes = read_target_config(target)
        contract = CaptureContract(trained, sizes.num_layers, sizes.hidden_size, "ascending")
        write_stamp(directory, Stamp(contract, trained_with="specforge"))
    return str(directory)


def _register(draft: str, config: dict[str, Any], target: dict[str, Any]) -> sg_hooks.Session:
    """What SGLang's ``finalize_cuda_graph_capture(model_runner)`` does: one factory call per
    spec, the target's model runner in the caller's locals."""
    model_runner = SimpleNamespace(  # noqa: F841 (found by find_model_runner in this frame)
        model=nn.Module(),
        model_config=SimpleNamespace(hf_config=_Config(target)),
        spec_algorithm=_Algorithm(_algorithm(config)),
        is_draft_worker=False,
        pp_group=SimpleNamespace(world_size=1),
        prefill_cuda_graph_runner=None,
    )
    for spec in forward_hooks(draft):
        sg_hooks.hook_factory(spec["config"])
    session = sg_hooks.session()
    assert session is not None
    return session


def _prefill(session: sg_hooks.Session, fed: tuple[int, ...], target: dict[str, Any]) -> None:
    """The first prefill: the embedding and every layer recorded, the drafter fed ``fed``."""
    n, h, rows = target["num_hidden_layers"], target["hidden_size"], 4
    batch = SimpleNamespace(
        forward_mode=SimpleNamespace(is_extend=lambda: True, is_target_verify=lambda: False)
    )
    gen = torch.Generator().manual_seed(0)
    stream = torch.randn(rows, h, generator=gen)
    states = {-1: stream}
    session.on_embedding(nn.Identity(), (), stream)
    for i in range(n):
        stream = stream + torch.randn(rows, h, generator=gen)
        states[i] = stream
        session.on_layer(nn.Identity(), (torch.arange(rows), stream, batch), stream)
    aux = torch.cat([states[i] for i in fed], dim=-1)
    logits = nn.Identity()
    logits.config = _Config(target)  # type: ignore[assignment]
    try:
        session.on_logits(logits, (torch.arange(rows), aux, None, batch, [aux]), None)
    except WiringMismatch:  # only a strict guard raises; these are warn
        raise AssertionError("a warn guard raised") from None


def _check(draft: str, target: dict[str, Any], tmp: Path) -> CheckReport:
    path = tmp / "target.json"
    path.write_text(json.dumps(target))
    return check_drafter(draft, target=str(path), serve_with=(SG,), environ={})


def _fix(row: CheckRow) -> str:
    """Check's fix for ``row``: the ids and field, else the reason no ids fix it in full."""
    return row.fix_label() if row.fix_native_ids is not None else row.fix


# -- published configs ----------------------------------------------------------------------

PUBLISHED = [
    ("specforge-qwen3-8b-dflash.json", "qwen3-8b.json", methods.DFLASH),
    ("specforge-qwen3-8b-domino.json", "qwen3-8b.json", methods.DOMINO),
    ("specforge-qwen3-8b-dspark.json", "qwen3-8b.json", methods.DSPARK),
    ("specforge-qwen3-8b-peagle.json", "qwen3-8b.json", methods.PEAGLE),
    ("specforge-qwen3-30b-a3b-eagle3.1.json", "qwen3-30b-a3b.json", methods.EAGLE31),
    ("specforge-longcat-flash-dflash.json", "longcat-flash.json", methods.DFLASH),
    (
        "nvidia-nemotron-3-nano-nvfp4-dflash.json",
        "nemotron-3-nano-30b-a3b.json",
        methods.NEMOTRON35,
    ),
]


@pytest.mark.parametrize(
    ("file", "target_file", "method"), PUBLISHED, ids=[p[0] for p in PUBLISHED]
)
def test_published_drafters_the_hooks_say_the_method_and_what_check_proves(
    hooks_env: None,
    caplog: pytest.LogCaptureFixture,
    tmp_path: Path,
    file: str,
    target_file: str,
    method: methods.Method,
) -> None:
    config, target = _load(file), _load(f"targets/{target_file}")
    taps = methods.trained_taps(config, read_target_config(target).num_layers)
    trained = taps.canonical if taps is not None else None
    draft = _drafter(tmp_path / "draft", config, trained, target)
    session = _register(draft, config, target)
    assert session.active, _lines(caplog)
    lines = _lines(caplog)
    (armed,) = [line for line in lines if "armed:" in line]
    assert f"the drafter's input (a {method.label} drafter)" in armed
    report = _check(draft, target, tmp_path)
    (row,) = report.rows
    start = [line for line in lines if "MISMATCH predicted at start-up" in line]
    if row.ok or row.unknown:
        assert start == []
    else:  # the same findings and the same fix as check's row
        (line,) = start
        assert f"for a {method.label} drafter" in line
        assert all(f.message in line for f in row.findings)
        assert line.endswith(f"fix: {_fix(row)}")


def test_a_drafter_the_release_cannot_load_is_named_at_engine_start(
    hooks_env: None, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    config, target = _load("specforge-qwen3-8b-peagle.json"), _load("targets/qwen3-8b.json")
    draft = _drafter(tmp_path / "draft", config, (1, 17, 32), target)
    _register(draft, config, target)
    (line,) = [x for x in _lines(caplog) if "MISMATCH predicted at start-up" in x]
    assert "for a P-EAGLE drafter" in line
    assert "sglang==0.5.23 cannot load a P-EAGLE drafter" in line
    assert "PEagleDraftModel" in line  # the architecture no EntryClass registers


def test_a_fallback_guess_other_than_the_trained_taps_is_named_and_judged(
    hooks_env: None, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    """SpecForge's DFlash config names no taps: SGLang 0.5.23 guesses
    ``build_target_layer_ids(L, draft layers)`` (dflash_utils.py:348-385, 568-571) silently.
    Trained one layer later than that guess, the guard names the guess at start and judges the
    first prefill MISMATCH with check's fix."""
    config, target = _load("specforge-qwen3-8b-dflash.json"), _load("targets/qwen3-8b.json")
    target = {**target, "hidden_size": 16}  # the recorded streams stay small
    config = {**config, "target_hidden_size": 16}
    n = target["num_hidden_layers"]
    guess = tuple(methods.build_target_layer_ids(n, config["num_hidden_layers"]))
    trained = tuple(g + 1 for g in guess)
    draft = _drafter(tmp_path / "draft", config, trained, target)
    session = _register(draft, config, target)
    (line,) = [x for x in _lines(caplog) if "MISMATCH predicted at start-up" in x]
    assert (
        f"fed its fallback guess (no target_layer_ids: SGLang guesses build_target_layer_ids(L={n}"
        in line
    )
    (row,) = _check(draft, target, tmp_path).rows
    assert not row.ok and line.endswith(f"fix: {_fix(row)}")
    fed = predict_feed(SG, config, target).canonical
    assert fed == guess
    _prefill(session, fed, target)
    assert session.verdict is not None and session.verdict.status == "mismatch"
    assert session.verdict.fed == guess
    assert session.verdict.line.endswith(f"fix: {_fix(row)}")


# -- every method, generated ----------------------------------------------------------------


@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    config=method_configs(
        st.sampled_from(METHOD_NAMES), num_target_layers=st.integers(4, 12), hidden_size=st.just(8)
    ),
    shift=st.sampled_from((0, 1)),
)
def test_the_guard_agrees_with_check_for_every_method(
    hooks_env: None,
    caplog: pytest.LogCaptureFixture,
    tmp_path_factory: pytest.TempPathFactory,
    config: dict[str, Any],
    shift: int,
) -> None:
    """For generated drafters of every method: the first prefill fed what the release feeds
    (``predict_feed``) is OK where check's row is OK and MISMATCH with check's fix where the
    trained taps (the stamp) are one layer off; both name the same method."""
    n = int(config.get("num_target_layers", 8))
    target = {
        "architectures": ["Qwen3ForCausalLM"],
        "model_type": "qwen3",
        "num_hidden_layers": n,
        "hidden_size": 8,
    }
    feed = predict_feed(SG, config, target)
    event(f"{methods.detect(config).name}, shift {shift}")
    assume(feed.kind == "segments" and feed.crash is None and feed.canonical)
    trained = tuple(i + shift for i in feed.canonical)
    assume(all(0 <= i < n for i in trained))
    sg_hooks.reset()
    caplog.clear()
    tmp = tmp_path_factory.mktemp("method")
    draft = _drafter(tmp / "draft", config, trained, target)
    session = _register(draft, config, target)
    assert session.active
    (row,) = _check(draft, target, tmp).rows
    assume(not row.unknown)
    _prefill(session, feed.canonical, target)
    verdict = session.verdict
    assert verdict is not None and verdict.fed == feed.canonical
    assert verdict.expected == trained
    start = [x for x in _lines(caplog) if "MISMATCH predicted at start-up" in x]
    if row.ok:
        assert verdict.status == "ok" and start == [], (verdict.line, start)
        return
    # what check proves is said before any request (flags and crashes the prefill cannot see
    # included); layers fed other than trained are the prefill's MISMATCH, with check's fix
    assert len(start) == 1 and start[0].endswith(f"fix: {_fix(row)}")
    if shift:
        assert verdict.status == "mismatch", verdict.line
        assert verdict.line.endswith(f"fix: {_fix(row)}")


# -- the vLLM plugin ------------------------------------------------------------------------


def _vllm_runner(method: str, draft: dict[str, Any], target: dict[str, Any]) -> Any:
    from tests.integrations.vllm.test_session import Drafter, Runner, Target

    runner: Any = Runner(Target(), Drafter())
    runner.vllm_config = SimpleNamespace(
        parallel_config=SimpleNamespace(
            tensor_parallel_size=1, pipeline_parallel_size=1, use_sequence_parallel_moe=False
        )
    )
    runner.speculative_config = SimpleNamespace(
        method=method, draft_model_config=SimpleNamespace(hf_config=_Config(draft))
    )
    runner.speculator = SimpleNamespace(model=runner.drafter)
    runner.model_config = SimpleNamespace(hf_config=_Config(target))
    runner.get_model = lambda: runner.target
    return runner


@pytest.fixture
def vllm_033(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys
    from types import ModuleType

    module = ModuleType("vllm")
    module.__version__ = "0.33.0"  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "vllm", module)
    monkeypatch.setattr(guard_start, "answering_release", lambda fw, v: Answering(f"{fw}=={v}", ""))


def test_the_vllm_plugin_says_check_s_verdict_for_an_eagle31_drafter_at_start(
    vllm_033: None, tmp_path: Path
) -> None:
    """An EAGLE-3.1 drafter (EAGLE-3 ids plus norm flags) runs under vLLM's eagle3 method: the
    plugin arms, says the method, and says check's start-up verdict with check's fix."""
    from eagle3_contracts.integrations._guard.settings import Settings
    from eagle3_contracts.integrations.vllm.engine import attach
    from tests.integrations.vllm.test_session import Log

    target = {
        "architectures": ["Qwen3ForCausalLM"],
        "model_type": "qwen3",
        "num_hidden_layers": 8,
        "hidden_size": 16,
    }
    config = {
        "architectures": ["LlamaForCausalLMEagle3"],
        "hidden_size": 16,
        "eagle_config": {"eagle_aux_hidden_state_layer_ids": [0, 1, 2]},
        "fc_norm": True,
    }
    assert methods.detect(config) is methods.EAGLE31
    folder = Path(_drafter(tmp_path / "draft", config, (1, 2, 3), target))
    stamped = json.loads((folder / "config.json").read_text())
    log = Log()
    session = attach(_vllm_runner("eagle3", stamped, target), Settings(None, "warn"), log, "v2")
    assert session is not None
    start = [line for _, line in log.lines if "MISMATCH predicted at start-up for a" in line]
    report = check_drafter(stamped, target=target, serve_with=("vllm==0.33.0:v2",), environ={})
    (row,) = report.rows
    assert not row.ok and row.fix_native_ids is not None  # other layers fed; ids fix it
    assert len(start) == 1 and "for a EAGLE-3.1 drafter" in start[0]
    assert start[0].endswith(f"fix: {_fix(row)}")


def test_the_vllm_plugin_names_the_method_it_does_not_observe(
    vllm_033: None, tmp_path: Path
) -> None:
    from eagle3_contracts.integrations._guard.settings import Settings
    from eagle3_contracts.integrations.vllm.engine import attach
    from tests.integrations.vllm.test_session import Log

    config, target = _load("specforge-qwen3-8b-domino.json"), _load("targets/qwen3-8b.json")
    log = Log()
    runner = _vllm_runner("dflash", config, target)
    assert attach(runner, Settings(None, "warn"), log, "v2") is None
    ((_, line),) = log.lines
    assert "not applicable: speculative method 'dflash', not an EAGLE-3 drafter" in line
    assert "(a Domino drafter, checked by `check`)" in line
