"""``python -m eagle3_contracts.probe {refresh,check,bisect,table}``.

refresh  probe releases (default: every shipped one) into the user's cache
         ($XDG_CACHE_HOME/eagle3-contracts/tables, else ~/.cache/eagle3-contracts/tables), read
         after the shipped tables; never the package or the working directory. --ship (for the
         maintainers' scripts/reprobe_releases.py) writes them into the package data instead,
         compactly: an entry several releases share is stored once in data/shared/
check    probe releases (default: the README table's) and compare with the package data; also
         probe the newest release on the index (--new) and compare its behaviour with the
         newest shipped table of its framework; exit 1 on any difference (the drift alarm run
         by ``tox -e registry``)
bisect   find the newest release whose draft-config reader behaves like an old one
table    render the README table from the committed tables (offline)

refresh, check and bisect need the package index (or sources already in the cache); table
does not. Sources are extracted into <user cache>/src, one release at a time.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from eagle3_contracts._io import replace_text
from eagle3_contracts.conventions import EngineSpec, TrainerSpec, parse_system
from eagle3_contracts.conventions.releases import (
    SHARED_DIR,
    ReleaseTable,
    TrainerTable,
    cache_dir,
    expand,
    shipped_releases,
)
from eagle3_contracts.errors import ContractError
from eagle3_contracts.probe import fetch, render
from eagle3_contracts.probe.frameworks import FRAMEWORKS, KNOWN_RELEASES, TRAINER_RELEASES, TRAINERS
from eagle3_contracts.probe.tables import build_table, compact, dumps, dumps_shared
from eagle3_contracts.probe.trainers import build_trainer_table

PACKAGE_DATA = Path(__file__).resolve().parent.parent / "conventions" / "data"
"""The shipped tables: what refresh writes, check compares with and table renders."""


def _releases(args: argparse.Namespace, every: bool = True) -> list[tuple[str, str]]:
    """The releases ``--release`` names (default: every shipped one, or with ``every=False``
    the README table's ``KNOWN_RELEASES``; and the trainers), plus the newest on the index with
    ``--new``; each once, in order."""
    if args.release:
        out = []
        for item in args.release:
            try:
                spec = parse_system(item, field="release")
            except ContractError as exc:
                raise SystemExit(f"--release {item}: {exc}") from None
            if not isinstance(spec, (EngineSpec, TrainerSpec)) or spec.version is None:
                raise SystemExit(f"--release takes framework==version, e.g. sglang==0.5.23: {item}")
            if spec.framework not in FRAMEWORKS and spec.framework not in TRAINERS:
                # z-lab's DFlash code has no wheel: conventions.trainers reads it by hand
                raise SystemExit(f"--release {item}: {spec.framework} has no wheel to probe")
            out.append((spec.framework, spec.version))
    else:
        out = [
            (fw, v)
            for known in (shipped_releases() if every else KNOWN_RELEASES, TRAINER_RELEASES)
            for fw, versions in known.items()
            for v in versions
        ]
    if args.new:
        out += [(fw, _newest(fw)) for fw in FRAMEWORKS]
    return list(dict.fromkeys(out))


def _newest(framework: str) -> str:
    versions = fetch.index_versions(FRAMEWORKS[framework])
    plain = [v for v in versions if all(p.isdigit() for p in v.split("."))]
    return max(plain or versions, key=fetch.version_key)


def _probe(framework: str, version: str, cache: Path | None) -> dict:
    spec = TRAINERS.get(framework) or FRAMEWORKS[framework]
    root = fetch.fetch(spec, version, cache)
    print(f"probed {framework}=={version}", file=sys.stderr)
    if framework in TRAINERS:
        table = build_trainer_table(version, root)
        TrainerTable.from_json(table)  # what is written reads through the typed model
        return table
    table = build_table(spec, version, root)
    ReleaseTable.from_json(table)
    return table


def _folder(base: Path, framework: str) -> Path:
    """Trainer tables live in a ``trainers/`` subfolder of the engine tables."""
    return base / "trainers" if framework in TRAINERS else base


def cmd_refresh(args: argparse.Namespace) -> int:
    probed: dict[str, dict[str, dict]] = {}
    for framework, version in _releases(args):
        table = _probe(framework, version, args.cache)
        if args.ship and framework in FRAMEWORKS:
            probed.setdefault(framework, {})[version] = table
            continue
        folder = _folder(args.data, framework) if args.ship else args.out or cache_dir()
        write(folder / f"{framework}-{version}.json", dumps(table))
        print(f"wrote {folder / f'{framework}-{version}.json'}", file=sys.stderr)
    for framework, tables in probed.items():
        ship(args.data, framework, tables)
    return 0


def write(path: Path, text: str) -> None:
    """Atomic: a concurrent reader sees the old table or the whole new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    replace_text(path, text, what="release table", error=ContractError)


def shipped_tables(data: Path, framework: str) -> dict[str, dict]:
    """Every table of ``framework`` in the data folder ``data``, shared entries expanded."""
    pool = _pool(data, framework)
    out = {}
    for path in data.glob(f"{framework}-*.json"):
        out[path.stem.split("-", 1)[1]] = expand(framework, json.loads(path.read_text()), pool)
    return out


def ship(data: Path, framework: str, tables: dict[str, dict]) -> None:
    """Add (or replace) ``tables`` in the package data, every table of the framework re-stored
    compactly against one shared pool (``tables.compact``)."""
    every = {**shipped_tables(data, framework), **tables}
    versions = sorted(every, key=fetch.version_key)
    small, pool = compact([every[v] for v in versions])
    for version, table in zip(versions, small, strict=True):
        write(data / f"{framework}-{version}.json", dumps(table))
    write(data / SHARED_DIR / f"{framework}.json", dumps_shared(pool))


def _shipped(data: Path, framework: str, version: str) -> dict | None:
    path = data / f"{framework}-{version}.json"
    if not path.exists():
        return None
    table: dict = json.loads(path.read_text())
    if framework in TRAINERS:
        return table
    return expand(framework, table, _pool(data, framework))


def _pool(data: Path, framework: str) -> dict:
    """The shared entries of ``framework`` in the data folder ``data`` (empty when none)."""
    path = data / SHARED_DIR / f"{framework}.json"
    pool: dict = json.loads(path.read_text()) if path.exists() else {}
    return pool


def cmd_check(args: argparse.Namespace) -> int:
    problems: list[str] = []
    for framework, version in _releases(args, every=False):  # the drift alarm: a few releases
        label = f"{framework}=={version}"
        new = _probe(framework, version, args.cache)
        old = _shipped(_folder(args.data, framework), framework, version)
        if old is not None:
            problems += render.diff(old, json.loads(dumps(new)), label)
            continue
        known = sorted(
            (p.stem.split("-", 1)[1] for p in args.data.glob(f"{framework}-*.json")),
            key=fetch.version_key,
        )
        older = [v for v in known if fetch.version_key(v) < fetch.version_key(version)]
        if not older:
            problems.append(f"{label}: no shipped table and no older one to compare with")
            continue
        base = _shipped(args.data, framework, older[-1])
        assert base is not None
        changes = render.diff(
            render.behaviour(ReleaseTable.from_json(base)),
            render.behaviour(ReleaseTable.from_json(new)),
            label,
        )
        problems += changes or [f"{label}: new release, behaviour as {older[-1]} (add it)"]
    for line in problems:
        print(line)
    return 1 if problems else 0


def cmd_bisect(args: argparse.Namespace) -> int:
    spec = FRAMEWORKS[args.framework]
    versions = sorted(
        (v for v in fetch.index_versions(spec) if all(p.isdigit() for p in v.split("."))),
        key=fetch.version_key,
    )
    lo, hi = versions.index(args.old), versions.index(args.new)

    def precedence(version: str) -> list[str] | None:
        try:
            return list(ReleaseTable.from_json(_probe(spec.name, version, args.cache)).precedence)
        except fetch.FetchError as exc:
            print(f"skip {version}: {exc}", file=sys.stderr)
            return None

    want = precedence(versions[lo])
    if precedence(versions[hi]) == want:
        print(f"{spec.name} {versions[hi]} still reads {want}")
        return 0
    while hi - lo > 1:
        mid = (lo + hi) // 2
        got = precedence(versions[mid])
        if got is None:  # no wheel for this platform: narrow from the top instead
            versions.pop(mid)
            hi -= 1
            continue
        lo, hi = (mid, hi) if got == want else (lo, mid)
    print(f"newest {spec.name} reading {want}: {versions[lo]}")
    print(f"first {spec.name} reading {precedence(versions[hi])}: {versions[hi]}")
    return 0


def cmd_table(args: argparse.Namespace) -> int:
    tables = []
    for fw, versions in KNOWN_RELEASES.items():
        for v in versions:
            table = _shipped(args.data, fw, v)
            assert table is not None, f"{fw}=={v} is in KNOWN_RELEASES but not shipped"
            tables.append(ReleaseTable.from_json(table))
    text = HEADER + render.readme_table(tables)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        old = args.out.read_text() if args.out.exists() else ""
        if START in old and END in old:  # keep the prose around the generated block
            head, _, rest = old.partition(START)
            tail = rest.partition(END)[2]
            text = f"{head}{START}\n{text}{END}{tail}"
        else:
            text = f"{START}\n{text}{END}\n"
        args.out.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


START = "<!-- registry-table:start -->"
END = "<!-- registry-table:end -->"


HEADER = """\
<!-- generated by `python -m eagle3_contracts.probe table --out docs/readme/registry.md`
     from the committed release tables; do not edit between the markers -->
Canonical layers (`N` = output of layer `N`, `-1` = embedding) that each release feeds a drafter
whose ids sit where that release reads them. `✗(b=k)` = the release asks for boundary `k`, which
its loop never captures (that drafter input is missing); `crash(-1)` = the embedding is requested
but the loop computes `hidden_states + None`; `crash(no aux)` = the EAGLE-3 setter arms no capture
site (the loop reads a flag only another setter sets), the model returns a bare tensor.

"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m eagle3_contracts.probe",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("refresh", "check"):
        p = sub.add_parser(name)
        p.add_argument("--release", action="append", help="framework==version (repeatable)")
        p.add_argument("--new", action="store_true", help="also the newest release on the index")
        p.add_argument("--cache", type=Path, help="extracted sources (default <user cache>/src)")
        p.add_argument("--data", type=Path, default=PACKAGE_DATA, help="the shipped tables")
    refresh = sub.choices["refresh"]
    refresh.add_argument("--out", type=Path, help="tables folder (default <user cache>/tables)")
    refresh.add_argument(
        "--ship", action="store_true", help="write into --data, compactly (maintainers)"
    )
    p = sub.add_parser("bisect")
    p.add_argument("framework", choices=sorted(FRAMEWORKS))
    p.add_argument("--old", required=True, help="a release with the old behaviour")
    p.add_argument("--new", required=True, help="a release with the new behaviour")
    p.add_argument("--cache", type=Path, help="extracted sources (default <user cache>/src)")
    p = sub.add_parser("table")
    p.add_argument("--data", type=Path, default=PACKAGE_DATA)
    p.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    handler = {
        "refresh": cmd_refresh,
        "check": cmd_check,
        "bisect": cmd_bisect,
        "table": cmd_table,
    }[args.command]
    try:
        return handler(args)
    except fetch.FetchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
