"""One pool of 4 real gloo processes per test session (per xdist worker), reused by every
distributed test: spawning costs seconds, a job on running ranks costs milliseconds."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from eagle3_contracts.parallel.launch import ProcessGroupPool

POOL_RANKS = 4  # the largest pipeline / tensor-parallel size the tests use


@pytest.fixture(scope="session")
def pool() -> Iterator[ProcessGroupPool]:
    with ProcessGroupPool(POOL_RANKS) as running:
        yield running
