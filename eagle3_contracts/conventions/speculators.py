"""The speculators format, read in the ``speculators`` 0.9.0 wheel (``vllm-project/speculators``)."""

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
from eagle3_contracts.conventions.hf import TOP_LEVEL

_WHEEL = "speculators 0.9.0 speculators"

CONVERTER = (
    f"{_WHEEL}/convert/eagle/eagle3_converter.py:110-147 _build_eagle3_speculator_config writes "
    "eagle_aux_hidden_state_layer_ids only from its keyword argument (line 146), never from the "
    "source checkpoint, and norm_before_residual likewise (line 141)"
)
"""What speculators' EAGLE-3 converter does with a source checkpoint's ids."""

SPECULATORS = Convention(
    name="speculators",
    system="speculators 0.9.0 (vllm-project/speculators)",
    role=Role.FORMAT,
    meaning=Meaning.BOUNDARY,
    offset_rule=OffsetRule.BOUNDARY,
    id_paths=(TOP_LEVEL,),
    default=DefaultRule.BOUNDARIES_2_MID_LM3,
    concat_order="ascending",
    dedup=Dedup.REJECTED,
    validation=Validation.REFUSED,
    embedding_reachable=True,
    last_output_reachable=True,  # boundary L, "the final hidden state"
    notes=(
        "speculators_model_type 'eagle3'; top-level eagle_aux_hidden_state_layer_ids read as "
        "boundaries by resolve_target_layer_ids, which accepts 0..L and rejects duplicates.",
        "Boundary L is documented as 'the final hidden state'; it is the pre-norm output when "
        "the states come from vLLM.",
        f"The EAGLE-3 converter never reads the source checkpoint's ids ({CONVERTER}): a "
        "converted SpecForge drafter gets the default boundaries unless the ids were passed to "
        "it. The DFlash converter adds +1 to the source's target_layer_ids and drops the last "
        "layer (convert/dflash/converter.py:110-126).",
        "Moving a SpecForge list such as [1, 46, 90] unchanged to the top level makes it read "
        "one layer early.",
    ),
    sources=(
        f"{_WHEEL}/models/utils.py:99-133 resolve_target_layer_ids (default [2, L//2, L-3] at "
        "line 111; 0..L accepted, duplicates refused at lines 117-129)",
        CONVERTER,
        f"{_WHEEL}/convert/dflash/converter.py:110-126 (DFlash ids + 1)",
        "vllm-project/speculators#279 (batch > 1 gives different states)",
    ),
    release="0.9.0",
)

ENTRIES = (SPECULATORS,)
