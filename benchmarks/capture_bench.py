"""Capture cost, measured side by side in one run (CPU): wall time and peak extra memory.

    python benchmarks/capture_bench.py            # L=32, H=1024, batch 4 x 512 tokens
    python benchmarks/capture_bench.py --layers 8 --hidden 128 --tokens 64 --reps 2   # smoke

Modes, interleaved within each repetition so machine noise hits all alike:

* ``plain``: ``model(input_ids)`` — the forward a server runs anyway;
* ``capture``: ``capture_hidden_states(model, ids, ids_)`` for the EAGLE default ids
  (1, L//2-1, L-4) (stops after layer L-4) and for ids reaching the last layer (2, L//2, L-1);
* ``all states``: ``model(input_ids, output_hidden_states=True)`` — keeping all L+1 states.

Targets: capture time within 5% of ``plain``; peak extra memory over ``plain`` close
to k/(L+1) of the ``all states`` extra. Memory is the process RSS sampled every 0.2 ms during
the call (glibc is told to serve every allocation >= 64 KiB by mmap, so freed tensors leave
RSS at once); the state bytes each mode must retain are printed too.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

MMAP_ENV = "MALLOC_MMAP_THRESHOLD_"

if MMAP_ENV not in os.environ:  # re-exec once so glibc reads it at start-up
    os.environ[MMAP_ENV] = "65536"
    os.execv(sys.executable, [sys.executable, *sys.argv])

import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from eagle3_contracts.capture.hooks import capture_hidden_states  # noqa: E402
from eagle3_contracts.testing.synthetic import SyntheticConfig, build_synthetic  # noqa: E402

PAGE = os.sysconf("SC_PAGE_SIZE")


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


def measure(fn: Callable[[], object]) -> tuple[float, float, int]:
    """(wall seconds, main-thread CPU seconds, peak RSS above the start) of one call.

    With one torch thread all compute runs on the calling thread, so its CPU time is the cost
    of the call even on a loaded machine (wall time then includes waiting for a core).
    """
    base = rss()
    peak = [base]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], rss())
            time.sleep(0.0002)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    start, cpu_start = time.perf_counter(), time.thread_time()
    out = fn()
    wall, cpu = time.perf_counter() - start, time.thread_time() - cpu_start
    peak[0] = max(peak[0], rss())
    done.set()
    sampler.join()
    del out
    return wall, cpu, peak[0] - base


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--layers", type=int, default=32)
    parser.add_argument("--hidden", type=int, default=1024)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--tokens", type=int, default=512)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None, help="torch intra-op threads")
    args = parser.parse_args()
    if args.layers < 8:
        parser.error("--layers must be >= 8 so the ids (1, L//2-1, L-4) are distinct")
    if args.threads:
        torch.set_num_threads(args.threads)
    L, H = args.layers, args.hidden
    t0 = time.perf_counter()
    model = build_synthetic(SyntheticConfig(L, H, vocab_size=1000, seed=0))
    build_s = time.perf_counter() - t0
    ids = torch.randint(
        0, 1000, (args.batch, args.tokens), generator=torch.Generator().manual_seed(0)
    )
    eagle = (1, L // 2 - 1, L - 4)
    deep = (2, L // 2, L - 1)
    state_bytes = args.batch * args.tokens * H * 4
    print(
        f"synthetic target L={L} H={H} ({sum(p.numel() for p in model.parameters()) / 1e6:.0f}M "
        f"params, built in {build_s:.1f} s), batch {args.batch} x {args.tokens} tokens, "
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, {args.reps} reps"
    )
    modes: dict[str, Callable[[], object]] = {
        "plain forward": lambda: model(ids),
        f"capture {eagle}": lambda: capture_hidden_states(model, ids, eagle),
        f"capture {deep}": lambda: capture_hidden_states(model, ids, deep),
        "output_hidden_states=True": lambda: model(ids, output_hidden_states=True),
    }
    with torch.no_grad():
        for fn in modes.values():  # warm-up
            fn()
        times: dict[str, list[float]] = {m: [] for m in modes}
        cpus: dict[str, list[float]] = {m: [] for m in modes}
        mems: dict[str, list[int]] = {m: [] for m in modes}
        for _ in range(args.reps):
            for name, fn in modes.items():
                wall, cpu, mem = measure(fn)
                times[name].append(wall)
                cpus[name].append(cpu)
                mems[name].append(mem)
    t = {m: statistics.median(v) for m, v in times.items()}
    c = {m: statistics.median(v) for m, v in cpus.items()}
    mem = {m: statistics.median(v) for m, v in mems.items()}
    plain, allstates = "plain forward", "output_hidden_states=True"
    k = 3
    print(
        f"\n{'mode':<28}{'wall s':>9}{'vs plain':>9}{'cpu s':>9}{'vs plain':>9}"
        f"{'peak MiB':>10}{'extra MiB':>10}"
    )
    for m in modes:
        print(
            f"{m:<28}{t[m]:>9.2f}{t[m] / t[plain]:>9.3f}{c[m]:>9.2f}{c[m] / c[plain]:>9.3f}"
            f"{mem[m] / 2**20:>10.1f}{(mem[m] - mem[plain]) / 2**20:>10.1f}"
        )
    extra_all = mem[allstates] - mem[plain]
    print(
        f"\nstate size {state_bytes / 2**20:.1f} MiB; capture retains k={k} states "
        f"({k * state_bytes / 2**20:.0f} MiB), output_hidden_states L+1={L + 1} "
        f"({(L + 1) * state_bytes / 2**20:.0f} MiB)"
    )
    print(f"target memory ratio k/(L+1) = {k / (L + 1):.3f}")
    for m in (f"capture {eagle}", f"capture {deep}"):
        ratio = (mem[m] - mem[plain]) / extra_all if extra_all > 0 else float("nan")
        print(
            f"{m}: time ratio wall {t[m] / t[plain]:.3f}, cpu {c[m] / c[plain]:.3f} "
            f"(target <= 1.05); extra-memory ratio vs output_hidden_states {ratio:.3f} "
            f"(target ~ {k / (L + 1):.3f})"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
