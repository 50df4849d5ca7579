"""The typed errors of eagle3-contracts.

Every error a user can trigger with bad input is one of these; each message names the field
(or file) at fault and what to change. The CLI turns any of them into one line and exit 2.
"""

from __future__ import annotations


def one_line(exc: BaseException) -> str:
    """An exception's message on one line (its type name when it has none), for error text."""
    return " ".join(str(exc).split()) or type(exc).__name__


class Eagle3ContractsError(Exception):
    """Base of every error this library raises on purpose."""


class ContractError(Eagle3ContractsError, ValueError):
    """A layer-id contract is invalid, or an id cannot be expressed in a convention.

    ``field`` names the offending field (``"layer_ids[2]"``, ``"num_layers"``) when known.
    """

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class ConfigError(Eagle3ContractsError, ValueError):
    """A drafter or target config file is unreadable, malformed or self-contradictory.

    ``source`` is the file path (or ``"<dict>"``), ``field`` the JSON path at fault.
    """

    def __init__(
        self, message: str, *, source: str | None = None, field: str | None = None
    ) -> None:
        prefix = f"{source}: " if source else ""
        super().__init__(prefix + message)
        self.source = source
        self.field = field


class DumpError(Eagle3ContractsError, ValueError):
    """A hidden-state dump file is unreadable, unsafe, or inconsistent with its target."""

    def __init__(self, message: str, *, source: str | None = None) -> None:
        prefix = f"{source}: " if source else ""
        super().__init__(prefix + message)
        self.source = source


class ContractViolation(Eagle3ContractsError, AssertionError):
    """A capture implementation does not feed the layers its contract promises.

    Raised by ``verify_capture``; the message says what is wrong and the likely cause.
    ``findings`` holds the individual problems found, when more than one.
    """

    def __init__(self, message: str, *, findings: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.findings = findings
