"""The acceptance oracle's throughput beside the target's plain forward, in one run (CPU, 1 thread).

    OMP_NUM_THREADS=1 python benchmarks/acceptance_bench.py            # the tiny trained fixture
    OMP_NUM_THREADS=1 python benchmarks/acceptance_bench.py --prompts 2 --reps 1   # smoke

Modes, interleaved within each repetition so machine noise hits all alike, on the same seeded
prompts and their greedy continuations (``new_tokens`` each):

* ``plain``: one forward of the target over each full sequence (prompt + continuation): the
  cheapest a measurement could be (tokens/s = sequence tokens / s);
* ``generate``: the target's greedy continuation with a KV cache (what the oracle must run to
  know the sequence an engine would serve);
* ``oracle``: ``measure`` for one wiring (generation, the forward with hooks and the k-draft
  chains from every anchor), and for ``--wirings`` wirings at once (one target pass shared).

Reported: tokens/s of each (tokens = sequence tokens), and the ratio oracle / plain.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from eagle3_contracts.acceptance.drafter import load_drafter
from eagle3_contracts.acceptance.fixture import DRAFTER, TARGET
from eagle3_contracts.acceptance.measure import measure
from eagle3_contracts.acceptance.prompts import greedy_prompts
from eagle3_contracts.acceptance.target import continue_greedy
from eagle3_contracts.capture.targets import load_target

WIRINGS = [(2, 6, 9), (-1, 1, 5), (1, 5, 8), (3, 7, 10)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=8)
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--k", type=int, default=4)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    target = load_target(TARGET)
    drafter, _ = load_drafter(DRAFTER)
    model = target.model
    prompts = list(greedy_prompts(args.prompts, target.vocab_size, seed=0))
    sequences = [continue_greedy(model, p, args.new_tokens) for p in prompts]
    tokens = sum(s.numel() for s in sequences)

    def plain() -> None:
        with torch.no_grad():
            for s in sequences:
                model(s[None], use_cache=False)

    def generate() -> None:
        for p in prompts:
            continue_greedy(model, p, args.new_tokens)

    def oracle(wirings: list[tuple[int, ...]]) -> None:
        measure(
            model, drafter, prompts, wirings, num_layers=target.num_layers, k=args.k,
            new_tokens=args.new_tokens,
        )  # fmt: skip

    modes = {
        "plain": plain,
        "generate": generate,
        "oracle, 1 wiring": lambda: oracle(WIRINGS[:1]),
        f"oracle, {len(WIRINGS)} wirings": lambda: oracle(WIRINGS),
    }
    times: dict[str, list[float]] = {m: [] for m in modes}
    for _ in range(args.reps):
        for name, fn in modes.items():
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    print(
        f"{target.describe()}; {args.prompts} prompts x (4 + {args.new_tokens}) tokens = "
        f"{tokens} tokens, k={args.k}, 1 thread, {args.reps} reps (median)"
    )
    base = statistics.median(times["plain"])
    for name, ts in times.items():
        t = statistics.median(ts)
        print(f"  {name:<22} {t:7.3f} s  {tokens / t:9.0f} tokens/s  {t / base:6.2f}x plain")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
