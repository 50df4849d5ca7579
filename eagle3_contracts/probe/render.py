"""Read answers out of release tables: canonical layers fed, behaviour digests, diffs, README.

Everything here reads tables through the typed model (``conventions.releases``), never
the network: the README table and the drift comparison come from the data the package ships.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from eagle3_contracts.conventions.releases import ArmsVerdict, Placement, ReleaseTable

FEATURED: tuple[str, ...] = (
    "llama.py", "qwen3.py", "qwen3_moe.py", "deepseek_v2.py", "kimi_k25.py", "glm4_moe_lite.py",
    "gpt_oss.py", "minimax_m2.py", "qwen3_5.py",
)  # fmt: skip
"""Model files shown by name in the README table (the rest are counted)."""

DRAFTERS: tuple[tuple[str, int, str], ...] = (
    ("boundaries_2_mid_L-3", 61, "[2, 30, 58], L=61 (Kimi-K2 / DeepSeek-V3)"),
    ("outputs_1_mid-1_L-4", 32, "[1, 15, 28], L=32 (Llama-3.1-8B)"),
    ("embedding_first", 61, "[-1, 2, 30], L=61"),
    ("none", 61, "no ids, L=61"),
)
"""README columns: (grid case, depth, label)."""


def placement_of(table: ReleaseTable, key: str) -> Placement | None:
    """The capture placement of entry class ``key`` (None when none was found)."""
    return table.classes[key].placement


def canonical_fed(table: ReleaseTable, key: str, case: str, num_layers: int) -> str:
    """Human answer: the canonical layers the release feeds for a grid case, or why none."""
    row = table.classes[key]
    if row.needs_reading and not row.selection.rule_name:
        return "needs reading"
    elements: Any
    if case == "none":  # the no-ids default, whichever function supplies it
        default = row.selection.default
        elements = default.elements(num_layers) if default else None
    else:
        elements = table.grid(row, case, num_layers)
    placement = row.placement
    if elements is None or placement is None or placement.boundary_minus_element is None:
        return "needs reading"
    if isinstance(elements, str):
        return elements
    arms = row.setter_arms
    if arms is not None and arms.verdict is ArmsVerdict.NOT_ARMED:
        return "crash(no aux)"  # the setter arms no capture site: nothing is collected
    out = []
    for e in elements:
        b = e + placement.boundary_minus_element
        if not placement.reaches(b, num_layers):
            out.append(f"✗(b={b})")
        elif b == 0 and placement.embedding_raises:
            out.append("crash(-1)")
        else:
            out.append(str(b - 1))
    return ", ".join(out)


def readme_table(tables: Iterable[ReleaseTable]) -> str:
    """The markdown table of which release and model file feeds a drafter which layers."""
    lines = [
        "| release | model files | reads ids from | "
        + " | ".join(label for _, _, label in DRAFTERS)
        + " |",
        "|---|---|---|" + "---|" * len(DRAFTERS),
    ]
    for table in tables:
        release = f"{table.framework.value} {table.version}"
        reads = " then ".join(
            p.replace("eagle_aux_hidden_state_layer_ids", "ids")
            for p in (table.precedence or ["needs reading"])
        )
        groups: dict[tuple[str, ...], list[str]] = {}
        for key in table.classes:
            answers = tuple(canonical_fed(table, key, case, n) for case, n, _ in DRAFTERS)
            groups.setdefault(answers, [])
            file = key.split(":", 1)[0]
            if file not in groups[answers]:
                groups[answers].append(file)
        ordered = sorted(groups.items(), key=lambda kv: (not _featured(kv[1]), kv[1]))
        for answers, files in ordered:
            if all(a == "needs reading" for a in answers) or not _featured(files):
                continue
            shown = [f for f in FEATURED if f in files]
            rest = len(files) - len(shown)
            names = ", ".join(f"`{f}`" for f in shown) + (f" + {rest} more" if rest else "")
            cells = " | ".join(answers)
            lines.append(f"| {release} | {names} | `{reads}` | {cells} |")
    return "\n".join(lines) + "\n"


def _featured(files: list[str]) -> bool:
    return any(f in FEATURED for f in files)


# -- behaviour digest and diffs ---------------------------------------------------------------


def behaviour(table: ReleaseTable) -> dict[str, Any]:
    """The facts a release's users feel, without line numbers or hashes (for release-to-release
    comparison): per entry class rule, default, placement; the id precedence."""
    out: dict[str, Any] = {"id_precedence": list(table.precedence)}
    for key, row in table.classes.items():
        placement = row.placement
        out[key] = {
            "rule": row.selection.rule_name,
            "default": row.selection.default_name,
            **(
                placement.digest()
                if placement
                else {"elements": None, "embedding": None, "last_output": None, "stores": []}
            ),
        }
    return out


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """``{"a": {"b": 1}}`` -> ``{"a/b": 1}`` (lists stay leaves)."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            out.update(flatten(v, f"{prefix}/{k}" if prefix else str(k)))
        return out
    return {prefix: value}


def diff(old: dict[str, Any], new: dict[str, Any], label: str) -> list[str]:
    """One line per changed leaf: ``label path: old -> new`` (path names file and rule)."""
    a, b = flatten(old), flatten(new)
    lines = []
    for path in sorted(set(a) | set(b)):
        if a.get(path, "<absent>") != b.get(path, "<absent>"):
            lines.append(
                f"{label} {path}: {a.get(path, '<absent>')!r} -> {b.get(path, '<absent>')!r}"
            )
    return lines
