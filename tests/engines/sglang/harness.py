"""Run one SGLang release's own model code on CPU and observe what its EAGLE-3 capture collects.

This is test infrastructure for the engine suite (``pytest -m engine`` in a
``.venv-sglang-<release>`` environment, see ``tests/engines/sglang/README.md``). It imports
``sglang`` lazily and only inside those environments.

What it does, following ``sglang/test/layer_ut_utils.py``:

- one-process gloo groups (``init_distributed_environment`` + ``initialize_model_parallel``; from
  0.5.23 on a ``ServerArgs`` is published to the runtime context first);
- attention: ``RadixAttention.forward`` is replaced by plain causal SDPA over the one sequence
  (no KV cache: every case is a single EXTEND pass from position 0). This is the only SGLang
  code that is replaced; the layer loop, ``set_eagle3_layers_to_capture``, the layers, norms,
  rotary, MoE routing and the logits processor are the release's own, on their native-torch
  paths (``SGLANG_USE_CPU_ENGINE=1``, no AMX ops registered);
- the tiny random HF transformers model is the reference; its ``state_dict`` is loaded with the
  SGLang model's own ``load_weights``; final states must equal HF's before any capture is read;
- every collected state is identified against the HF model with
  ``eagle3_contracts.capture.identify.identify_segments`` (pre-norm last layer included).

The observation is an ``Observed``: the canonical ids collected in concatenation order, or the
crash class of the target forward.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import os
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import torch

HIDDEN = 32
SEQ_LEN = 7  # != 2: a [T, H] tensor unpacked as a pair must not silently succeed
VOCAB = 96


class HarnessError(RuntimeError):
    """The harness could not set up the model (not an observation of the capture)."""


@dataclass(frozen=True)
class ModelCase:
    """One SGLang model file, the HF reference config that exercises it, and its entry class."""

    model_file: str  # "llama.py"
    module: str  # "sglang.srt.models.llama"
    entry_class: str  # "LlamaForCausalLM"
    make_config: Callable[[int], Any]  # num_layers -> transformers PretrainedConfig
    note: str = ""

    @property
    def name(self) -> str:
        return self.model_file.removesuffix(".py")


def _cfg(model_type: str, num_layers: int, **values: Any) -> Any:
    from transformers import AutoConfig

    config = AutoConfig.for_model(model_type, num_hidden_layers=num_layers, **values)
    config._attn_implementation = "eager"
    return config


_DENSE: dict[str, Any] = {
    "hidden_size": HIDDEN,
    "intermediate_size": 64,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": VOCAB,
    "max_position_embeddings": 128,
    "tie_word_embeddings": False,
}


def _llama(n: int) -> Any:
    return _cfg("llama", n, **_DENSE, head_dim=8, architectures=["LlamaForCausalLM"])


def _qwen2(n: int) -> Any:
    return _cfg("qwen2", n, **_DENSE, architectures=["Qwen2ForCausalLM"])


def _qwen3(n: int) -> Any:
    return _cfg("qwen3", n, **_DENSE, head_dim=8, architectures=["Qwen3ForCausalLM"])


def _qwen3_moe(n: int) -> Any:
    return _cfg(
        "qwen3_moe",
        n,
        **_DENSE,
        head_dim=8,
        moe_intermediate_size=16,
        num_experts=4,
        num_experts_per_tok=2,
        decoder_sparse_step=1,
        mlp_only_layers=[],
        norm_topk_prob=True,
        architectures=["Qwen3MoeForCausalLM"],
    )


def _deepseek_v3(n: int) -> Any:
    # The DeepSeek-V3 / Kimi-K2.5 shape: MLA, sigmoid noaux_tc routing, a shared expert, yarn.
    return _cfg(
        "deepseek_v3",
        n,
        **{**_DENSE, "num_key_value_heads": 4},
        moe_intermediate_size=16,
        n_routed_experts=4,
        num_experts_per_tok=2,
        n_shared_experts=1,
        n_group=1,
        topk_group=1,
        first_k_dense_replace=1,
        moe_layer_freq=1,
        topk_method="noaux_tc",
        scoring_func="sigmoid",
        routed_scaling_factor=1.0,
        norm_topk_prob=True,
        q_lora_rank=16,
        kv_lora_rank=8,
        qk_rope_head_dim=4,
        qk_nope_head_dim=4,
        v_head_dim=8,
        head_dim=4,
        rope_scaling={
            "type": "yarn",
            "factor": 2.0,
            "original_max_position_embeddings": 64,
            "beta_fast": 32,
            "beta_slow": 1,
            "mscale": 1.0,
            "mscale_all_dim": 1.0,
        },
        architectures=["DeepseekV3ForCausalLM"],
    )


def _gpt_oss(n: int) -> Any:
    return _cfg(
        "gpt_oss",
        n,
        **{**_DENSE, "intermediate_size": 16},
        head_dim=8,
        num_local_experts=4,
        num_experts_per_tok=2,
        sliding_window=16,
        swiglu_limit=7.0,  # transformers < 5.1x has no such field; SGLang reads it
        layer_types=["sliding_attention", "full_attention"] * (n // 2)
        + ["sliding_attention"] * (n % 2),
        architectures=["GptOssForCausalLM"],
    )


def _gemma3(n: int) -> Any:
    return _cfg(
        "gemma3_text",
        n,
        **_DENSE,
        head_dim=8,
        sliding_window=16,
        query_pre_attn_scalar=8,
        # 0.5.12 gemma3_causal.py:584 reads a "factor" for full attention: linear x1 == default
        rope_parameters={
            "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
            "full_attention": {"rope_type": "linear", "factor": 1.0, "rope_theta": 1000000.0},
        },
        architectures=["Gemma3ForCausalLM"],
    )


MODEL_CASES: tuple[ModelCase, ...] = (
    ModelCase("llama.py", "sglang.srt.models.llama", "LlamaForCausalLM", _llama),
    ModelCase("qwen2.py", "sglang.srt.models.qwen2", "Qwen2ForCausalLM", _qwen2),
    ModelCase("qwen3.py", "sglang.srt.models.qwen3", "Qwen3ForCausalLM", _qwen3),
    ModelCase("qwen3_moe.py", "sglang.srt.models.qwen3_moe", "Qwen3MoeForCausalLM", _qwen3_moe),
    ModelCase(
        "deepseek_v2.py", "sglang.srt.models.deepseek_v2", "DeepseekV3ForCausalLM", _deepseek_v3
    ),
    ModelCase("gpt_oss.py", "sglang.srt.models.gpt_oss", "GptOssForCausalLM", _gpt_oss),
    ModelCase("gemma3_causal.py", "sglang.srt.models.gemma3_causal", "Gemma3ForCausalLM", _gemma3),
)
BY_FILE: dict[str, ModelCase] = {c.model_file: c for c in MODEL_CASES}


def release() -> str:
    from importlib.metadata import version

    return version("sglang")


# -- the process-wide runtime -----------------------------------------------------------------

_READY = False


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def init_runtime() -> None:
    """World-size-1 gloo groups and the SDPA attention stand-in (idempotent, once per process)."""
    global _READY
    if _READY:
        return
    if os.environ.get("SGLANG_USE_CPU_ENGINE") != "1":
        raise HarnessError("set SGLANG_USE_CPU_ENGINE=1 before importing sglang")
    for key, value in {
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(_free_port()),  # suites of several releases may run at once
        "RANK": "0",
        "WORLD_SIZE": "1",
        "LOCAL_RANK": "0",
    }.items():
        os.environ.setdefault(key, value)
    torch.set_num_threads(1)
    from sglang.srt.distributed import parallel_state
    from sglang.srt.server_args import ServerArgs

    if not torch.distributed.is_initialized():
        parallel_state.init_distributed_environment(
            world_size=1, rank=0, local_rank=0, backend="gloo"
        )
    args = ServerArgs(model_path="dummy", tp_size=1, pp_size=1, device="cpu")
    try:  # >= 0.5.2x publishes ServerArgs to a runtime context before the groups exist
        from sglang.srt import runtime_context as rc
    except ImportError:
        rc = None
    published = rc is not None and hasattr(rc, "publish")
    if published:
        rc.reset_context()
        if "ranks" in inspect.signature(rc.publish).parameters:  # 0.5.2x
            rc.publish(args, role="test", ranks=rc.SpawnRanks(world_rank=0))
        else:  # 0.5.17
            rc.publish(args, role="test")
        parallel = rc.get_parallel()
        if parallel_state._WORLD is not None and hasattr(type(parallel), "override_permanently"):
            parallel.override_permanently(world_group=parallel_state._WORLD)  # 0.5.2x
    else:
        from sglang.srt import server_args as sa

        setter = getattr(sa, "set_global_server_args_for_scheduler", None)
        if setter is not None:
            setter(args)
    if not parallel_state.model_parallel_is_initialized():
        parallel_state.initialize_model_parallel(backend="gloo")
    from sglang.srt.layers import dp_attention

    init_dp = getattr(dp_attention, "initialize_dp_attention", None)
    if init_dp is not None and getattr(dp_attention, "_ATTN_DP_SIZE", 1) is None:
        # releases whose dp-attention globals are set by the model runner: set them here
        model = SimpleNamespace(
            hidden_size=HIDDEN, dtype=torch.float32, hf_config=SimpleNamespace()
        )
        init_dp(args, model)
    _patch_attention()
    _publish_forward_context()
    _READY = True


def _no_cache(*args: Any, **kwargs: Any) -> None:
    return None  # one EXTEND from position 0: attention reads k and v directly


_NO_KV_POOL = SimpleNamespace(
    dtype=torch.float32, set_kv_buffer=_no_cache, set_mla_kv_buffer=_no_cache
)


def _publish_forward_context() -> None:
    # >= 0.5.2x: layers read the attention backend (and its KV pool's dtype) from a
    # process-wide forward context; the SDPA stand-in needs no pool, so a float32 stand-in
    # answers "no fused KV write" (the CPU answer).
    try:
        from sglang.srt.model_executor import forward_context
    except ImportError:
        return
    pool = _NO_KV_POOL
    backend = SimpleNamespace(
        token_to_kv_pool=pool,
        req_to_token_pool=None,
        # deepseek_v2.py picks its attention method by backend name: "triton" means plain
        # multi-head attention for an EXTEND without a cached prefix (the SDPA stand-in).
        prefill_attention_backend_str="triton",
        decode_attention_backend_str="triton",
    )
    forward_context.set_forward_context(forward_context.ForwardContext(attn_backend=backend))


def _patch_attention() -> None:
    from sglang.srt.layers import radix_attention

    radix_attention.RadixAttention.forward = _sdpa_forward  # type: ignore[method-assign]


def _sdpa_forward(
    self: Any,
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    forward_batch: Any,
    save_kv_cache: bool = True,
    *args: Any,
    **kwargs: Any,
) -> torch.Tensor:
    """Causal attention over one sequence starting at position 0 (what the backend computes)."""
    t = q.shape[0]
    hq, hk = self.tp_q_head_num, self.tp_k_head_num
    if kwargs.get("q_rope") is not None:  # MLA absorbed path: q and k split in nope/rope parts
        q = torch.cat([q.reshape(t, hq, -1), kwargs["q_rope"].reshape(t, hq, -1)], dim=-1)
    if kwargs.get("k_rope") is not None:
        k = torch.cat([k.reshape(t, hk, -1), kwargs["k_rope"].reshape(t, hk, -1)], dim=-1)
    q = q.reshape(t, hq, -1)
    k = k.reshape(t, hk, -1)
    v = v.reshape(t, self.tp_v_head_num, -1)[..., : self.v_head_dim]
    if hq != hk:
        k = k.repeat_interleave(hq // hk, dim=1)
        v = v.repeat_interleave(hq // v.shape[1], dim=1)
    sinks = kwargs.get("sinks")
    window = getattr(self, "sliding_window_size", None)
    mask = torch.ones(t, t, dtype=torch.bool).tril()
    if window is not None and window > 0:
        idx = torch.arange(t)
        mask &= (idx[:, None] - idx[None, :]) <= window
    scores = torch.einsum("qhd,khd->hqk", q.float(), k.float()) * self.scaling
    if getattr(self, "logit_cap", 0) and self.logit_cap > 0:
        scores = self.logit_cap * torch.tanh(scores / self.logit_cap)
    scores = scores.masked_fill(~mask, float("-inf"))
    if sinks is not None:
        sink = sinks.float().reshape(hq, 1, 1).expand(hq, t, 1)
        probs = torch.softmax(torch.cat([scores, sink], dim=-1), dim=-1)[..., :t]
    else:
        probs = torch.softmax(scores, dim=-1)
    out = torch.einsum("hqk,khd->qhd", probs, v.float()).to(q.dtype)
    return out.reshape(t, -1)


def forward_batch(input_ids: torch.Tensor, *, capture: bool) -> Any:
    """An EXTEND ForwardBatch for one sequence from position 0 (fields the release has)."""
    from sglang.srt.model_executor.forward_batch_info import (
        CaptureHiddenMode,
        ForwardBatch,
        ForwardMode,
    )

    t = int(input_ids.shape[0])
    values: dict[str, Any] = {
        "forward_mode": ForwardMode.EXTEND,
        "batch_size": 1,
        "input_ids": input_ids,
        "req_pool_indices": torch.zeros(1, dtype=torch.long),
        "seq_lens": torch.tensor([t]),
        "seq_lens_cpu": torch.tensor([t]),
        "out_cache_loc": torch.arange(t),
        "seq_lens_sum": t,
        "positions": torch.arange(t),
        "extend_seq_lens": torch.tensor([t]),
        "extend_prefix_lens": torch.tensor([0]),
        "extend_start_loc": torch.tensor([0]),
        "extend_seq_lens_cpu": [t],
        "extend_prefix_lens_cpu": [0],
        "extend_num_tokens": t,
        "extend_logprob_start_lens_cpu": [t],
        "capture_hidden_mode": CaptureHiddenMode.FULL if capture else CaptureHiddenMode.NULL,
        "token_to_kv_pool": _NO_KV_POOL,  # releases before the forward context read it here
    }
    names = {f.name for f in dataclasses.fields(ForwardBatch)}
    return ForwardBatch(**{k: v for k, v in values.items() if k in names})


# -- models -----------------------------------------------------------------------------------


@dataclass
class Pair:
    """The HF reference and the SGLang model built from the same weights."""

    case: ModelCase
    num_layers: int
    hf: Any
    sglang: Any
    input_ids: torch.Tensor
    pristine: list[tuple[Any, dict[str, Any]]]  # attributes before any setter call


def build_pair(case: ModelCase, num_layers: int, *, seed: int = 0) -> Pair:
    """Build HF and SGLang models of ``case`` with the same random weights; check they agree."""
    from transformers import AutoModelForCausalLM

    init_runtime()
    config = case.make_config(num_layers)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        hf = AutoModelForCausalLM.from_config(config, attn_implementation="eager")
        _randomize_biases(hf)
        input_ids = torch.randint(2, VOCAB, (SEQ_LEN,))
    hf = hf.float().eval().requires_grad_(False)
    module = importlib.import_module(case.module)
    cls = getattr(module, case.entry_class)
    sg_config = _sglang_config(config)
    try:
        model = cls(sg_config, quant_config=None)
    except TypeError:
        model = cls(config=sg_config)
    model = model.float().eval()
    weights = _checkpoint_weights(hf, case)
    model.load_weights(weights)
    _post_load(model)
    pair = Pair(case, num_layers, hf, model, input_ids, _snapshot(model))
    _check_final_state(pair)
    return pair


def _snapshot(model: Any) -> list[tuple[Any, dict[str, Any]]]:
    """Each submodule's attributes: a setter call changes some (qwen2_moe.py flags layers)."""
    return [(m, dict(vars(m))) for m in model.modules()]


def _restore(snapshot: list[tuple[Any, dict[str, Any]]]) -> None:
    for module, attrs in snapshot:
        vars(module).clear()
        vars(module).update(attrs)


def _randomize_biases(model: Any) -> None:
    # HF initialises biases (and the router correction bias) to zero: random ones make
    # a dropped or misplaced bias visible in the final-state check.
    for name, p in model.named_parameters():
        if name.endswith("e_score_correction_bias"):
            p.data.normal_(0.0, 0.1)


def _sglang_config(config: Any) -> Any:
    # SGLang model files read a few fields HF's classes no longer carry.
    if getattr(config, "rope_scaling", None) is None:
        rope = getattr(config, "rope_parameters", None)
        if isinstance(rope, dict) and rope.get("rope_type", "default") != "default":
            config.rope_scaling = dict(rope)
    if not hasattr(config, "rope_theta"):
        rope = getattr(config, "rope_parameters", None) or {}
        config.rope_theta = rope.get("rope_theta", 10000.0)
    return config


def _checkpoint_weights(hf: Any, case: ModelCase) -> list[tuple[str, torch.Tensor]]:
    """HF's state dict, with fused (transformers 5) expert tensors split per expert."""
    out: list[tuple[str, torch.Tensor]] = []
    for name, tensor in hf.state_dict().items():
        if ".mlp.experts.gate_up_proj" in name and case.model_file != "gpt_oss.py":
            prefix = name.rsplit(".gate_up_proj", 1)[0]
            for e in range(tensor.shape[0]):
                gate, up = tensor[e].chunk(2, dim=0)
                out.append((f"{prefix}.{e}.gate_proj.weight", gate.clone()))
                out.append((f"{prefix}.{e}.up_proj.weight", up.clone()))
        elif ".mlp.experts.down_proj" in name and case.model_file != "gpt_oss.py":
            prefix = name.rsplit(".down_proj", 1)[0]
            for e in range(tensor.shape[0]):
                out.append((f"{prefix}.{e}.down_proj.weight", tensor[e].clone()))
        else:
            out.append((name, tensor.clone()))
    return out


def _post_load(model: Any) -> None:
    hook = getattr(model, "post_load_weights", None)
    if callable(hook):
        try:
            hook()
        except TypeError:
            hook(is_nextn=False)


def _check_final_state(pair: Pair) -> None:
    with torch.no_grad():
        ref = pair.hf(pair.input_ids[None], output_hidden_states=True).hidden_states[-1][0]
        hidden = pair.sglang.model(
            pair.input_ids, torch.arange(SEQ_LEN), forward_batch(pair.input_ids, capture=False)
        )
    if isinstance(hidden, tuple):
        hidden = hidden[0]
    err = (hidden.float() - ref).abs().max().item()
    if not err < 1e-4 * max(1.0, ref.abs().max().item()):
        raise HarnessError(
            f"{pair.case.model_file}: SGLang's final state differs from HF's by {err:.3g}; the "
            "weights or the attention stand-in do not match, no capture can be judged"
        )


# -- one observation --------------------------------------------------------------------------


@dataclass(frozen=True)
class Observed:
    """What the release's model collected for one id list (the ``observed`` of a golden)."""

    ids: tuple[int, ...] | None  # handed to set_eagle3_layers_to_capture (None: its default)
    kind: str  # "segments" (possibly none) or "crash"
    canonical: tuple[int | None, ...] | None  # identified ids, concatenation order (None: crash)
    crash: str | None  # crash class when kind == "crash"
    error: str | None = None  # the exception line, for the record
    identified: tuple[str, ...] = ()  # identify_segments label per segment

    def outcome(self) -> dict[str, Any]:
        """The comparable part (``tests/integrations/sglang/engine_goldens.py``)."""
        return {
            "kind": self.kind,
            "canonical": None if self.canonical is None else list(self.canonical),
            "crash": self.crash,
        }

    def to_dict(self) -> dict[str, Any]:
        return {**self.outcome(), "error": self.error, "identified": list(self.identified)}


CRASH_CLASSES: dict[str, str] = {
    "embedding-residual-none": "TypeError: hidden_states + None at loop index 0 (residual is None)",
    "no-aux-states": "ValueError: the forward unpacks (hidden, aux) but the model collected "
    "nothing and returned the bare [T, H] tensor",
    "aux-count-short": "RuntimeError: the aux packer collected fewer states than ids were set",
    "setter-index-error": "IndexError: the setter indexes the layer list with an id + 1 >= L",
}
"""Crash classes observed in the target's own code (before any drafter runs)."""


def crash_class(exc: BaseException) -> str:
    """Name the crash the target raised (registry vocabulary where one exists)."""
    text = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, TypeError) and "NoneType" in text and "+" in text:
        return "embedding-residual-none"
    if isinstance(exc, ValueError) and "unpack" in text:
        return "no-aux-states"
    if "aux hidden states" in text and "captured" in text:  # RuntimeError; 0.5.17: assert
        return "aux-count-short"
    return f"other:{type(exc).__name__}"


def observe(
    pair: Pair, ids: Sequence[int] | None, *, setter: str = "set_eagle3_layers_to_capture"
) -> Observed:
    """Call the release's own setter (EAGLE-3's, or ``set_dflash_layers_to_capture``) with
    ``ids``, run its forward, identify what it collected."""
    from eagle3_contracts.capture.identify import identify_segments

    model = pair.sglang
    _restore(pair.pristine)
    given = None if ids is None else tuple(int(i) for i in ids)
    try:
        getattr(model, setter)(None if given is None else list(given))
    except Exception as exc:
        cls = "setter-index-error" if isinstance(exc, IndexError) else crash_class(exc)
        return Observed(given, "crash", None, cls, _line(exc))
    batch = forward_batch(pair.input_ids, capture=True)
    try:
        with torch.no_grad():
            out = model(pair.input_ids, torch.arange(SEQ_LEN), batch)
    except Exception as exc:
        return Observed(given, "crash", None, crash_class(exc), _line(exc))
    captured = getattr(out, "hidden_states", None)
    if captured is None:
        return Observed(given, "segments", (), None, None)
    h = pair.hf.config.hidden_size
    if captured.dim() != 2 or captured.shape[0] != SEQ_LEN or captured.shape[-1] % h:
        raise HarnessError(f"unexpected captured shape {tuple(captured.shape)}")
    if captured.shape[-1] == h and not _aux_requested(model):
        return Observed(given, "segments", (), None, None)
    found = identify_segments(captured[None].float(), pair.hf, pair.input_ids[None])
    labels = tuple(s.label for s in found)
    return Observed(given, "segments", found.layer_ids, None, None, labels)


def observe_raising(pair: Pair, ids: Sequence[int] | None) -> Any:
    """Setter and forward as ``observe`` does, but any exception propagates (the guard's)."""
    _restore(pair.pristine)
    pair.sglang.set_eagle3_layers_to_capture(None if ids is None else list(ids))
    with torch.no_grad():
        return pair.sglang(
            pair.input_ids, torch.arange(SEQ_LEN), forward_batch(pair.input_ids, capture=True)
        )


def _aux_requested(model: Any) -> bool:
    inner = getattr(model, "model", model)
    return bool(getattr(inner, "layers_to_capture", None))


def _line(exc: BaseException) -> str:
    frame = traceback.extract_tb(exc.__traceback__)[-1]
    where = f"{frame.filename.split('site-packages/')[-1]}:{frame.lineno}"
    return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''} ({where})"


def target_config(pair: Pair) -> dict[str, Any]:
    """The target's config.json fields the registry reads (what a golden records)."""
    config = pair.hf.config
    return {
        "architectures": [pair.case.entry_class],
        "model_type": config.model_type,
        "num_hidden_layers": pair.num_layers,
        "hidden_size": config.hidden_size,
        "vocab_size": config.vocab_size,
    }


def versions() -> dict[str, str]:
    from importlib.metadata import version

    return {name: version(name) for name in ("sglang", "torch", "transformers")}
