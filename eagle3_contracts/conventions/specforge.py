"""SpecForge (``sgl-project/SpecForge``), the trainer most EAGLE-3 drafters come from.

This entry is SpecForge's removed HF backend (forward hooks on layer outputs, list-order
concatenation), kept under the name ``specforge-hf``. SpecForge 0.2.0, the PyPI release, has only
the SGLang backend: what it trained on is what SGLang 0.5.14 captures for the target's model
file, answered per release by ``conventions.predict.predict_system("specforge==0.2.0", ...)``
(``check --trained-with specforge``).
"""

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
    name="specforge-hf",
    system="SpecForge HF backend (removed; SpecForge 0.2.0 has only the SGLang backend)",
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
        "'specforge-hf' is the HF backend: concat order = list order.",
        "The older HF backend used hidden_states[id + 1], so id L-1 got the post-norm state "
        "(use 'hf-hidden-states' to model it).",
        "The SGLang backend (SpecForge 0.2.0, config/schema.py:54 target_backend: "
        'Literal["sglang"], pinned sglang==0.5.14) hands the ids to SGLang\'s '
        "set_eagle3_layers_to_capture: use check --trained-with specforge==0.2.0.",
    ),
    sources=(
        "sgl-project/SpecForge resolve_eagle_capture_layers",
        "specforge 0.2.0 wheel algorithms/model_providers.py (nested field, default [1, L//2-1, L-4])",
        "sgl-project/SpecForge configs/*.json (deepseek-v3 [1, 29, 57], kimi-k2 [2, 30, 58])",
        "SpecForge#239 (trainer code paths disagree on ids)",
    ),
)

ENTRIES = (SPECFORGE,)
