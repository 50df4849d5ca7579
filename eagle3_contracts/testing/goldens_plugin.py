"""pytest plugin for golden snapshots (``pytest11`` entry point ``eagle3_contracts_goldens``).

* ``eagle3_golden`` fixture: syrupy's ``snapshot`` assertion using ``GoldenExtension`` (one
  JSON file per assertion under ``goldens/``), with torch made deterministic for the test
  (seeds, ``torch.use_deterministic_algorithms(True)``, cuDNN deterministic, and
  ``CUBLAS_WORKSPACE_CONFIG=:4096:8`` when unset; everything restored after the test). No
  generic name (``golden``) is taken and no global state is changed at start-up: the plugin
  loads in every project that installs eagle3-contracts.
* ``--snapshot-update`` (or ``--snapshot-update-new-only``) under pytest-xdist is refused: goldens
  are written by one process, serially, so a rewrite is complete and reviewable.
  ``-p no:eagle3_contracts_goldens`` turns this plugin off for projects that do not use goldens.
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from eagle3_contracts.testing.goldens import GoldenExtension

if TYPE_CHECKING:
    from syrupy.assertion import SnapshotAssertion

CUBLAS_WORKSPACE = ":4096:8"
SEED = 0


def xdist_refusal(config: pytest.Config) -> str | None:
    """The one-line reason a snapshot update must not run in this session, or ``None``."""
    if hasattr(config, "workerinput"):  # an xdist worker: the controller already decided
        return None
    update = [
        flag
        for flag, dest in (
            ("--snapshot-update", "update_snapshots"),
            ("--snapshot-update-new-only", "update_new_snapshots_only"),
        )
        if config.getoption(dest, default=False)
    ]
    numprocesses = config.getoption("numprocesses", default=None)
    tx = config.getoption("tx", default=None)
    if not update or not (numprocesses or tx):
        return None
    workers = f"-n {numprocesses}" if numprocesses else "--tx"
    return (
        f"{update[0]} is refused under pytest-xdist ({workers}): goldens are written by one "
        f"process; rerun with -n 0 (or -p no:xdist)"
    )


def pytest_configure(config: pytest.Config) -> None:
    reason = xdist_refusal(config)
    if reason:
        raise pytest.UsageError(reason)


@contextmanager
def deterministic(seed: int = SEED) -> Iterator[None]:
    """Seed every RNG and turn on torch's deterministic algorithms; restore on exit."""
    import torch

    set_cublas = "CUBLAS_WORKSPACE_CONFIG" not in os.environ
    if set_cublas:  # cuBLAS reads it at its first call; restored below
        os.environ["CUBLAS_WORKSPACE_CONFIG"] = CUBLAS_WORKSPACE
    saved = (
        torch.are_deterministic_algorithms_enabled(),
        torch.is_deterministic_algorithms_warn_only_enabled(),
        torch.backends.cudnn.deterministic,
        torch.backends.cudnn.benchmark,
        random.getstate(),
    )
    cuda = torch.cuda.is_available() and torch.cuda.is_initialized()
    devices = list(range(torch.cuda.device_count())) if cuda else []
    with torch.random.fork_rng(devices=devices):
        random.seed(seed)
        torch.manual_seed(seed)  # seeds CUDA too
        torch.use_deterministic_algorithms(True)
        torch.backends.cudnn.deterministic = True
        torch.backends.cudnn.benchmark = False
        try:
            yield
        finally:
            torch.use_deterministic_algorithms(saved[0], warn_only=saved[1])
            torch.backends.cudnn.deterministic = saved[2]
            torch.backends.cudnn.benchmark = saved[3]
            random.setstate(saved[4])
            if set_cublas:
                os.environ.pop("CUBLAS_WORKSPACE_CONFIG", None)


@cache
def rooted_extension(root: Path) -> type[GoldenExtension]:
    """``GoldenExtension`` bounded to one pytest rootdir (one class per root, never mutated, so
    in-process ``pytester`` sessions cannot redirect the outer session's goldens)."""
    return type(GoldenExtension.__name__, (GoldenExtension,), {"root": root})


@pytest.fixture
def eagle3_golden(snapshot: SnapshotAssertion, request: pytest.FixtureRequest) -> Iterator[Any]:
    """``assert record == eagle3_golden``: compare with ``goldens/<module>/<test>.json``."""
    with deterministic():
        yield snapshot.use_extension(rooted_extension(Path(request.config.rootpath)))
