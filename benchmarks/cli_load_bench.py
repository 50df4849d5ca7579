"""The torch commands on a shared machine: idle vs next to busy processes, side by side.

    python benchmarks/cli_load_bench.py                 # demo and diagnose, 2 busy processes
    python benchmarks/cli_load_bench.py --busy 2 --reps 2 --commands demo

Each command runs as a user runs it (the installed ``eagle3-contracts`` console script, a fresh
process, imports included) under two thread policies:

* ``shared``: no thread variable set, so the commands use the cores nobody else runs on
  (``eagle3_contracts.capture.threads``; the default);
* ``torch default``: ``OMP_NUM_THREADS`` = the usable cores, torch's own default count (what
  the commands did before, and what a user's own setting gets: it always wins);

each idle and next to ``--busy`` processes spinning in a Python loop (started before the
command, stopped after). The runs are interleaved per repetition so machine noise hits every
cell alike; the medians and the ratios loaded/idle and torch-default/shared are printed.
``diagnose`` reads the dumps a ``demo --out`` run writes first (the sglang#25454 step).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def console_script() -> str:
    beside = Path(sys.executable).parent / "eagle3-contracts"
    found = str(beside) if beside.exists() else shutil.which("eagle3-contracts")
    if found is None:
        raise SystemExit("no eagle3-contracts console script: pip install -e . first")
    return found


def env_for(policy: str, cores: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in THREAD_VARS}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    if policy == "torch default":
        env["OMP_NUM_THREADS"] = str(cores)
    return env


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, int]:
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, check=False)
    return time.perf_counter() - start, done.returncode


def busy_processes(n: int) -> list[subprocess.Popen[bytes]]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--busy", type=int, default=2, help="busy processes in the loaded runs")
    parser.add_argument("--reps", type=int, default=1)
    parser.add_argument("--commands", default="demo,diagnose")
    args = parser.parse_args()
    script = console_script()
    cores = len(os.sched_getaffinity(0))
    policies = ("shared", "torch default")
    with tempfile.TemporaryDirectory(prefix="eagle3-load-bench-") as tmp:
        out = Path(tmp) / "demo"
        subprocess.run(
            [script, "demo", "--out", str(out)],
            env=env_for("torch default", 1),
            capture_output=True,
            check=True,
        )
        commands = {
            "demo": [script, "demo"],
            "diagnose": [
                script,
                "diagnose",
                "--dump",
                str(out / "training.safetensors"),
                "--dump",
                str(out / "serving_sglang25454.safetensors"),
                "--target",
                str(out / "config.json"),
            ],
        }
        chosen = [c.strip() for c in args.commands.split(",") if c.strip()]
        times: dict[tuple[str, str, str], list[float]] = {}
        codes: set[int] = set()
        load_before = os.getloadavg()[0]
        for _ in range(args.reps):
            for load in ("idle", "loaded"):
                spinners = busy_processes(args.busy) if load == "loaded" else []
                try:
                    time.sleep(0.5 if spinners else 0)  # let the spinners reach the run queue
                    for name in chosen:
                        for policy in policies:
                            seconds, code = timed(commands[name], env_for(policy, cores))
                            times.setdefault((name, policy, load), []).append(seconds)
                            codes.add(code)
                finally:
                    for p in spinners:
                        p.kill()
                        p.wait()
    print(
        f"{cores} usable cores, {args.busy} busy processes in the loaded runs, {args.reps} "
        f"rep(s), load average {load_before:.1f} before the runs; exit codes {sorted(codes)}"
    )
    header = f"{'command':<10}{'threads':<15}{'idle s':>8}{'loaded s':>10}{'loaded/idle':>13}"
    print(header)
    med = {k: statistics.median(v) for k, v in times.items()}
    for name in chosen:
        for policy in policies:
            idle, loaded = med[(name, policy, "idle")], med[(name, policy, "loaded")]
            print(f"{name:<10}{policy:<15}{idle:>8.1f}{loaded:>10.1f}{loaded / idle:>12.2f}x")
    for name in chosen:
        for load in ("idle", "loaded"):
            ratio = med[(name, "torch default", load)] / med[(name, "shared", load)]
            print(f"{name} {load}: torch default / shared = {ratio:.2f}x")


if __name__ == "__main__":
    main()
