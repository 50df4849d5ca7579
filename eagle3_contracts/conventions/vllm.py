"""vLLM (``vllm-project/vllm``) serving rules."""

from __future__ import annotations

from typing import Any

from eagle3_contracts.conventions._entry import (
    Convention,
    Dedup,
    DefaultRule,
    Meaning,
    OffsetRule,
    PipelineParallel,
    Role,
)
from eagle3_contracts.conventions.hf import NESTED, TOP_LEVEL

_SOURCES = (
    "vllm-project/vllm vllm/v1/worker/gpu_model_runner.py _get_eagle3_aux_layers_from_config",
    "vllm-project/vllm vllm/model_executor/models/llama.py, deepseek_v2.py (EagleModelMixin, "
    "vllm#36063; boundary L after vllm#46973)",
    "vllm 0.33.0 wheel: _set_aux_hidden_state_layers stores tuple(sorted(set(layers)))",
    "vllm#50170 (nested-only config ignored, accept length 1.036 instead of 2.77)",
    "vllm#36151, vllm#36731 (stage-local indices), vllm#45985, vllm#50514 (aux states across "
    "pipeline stages)",
)

_NOTES = (
    "Ids are boundaries: the mixin records boundary 0 (embedding) before the loop and "
    "boundary idx + 1 after each layer, so 0..L are reachable (L = last output, pre-norm).",
    "tuple(sorted(set(layers))): duplicates are dropped silently, concat is ascending.",
    "Default (2, L//2, L-3) boundaries = canonical (1, L//2-1, L-4).",
    "Pipeline parallel: stage-local indices never matched global ids before vllm#36731; aux "
    "states on earlier stages are dropped by model runner V1 (vllm#45985, open) and carried by "
    "model runner V2 after vllm#50514 (merged 2026-08).",
)

# Facts both vLLM entries share: boundary ids with no offset, the (2, L//2, L-3) default,
# sorted(set(ids)), 0..L reachable, pipeline behaviour depending on the model runner.
_SHARED: dict[str, Any] = dict(
    role=Role.ENGINE,
    meaning=Meaning.BOUNDARY,
    offset_rule=OffsetRule.BOUNDARY,
    default=DefaultRule.BOUNDARIES_2_MID_LM3,
    concat_order="ascending",
    dedup=Dedup.SORTED_SET,
    embedding_reachable=True,
    last_output_reachable=True,
    pipeline_parallel=PipelineParallel.DEPENDS,
)

VLLM = Convention(
    **_SHARED,
    name="vllm",
    system="vLLM (top-level ids only)",
    id_paths=(TOP_LEVEL, "dflash_config.target_layer_ids"),
    notes=(
        "Reads only the top-level eagle_aux_hidden_state_layer_ids: a nested-only eagle_config "
        "is ignored and the default applies silently (vllm#50170).",
        "Without top-level ids it reads dflash_config.target_layer_ids as they are (vllm 0.21.0 "
        "gpu_model_runner.py _get_eagle3_aux_layers_from_config; 0.22.0 added one to them).",
        *_NOTES,
    ),
    sources=_SOURCES,
)

VLLM_NESTED = Convention(
    **_SHARED,
    name="vllm-nested",
    system="vLLM with the nested fallback (vllm#42764; vllm 0.33.0)",
    id_paths=(TOP_LEVEL, NESTED),
    notes=(
        "Reads the top-level field first, then (only if absent) the nested eagle_config one, "
        "both as boundaries, no offset.",
        *_NOTES,
    ),
    sources=(*_SOURCES, "vllm#42764"),
)

ENTRIES = (VLLM, VLLM_NESTED)
