"""The SGLang dump and guard through the release's own ``--forward-hooks`` registration.

Each case builds a fresh tiny target (the hooks cannot be removed: ``register_forward_hooks``
keeps no handles), registers ``eagle3_contracts.integrations.sglang.forward_hooks`` with the
release's own ``model_executor/hook_manager.register_forward_hooks``, runs one EXTEND forward
with EAGLE-3 capture on and checks that

* what the guard identified from the recorded residual stream equals what the harness
  identified against HF transformers (so the layer hooks record the stream on this release and
  model file);
* with a stamp, the verdict is OK for the trained ids and MISMATCH (with this release's fix)
  for others; ``strict`` raises ``WiringMismatch``;
* the dump reads back with ``read_dump`` and holds the identified ids.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.engines.sglang import harness
from tests.engines.sglang.test_model_conformance import CANNOT_RUN, MODEL_FILES, L

pytestmark = pytest.mark.engine

IDS = (1, 3, 4)  # collected by every model file of every release (no embedding, no L-1)

UNREADABLE: dict[tuple[str, str], str] = {}
"""(release, model file) where the guard says 'cannot observe' instead of judging."""


@pytest.fixture
def hooked_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    from eagle3_contracts.integrations.sglang import hooks

    monkeypatch.setenv("EAGLE3_CONTRACTS_DUMP", str(tmp_path / "dumps"))
    monkeypatch.setenv("EAGLE3_CONTRACTS_GUARD", "warn")
    monkeypatch.delenv("EAGLE3_CONTRACTS_TRAINED_WITH", raising=False)
    hooks.reset()
    yield tmp_path
    hooks.reset()


def _hooked(state: dict[str, Any], model_file: str, draft: Path | None) -> harness.Pair:
    why = CANNOT_RUN.get((state["release"], model_file))
    if why is not None:
        pytest.xfail(f"sglang {state['release']} {model_file} cannot run on CPU here: {why}")
    from sglang.srt.model_executor.hook_manager import register_forward_hooks

    from eagle3_contracts.integrations.sglang import forward_hooks

    pair = harness.build_pair(harness.BY_FILE[model_file], L)
    register_forward_hooks(pair.sglang, forward_hooks(None if draft is None else str(draft)))
    return pair


def _stamped_draft(directory: Path, pair: harness.Pair, trained: tuple[int, ...]) -> Path:
    from eagle3_contracts.contract import CaptureContract
    from eagle3_contracts.stamp import Stamp, write_stamp

    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.json").write_text(
        json.dumps({"architectures": ["LlamaForCausalLMEagle3"]})
    )
    write_stamp(
        directory,
        Stamp(
            CaptureContract(trained, L, harness.HIDDEN, "as_listed"),
            trained_with="specforge-hf",
            target=harness.target_config(pair),
        ),
    )
    return directory


@pytest.mark.parametrize("model_file", MODEL_FILES)
def test_guard_identifies_what_the_model_collected(
    sglang_runtime: dict[str, Any], hooked_env: Path, model_file: str
) -> None:
    from eagle3_contracts.dumps.format import read_dump
    from eagle3_contracts.integrations.sglang import hooks

    pair = _hooked(sglang_runtime, model_file, None)
    observed = harness.observe(pair, IDS)
    session = hooks.session()
    if (sglang_runtime["release"], model_file) in UNREADABLE:
        assert session is not None and session.done
        assert session.verdict is None and session.dump_path is None  # a warning, no verdict
        return
    assert session is not None and session.verdict is not None, "the hooks did not judge"
    assert observed.kind == "segments", observed
    assert session.verdict.fed == observed.canonical, (
        f"guard identified {session.verdict.fed} from the recorded stream, HF says "
        f"{observed.canonical} ({session.verdict.line})"
    )
    assert session.verdict.status == "unjudged"
    if None in observed.canonical:
        assert session.dump_path is None  # a segment that is no layer is not claimed
        return
    assert session.dump_path is not None
    dump = read_dump(session.dump_path)
    assert tuple(dump.layer_ids) == observed.canonical


@pytest.mark.parametrize("mode", ["warn", "strict"])
def test_guard_verdicts_with_a_stamp(
    sglang_runtime: dict[str, Any],
    hooked_env: Path,
    monkeypatch: pytest.MonkeyPatch,
    mode: str,
) -> None:
    from eagle3_contracts.integrations._guard.verdict import WiringMismatch
    from eagle3_contracts.integrations.sglang import hooks

    monkeypatch.setenv("EAGLE3_CONTRACTS_GUARD", mode)
    pair = _hooked(sglang_runtime, "llama.py", None)
    ok_draft = _stamped_draft(hooked_env / "ok", pair, (1, 3, 4))
    bad_draft = _stamped_draft(hooked_env / "bad", pair, (0, 2, 4))
    for draft, status in ((ok_draft, "ok"), (bad_draft, "mismatch")):
        hooks.reset()
        from sglang.srt.model_executor.hook_manager import register_forward_hooks

        from eagle3_contracts.integrations.sglang import forward_hooks

        fresh = harness.build_pair(harness.BY_FILE["llama.py"], L)
        register_forward_hooks(fresh.sglang, forward_hooks(str(draft)))
        if status == "mismatch" and mode == "strict":
            with pytest.raises(WiringMismatch, match="MISMATCH"):
                harness.observe_raising(fresh, (1, 3, 4))
            continue
        harness.observe(fresh, (1, 3, 4))
        session = hooks.session()
        assert session is not None and session.verdict is not None
        assert session.verdict.status == status, session.verdict.line
        if status == "mismatch":
            assert "fix: eagle_config.eagle_aux_hidden_state_layer_ids = [0, 2, 4]" in (
                session.verdict.line
            ), session.verdict.line
