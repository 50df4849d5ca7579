"""The seed's story with numbers: what its wiring error costs on the tiny trained fixture.

The fixture drafter was trained on the outputs of layers 2, 6, 9 of a 12-layer target. The
seed's serving stack inserted the embedding and fed the rest one layer early: ``[-1, 1, 5]``.
``run_story`` measures both wirings offline on the same seeded prompts and, where vLLM is
installed, serves both with vLLM (ids ``[3, 7, 10]`` and ``[0, 2, 6]`` as vLLM 0.32.0 reads
them) and reads its acceptance counters.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from eagle3_contracts.acceptance.fixture import DRAFTER, SEED_ERROR, TARGET, TRAINED
from eagle3_contracts.acceptance.wiring import describe

VLLM_IDS = {TRAINED: [3, 7, 10], SEED_ERROR: [0, 2, 6]}
"""The drafter's ids that make vLLM 0.32.0 (runner v1, llama.py) feed each wiring."""
PROMPTS, NEW_TOKENS, K = 8, 48, 4


@dataclass(frozen=True)
class StoryResult:
    lines: tuple[str, ...]
    as_scripted: bool  # the seed's wiring costs acceptance offline (and in vLLM when run)

    def render_text(self) -> str:
        return "\n".join(self.lines)


def run_story(*, with_vllm: bool | None = None) -> StoryResult:
    """Offline always; vLLM when ``with_vllm`` (default: when it is installed)."""
    from eagle3_contracts.acceptance.oracle import accept
    from eagle3_contracts.acceptance.vllm_counters import serve_counters, vllm_installed

    report = accept(
        DRAFTER, TARGET, wirings=[SEED_ERROR], num_prompts=PROMPTS, new_tokens=NEW_TOKENS, k=K
    )
    trained, seed = report.trained_acceptance, report.rows[0]
    assert seed.acceptance is not None and seed.gap is not None
    rate_cost = 1 - seed.acceptance.chain_rate().value / trained.chain_rate().value
    lines = [
        f"the seed's error on the tiny trained target ({report.target}):",
        f"  trained wiring {describe(TRAINED)}: first-draft agreement {trained.first}, "
        f"accept rate {trained.chain_rate().value:.3f}, accept length "
        f"{trained.accept_length().value:.2f} (k={K})",
        f"  seed's wiring {describe(SEED_ERROR)}: first-draft agreement {seed.acceptance.first}, "
        f"accept rate {seed.acceptance.chain_rate().value:.3f}, accept length "
        f"{seed.acceptance.accept_length().value:.2f}",
        f"  offline cost: {rate_cost:.0%} of the trained accept rate, {seed.relative_cost:.0%} "
        f"of its first-draft agreement (paired gap {seed.gap})",
    ]
    ok = seed.verdict == "COSTS"
    run_vllm = vllm_installed() if with_vllm is None else with_vllm
    if not run_vllm:
        lines.append("  vLLM: not installed here (offline figures only)")
        return StoryResult(tuple(lines), ok)
    with tempfile.TemporaryDirectory() as tmp:
        rates = {}
        for wiring, ids in VLLM_IDS.items():
            draft = Path(tmp) / "draft"
            shutil.rmtree(draft, ignore_errors=True)
            shutil.copytree(DRAFTER, draft)
            config = json.loads((draft / "config.json").read_text())
            config["eagle_config"]["eagle_aux_hidden_state_layer_ids"] = ids
            (draft / "config.json").write_text(json.dumps(config))
            try:
                served = serve_counters(
                    TARGET, draft, prompts=PROMPTS, new_tokens=NEW_TOKENS, k=K, timeout=600
                )
            except RuntimeError as exc:  # the engine's failure is reported, not a crash
                lines.append(f"  vLLM with ids {ids}: not measured: {exc}")
                return StoryResult(tuple(lines), ok)
            rates[wiring] = served.accept_rate
            lines.append(
                f"  vLLM with ids {ids} (feeds {describe(wiring)}): accept rate "
                f"{served.accept_rate:.3f} (offline serving walk "
                f"{report_rate(report, wiring):.3f}); guard {served.verdict}"
            )
    ok = ok and rates[SEED_ERROR] < rates[TRAINED]
    return StoryResult(tuple(lines), ok)


def report_rate(report: object, wiring: tuple[int, ...]) -> float:
    from eagle3_contracts.acceptance.report import AcceptReport

    assert isinstance(report, AcceptReport)
    if wiring == report.trained_acceptance.wiring:
        return report.trained_acceptance.chain_rate(served=True).value
    acc = next(r.acceptance for r in report.rows if r.acceptance and r.acceptance.wiring == wiring)
    return acc.chain_rate(served=True).value
