"""The committed tiny trained fixture: a 12-layer Llama target trained on this Python's standard
library sources, its byte-level BPE tokenizer, and an EAGLE-3 drafter trained on its layers
2, 6, 9 (``scripts/build_acceptance_fixture.py``; ``MANIFEST`` holds the command, the script's
sha256, seeds, corpus hash, losses and build times)."""

from __future__ import annotations

from pathlib import Path

DATA = Path(__file__).parent / "data" / "tiny-llama-12"
TARGET = DATA / "target"
DRAFTER = DATA / "drafter"
MANIFEST = DATA / "manifest.json"

TRAINED = (2, 6, 9)
"""Canonical ids the fixture drafter was trained on (also in its stamp)."""
SEED_ERROR = (-1, 1, 5)
"""The seed's wiring error on this target: the embedding inserted, the rest one layer early."""
