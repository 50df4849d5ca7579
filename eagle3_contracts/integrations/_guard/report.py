"""The lines every engine integration prints: one at engine start per rank, one at the first
prefill when the guard cannot judge. Shared so that SGLang and vLLM say the same things the
same way (torch-free)."""

from __future__ import annotations

PREFIX = "eagle3-contracts"


def armed_line(
    where: str, *, guard: str | None, dump: str | None, runner: str, records: str
) -> str:
    """Engine start: what this rank will do at its first prefill."""
    return (
        f"{PREFIX} [{where}]: armed: guard {guard or 'off'}, dump {dump or 'off'}; "
        f"runner: {runner}; records: {records}"
    )


def not_applicable_line(where: str, reason: str) -> str:
    """Engine start: this rank does nothing, and why."""
    return f"{PREFIX} [{where}]: not applicable: {reason}; serving untouched"


def cannot_observe_line(where: str, why: str, what_to_set: str) -> str:
    """First prefill: the observation is incomplete, so nothing is judged."""
    return f"{PREFIX} guard [{where}]: cannot observe: {why}; {what_to_set}"


def installed_line(where: str, note: str) -> str:
    """Engine start: the installed engine is not the released wheel (or could not be compared),
    so the guard answers with the table of the code actually installed."""
    return f"{PREFIX} [{where}]: {note}"


def one_line(exc: BaseException) -> str:
    """An exception as one log line: its type and its words, whitespace folded."""
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
