"""Offline: the registry predicts what each SGLang release's own model code was observed to collect.

Every golden under ``goldens/engines/sglang-<release>/`` (recorded by the engine suite,
``tests/engines/sglang``) is held against ``predict_feed`` at model level. No torch, no SGLang,
no network.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.integrations.sglang import engine_goldens as eg

GOLDENS = eg.load()
RELEASES = ("0.5.23",)
"""Releases whose goldens must exist (the newest is recorded in CI; older ones by tox)."""


def _id(item: tuple[Path, dict[str, Any]]) -> str:
    return f"{item[0].parent.name}/{item[0].stem}"


@pytest.mark.parametrize("release", RELEASES)
def test_goldens_recorded(release: str) -> None:
    assert eg.load(release), f"no goldens under goldens/engines/sglang-{release}"


@pytest.mark.parametrize("item", GOLDENS, ids=[_id(g) for g in GOLDENS])
def test_registry_predicts_the_observation(item: tuple[Path, dict[str, Any]]) -> None:
    path, record = item
    problem = eg.unexplained(record)
    assert problem is None, f"{path.name}: {problem}"


def test_each_known_disagreement_is_still_observed() -> None:
    """A registry fix makes its entry explain nothing: then the entry must go."""
    for disagreement in eg.DISAGREEMENTS:
        hits = []
        for _, record in GOLDENS:
            observed = eg.outcome(record["observed"])
            predicted = eg.predicted(record)
            predicted.pop("source")
            if observed != predicted and disagreement.applies(record, observed, predicted):
                hits.append(record)
        assert hits, f"{disagreement.key} explains no golden any more: remove it"


def test_model_level_projection() -> None:
    """fc-width crashes compare by the collected states; other crashes by class; wrong-state
    segments (not the residual stream) are expected to match no layer."""
    from eagle3_contracts.conventions.predict import Feed

    def feed(**kw: Any) -> Feed:
        base: dict[str, Any] = {
            "kind": "segments",
            "canonical": (1, 3),
            "width_states": 3,
            "crash": None,
            "release": "sglang==0.5.23",
            "runner": None,
            "model_file": "llama.py",
            "source": "",
        }
        return Feed(**(base | kw))

    fc = feed(kind="crash", crash="fc-width-mismatch")
    assert eg.model_level(fc) == {"kind": "segments", "canonical": [1, 3], "crash": None}
    emb = feed(kind="crash", crash="embedding-residual-none", canonical=())
    assert eg.model_level(emb) == {
        "kind": "crash",
        "canonical": None,
        "crash": "embedding-residual-none",
    }
    delta = feed(canonical=(-1, 2), state="layer delta without the residual (boundaries >= 1)")
    assert eg.model_level(delta)["canonical"] == [-1, None]
    assert eg.model_level(feed(kind="unknown"))["kind"] == "unknown"
