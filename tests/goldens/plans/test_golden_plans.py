"""Plan goldens: what every registry convention feeds each shipped example drafter
(Kimi-K2.5-, Llama-3.1-8B-, Qwen3-235B-shaped), locked in ``goldens/plans/test_golden_plans/``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from eagle3_contracts import conventions
from eagle3_contracts.config import examples
from eagle3_contracts.testing.golden_cases import plan_record
from eagle3_contracts.testing.goldens import golden_dir

GOLDENS = golden_dir(Path(__file__))


@pytest.mark.parametrize("example", examples.names())
def test_plan_golden(example: str, golden: Any) -> None:
    assert plan_record(example) == golden


# Facts from public sources (docs/conventions facts sheet) the stored goldens must show.
# (example, draft file, system, canonical ids fed in concat order, why)
FACTS: tuple[tuple[str, str, str, list[int], str], ...] = (
    ("kimi-k2.5", "draft.json", "specforge-hf", [2, 30, 58], "HF backend: outputs 2, 30, 58"),
    ("kimi-k2.5", "draft.json", "sglang-legacy", [2, 30, 58], "+1 always (<= 0.5.12)"),
    ("kimi-k2.5", "draft.json", "sglang", [1, 29, 57], "sglang#25454: ids[0] != 1 -> loop idx"),
    ("kimi-k2.5", "draft.json", "vllm", [1, 29, 57], "nested ids ignored: default (2,30,58) b"),
    ("kimi-k2.5", "draft.json", "trtllm", [2, 30, 58], "captures after layer idx"),
    ("llama-3.1-8b", "draft.json", "eagle-reference", [1, 15, 28], "boundaries (2,16,29)"),
    ("llama-3.1-8b", "draft.json", "specforge-hf", [1, 15, 28], "default [1, L//2-1, L-4]"),
    ("qwen3-235b", "draft.json", "specforge-hf", [1, 46, 90], "SpecForge qwen3-235B config"),
    ("qwen3-235b", "draft.json", "sglang", [1, 46, 90], "qwen3_moe.py: +1 always"),
    ("qwen3-235b", "draft-top-level.json", "vllm", [0, 45, 89], "moved unchanged: 1 early"),
)


@pytest.mark.parametrize(
    ("example", "draft", "system", "ids", "why"),
    FACTS,
    ids=[f"{f[0]}-{f[1]}-{f[2]}" for f in FACTS],
)
def test_stored_plan_goldens_show_the_published_behaviour(
    example: str, draft: str, system: str, ids: list[int], why: str
) -> None:
    stored = json.loads((GOLDENS / f"test_plan_golden[{example}].json").read_text())
    (entry,) = [d for d in stored["drafts"] if d["name"] == draft]
    (plan,) = [p for p in entry["plans"] if p["system"] == system]
    assert plan["layer_ids"] == ids, why


def test_every_convention_is_in_every_plan_golden() -> None:
    for example in examples.names():
        stored = json.loads((GOLDENS / f"test_plan_golden[{example}].json").read_text())
        for entry in stored["drafts"]:
            assert [p["system"] for p in entry["plans"]] == list(conventions.names())
