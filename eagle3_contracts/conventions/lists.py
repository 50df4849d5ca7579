"""System-name lists as people type them: one splitting rule for the command line and the
pytest ini, so ``--serve-with "sglang==0.5.23 vllm"``, ``--serve-with sglang==0.5.23,vllm``
and ``eagle3_serve_with = sglang==0.5.23, vllm`` name the same two systems."""

from __future__ import annotations

import re
from collections.abc import Iterable

_SPACED_OPERATOR = re.compile(r"\s*(==|:)\s*")
"""Spaces around ``==`` and ``:`` belong to one name (``vllm == 0.33.0 : v1``)."""

_SEPARATOR = re.compile(r"[\s,]+")


def split_names(items: Iterable[str]) -> list[str]:
    """Each item split at commas and whitespace into system names, in order, empties dropped
    (each name is then parsed by ``conventions.parse_system``)."""
    names: list[str] = []
    for item in items:
        joined = _SPACED_OPERATOR.sub(r"\1", item.strip())
        names.extend(part for part in _SEPARATOR.split(joined) if part)
    return names
