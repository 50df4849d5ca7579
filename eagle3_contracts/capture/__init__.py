"""Capture on real torch models: what a capture takes (the model's own facts, its checked
inputs) and hook capture of the k aux states (``hooks``), which layer each captured segment
really is (``identify``), proof that a capture function honours a contract (``verify``) and
loading targets (``targets``).
"""

from __future__ import annotations

from eagle3_contracts.capture.hooks import capture_hidden_states
from eagle3_contracts.capture.identify import identify_segments
from eagle3_contracts.capture.verify import verify_capture

__all__ = ["capture_hidden_states", "identify_segments", "verify_capture"]
