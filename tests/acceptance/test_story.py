"""The seed's story with numbers (the end of ``demo``), offline."""

from __future__ import annotations

from eagle3_contracts.acceptance.story import run_story


def test_the_seeds_wiring_costs_acceptance_offline() -> None:
    story = run_story(with_vllm=False)
    text = story.render_text()
    assert story.as_scripted, text
    assert "trained wiring [2, 6, 9]: first-draft agreement" in text
    assert "seed's wiring [-1, 1, 5]: first-draft agreement" in text
    assert "offline cost: " in text and "vLLM: not installed here" in text
