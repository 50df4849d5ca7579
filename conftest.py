"""Repository-wide pytest setup: the hypothesis profile for this run.

The ``eagle3_contracts`` pytest plugin registers the ``eagle3-dev``, ``eagle3-ci`` and
``eagle3-gpu`` profiles without loading one; this repository loads ``eagle3-ci`` unless ``EAGLE3_HYPOTHESIS_PROFILE`` names another
(or ``--hypothesis-profile`` is passed, which wins).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest


def pytest_configure(config: pytest.Config) -> None:
    # Reports fit COLUMNS, else 100 columns off a terminal. pytest-xdist workers inherit
    # COLUMNS=80; the outputs the tests and docs pin are the 100-column default, and
    # tests/cli/test_width.py sets COLUMNS itself.
    os.environ.pop("COLUMNS", None)
    if config.getoption("hypothesis_profile", default=None):
        return
    from hypothesis import settings

    name = os.environ.get("EAGLE3_HYPOTHESIS_PROFILE", "eagle3-ci")
    try:  # eagle3-* profiles are registered by eagle3_contracts.testing.pytest_plugin
        settings.load_profile(name)
    except Exception as exc:  # hypothesis raises InvalidArgument for an unknown name
        raise pytest.UsageError(
            f"EAGLE3_HYPOTHESIS_PROFILE={name!r} is not a registered hypothesis profile: {exc}"
        ) from None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """This repository's ``-m gpu`` tests are the plugin's ``eagle3_gpu`` tests (skipped
    without CUDA); the plugin itself takes no generic marker name."""
    for item in items:
        if item.get_closest_marker("gpu") is not None:
            item.add_marker(pytest.mark.eagle3_gpu)


@pytest.fixture
def golden(eagle3_golden: object) -> object:
    """This repository's short name for the plugin's ``eagle3_golden`` fixture."""
    return eagle3_golden


@pytest.fixture(autouse=True)
def _one_torch_thread() -> Iterator[None]:
    """One intra-op torch thread per test: ``pytest -n 2`` on 2 cores would otherwise run
    2 x 2 torch threads, ~40x slower per small op. Restored after each test."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)
