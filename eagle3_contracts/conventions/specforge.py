"""SpecForge (``sgl-project/SpecForge``), the trainer most EAGLE-3 drafters come from."""

from __future__ import annotations

from eagle3_contracts.conventions._entry import (
    Convention,
    Dedup,
    DefaultRule,
    Meaning,
    OffsetRule,
    Role,
    Validation,
)
from eagle3_contracts.conventions.hf import NESTED

SPECFORGE = Convention(
    name="specforge",
    system="SpecForge (HF backend)",
    role=Role.TRAINER,
    meaning=Meaning.OUTPUT,
    offset_rule=OffsetRule.IDENTITY,
    id_paths=(NESTED,),
    default=DefaultRule.OUTPUTS_1_MIDM1_LM4,
    concat_order="as_listed",
    dedup=Dedup.REPEATED,
    validation=Validation.REFUSED,
    exact_count=3,
    embedding_reachable=False,  # resolve_eagle_capture_layers requires non-negative ids
    last_output_reachable=True,  # forward hook on layers[L-1]
    notes=(
        "resolve_eagle_capture_layers: run override, else the nested eagle_config field, else "
        "the default; requires exactly three non-negative ints.",
        "The HF backend hooks layers[idx] (outputs) and concatenates in config list order; "
        "engines concatenate ascending, so an unsorted list trains a layout no engine serves. "
        "'specforge' here means the HF backend: concat order = list order.",
        "The older HF backend used hidden_states[id + 1], so id L-1 got the post-norm state "
        "(use 'hf-hidden-states' to model it).",
        "The SGLang backend passes ids to SGLang: its offset rules apply (use an sglang entry).",
    ),
    sources=(
        "sgl-project/SpecForge resolve_eagle_capture_layers",
        "specforge 0.2.0 wheel algorithms/model_providers.py (nested field, default [1, L//2-1, L-4])",
        "sgl-project/SpecForge configs/*.json (deepseek-v3 [1, 29, 57], kimi-k2 [2, 30, 58])",
        "SpecForge#239 (trainer code paths disagree on ids)",
    ),
)

ENTRIES = (SPECFORGE,)
