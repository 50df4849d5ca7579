"""vLLM's own acceptance of a drafter: serve seeded prompts with EAGLE-3 in a fresh process
and read its spec-decode counters.

``python -m eagle3_contracts.acceptance.vllm_counters TARGET DRAFT PROMPTS NEW_TOKENS K SEED``
(run in vLLM's environment, the engine core in-process: ``VLLM_ENABLE_V1_MULTIPROCESSING=0``);
``serve_counters`` runs it as a child process (the eagle3-contracts vLLM plugin reads its
environment once per process) and returns the counters and the plugin's guard lines.

The prompts are ``eagle3_contracts.acceptance.prompts.greedy_prompts(PROMPTS, vocab, seed=SEED)``
(the oracle's default), served greedily with ``ignore_eos``; prints ``ACCEPT {json}`` with the
counters of ``vllm/v1/spec_decode/metrics.py`` (``vllm:spec_decode_num_drafts``,
``..._num_draft_tokens``, ``..._num_accepted_tokens``, ``..._num_accepted_tokens_per_pos``)
the generated tokens and the spec-decode lines of the engine's Prometheus export (what a
server's ``/metrics`` shows; ``prometheus_client.generate_latest``), or ``ENGINE FAILED <error>``
(exit 3).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

COUNTERS = ("num_drafts", "num_draft_tokens", "num_accepted_tokens")


@dataclass(frozen=True)
class Served:
    """vLLM's counters for one drafter, and what the guard said."""

    num_drafts: int
    num_draft_tokens: int
    num_accepted_tokens: int
    per_pos: tuple[int, ...]
    guard: tuple[str, ...]  # the plugin's guard lines
    seconds: float  # the child process, engine start included
    prometheus: str = ""  # the engine's spec-decode lines of its Prometheus export, as served

    @property
    def accept_rate(self) -> float:
        return self.num_accepted_tokens / max(self.num_draft_tokens, 1)

    @property
    def verdict(self) -> str:
        if any(": MISMATCH" in g for g in self.guard):
            return "MISMATCH"
        return "OK" if any(": OK:" in g for g in self.guard) else "no verdict"


def vllm_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("vllm") is not None


def serve_counters(
    target: str | os.PathLike[str],
    draft: str | os.PathLike[str],
    *,
    prompts: int,
    new_tokens: int,
    k: int,
    seed: int = 0,
    guard: str = "warn",
    timeout: float = 300,
) -> Served:
    """Serve in a child process of this interpreter; ``RuntimeError`` if the engine fails."""
    env = {k_: v for k_, v in os.environ.items() if not k_.startswith("EAGLE3_CONTRACTS_")}
    env.update(HF_HUB_OFFLINE="1", VLLM_ENABLE_V1_MULTIPROCESSING="0", OMP_NUM_THREADS="1")
    env["EAGLE3_CONTRACTS_GUARD"] = guard
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    args = [str(target), str(draft), str(prompts), str(new_tokens), str(k), str(seed)]
    cmd = [sys.executable, "-m", "eagle3_contracts.acceptance.vllm_counters", *args]
    t0 = time.time()
    try:
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"vLLM did not finish serving {draft} within {timeout:.0f} s") from None
    found = [line for line in out.stdout.splitlines() if line.startswith("ACCEPT ")]
    if not found:
        tail = " ".join((out.stdout + out.stderr).split())[-400:]
        raise RuntimeError(f"vLLM did not serve {draft}: {tail}")
    data = json.loads(found[0][len("ACCEPT ") :])
    text = out.stdout + out.stderr
    return Served(
        num_drafts=data["num_drafts"],
        num_draft_tokens=data["num_draft_tokens"],
        num_accepted_tokens=data["num_accepted_tokens"],
        per_pos=tuple(data["per_pos"]),
        guard=tuple(line for line in text.splitlines() if "eagle3-contracts guard" in line),
        seconds=time.time() - t0,
        prometheus=data.get("prometheus", ""),
    )


def main(argv: list[str]) -> int:
    from vllm import LLM, SamplingParams
    from vllm.inputs import TokensPrompt

    from eagle3_contracts.acceptance.prompts import greedy_prompts

    target, draft, prompts, new_tokens, k, seed = argv
    config = json.loads(Path(target, "config.json").read_text())
    starts = list(greedy_prompts(int(prompts), config["vocab_size"], seed=int(seed)))
    t0 = time.time()
    try:
        llm = LLM(
            model=target,
            skip_tokenizer_init=True,
            dtype="float32",
            enforce_eager=True,
            max_model_len=256,
            max_num_seqs=len(starts),
            kv_cache_memory_bytes=64 * 1024 * 1024,
            seed=0,
            disable_log_stats=False,
            speculative_config={
                "method": "eagle3",
                "model": draft,
                "num_speculative_tokens": int(k),
            },
        )
        started = time.time() - t0
        outs = llm.generate(
            [TokensPrompt(prompt_token_ids=p) for p in starts],
            SamplingParams(
                max_tokens=int(new_tokens), temperature=0.0, ignore_eos=True, detokenize=False
            ),
            use_tqdm=False,
        )
        metrics = {m.name: m for m in llm.get_metrics()}
    except Exception as exc:
        print(f"ENGINE FAILED {type(exc).__name__}: {' '.join(str(exc).split())[:500]}", flush=True)
        return 3
    found: dict[str, object] = {}
    for name in COUNTERS:
        found[name] = int(metrics[f"vllm:spec_decode_{name}"].value)
    found["per_pos"] = [
        int(v) for v in metrics["vllm:spec_decode_num_accepted_tokens_per_pos"].values
    ]
    found["tokens"] = [
        list(p) + list(o.outputs[0].token_ids) for p, o in zip(starts, outs, strict=True)
    ]
    from prometheus_client import REGISTRY, generate_latest  # type: ignore[import-not-found]

    exported = generate_latest(REGISTRY).decode()
    found["prometheus"] = "\n".join(x for x in exported.splitlines() if "spec_decode" in x)
    found["start_s"] = round(started, 1)
    found["total_s"] = round(time.time() - t0, 1)
    print("ACCEPT " + json.dumps(found), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
