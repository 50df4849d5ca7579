"""Shared output of the report-printing subcommands."""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Protocol


class Report(Protocol):
    """What ``emit`` prints: a report with a JSON form, a text form and an exit code."""

    @property
    def exit_code(self) -> int: ...

    def to_dict(self) -> dict[str, Any]: ...

    def render_text(self) -> str: ...


def emit(report: Report, as_json: bool) -> int:
    """Print ``report`` as indented JSON or as text; return its exit code, also when the
    reader closed stdout (``| head -1``): the verdict stands whether or not it was read."""
    code = report.exit_code
    try:
        print(json.dumps(report.to_dict(), indent=2) if as_json else report.render_text())
        sys.stdout.flush()
    except BrokenPipeError:
        drop_stdout()
    return code


def drop_stdout() -> None:
    """Point stdout at /dev/null after its reader went away, so later writes and the final
    flush succeed silently."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
