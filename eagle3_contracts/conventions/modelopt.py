"""NVIDIA ModelOpt EAGLE-3 training and export, read in the ``nvidia-modelopt`` 0.47.0 wheel
(``modelopt/torch/speculative/plugins/``)."""

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

_HF = "nvidia-modelopt 0.47.0 modelopt/torch/speculative/plugins/hf_eagle.py"
_MEGATRON = "nvidia-modelopt 0.47.0 modelopt/torch/speculative/plugins/megatron_eagle.py"

MODELOPT = Convention(
    name="modelopt",
    system="NVIDIA ModelOpt 0.47.0",
    role=Role.TRAINER,
    meaning=Meaning.OUTPUT,
    offset_rule=OffsetRule.IDENTITY,
    id_paths=(NESTED,),
    default=DefaultRule.OUTPUTS_CLAMPED,
    concat_order="ascending",
    dedup=Dedup.ONE_HOOK,
    validation=Validation.CRASHES,
    embedding_reachable=False,  # forward hooks on decoder layers only
    last_output_reachable=True,
    notes=(
        "HF plugin: one forward hook per layer_idx of the base model listed in the ids "
        "(outputs, collected in layer order); fc takes len(ids) x hidden inputs. A duplicate, "
        "a negative id or an id >= L gets no hook of its own, so fewer states reach an fc "
        "built for len(ids): training crashes at its first forward.",
        "Only the default is sorted and deduplicated: sorted({1, max(0, L//2-1), max(0, L-4)}). "
        "The Megatron plugin's default is list(set(...)), whose order is not guaranteed sorted.",
        "Export writes nested eagle_config keys eagle_aux_hidden_state_layer_ids, "
        "use_aux_hidden_state, use_input_layernorm_in_first_layer, use_last_layernorm, "
        "use_mtp_layernorm, next_layer_regular, parallel_draft_step, "
        "parallel_draft_heads_num_layers.",
    ),
    assumptions=(
        "online training (hooks on the base model); offline and streaming training take the aux "
        "states from files or a vLLM server (eagle_offline: no hooks), so the exported ids "
        "describe the data only if the capture job used the same ids, as vLLM boundaries "
        f"({_HF}:401-406)",
    ),
    sources=(
        f"{_HF}:58-63 default_eagle_aux_layer_ids (sorted set of the default only)",
        f"{_HF}:381-386 (the default only when the ids are empty)",
        f"{_HF}:401-406 (one forward hook per layer_idx in the ids; none offline)",
        f"{_HF}:218-234 pop_and_gather_aux_hiddens (the last len(ids) states, concatenated)",
        "nvidia-modelopt 0.47.0 modelopt/torch/speculative/plugins/modeling_eagle.py:61 "
        "(fc input len(ids) x hidden_size)",
        f"{_MEGATRON}:647-659 _set_default_aux_hidden_state_layers (list(set(...)))",
        f"{_MEGATRON}:666 (hook: layer_number - 1 in ids)",
        "nvidia-modelopt 0.47.0 modelopt/torch/export/plugins/hf_spec_configs.py",
    ),
    release="0.47.0",
)

ENTRIES = (MODELOPT,)
