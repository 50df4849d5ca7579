"""Probe released SGLang and vLLM wheels for how they pick, read and capture EAGLE-3 layers.

``fetch`` downloads a release's wheel with pip and keeps only the few files that matter (never
installing or importing anything); ``whitelist`` decides which functions are pure selections;
``selection`` evaluates those on recording stubs over a grid of ids and depths; ``idsource``
finds where the draft config's ids are read and in what precedence; ``placement`` reads each
model's forward loop statically; ``tables`` assembles one JSON table per release (the package
data, read through ``conventions.releases``); ``render``
turns tables into the README table and drift diffs. The command line is
``python -m eagle3_contracts.probe {refresh,check,bisect,table}``; only ``table`` and the tests
work offline.
"""

from __future__ import annotations

from eagle3_contracts.probe.frameworks import FRAMEWORKS, KNOWN_RELEASES, FrameworkSpec
from eagle3_contracts.probe.render import behaviour, canonical_fed, diff, readme_table
from eagle3_contracts.probe.tables import build_table, dumps
from eagle3_contracts.probe.whitelist import check_pure, compile_pure

__all__ = [
    "FRAMEWORKS",
    "KNOWN_RELEASES",
    "FrameworkSpec",
    "behaviour",
    "build_table",
    "canonical_fed",
    "check_pure",
    "compile_pure",
    "diff",
    "dumps",
    "readme_table",
]
