"""SGLang (``sgl-project/sglang``, ``python/sglang/srt/models/*.py``) serving rules."""

from __future__ import annotations

from typing import Any

from eagle3_contracts.conventions._entry import (
    Convention,
    DefaultRule,
    Meaning,
    OffsetRule,
    PipelineParallel,
    Role,
)
from eagle3_contracts.conventions.hf import NESTED

_SOURCES = (
    "sgl-project/sglang python/sglang/srt/models/llama.py, deepseek_v2.py "
    "set_eagle3_layers_to_capture and the layer loop (capture before layer i)",
    "sgl-project/sglang python/sglang/srt/model_executor/model_runner.py (nested eagle_config)",
    "sgl-project/sglang python/sglang/srt/layers/logits_processor.py (torch.cat, ascending)",
    "sglang#39644, sglang#23569 (pipeline parallel: last rank only)",
    "sglang#22836 (CUDA-graph runner used the defaults before 2026-04-15)",
)

_EMBEDDING = (
    "loop index 0 has residual None: the released llama.py (<= 0.5.17), deepseek_v2.py "
    "(<= 0.5.13), glm4_moe_lite.py (<= 0.5.17) and gpt_oss.py (<= 0.5.16) append "
    "hidden_states + None and fail; only a patched engine feeds the embedding"
)

_COMMON_NOTES = (
    "Capture happens before loop index i runs (`if i in self.layers_to_capture: "
    "aux_hidden_states.append(hidden_states + residual)`), so loop indices are boundaries; "
    "loop index L never runs: the last layer's output is unreachable.",
    "No ids: [2, L//2, L-3] used as loop indices (boundaries), whatever the explicit-id rule.",
    "Ids are read only from the nested eagle_config; a failure to read falls back to the "
    "default silently. 0.5.23 sizes fc from nested-then-top-level ids: a top-level-only draft "
    "gets default layers with a width computed from its own list.",
    "Loop index 0 (the embedding) has residual None: the released layer loops append "
    "hidden_states + None and fail (probe of the wheels, "
    "eagle3_contracts/conventions/data/sglang-*.json).",
    "Pipeline parallel: `if not self.pp_group.is_last_rank: return` and the loop covers "
    "[start_layer, end_layer): only layers on the last stage are captured.",
)

# Facts every SGLang entry shares: nested ids, [2, L//2, L-3] loop-index default, capture
# before layer i, ascending concat, last-stage-only pipeline capture, the embedding caveat.
_SHARED: dict[str, Any] = dict(
    role=Role.ENGINE,
    id_paths=(NESTED,),
    default=DefaultRule.BOUNDARIES_2_MID_LM3,
    concat_order="ascending",
    captures_before_layer=True,
    pipeline_parallel=PipelineParallel.LAST_STAGE_ONLY,
    pp_split_rule="sglang",
    embedding_caveat=_EMBEDDING,
)

SGLANG_LEGACY = Convention(
    **_SHARED,
    name="sglang-legacy",
    system="SGLang <= 0.5.12 (before sglang#25454)",
    meaning=Meaning.OUTPUT,
    offset_rule=OffsetRule.PLUS_ONE_ALWAYS,
    embedding_reachable=False,
    last_output_reachable=False,
    notes=(
        "Explicit ids: [val + 1 for val in layer_ids] (output meaning), so explicit default ids "
        "differ from the no-ids default.",
        *_COMMON_NOTES,
    ),
    sources=_SOURCES,
)

SGLANG = Convention(
    **_SHARED,
    name="sglang",
    system="SGLang after sglang#25454 (deepseek_v2.py: DeepSeek-V3, Kimi-K2/K2.5)",
    meaning=Meaning.CONDITIONAL,
    offset_rule=OffsetRule.PLUS_ONE_IF_FIRST_IS_ONE,
    embedding_reachable=True,
    last_output_reachable=False,
    notes=(
        "`if layer_ids and layer_ids[0] == 1:` +1, else the ids are used as loop indices: a "
        "drafter trained on outputs [2, 30, 58] is served one layer early.",
        "In released wheels this rule is in deepseek_v2.py and glm4_moe_lite.py from 0.5.13; "
        "every other model file keeps '+1 always' (use 'sglang==VERSION' with the target's "
        "model_type for the exact rule).",
        *_COMMON_NOTES,
    ),
    sources=(*_SOURCES, "sglang#25454 (merged 2026-05-16)"),
)

SGLANG_GPT_OSS = Convention(
    **_SHARED,
    name="sglang-gpt-oss",
    system="SGLang >= 0.5.17 gpt_oss.py (sglang#32334)",
    meaning=Meaning.CONDITIONAL,
    offset_rule=OffsetRule.LOOP_IF_MAX_IS_L,
    embedding_reachable=True,
    last_output_reachable=True,
    notes=(
        "Ids are loop indices (boundaries) when max(ids) == L, else +1 is applied; "
        "nvidia/gpt-oss-120b-Eagle3-v3 uses boundaries [24, 30, 36] with norm_before_fc.",
        "A list whose max is L asks for loop index L: the released gpt_oss.py of 0.5.17 "
        "captures after each layer and 0.5.23 once more after the stack, so the last layer's "
        "pre-norm output is fed (probe of the wheels, "
        "eagle3_contracts/conventions/data/sglang-0.5.17.json).",
        *_COMMON_NOTES,
    ),
    sources=(*_SOURCES, "sglang#32334"),
)

ENTRIES = (SGLANG_LEGACY, SGLANG, SGLANG_GPT_OSS)
