"""Shared output of the report-printing subcommands."""

from __future__ import annotations

import json
from typing import Any, Protocol


class Report(Protocol):
    """What ``emit`` prints: a report with a JSON form, a text form and an exit code."""

    @property
    def exit_code(self) -> int: ...

    def to_dict(self) -> dict[str, Any]: ...

    def render_text(self) -> str: ...


def emit(report: Report, as_json: bool) -> int:
    """Print ``report`` as indented JSON or as text; return its exit code."""
    print(json.dumps(report.to_dict(), indent=2) if as_json else report.render_text())
    return report.exit_code
