"""``check`` with every release shipped vs the package before it, side by side in one run.

    python benchmarks/registry_bench.py                    # base = the merge-base with main
    python benchmarks/registry_bench.py --base 385cbbc --reps 15

The base commit's ``eagle3_contracts`` (its code and its few release tables) is exported with
``git archive`` into a temporary folder; the working tree is the other side. Each repetition
runs, in fresh interpreters and in alternating order, ``check --example kimi-k2.5`` answered for
an old and a new release of each engine (``--serve-with sglang==0.5.14,vllm==0.33.0``: releases
both sides ship), plus ``check --list`` on the new side. Medians and the ratio new/base are
printed; the target is at most 1.2x (tables are read lazily: one release's table and its
engine's shared entries, never all of them).
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHECK = ["check", "--example", "kimi-k2.5", "--serve-with", "sglang==0.5.14,vllm==0.33.0"]
RUN = "import sys; from eagle3_contracts.cli import main; sys.exit(main(sys.argv[1:]))"


def export(commit: str, dest: Path) -> None:
    data = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", commit, "eagle3_contracts"],
        capture_output=True,
        check=True,
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(dest, filter="data")


def timed(root: Path, argv: list[str], cache: Path) -> float:
    env = {**os.environ, "PYTHONPATH": str(root), "XDG_CACHE_HOME": str(cache)}
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", RUN, *argv], env=env, capture_output=True)
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"{root}: {' '.join(argv)} exited {done.returncode}: {done.stderr!r}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", help="commit to compare with (default: merge-base with main)")
    parser.add_argument("--reps", type=int, default=9)
    args = parser.parse_args()
    base = (
        args.base
        or subprocess.run(
            ["git", "-C", str(ROOT), "merge-base", "HEAD", "main"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    with tempfile.TemporaryDirectory(prefix="eagle3-registry-bench-") as tmp:
        old = Path(tmp) / "base"
        export(base, old)
        cache = Path(tmp) / "empty-cache"  # no user tables on either side
        times: dict[str, list[float]] = {"base check": [], "new check": [], "new --list": []}
        for rep in range(args.reps):
            sides = [("base check", old), ("new check", ROOT)]
            for label, root in sides if rep % 2 == 0 else sides[::-1]:
                times[label].append(timed(root, CHECK, cache))
            times["new --list"].append(timed(ROOT, ["check", "--list"], cache))
    med = {k: statistics.median(v) for k, v in times.items()}
    for label, value in med.items():
        print(f"{label:12s} median {value * 1000:7.1f} ms over {args.reps} runs")
    print(f"base {base[:10]}: new/base check = {med['new check'] / med['base check']:.3f}x")


if __name__ == "__main__":
    main()
