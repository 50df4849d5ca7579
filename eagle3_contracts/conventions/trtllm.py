"""TensorRT-LLM's PyTorch backend, read in its public source: ``NVIDIA/TensorRT-LLM`` at commit
``f933a608`` (the stored snapshot; PyPI has only a stub), ``tensorrt_llm/_torch/speculative/
eagle3.py`` and ``tensorrt_llm/llmapi/llm_args.py``."""

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
    Validation,
)
from eagle3_contracts.conventions.hf import NESTED, TOP_LEVEL

_EAGLE3 = "NVIDIA/TensorRT-LLM@f933a608 tensorrt_llm/_torch/speculative/eagle3.py"

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
    validation=Validation.UNINITIALISED,
    embedding_reachable=False,  # -1 names the final post-norm state, not the embedding
    last_output_reachable=True,
    pipeline_parallel=PipelineParallel.DEPENDS,
    notes=(
        "maybe_capture_hidden_states(layer_id, hidden_states, residual) stores hidden + "
        "residual after layer layer_id into the buffer slot of that id: output meaning.",
        "Ids are not validated: the buffer is torch.empty(max_tokens, hidden x len(ids)) and a "
        "slot whose id is no layer (>= L, or negative other than -1) is never written, so the "
        "drafter reads uninitialised memory there.",
        "-1 means the final post-norm hidden state, not the embedding: canonical -1 cannot be "
        "expressed. The two-model path moves -1 to the end after sorting; the default one-model "
        "path (eagle3_one_model = True) only sorts, so -1 is the first segment there.",
        "Ids come from EagleDecodingConfig.eagle3_layers_to_capture (a set; default "
        "{1, L//2-1, L-4}), not from the draft config: 'check' assumes the draft config's ids "
        "(nested, then top-level) are what you pass there.",
        "Pipeline parallel behaviour not verified.",
    ),
    assumptions=(
        "the ids of the draft config are passed as EagleDecodingConfig.eagle3_layers_to_capture "
        "on the default one-model path (llm_args.py eagle3_one_model = True): sorted, -1 not "
        "moved to the end (eagle3.py Eagle3OneModelSpecMetadata.__post_init__)",
    ),
    sources=(
        f"{_EAGLE3}:53-56 (Eagle3ResourceManager: hidden-state buffer torch.empty, one slot per id)",
        f"{_EAGLE3}:139-143 (Eagle3SpecMetadata.__post_init__, two-model: sorted, -1 moved to "
        "the end)",
        f"{_EAGLE3} Eagle3OneModelSpecMetadata.__post_init__ (one-model: sorted only; buffer "
        "torch.empty) and maybe_capture_hidden_states (writes only the slot whose id equals the "
        "layer index)",
        "NVIDIA/TensorRT-LLM@f933a608 tensorrt_llm/llmapi/llm_args.py EagleDecodingConfig "
        "(eagle3_one_model = True, eagle3_layers_to_capture, SaveHiddenStates docs)",
    ),
    release="f933a608",
)

ENTRIES = (TRTLLM,)
