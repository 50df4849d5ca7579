"""eagle3-contracts: make the hidden-state wiring of EAGLE-3 speculative decoding provably right.

Public API (torch-using names are imported lazily, so config checking never pays for torch).
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from eagle3_contracts.contract import CaptureContract, Segment
from eagle3_contracts.errors import ConfigError, ContractError, ContractViolation, DumpError
from eagle3_contracts.layer_ids import (
    EMBEDDING,
    from_boundary,
    from_hf_index,
    to_boundary,
    to_hf_index,
)

__version__ = "0.1.0"

# name -> module that defines it; resolved on first access.
_LAZY: dict[str, str] = {
    "conventions": "eagle3_contracts.conventions",
    "to_canonical": "eagle3_contracts.conventions",
    "from_canonical": "eagle3_contracts.conventions",
    "resolve": "eagle3_contracts.config.plan",
    "compare": "eagle3_contracts.config.plan",
    "CapturePlan": "eagle3_contracts.config.plan",
    "capture_hidden_states": "eagle3_contracts.capture.hooks",
    "identify_segments": "eagle3_contracts.capture.identify",
    "verify_capture": "eagle3_contracts.capture.verify",
}

__all__ = [
    "EMBEDDING",
    "CaptureContract",
    "CapturePlan",
    "ConfigError",
    "ContractError",
    "ContractViolation",
    "DumpError",
    "Segment",
    "capture_hidden_states",
    "check_drafter",
    "compare",
    "conventions",
    "from_boundary",
    "from_canonical",
    "from_hf_index",
    "identify_segments",
    "resolve",
    "to_boundary",
    "to_canonical",
    "to_hf_index",
    "verify_capture",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        module = importlib.import_module(_LAZY[name])
        value = module if module.__name__.rsplit(".", 1)[-1] == name else getattr(module, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'eagle3_contracts' has no attribute {name!r}")


def check_drafter(
    draft: Any, *, serve_with: str | Sequence[Any] = (), **options: Any
) -> CheckReport:
    """Check one drafter: ``config.check.check_drafter`` (same arguments, same report), where a
    ``serve_with`` name may also be ``<engine>==installed[:runner]``, the engine installed in
    this Python environment, read from its source files (``probe.installed``: no download,
    local patches included). The report's notes say whether the installed files are the
    released wheel's, and name those that differ.

    The name is resolved here, where it enters, as the CLI's ``--serve-with`` is: ``config``
    sits below ``probe`` and takes only release names."""
    import dataclasses

    from eagle3_contracts.config.check import check_drafter as check

    named = [serve_with] if isinstance(serve_with, str) else list(serve_with)
    notes: list[str] = []
    if any(
        isinstance(name, str) and "installed" in name.lower() for name in named
    ):  # the probe is loaded only then
        from eagle3_contracts.probe.installed import resolve_names

        named, notes = resolve_names(named)
    report = check(draft, serve_with=tuple(named), **options)
    return dataclasses.replace(report, notes=(*report.notes, *notes)) if notes else report


def __dir__() -> list[str]:
    return sorted(__all__)


if TYPE_CHECKING:  # pragma: no cover
    from eagle3_contracts import conventions
    from eagle3_contracts.capture.hooks import capture_hidden_states
    from eagle3_contracts.capture.identify import identify_segments
    from eagle3_contracts.capture.verify import verify_capture
    from eagle3_contracts.config.check import CheckReport
    from eagle3_contracts.config.plan import CapturePlan, compare, resolve
    from eagle3_contracts.conventions import from_canonical, to_canonical
