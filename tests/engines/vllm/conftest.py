"""Session fixtures of the vLLM engine suite: the plugin's dump directory, tiny targets.

The plugin reads its settings once per process, when vLLM first loads its general plugins
(at the first engine), so the dump directory is set for the whole session, before any engine.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.engines.vllm import harness

GOLDENS = (
    Path(__file__).resolve().parents[3] / "goldens" / "engines" / f"vllm-{harness.VLLM_VERSION}"
)
RECORD_ENV = "EAGLE3_RECORD_ENGINE_GOLDENS"


@pytest.fixture(scope="session")
def engine_work(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Work dir, dump dir (plugin env set), built targets, and the session's observations."""
    work = tmp_path_factory.mktemp("vllm-engine")
    dumps = work / "dumps"
    dumps.mkdir()
    saved = {k: os.environ.get(k) for k in ("EAGLE3_CONTRACTS_DUMP", "EAGLE3_CONTRACTS_GUARD")}
    os.environ["EAGLE3_CONTRACTS_DUMP"] = str(dumps)
    os.environ.pop("EAGLE3_CONTRACTS_GUARD", None)
    harness.env_ready()
    state: dict[str, Any] = {"work": work, "dumps": dumps, "targets": {}, "observed": []}
    yield state
    summary = work / "observations.json"
    summary.write_text(json.dumps(state["observed"], indent=1, sort_keys=True))
    print(f"\nvLLM engine suite: {len(state['observed'])} cases observed; summary {summary}")
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


def target_for(state: dict[str, Any], family: str) -> tuple[Path, dict[str, Any]]:
    """The family's tiny target (built once per session) and its config dict."""
    if family not in state["targets"]:
        directory = harness.build_target(family, state["work"] / f"target-{family}")
        config = json.loads((directory / "config.json").read_text())
        state["targets"][family] = (directory, config)
    return state["targets"][family]


def observe(
    state: dict[str, Any], family: str, draft: dict[str, Any], runner: str = "v1"
) -> dict[str, Any]:
    """Run one case, record it (and its golden when EAGLE3_RECORD_ENGINE_GOLDENS=1), and
    return ``{"observed", "predicted", "record"}``."""
    target_dir, target = target_for(state, family)
    obs = harness.run_case(family, target_dir, draft, state["work"], state["dumps"], runner)
    record = harness.case_record(obs, target)
    if os.environ.get(RECORD_ENV) == "1":
        harness.write_golden(GOLDENS, obs, target)
    observed = harness.observed_outcome(obs)
    try:
        predicted: dict[str, Any] | str = harness.predicted_outcome(draft, target, runner)
    except Exception as exc:  # recorded, then the test fails on it
        predicted = f"{type(exc).__name__}: {exc}"
    state["observed"].append(
        {
            "case": harness.case_name(family, draft, runner),
            "record": record,
            "predicted": predicted,
            "seconds": round(obs.seconds, 2),
        }
    )
    return {"observed": observed, "predicted": predicted, "record": record}


BOUNDARIES = [2, 4, 6]  # top-level ids as vLLM reads them: canonical [1, 3, 5]


@pytest.fixture(scope="session")
def stamped(engine_work: dict[str, Any]) -> dict[str, Path]:
    """The llama target and two stamped drafters fed boundaries [2, 4, 6] (canonical
    [1, 3, 5]): ``right`` trained on [1, 3, 5], ``wrong`` on [2, 4, 5] (SpecForge's reading)."""
    from eagle3_contracts.contract import CaptureContract
    from eagle3_contracts.stamp import Stamp, write_stamp

    def _contract(ids: tuple[int, ...]) -> CaptureContract:
        return CaptureContract(ids, harness.NUM_LAYERS, harness.HIDDEN, "as_listed")

    target, _ = target_for(engine_work, "llama")
    work = engine_work["work"]
    config = harness.drafter_config(BOUNDARIES, None, 3)
    right = harness.build_drafter(config, work / "guard-right")
    write_stamp(right, Stamp(_contract((1, 3, 5)), trained_with="vllm"))
    wrong = harness.build_drafter(config, work / "guard-wrong")
    write_stamp(wrong, Stamp(_contract((2, 4, 5)), trained_with="specforge"))
    return {"target": target, "right": right, "wrong": wrong}


def check_agrees(result: dict[str, Any]) -> None:
    """The observed outcome equals the registry's prediction for the case's release/runner."""
    observed, predicted = result["observed"], result["predicted"]
    record = result["record"]
    assert not isinstance(predicted, str), f"no prediction: {predicted}"
    assert harness.agrees(observed, predicted), (
        f"{record['serve']} observed {observed}, the registry predicts {predicted} for "
        f"draft {record['draft_config']} (model file {record['model_file']})"
    )
