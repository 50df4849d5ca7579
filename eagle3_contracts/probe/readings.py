"""Readings by hand of capture helpers that live outside the model files.

The placement reader sees that a model hands its capture callback into a helper
(``self.layer_communicator.prepare_attn_and_capture_last_layer_outputs``, ``attn_boundary.prepare``,
``residual_batch.final_norm``), or stores what a helper returns (``snapshot(hidden_states,
residual)``); *what* the helper stores is not in the model file. A person read
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
        read="capture gets the updated residual of the final add, before the final norm "
        "(access.final_norm_pair). 0.5.22 (batch.py:59) refuses a capture only on a deferred "
        "MoE handoff, which its callers complete first (gpt_oss.py:724 complete_output)",
        checked=("8459b23e46bc", "b4f2e1d9f554"),
    ),
    Reading(
        callee="snapshot",
        file="sglang/srt/layers/layer_boundary/residual/access.py",
        function="snapshot",
        value="hidden+residual (hidden when residual is None)",
        read="access.py:141: a copy of hidden_states + residual for a plain residual, of "
        "hidden_states when residual is None (layer 0: the embedding), a ResidualStream's own "
        "snapshot (stream.py:207, the pending plain update applied) otherwise",
        checked=("032fbec053ca",),
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
