"""What each wiring error costs the tiny trained fixture, per commit, in paired margins.

The margins are half the smallest paired gap (trained minus wrong, first-draft agreement)
observed over six seeded prompt sets (``goldens/acceptance/tiny-llama-12.json``, recorded by
``scripts/record_acceptance_golden.py``); exact rates are never asserted, only re-measured
figures within the golden's tolerance. A wiring whose gap was within noise on some seed has no
margin: its gaps stay in the golden (reported), and only its figures are re-measured.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from eagle3_contracts.acceptance.measure import Acceptance, paired_gap

GOLDEN = Path(__file__).resolve().parents[2] / "goldens" / "acceptance" / "tiny-llama-12.json"
RECORD: dict[str, Any] = json.loads(GOLDEN.read_text())
WIRINGS = {n: tuple(e["wiring"]) for n, e in RECORD["wirings"].items()}


@pytest.fixture(scope="module")
def measured() -> dict[tuple[Any, ...], Acceptance]:
    import torch

    from eagle3_contracts.acceptance.drafter import load_drafter
    from eagle3_contracts.acceptance.fixture import DRAFTER, TARGET
    from eagle3_contracts.acceptance.measure import measure
    from eagle3_contracts.acceptance.prompts import greedy_prompts
    from eagle3_contracts.capture.targets import load_target

    torch.set_num_threads(1)
    target = load_target(TARGET)
    drafter, _ = load_drafter(DRAFTER)
    prompts = greedy_prompts(RECORD["prompts"], target.vocab_size, seed=RECORD["seeds"][0])
    return measure(
        target.model,
        drafter,
        prompts,
        list(WIRINGS.values()),
        num_layers=target.num_layers,
        k=RECORD["k"],
        new_tokens=RECORD["new_tokens"],
    )


FIGURES = {"first": 0, "accept_rate": None}  # first-draft agreement; accepted / drafted tokens
ASSERTED = [
    (n, f)
    for n, e in RECORD["wirings"].items()
    for f in FIGURES
    if n != "trained" and e[f]["asserted_margin"] is not None
]


def test_the_seeds_error_costs_at_least_30_percent_of_the_accept_rate() -> None:
    cost = RECORD["wirings"]["seed-error"]["accept_rate"]
    assert ("seed-error", "first") in ASSERTED
    assert cost["pooled_relative_cost"] >= 0.30, cost


@pytest.mark.parametrize(("name", "figure"), ASSERTED)
def test_each_wrong_wiring_costs_its_margin(measured: dict, name: str, figure: str) -> None:
    entry = RECORD["wirings"][name][figure]
    trained, wrong = measured[WIRINGS["trained"]], measured[WIRINGS[name]]
    gap = paired_gap(trained, wrong, position=FIGURES[figure])
    assert gap.value >= entry["asserted_margin"], (name, figure, str(gap), entry["gaps"])


@pytest.mark.parametrize("name", list(WIRINGS))
def test_each_wiring_matches_its_golden_within_tolerance(measured: dict, name: str) -> None:
    golden = RECORD["wirings"][name]["seed0"]
    acc = measured[WIRINGS[name]]
    assert abs(acc.first.value - golden["first"]) <= RECORD["tolerance_first"], (name, golden)
    assert abs(acc.chain_rate().value - golden["chain_rate"]) <= RECORD["tolerance_first"]
