"""The acceptance oracle: what a wiring does to a drafter's acceptance, measured offline.

``accept(draft, target, serve_with=[...])`` runs an EAGLE-3 drafter (vLLM/SGLang/SpecForge
``LlamaForCausalLMEagle3`` checkpoints) on its HF target with the layers it was trained on and
with the layers each release feeds it (the registry's prediction), and reports first-draft
agreement, accept rate, per-position rates and accept length with intervals over prompts.

Modules: ``drafter`` (read a checkpoint, vLLM's forward), ``chain`` (k chained drafts from every
anchor), ``target`` (greedy continuation, fed states), ``prompts`` (streamed prompt files),
``measure`` (the figures, batched), ``wiring`` (trained and served wirings), ``report`` and
``oracle`` (the ``accept`` command), ``observed`` (which wiring explains an observed rate),
``vllm_counters`` (vLLM's own counters), ``fixture`` and ``story``
(the tiny trained fixture and the seed's story).
"""

from __future__ import annotations

from eagle3_contracts.acceptance.drafter import Eagle3Drafter, load_drafter
from eagle3_contracts.acceptance.measure import Acceptance, Rate, measure, paired_gap
from eagle3_contracts.acceptance.oracle import accept
from eagle3_contracts.acceptance.prompts import greedy_prompts, read_prompts
from eagle3_contracts.acceptance.report import AcceptReport
from eagle3_contracts.acceptance.target import FINAL

__all__ = [
    "FINAL",
    "AcceptReport",
    "Acceptance",
    "Eagle3Drafter",
    "Rate",
    "accept",
    "greedy_prompts",
    "load_drafter",
    "measure",
    "paired_gap",
    "read_prompts",
]
