"""A fix never moves the claim, and a printed fix is never the ids already there.

For generated drafters and targets, every accepted training name and every probed serving
release: ``fix`` (what ``fix --write`` writes) followed by ``check`` with identical arguments
says ok, or ``fix`` refuses a drafter ``check`` finds wrong; and no fix ``check`` prints equals
the ids already at the field it names (pipeline partitions included).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eagle3_contracts.config.check import CheckReport, check_drafter
from eagle3_contracts.config.fix import fix_drafter
from eagle3_contracts.config.readers import IDS_FIELD, read_draft_config
from eagle3_contracts.conventions import (
    ALIASES,
    FIXED,
    READING_NAMES,
    RUNNERS,
    TRAINER_DEFAULTS,
    releases,
)
from eagle3_contracts.errors import ConfigError, ContractError

ARCHITECTURES = {
    "llama": "LlamaForCausalLM",
    "deepseek_v3": "DeepseekV3ForCausalLM",
    "qwen3": "Qwen3ForCausalLM",
    "gpt_oss": "GptOssForCausalLM",
    "gemma3_text": "Gemma3ForCausalLM",
}
TRAINED = (*READING_NAMES, *FIXED, *TRAINER_DEFAULTS, *TRAINER_DEFAULTS.values())
SERVED = (
    *(f"{e}=={v}" for e, versions in releases.known_releases().items() for v in versions),
    *(f"vllm=={v}:{r}" for v in releases.known_releases()["vllm"] for r in RUNNERS),
    *ALIASES,
    "sglang",
    "vllm",
    "trtllm",
)
HIDDEN = 16
PATHS = (f"eagle_config.{IDS_FIELD}", IDS_FIELD)


@st.composite
def cases(draw: st.DrawFn) -> tuple[dict, dict, str, tuple[str, ...]]:
    """A target, a drafter holding three distinct ids at one or both fields (or none), a
    training name and one or two serving names."""
    model_type = draw(st.sampled_from(sorted(ARCHITECTURES)))
    n = draw(st.integers(6, 40))
    target = {
        "model_type": model_type,
        "architectures": [ARCHITECTURES[model_type]],
        "num_hidden_layers": n,
        "hidden_size": HIDDEN,
        "vocab_size": 64,
    }
    draft: dict = {
        "architectures": ["LlamaForCausalLMEagle3"],
        "model_type": "llama",
        "hidden_size": HIDDEN,
        "num_hidden_layers": 1,
        "vocab_size": 64,
    }
    for path in draw(st.sampled_from(((), PATHS[:1], PATHS[1:], PATHS))):
        ids = draw(st.lists(st.integers(-1, n), min_size=3, max_size=3, unique=True).map(sorted))
        if "." in path:
            draft["eagle_config"] = {IDS_FIELD: ids}
        else:
            draft[path] = ids
    trained = draw(st.sampled_from(TRAINED))
    served = tuple(draw(st.lists(st.sampled_from(SERVED), min_size=1, max_size=2, unique=True)))
    return target, draft, trained, served


def _no_fix_is_the_ids_already_there(report: CheckReport, draft: dict) -> None:
    config = read_draft_config(draft)
    for row in report.rows:
        if row.fix_native_ids is None:
            assert row.fix_setting() is None
            continue
        assert row.fix_field is not None
        held = config.ids_at(row.fix_field)
        assert held is None or tuple(held) != row.fix_native_ids, (row.system, row.fix)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(cases(), st.sampled_from((None, 2, 4)))
def test_fix_then_check_with_the_same_arguments_is_ok(
    case: tuple[dict, dict, str, tuple[str, ...]], pp_size: int | None
) -> None:
    target, draft, trained, served = case
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "target.json").write_text(json.dumps(target))
        config = folder / "config.json"
        config.write_text(json.dumps(draft, indent=2) + "\n")
        args = {"target": str(folder / "target.json"), "trained_with": trained, "environ": {}}
        try:
            before = check_drafter(str(config), serve_with=served, pp_size=pp_size, **args)
        except (ConfigError, ContractError):
            return  # a drafter this target or name refuses outright: nothing to fix
        _no_fix_is_the_ids_already_there(before, draft)
        if pp_size is not None:
            return  # fix takes no partition: the round trip is checked without one
        try:
            fix = fix_drafter(
                config, target=args["target"], serve_with=served, trained_with=trained
            )
        except (ConfigError, ContractError):
            assert not before.ok  # a refusal is only ever for a drafter check finds wrong
            return
        config.write_text(fix.text)  # what ``fix --write`` writes (the writer's own tests
        after = check_drafter(str(config), serve_with=served, **args)  # cover its atomicity)
        assert after.ok, after.render_text()
        assert after.readings[0][1].layer_ids == before.readings[0][1].layer_ids
        assert bool(fix.edits) == (not before.ok)
