"""Imported by the ranks' fork server: pay once for torch's lazily imported machinery.

The first synthetic target built in a process pulls in several hundred modules (the meta-device
initialisation path); building a one-layer target here makes every forked rank inherit them.
"""

from __future__ import annotations

from eagle3_contracts.testing.synthetic import SyntheticConfig, build_synthetic

build_synthetic(SyntheticConfig(num_layers=1, hidden_size=4))
