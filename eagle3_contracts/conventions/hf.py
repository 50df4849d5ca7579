"""Hugging Face transformers ``output_hidden_states`` indexing (hand-written training loops)."""

from __future__ import annotations

from eagle3_contracts.conventions._entry import (
    Convention,
    Dedup,
    Meaning,
    OffsetRule,
    PostNorm,
    Role,
)

TOP_LEVEL = "eagle_aux_hidden_state_layer_ids"  # the one definition of the field name
NESTED = f"eagle_config.{TOP_LEVEL}"
HF_HIDDEN_STATES = Convention(
    name="hf-hidden-states",
    system="Hugging Face hidden_states indexing",
    role=Role.INDEX,
    meaning=Meaning.HF_INDEX,
    offset_rule=OffsetRule.HF_INDEX,
    post_norm_id=PostNorm.LAST_INDEX,
    id_paths=(NESTED, TOP_LEVEL),
    concat_order="as_listed",
    dedup=Dedup.REPEATED,
    embedding_reachable=True,  # hidden_states[0]
    last_output_reachable=False,  # hidden_states[L] is the final norm applied to it
    notes=(
        "hidden_states has L+1 entries: [0] = residual stream entering layer 0, [k] = output of "
        "layer k-1 for k < L, [L] = model.norm(output of layer L-1), which has no canonical id.",
        "A native -1 is Python indexing: hidden_states[-1] is hidden_states[L], the post-norm "
        "state, not the embedding (failure class 4, TorchSpec#87).",
        "A training loop gathering torch.cat([hidden_states[k] for k in ids]) concatenates in "
        "list order.",
        "Ids are taken from wherever the draft config holds them (nested, then top-level).",
    ),
    sources=(
        "huggingface/transformers utils/generic.py check_model_inputs (v4.54+)",
        "huggingface/transformers utils/output_capturing.py (v5); checked on 5.24 with LlamaConfig",
        "TorchSpec#87 (post-norm state used as the last layer)",
    ),
)

ENTRIES = (HF_HIDDEN_STATES,)
