"""Real published drafter configs (``data/real_drafters.json``, provenance per case): the verdict
of every engine row, and every printed fix re-checked as ok.

The expected verdicts are the released code's behaviour read in the wheels (the facts sheet in
the released model files and the registry sources), keyed by the release each unversioned name stands
for (sglang==0.5.23, vllm==0.33.0 runner V2) and by pinned releases.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from eagle3_contracts.config.check import check_drafter

DATA = json.loads((Path(__file__).parent / "data" / "real_drafters.json").read_text())
CASES = {c["name"]: c for c in DATA["cases"]}

# case -> (canonical trained on, {system: verdict})
EXPECTED: dict[str, tuple[tuple[int, ...], dict[str, str]]] = {
    "specforge-kimi-k2.5": ((1, 29, 57), {"sglang": "ok", "vllm": "ok", "sglang==0.5.14": "ok"}),
    # V1 reads the nested [1, 29, 57] as boundaries: one layer early; V2 (the GPU default)
    # ignores it and its model default (2, 30, 58) is exactly the trained layers
    "specforge-deepseek-v3": (
        (1, 29, 57),
        {"sglang": "ok", "vllm": "ok", "vllm==0.33.0:v1": "shifted -1"},
    ),
    # vllm 0.22.0 picks V1 for a MoE target
    "specforge-qwen3-235b": (
        (1, 46, 90),
        {"sglang": "ok", "vllm": "ok", "vllm==0.22.0": "shifted -1"},
    ),
    "specforge-qwen3-vl-8b": ((1, 17, 32), {"sglang": "ok", "vllm": "ok", "sglang==0.5.14": "ok"}),
    "specforge-gemma3-27b": (
        (1, 29, 61),
        {"sglang": "wrong state", "vllm": "unsupported", "sglang==0.5.14": "ok"},
    ),
    # its architectures GptOssForCausalLMEagle3 name no EAGLE-3 drafter class in either engine:
    # sglang 0.5.23 falls back to TransformersForCausalLM (models/registry.py:90), which has no
    # hot_token_id (speculative/eagle_worker_v2.py:366); vllm 0.32.0/0.33.0 keep the name
    # (transformers_utils/configs/eagle.py) and register no such class (models/registry.py)
    "specforge-gpt-oss-20b": (
        (1, 11, 21),
        {
            "sglang": "crashes (unloadable-drafter)",
            "vllm": "crashes (unloadable-drafter)",
            "vllm==0.32.0:v1": "crashes (unloadable-drafter)",
        },
    ),
    "specforge-llama3-70b": ((1, 39, 76), {"sglang": "ok", "vllm": "ok"}),
    "specforge-longcat-flash": ((1, 13, 24), {"sglang": "ok", "vllm": "unsupported"}),
    "specforge-qwen3-omni": ((), {"sglang": "unsupported", "vllm": "unsupported"}),
    "sglang-llama-nested-2-16-29": (
        (2, 16, 29),
        {
            "sglang": "ok",
            "sglang==0.5.12": "ok",
            "vllm": "shifted -1",
            "vllm==0.33.0:v1": "shifted -1",
        },
    ),
    "nvidia-gpt-oss-120b-eagle3-v2-no-aux": ((), {"sglang": "ok", "vllm": "ok"}),
    "speculators-qwen3-235b-top-level": ((1, 46, 90), {"sglang": "ok", "vllm": "shifted -1"}),
}


def _check(case: dict[str, Any], systems: tuple[str, ...], draft: dict[str, Any] | None = None):
    return check_drafter(
        draft if draft is not None else case["draft"],
        target=case["target"],
        trained_with=case["trained_with"],
        serve_with=systems,
    )


def test_every_case_has_provenance_and_an_expectation() -> None:
    assert set(CASES) == set(EXPECTED)
    for case in CASES.values():
        assert case["draft_source"] and case["target_source"] and case["why"]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_verdicts_per_release(name: str) -> None:
    case = CASES[name]
    trained, verdicts = EXPECTED[name]
    report = _check(case, tuple(verdicts))
    assert report.readings[0][1].layer_ids == trained
    got = {row.system: row.verdict for row in report.rows}
    assert got == verdicts
    for row in report.rows:  # every engine row says what it answered for
        assert row.plan.release is not None and row.plan.model_file


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_printed_fix_rechecks_as_ok(name: str) -> None:
    """Apply each printed fix where that release reads ids; the row is then ok."""
    case = CASES[name]
    report = _check(case, tuple(EXPECTED[name][1]))
    for row in report.rows:
        if row.fix_native_ids is None:
            continue
        fixed = copy.deepcopy(case["draft"])
        head, _, key = row.plan.read_path.rpartition(".")
        (fixed.setdefault(head, {}) if head else fixed)[key] = list(row.fix_native_ids)
        again = check_drafter(
            fixed,
            target=case["target"],
            trained_with=case["trained_with"],
            serve_with=(row.system,),
        )
        # the trained reading is of the original config (the checkpoint does not change)
        assert again.readings[0][1].layer_ids == report.readings[0][1].layer_ids or (
            case["trained_with"].startswith("sglang")
        )
        if case["trained_with"].startswith("sglang"):
            continue  # an engine-trained drafter's ids are its training and its serving at once
        assert again.rows[0].ok, (row.system, row.fix_label(), again.render_text())


def test_before_this_issue_the_checker_was_confidently_wrong() -> None:
    """The figures of the release-truth audit: the old checker said shifted -1 for the Kimi-K2.5
    SpecForge drafter on sglang 0.5.23 and printed the 'fix' [3, 31, 59], which would have
    broken a deployment that is correct today."""
    case = CASES["specforge-kimi-k2.5"]
    fixed = copy.deepcopy(case["draft"])
    fixed["eagle_config"]["eagle_aux_hidden_state_layer_ids"] = [3, 31, 59]
    report = check_drafter(
        case["draft"],
        target=case["target"],
        trained_with=case["trained_with"],
        serve_with=("sglang==0.5.23",),
        served_configs=(fixed,),
    )
    assert [r.verdict for r in report.rows] == ["ok", "shifted +1"]
