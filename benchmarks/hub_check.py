"""``check`` on config files vs the same check with Hub ids resolved from the HF cache.

Side by side in one run, each variant in fresh interpreters (``python -m eagle3_contracts
check ...``), alternating, fastest and median of ``--repeats``: wall seconds and process CPU
seconds (the latter robust to other processes sharing the cores). The cache is built in a
temporary folder in ``huggingface_hub``'s layout (``tests/hub/_cache.py``) and read with
``HF_HUB_OFFLINE=1``. Also reported: whether ``torch`` or ``huggingface_hub``'s download
module was imported by either run (``-X importtime``), and, for reference, the import cost of
``huggingface_hub.file_download`` that the cache path avoids.

    python benchmarks/hub_check.py --repeats 9
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.hub._cache import DRAFT, TARGET, add_repo, config_bytes  # noqa: E402

CHECK = ["--trained-with", "specforge", "--serve-with", "sglang==0.5.23", "vllm==0.33.0"]


def _run(argv: list[str], env: dict[str, str]) -> tuple[float, float, set[str]]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "eagle3_contracts", "check", *argv, *CHECK],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode not in (0, 1):
        raise SystemExit(f"check failed: {done.stderr[-500:]}")
    modules = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if "|" in line}
    return wall, cpu, modules


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / "hub"
        add_repo(cache, "org/draft", {"config.json": config_bytes(DRAFT)})
        add_repo(cache, "org/target", {"config.json": config_bytes(TARGET)})
        (Path(tmp) / "draft.json").write_text(json.dumps(DRAFT))
        (Path(tmp) / "target.json").write_text(json.dumps(TARGET))
        env = {
            **os.environ,
            "HF_HUB_CACHE": str(cache),
            "HF_HUB_OFFLINE": "1",
            "PYTHONPATH": str(ROOT),
            "OMP_NUM_THREADS": "1",
        }
        variants = {
            "config files": [f"{tmp}/draft.json", "--target", f"{tmp}/target.json"],
            "Hub ids (HF cache)": ["org/draft", "--target", "org/target"],
        }
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in variants}
        imported: dict[str, set[str]] = {}
        for _ in range(args.repeats):
            for name, argv in variants.items():
                wall, cpu, modules = _run(argv, env)
                times[name].append((wall, cpu))
                imported[name] = modules
    base_wall = min(w for w, _ in times["config files"])
    base_cpu = min(c for _, c in times["config files"])
    print(f"check, fastest / median of {args.repeats} fresh interpreters (wall s, CPU s):")
    for name, runs in times.items():
        walls, cpus = [w for w, _ in runs], [c for _, c in runs]
        heavy = sorted(m for m in imported[name] if m in ("torch", "huggingface_hub.file_download"))
        print(
            f"  {name:<20} wall {min(walls):.3f} / {statistics.median(walls):.3f}  "
            f"cpu {min(cpus):.3f} / {statistics.median(cpus):.3f}  "
            f"ratio wall {min(walls) / base_wall:.2f} cpu {min(cpus) / base_cpu:.2f}  "
            f"heavy imports: {heavy or 'none'}"
        )
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "import time; t = time.perf_counter(); "
            "import huggingface_hub.file_download; print(time.perf_counter() - t)",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    print(f"  (import huggingface_hub.file_download alone: {float(probe.stdout):.3f} s, avoided)")


if __name__ == "__main__":
    main()
