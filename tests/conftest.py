"""Fixtures shared across the test rooms: a tiny random-init llama and dumps captured from it."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:  # imported lazily: tests/engines run this conftest in the engines' own venvs
    import torch

MakeDump = Callable[..., Path]


@pytest.fixture(autouse=True, scope="session")
def user_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The user cache (``$XDG_CACHE_HOME/eagle3-contracts``) of every test is a fresh folder:
    no test reads tables a user probed, or writes where a user would look."""
    patch = pytest.MonkeyPatch()
    path = tmp_path_factory.mktemp("xdg-cache")
    patch.setenv("XDG_CACHE_HOME", str(path))
    yield path / "eagle3-contracts"
    patch.undo()


@pytest.fixture(scope="module")
def tiny_llama() -> tuple[torch.nn.Module, torch.Tensor]:
    """A 6-layer, 32-wide random-init llama (seed 7) and one sequence of 6 seeded tokens."""
    from eagle3_contracts.capture.hooks import seeded_input_ids
    from eagle3_contracts.testing.hf_models import build_tiny_hf, tiny_hf_config

    model = build_tiny_hf(tiny_hf_config("llama", num_layers=6, hidden_size=32), seed=7)
    return model, seeded_input_ids(96, 1, 6, seed=1)


@pytest.fixture(scope="session")
def make_dump() -> MakeDump:
    """``make_dump(tmp, name, model, ids, canonical, claim, convention)``: write a dump holding
    the canonical states ``canonical`` of ``model`` on ``ids``, in that order, claiming ``claim``
    in ``convention``."""
    import torch

    from eagle3_contracts.capture.hooks import capture_states
    from eagle3_contracts.dumps.format import write_dump

    def make(
        tmp: Path,
        name: str,
        model: torch.nn.Module,
        ids: torch.Tensor,
        canonical: Sequence[int],
        claim: Sequence[int],
        convention: str,
    ) -> Path:
        states = capture_states(model, ids, canonical)
        return write_dump(
            tmp / name,
            torch.cat([states[n] for n in canonical], dim=-1),
            ids,
            layer_ids=claim,
            convention=convention,
            system="test",
        )

    return make


@pytest.fixture
def wide_output(monkeypatch: pytest.MonkeyPatch) -> None:
    """A terminal wide enough that no line wraps: for tests that read the content of long lines
    and rows (how reports fit the terminal is tests/cli/test_width.py's)."""
    monkeypatch.setenv("COLUMNS", "1000")
