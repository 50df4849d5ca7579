"""NVIDIA ModelOpt (``NVIDIA/TensorRT-Model-Optimizer``) EAGLE-3 training and export."""

from __future__ import annotations

from eagle3_contracts.conventions._entry import (
    Convention,
    Dedup,
    DefaultRule,
    Meaning,
    OffsetRule,
    Role,
)
from eagle3_contracts.conventions.hf import NESTED

MODELOPT = Convention(
    name="modelopt",
    system="NVIDIA ModelOpt",
    role=Role.TRAINER,
    meaning=Meaning.OUTPUT,
    offset_rule=OffsetRule.IDENTITY,
    id_paths=(NESTED,),
    default=DefaultRule.OUTPUTS_CLAMPED,
    concat_order="ascending",
    dedup=Dedup.SORTED_SET,
    embedding_reachable=False,  # forward hooks on decoder layers only
    last_output_reachable=True,
    notes=(
        "Forward hooks on decoder layers collect outputs (`layer_number - 1 in ids` in the "
        "Megatron plugin), in layer order.",
        "Default [1, max(0, L//2-1), max(0, L-4)], then list(set(...)).",
        "Export writes nested eagle_config keys eagle_aux_hidden_state_layer_ids, "
        "use_aux_hidden_state, use_input_layernorm_in_first_layer, use_last_layernorm, "
        "use_mtp_layernorm, next_layer_regular, parallel_draft_step, "
        "parallel_draft_heads_num_layers.",
    ),
    sources=(
        "NVIDIA/TensorRT-Model-Optimizer modelopt/torch/speculative/plugins/transformers.py "
        "_set_default_aux_hidden_state_layers, _collect_aux_hidden_states_forward_hook",
        "NVIDIA/TensorRT-Model-Optimizer modelopt/torch/speculative/plugins/megatron_eagle.py",
        "NVIDIA/TensorRT-Model-Optimizer modelopt/torch/export/plugins/hf_spec_configs.py",
    ),
)

ENTRIES = (MODELOPT,)
