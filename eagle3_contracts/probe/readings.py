"""Readings by hand of capture helpers that live outside the model files.

The placement reader sees that a model hands its capture callback into a helper
(``self.layer_communicator.prepare_attn_and_capture_last_layer_outputs``, ``attn_boundary.prepare``,
``residual_batch.final_norm``); *what* the helper stores is not in the model file. A person read
each helper once; the reading holds the SHA-256 prefixes of the helper sources that were read. A
release whose helper hashes to anything else gets "needs reading (helper changed)" in its table,
so a changed helper shows up as a golden diff instead of being trusted silently.
"""

from __future__ import annotations

import ast
import hashlib
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Reading:
    """What a helper stores when handed a capture, as read in the listed source versions."""

    callee: str  # the last name of the call in the model file ("prepare", "final_norm")
    file: str  # the wheel member holding the helper
    function: str  # the helper function whose source is hashed
    value: str  # what it stores, in placement's vocabulary
    read: str  # the evidence, in one sentence
    checked: tuple[str, ...]  # sha256[:12] of the helper sources that were read


READINGS: tuple[Reading, ...] = (
    Reading(
        callee="prepare_attn_and_capture_last_layer_outputs",
        file="sglang/srt/layers/communicator.py",
        function="prepare_attn_and_capture_last_layer_outputs",
        value="hidden+residual (hidden when residual is None)",
        read="appends `residual` right after `prepare_attn`, whose fused add+norm makes it "
        "hidden+residual; at layer 0 `prepare_attn` sets residual = hidden_states (embedding)",
        checked=("d3e2a6b3fc09", "3a8a0f5592c6", "82443633be26", "ecb6e25cb5e8"),
    ),
    Reading(
        callee="prepare",
        file="sglang/srt/layers/layer_boundary/stage.py",
        function="_prepare_attention",
        value="hidden+residual (hidden when residual is None)",
        read="capture(value + previous) from stream.export before the read, or the residual "
        "after the fused add; with no residual (layer 0) capture(value), the embedding. "
        "0.5.21 (stage.py:305, stream.finish, capture_output) and 0.5.22 (stage.py:341, "
        "_select/_prepare split) store the same values under other names",
        checked=("59b7e3c0b1ae", "eb64748c521d", "bd2fa724ba92"),
    ),
    Reading(
        callee="final_norm",
        file="sglang/srt/layers/layer_boundary/residual/batch.py",
        function="final_norm",
        value="hidden+residual",
        read="capture gets the updated residual of the final add, before the final norm",
        checked=("8459b23e46bc",),
    ),
)

_BY_CALLEE = {r.callee: r for r in READINGS}


def function_sha(path: Path, function: str) -> str | None:
    """sha256[:12] of the first ``def function`` in ``path`` (None when absent)."""
    if not path.exists():
        return None
    source = path.read_text(encoding="utf-8")
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef) and node.name == function:
            segment = ast.get_source_segment(source, node) or ""
            return hashlib.sha256(segment.encode()).hexdigest()[:12]
    return None


def resolve(callee: str, root: Path) -> tuple[str, dict[str, str]] | None:
    """The stored value a helper call stands for in the release at ``root``, and the evidence.

    None when no reading covers ``callee``; a reading whose helper changed gives
    ``"needs reading (helper changed)"``.
    """
    reading = _BY_CALLEE.get(callee)
    if reading is None:
        return None
    sha = function_sha(root / reading.file, reading.function)
    evidence = {"file": reading.file, "function": reading.function, "sha": sha or "absent"}
    if sha is None or sha not in reading.checked:
        return f"needs reading (helper {reading.function} changed)", evidence
    return reading.value, evidence
