"""Public hypothesis strategies (moved to ``eagle3_contracts.testing.strategies``; this path
stays the documented import)."""

from __future__ import annotations

from eagle3_contracts.testing.strategies import *  # noqa: F403
from eagle3_contracts.testing.strategies import __all__ as __all__
