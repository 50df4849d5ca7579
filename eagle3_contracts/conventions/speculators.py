"""The speculators format (``vllm-project/speculators``)."""

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

SPECULATORS = Convention(
    name="speculators",
    system="speculators (vllm-project/speculators)",
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
        "Moving a SpecForge list such as [1, 46, 90] unchanged to the top level makes it read "
        "one layer early.",
    ),
    sources=(
        "vllm-project/speculators src/speculators/models/utils.py resolve_target_layer_ids "
        "(0.9.0 wheel)",
        "vllm-project/speculators#279 (batch > 1 gives different states)",
    ),
)

ENTRIES = (SPECULATORS,)
