"""What the shipped tables say across releases: where each rule changed, and how much of each
release's registry ``check`` answers (generated into the package data and the docs, offline).

``changes``: for consecutive shipped releases of an engine, every behaviour leaf that changed
(``render.behaviour``: an entry class's rule, default and placement; the id precedence; vLLM's
runner default), the first release showing the new value. Entry classes a release adds or drops
are counted, not listed. Committed as ``conventions/data/changes.json`` (what ``probe bisect``
would find, for every rule at once) and read by ``check --list``.

``coverage``: for every shipped release and every architecture its registry names, the kind of
answer ``conventions.predict`` gives a Llama-style drafter (ids ``[1, L//2-1, L-4]``, L = 32):
answered (segments), unsupported, crash or unknown. Committed as
``conventions/data/coverage.json``; ``tests/probe/test_release_coverage.py`` fails when a
release's unknown count grows.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from eagle3_contracts.conventions import EngineSpec, parse_system
from eagle3_contracts.conventions.predict import predict_feed
from eagle3_contracts.conventions.releases import (
    CHANGES_FILE,
    COVERAGE_FILE,
    ReleaseTable,
    load_table,
    shipped_releases,
)
from eagle3_contracts.probe import render
from eagle3_contracts.probe.fetch import version_key

KINDS: tuple[str, ...] = ("answered", "unsupported", "crash", "unknown")
"""Coverage columns, in order (``Feed.kind`` ``segments`` is *answered*)."""

COVERAGE_DEPTH = 32
COVERAGE_DRAFT: dict[str, Any] = {
    "architectures": ["LlamaForCausalLMEagle3"],
    "model_type": "llama",
    "num_hidden_layers": 1,
    "hidden_size": 4096,
    "eagle_aux_hidden_state_layer_ids": [1, COVERAGE_DEPTH // 2 - 1, COVERAGE_DEPTH - 4],
}
"""The drafter every coverage row is asked about (SpecForge's default ids at L = 32)."""


# -- where each rule changed ---------------------------------------------------------------------


def _behaviour(table: ReleaseTable) -> dict[str, Any]:
    out = render.behaviour(table)
    if table.runner is not None:
        out["runner"] = {"default": table.runner.default.value if table.runner.default else None}
    return out


def changes(tables: Iterable[ReleaseTable]) -> dict[str, Any]:
    """Per engine, the releases where a behaviour leaf changed, oldest first."""
    by_framework: dict[str, list[ReleaseTable]] = {}
    for table in tables:
        by_framework.setdefault(table.framework.value, []).append(table)
    out: dict[str, Any] = {}
    for framework, rows in sorted(by_framework.items()):
        log = []
        previous: dict[str, Any] | None = None
        prev_table: ReleaseTable | None = None
        for table in rows:
            now = render.flatten(_behaviour(table))
            if previous is not None and prev_table is not None:
                changed = [
                    {"path": path, "old": previous[path], "new": now[path]}
                    for path in sorted(set(previous) & set(now))
                    if previous[path] != now[path]
                ]
                added = len(set(table.classes) - set(prev_table.classes))
                dropped = len(set(prev_table.classes) - set(table.classes))
                if changed or added or dropped:
                    log.append(
                        {
                            "release": table.version,
                            "since": prev_table.version,
                            "changed": changed,
                            "classes_added": added,
                            "classes_dropped": dropped,
                        }
                    )
            previous, prev_table = now, table
        out[framework] = log
    return out


# -- coverage ------------------------------------------------------------------------------------


def _target(architecture: str) -> dict[str, Any]:
    return {
        "architectures": [architecture],
        "num_hidden_layers": COVERAGE_DEPTH,
        "hidden_size": 4096,
        "model_type": "coverage",
    }


def coverage_row(table: ReleaseTable) -> dict[str, Any]:
    """Answer kinds for every architecture the release registers (``KINDS`` counts, and the
    unknown architectures by name)."""
    spec = parse_system(table.release, field="serve_with")
    assert isinstance(spec, EngineSpec)
    counts = dict.fromkeys(KINDS, 0)
    unknown: list[str] = []
    for arch in sorted({*table.architectures, *table.unsupported_architectures}):
        kind = predict_feed(spec, COVERAGE_DRAFT, _target(arch)).kind
        column = "answered" if kind == "segments" else kind
        counts[column] += 1
        if column == "unknown":
            unknown.append(arch)
    return {**counts, "unknown_architectures": unknown}


def coverage(tables: Iterable[ReleaseTable]) -> dict[str, dict[str, Any]]:
    """``{"sglang==0.5.23": {"answered": n, ..., "unknown_architectures": [...]}, ...}``."""
    return {table.release: coverage_row(table) for table in tables}


# -- the generated files -------------------------------------------------------------------------


def shipped_tables() -> list[ReleaseTable]:
    """Every shipped engine table, typed, oldest first per engine."""
    return [load_table(fw, v) for fw, versions in shipped_releases().items() for v in versions]


def dumps_data(value: Any) -> str:
    return json.dumps(value, indent=1, sort_keys=True, ensure_ascii=True) + "\n"


def coverage_markdown(rows: Mapping[str, Mapping[str, Any]]) -> str:
    lines = [
        COVERAGE_HEADER,
        "| release | architectures | " + " | ".join(KINDS) + " |",
        "|---|---|" + "---|" * len(KINDS),
    ]
    totals = dict.fromkeys(KINDS, 0)
    for release, row in sorted(rows.items(), key=lambda kv: _release_key(kv[0])):
        total = sum(row[k] for k in KINDS)
        for k in KINDS:
            totals[k] += row[k]
        lines.append(f"| {release} | {total} | " + " | ".join(str(row[k]) for k in KINDS) + " |")
    lines.append(
        f"| **all {len(rows)} releases** | {sum(totals.values())} | "
        + " | ".join(str(totals[k]) for k in KINDS)
        + " |"
    )
    unknown = sorted({a for row in rows.values() for a in row["unknown_architectures"]})
    if unknown:
        lines += ["", "Architectures unknown in at least one release: " + ", ".join(unknown)]
    return "\n".join(lines) + "\n"


def _release_key(release: str) -> tuple[str, tuple[int, ...]]:
    framework, _, version = release.partition("==")
    return framework, version_key(version)


COVERAGE_HEADER = f"""\
# Coverage of the shipped release tables

<!-- generated by `python scripts/reprobe_releases.py` (probe.report.write_all) from the
     shipped tables; do not edit -->
For every shipped release and every architecture its registry names: the kind of answer
`check` gives a drafter with ids `{COVERAGE_DRAFT["eagle_aux_hidden_state_layer_ids"]}` on a
{COVERAGE_DEPTH}-layer target of that architecture. *answered*: the layers fed are read from the
release's code; *unsupported*: the class has no EAGLE-3 support in that release; *crash*: the
release's code fails for that drafter (the row says why); *unknown*: the code was not read
(the row names the line). `tests/probe/test_release_coverage.py` fails when a release's unknown
count grows.
"""


def changes_markdown(log: Mapping[str, Any]) -> str:
    lines = [
        "## Where each rule changed",
        "",
        "<!-- generated by `python scripts/reprobe_releases.py` from conventions/data/"
        "changes.json; do not edit -->",
        "Every probed behaviour leaf (an entry class's selection rule, default and placement, "
        "the id precedence, vLLM's runner default) that differs between consecutive shipped "
        "releases, at the first release with the new value (`check --list` prints the same). "
        "Entry classes a release adds or drops are counted.",
        "",
    ]
    for framework, entries in log.items():
        for entry in entries:
            head = f"- **{framework} {entry['release']}** (since {entry['since']})"
            counts = []
            for key, verb in (("classes_added", "added"), ("classes_dropped", "dropped")):
                if entry[key]:
                    n = entry[key]
                    counts.append(f"{n} entry class{'es' if n > 1 else ''} {verb}")
            lines.append(head + (": " + ", ".join(counts) if counts else ""))
            for change in entry["changed"][:12]:
                lines.append(f"  - `{change['path']}`: `{change['old']}` -> `{change['new']}`")
            if len(entry["changed"]) > 12:
                lines.append(f"  - ... {len(entry['changed']) - 12} more leaves")
    return "\n".join(lines) + "\n"


def releases_markdown() -> str:
    lines = ["## Shipped releases", ""]
    for framework, versions in shipped_releases().items():
        lines.append(f"- {framework} ({len(versions)}): " + ", ".join(versions))
    return "\n".join(lines) + "\n"


def write_all(data: Path, docs: Path) -> None:
    """Regenerate ``changes.json``, ``coverage.json`` and the docs pages from the tables."""
    tables = shipped_tables()
    log = changes(tables)
    rows = coverage(tables)
    (data / CHANGES_FILE).write_text(dumps_data(log))
    (data / COVERAGE_FILE).write_text(dumps_data(rows))
    (docs / "coverage.md").write_text(coverage_markdown(rows))
    (docs / "releases.md").write_text(releases_page(log))


def releases_page(log: Mapping[str, Any]) -> str:
    """``docs/readme/releases.md``: every shipped release, then where each rule changed."""
    return "# Shipped release tables\n\n" + releases_markdown() + "\n" + changes_markdown(log)
