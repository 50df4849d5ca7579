"""Plain-text tables for the CLI reports (left-aligned columns, two spaces apart)."""

from __future__ import annotations

from collections.abc import Sequence


def text_table(rows: Sequence[Sequence[str]], indent: str = "") -> list[str]:
    """One line per row, each column padded to its widest cell; trailing spaces stripped."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [
        indent + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]
