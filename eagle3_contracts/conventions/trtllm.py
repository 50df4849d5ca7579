"""TensorRT-LLM (``NVIDIA/TensorRT-LLM``, ``tensorrt_llm/_torch/speculative/eagle3.py``)."""

from __future__ import annotations

from eagle3_contracts.conventions._entry import (
    Convention,
    Dedup,
    DefaultRule,
    Meaning,
    OffsetRule,
    PipelineParallel,
    PostNorm,
    Role,
)
from eagle3_contracts.conventions.hf import NESTED, TOP_LEVEL

TRTLLM = Convention(
    name="trtllm",
    system="TensorRT-LLM (PyTorch backend)",
    role=Role.ENGINE,
    meaning=Meaning.OUTPUT,
    offset_rule=OffsetRule.IDENTITY,
    post_norm_id=PostNorm.MINUS_ONE,
    id_paths=(NESTED, TOP_LEVEL),
    id_setting="EagleDecodingConfig.eagle3_layers_to_capture",
    default=DefaultRule.OUTPUTS_1_MIDM1_LM4,
    concat_order="ascending",
    dedup=Dedup.SORTED_SET,
    embedding_reachable=False,  # -1 names the final post-norm state, not the embedding
    last_output_reachable=True,
    pipeline_parallel=PipelineParallel.DEPENDS,
    notes=(
        "maybe_capture_hidden_states(layer_idx, hidden_states, residual) stores hidden + "
        "residual after layer layer_idx: output meaning.",
        "-1 means the final post-norm hidden state (sorted, moved to the end), not the "
        "embedding: canonical -1 cannot be expressed.",
        "Ids come from EagleDecodingConfig.eagle3_layers_to_capture (a set; default "
        "{1, L//2-1, L-4}), not from the draft config: 'check' assumes the draft config's ids "
        "(nested, then top-level) are what you pass there.",
        "Pipeline parallel behaviour not verified.",
    ),
    sources=(
        "NVIDIA/TensorRT-LLM tensorrt_llm/_torch/speculative/eagle3.py",
        "NVIDIA/TensorRT-LLM tensorrt_llm/llmapi/llm_args.py (eagle3_layers_to_capture, "
        "SaveHiddenStates docs)",
    ),
)

ENTRIES = (TRTLLM,)
