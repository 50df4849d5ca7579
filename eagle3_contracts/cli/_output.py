"""Shared output of the report-printing subcommands."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from typing import Any, Protocol

from eagle3_contracts.differences import fit_text

Progress = Callable[[str], None]


class Report(Protocol):
    """What ``emit`` prints: a report with a JSON form, a text form and an exit code."""

    @property
    def exit_code(self) -> int: ...

    def to_dict(self) -> dict[str, Any]: ...

    def render_text(self) -> str: ...


def emit(report: Report, as_json: bool) -> int:
    """Print ``report`` as indented JSON or as text fitted to the terminal (``fit_text``:
    ``COLUMNS``, 100 columns when stdout is not a terminal); return its exit code, also when
    the reader closed stdout (``| head -1``): the verdict stands whether or not it was read."""
    code = report.exit_code
    say(json.dumps(report.to_dict(), indent=2) if as_json else fit_text(report.render_text()))
    return code


def say(text: str) -> None:
    """Print ``text`` to stdout; a reader that went away (``| head -1``) is not an error."""
    try:
        print(text)
        sys.stdout.flush()
    except BrokenPipeError:
        drop_stdout()


def drop_stdout() -> None:
    """Point stdout at /dev/null after its reader went away, so later writes and the final
    flush succeed silently."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def progress(as_json: bool = False) -> Progress:
    """A reporter of long work's steps: one status line per step on stderr, with the seconds
    since the command started, only on a terminal (stdout and stderr both TTYs) and never
    under ``--json``. Piped or redirected output stays exactly the report."""
    start = time.monotonic()
    shown = not as_json and sys.stdout.isatty() and sys.stderr.isatty()

    def step(text: str) -> None:
        if shown:
            print(f"[{time.monotonic() - start:5.1f} s] {text}", file=sys.stderr, flush=True)

    return step


def start_torch_work(step: Progress) -> None:
    """Import torch (seconds on a loaded machine) and give our work a fair share of the cores
    (``capture.threads``); each said as a step."""
    step("importing torch")
    from eagle3_contracts.capture.threads import share_cores

    choice = share_cores()
    step(f"torch intra-op threads: {choice.threads} ({choice.reason})")
