"""The registry holds what the real vLLM 0.32.0 did: every recorded engine observation
(``goldens/engines/vllm-0.32.0/``, written by ``tests/engines/vllm`` with
``EAGLE3_RECORD_ENGINE_GOLDENS=1``) equals ``predict_feed`` for that release and runner.

Offline, in the default suite: the registry cannot drift from the engine's observed behaviour
unless someone re-records with the engine.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from eagle3_contracts.conventions.predict import predict_feed

GOLDENS = Path(__file__).resolve().parents[3] / "goldens" / "engines" / "vllm-0.32.0"
CASES = sorted(GOLDENS.glob("*.json"))
MIN_CASES = 20  # the engine suite observes at least this many distinct cases


def _load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def test_the_engine_goldens_exist() -> None:
    assert len(CASES) >= MIN_CASES, f"{len(CASES)} engine goldens in {GOLDENS}"
    families = {_load(p)["family"] for p in CASES}
    assert {"llama", "qwen2", "qwen3", "mistral", "qwen3_moe"} <= families


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_registry_predicts_the_observed_feed(path: Path) -> None:
    golden = _load(path)
    observed = golden["observed"]
    feed = predict_feed(golden["serve"], golden["draft_config"], golden["target_config"])
    where = f"{path.name}: draft {golden['draft_config']}"
    assert feed.kind == observed["kind"], f"{where}: predicted {feed}, observed {observed}"
    assert feed.crash == observed["crash"], f"{where}: predicted {feed}, observed {observed}"
    if observed["canonical"] is not None:  # the drafter ran far enough to be dumped
        assert list(feed.canonical) == observed["canonical"], (
            f"{where}: predicted {feed}, observed {observed}"
        )
    model_file = (golden.get("model_file") or "").split(":")[0]
    assert feed.model_file == model_file, f"{where}: predicted file {feed.model_file}"
