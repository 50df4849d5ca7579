"""Read answers out of release tables: canonical layers fed, behaviour digests, diffs, README.

Everything here reads committed tables only (no network): the README table and the drift
comparison are generated from the same JSON the registry ships.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from eagle3_contracts.probe.selection import DEFAULT_RULES

FEATURED: tuple[str, ...] = (
    "llama.py", "qwen3.py", "qwen3_moe.py", "deepseek_v2.py", "kimi_k25.py", "glm4_moe_lite.py",
    "gpt_oss.py", "minimax_m2.py",
)  # fmt: skip
"""Model files shown by name in the README table (the rest are counted)."""

DRAFTERS: tuple[tuple[str, int, str], ...] = (
    ("boundaries_2_mid_L-3", 61, "[2, 30, 58], L=61 (Kimi-K2 / DeepSeek-V3)"),
    ("outputs_1_mid-1_L-4", 32, "[1, 15, 28], L=32 (Llama-3.1-8B)"),
    ("embedding_first", 61, "[-1, 2, 30], L=61"),
    ("none", 61, "no ids, L=61"),
)
"""README columns: (grid case, depth, label)."""


def _span_contains(span: str, boundary: int, num_layers: int) -> bool:
    """Whether ``boundary`` lies in a placement span (``"0..L-1"``, or one bound: ``"L"``)."""
    lo, _, hi = span.partition("..")
    return eval_bound(lo, num_layers) <= boundary <= eval_bound(hi or lo, num_layers)


def eval_bound(text: str, num_layers: int) -> int:
    """``"L-1"`` -> ``num_layers - 1`` (the placement vocabulary: ints, ``L``, ``L-k``)."""
    text = text.strip()
    if text.startswith("L"):
        return num_layers - int(text[2:] or 0) if "-" in text else num_layers
    return int(text)


def placement_of(table: dict[str, Any], key: str) -> dict[str, Any] | None:
    ref = table["classes"][key]["placement"]
    if "ambiguous" in ref:
        return None
    placement: dict[str, Any] = table["model_files"][ref["file"]]["placement"][ref["forward"]]
    return placement


def elements_of(table: dict[str, Any], key: str, case: str, num_layers: int) -> Any:
    """What the release's selection code stored for a grid case (list, or "raises X")."""
    grid_from = table["classes"][key].get("grid_from")
    if not grid_from:
        return None
    file, qual = grid_from.split(":", 1)
    row = table["model_files"].get(file, {}).get("functions", {}).get(qual)
    if row is None or "grid" not in row:
        return None
    return row["grid"][str(num_layers)].get(case)


def canonical_fed(table: dict[str, Any], key: str, case: str, num_layers: int) -> str:
    """Human answer: the canonical layers the release feeds for a grid case, or why none."""
    row = table["classes"][key]
    if row["needs_reading"] and not row["selection"].get("rule"):
        return "needs reading"
    if case == "none":  # the no-ids default, whichever function supplies it
        default = DEFAULT_RULES.get(row["selection"].get("default") or "")
        elements = default(num_layers) if default else None
    else:
        elements = elements_of(table, key, case, num_layers)
    placement = placement_of(table, key)
    if elements is None or placement is None or "boundary_minus_element" not in placement:
        return "needs reading"
    if isinstance(elements, str):
        return elements
    offset = placement["boundary_minus_element"]
    out = []
    for e in elements:
        b = e + offset
        if not any(_span_contains(s, b, num_layers) for s in placement["elements"]):
            out.append(f"✗(b={b})")
        elif b == 0 and placement["embedding"].startswith("raises"):
            out.append("crash(-1)")
        else:
            out.append(str(b - 1))
    return ", ".join(out)


def readme_table(tables: Iterable[dict[str, Any]]) -> str:
    """The markdown table of which release and model file feeds a drafter which layers."""
    lines = [
        "| release | model files | reads ids from | "
        + " | ".join(label for _, _, label in DRAFTERS)
        + " |",
        "|---|---|---|" + "---|" * len(DRAFTERS),
    ]
    for table in tables:
        release = f"{table['framework']} {table['version']}"
        reads = " then ".join(
            p.replace("eagle_aux_hidden_state_layer_ids", "ids")
            for p in (table["id_source"]["precedence"] or ["needs reading"])
        )
        groups: dict[tuple[str, ...], list[str]] = {}
        for key in table["classes"]:
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


def behaviour(table: dict[str, Any]) -> dict[str, Any]:
    """The facts a release's users feel, without line numbers or hashes (for release-to-release
    comparison): per entry class rule, default, placement; the id precedence."""
    out: dict[str, Any] = {"id_precedence": table["id_source"]["precedence"]}
    for key, row in table["classes"].items():
        placement = placement_of(table, key) or {}
        out[key] = {
            "rule": row["selection"].get("rule"),
            "default": row["selection"].get("default"),
            "elements": placement.get("elements"),
            "embedding": placement.get("embedding"),
            "last_output": placement.get("last_output"),
            "stores": sorted({s["value"] for s in placement.get("sites", [])}),
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
