"""CPU goldens: every ``MODEL_CASES`` capture (synthetic variants, tiny random HF models) in
float32, locked in ``goldens/capture/test_golden_models/``; and proof that a changed id, order or
capture point fails against those stored goldens with a diff naming the segment."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from eagle3_contracts.capture.hooks import capture_hidden_states
from eagle3_contracts.testing.golden_cases import (
    MODEL_CASES,
    ModelCase,
    assert_capture_golden,
    capture_record,
    model_case,
)
from eagle3_contracts.testing.goldens import GoldenExtension, compare_records, golden_dir, to_record

GOLDENS = golden_dir(Path(__file__))
CASES = [pytest.param(case, id=case.name) for case in MODEL_CASES]


@pytest.mark.parametrize("case", CASES)
def test_model_golden(case: ModelCase, golden: Any) -> None:
    assert_capture_golden(capture_record(case), golden)


def test_every_stored_golden_holds_its_contracts_layers_in_its_contracts_order() -> None:
    """Read the files, not the code: each case's golden shows the right ids in the right order."""
    for case in MODEL_CASES:
        path = GOLDENS / f"test_model_golden[{case.name}].json"
        assert path.is_file(), f"missing golden {path}; write it with --snapshot-update -n 0"
        stored = json.loads(path.read_text())
        contract = stored["contract"]
        assert contract == case.contract().to_dict()
        ids = contract["layer_ids"]
        assert stored["concat_order"] == (sorted(ids) if contract["order"] == "ascending" else ids)
        for p, segment in enumerate(stored["segments"]):
            assert segment["position"] == p
            assert segment["layer_id"] == segment["identified"] == stored["concat_order"][p]
            assert segment["near_miss"] is None
            h = contract["hidden_size"]
            assert segment["columns"] == [p * h, (p + 1) * h]
            assert segment["shape"] == [*stored["input"]["shape"], h]


def test_building_a_case_twice_gives_the_same_record_exactly() -> None:
    """Determinism: no RNG or allocation state leaks into a record (rtol 0 for every stat)."""
    exact = {"float32": 0.0}
    for name in ("synthetic-positions", "hf-qwen3_moe", "hf-deepseek_v3"):
        first, second = (to_record(capture_record(model_case(name))) for _ in range(2))
        torch.manual_seed(1234)  # a different global RNG state must not matter either
        third = to_record(capture_record(model_case(name)))
        assert compare_records(first, second, rtol=exact) == ()
        assert compare_records(first, third, rtol=exact) == ()


# -- the done-when: real mutated captures against the stored goldens ----------------------
def post_norm_last(model: Any, ids: Any, layer_ids: Any, *, order: str, attention_mask: Any) -> Any:
    """The classic bug: HF ``hidden_states[-1]`` (final norm applied) used as the last layer."""
    hidden = model(ids, attention_mask=attention_mask, output_hidden_states=True).hidden_states
    concat = sorted(layer_ids) if order == "ascending" else list(layer_ids)
    return torch.cat([hidden[n + 1] for n in concat], dim=-1)


def one_off(model: Any, ids: Any, layer_ids: Any, *, order: str, attention_mask: Any) -> Any:
    """Layer 1 captured as layer 2 (an offset applied to one id)."""
    ids_ = [2 if n == 1 else n for n in layer_ids]
    return capture_hidden_states(model, ids, ids_, order="as_listed", attention_mask=attention_mask)


def listed_order(model: Any, ids: Any, layer_ids: Any, *, order: str, attention_mask: Any) -> Any:
    """Config-list order where the contract says ascending (SpecForge HF backend vs engines)."""
    return capture_hidden_states(
        model, ids, layer_ids, order="as_listed", attention_mask=attention_mask
    )


@pytest.mark.parametrize(
    ("case_name", "capture", "expected"),
    [
        pytest.param(
            "hf-llama",
            post_norm_last,
            [
                "segment 2 (layer_id 3): identified: golden 3, received null",
                'segment 2 (layer_id 3): near_miss: golden null, received "final-norm output"',
            ],
            id="capture-point-post-norm",
        ),
        pytest.param(
            "hf-gpt2",
            one_off,
            ["segment 1 (layer_id 1): identified: golden 1, received 2"],
            id="one-id-changed",
        ),
        pytest.param(
            "synthetic-residual",
            lambda m, i, ids, **kw: listed_order(m, i, (4, -1, 2, 1), **kw),
            [
                "segment 0 (layer_id -1): identified: golden -1, received 4",
                "segment 1 (layer_id 1): identified: golden 1, received -1",
            ],
            id="order-changed",
        ),
    ],
)
def test_a_broken_capture_fails_its_golden_naming_the_segment(
    case_name: str, capture: Callable[..., Any], expected: list[str]
) -> None:
    case = model_case(case_name)
    stored = (GOLDENS / f"test_model_golden[{case_name}].json").read_text()
    ext = GoldenExtension()
    received = ext.serialize(capture_record(case, capture=capture))
    assert not ext.matches(serialized_data=received, snapshot_data=stored)
    lines = [line.strip() for line in ext.diff_lines(received, stored)]
    for line in expected:
        assert line in lines, "\n".join(lines)
    assert all(line.startswith(("segment", "golden drift")) for line in lines), lines


class _WritingGolden:
    """Stands in for the ``golden`` assertion under ``--snapshot-update``."""

    update_snapshots = True
    compared_while_updating: bool | None = None

    def __eq__(self, other: object) -> bool:
        self.compared_while_updating = self.update_snapshots
        return True


def test_a_broken_capture_is_never_written_as_a_golden() -> None:
    record = capture_record(model_case("hf-llama"), capture=post_norm_last)
    writer = _WritingGolden()
    with pytest.raises(
        AssertionError,
        match="not writing this golden: segment 2 should be layer 3 but is final-norm output",
    ):
        assert_capture_golden(record, writer)
    # compared (so syrupy keeps the existing golden as used) but never with the right to write
    assert writer.compared_while_updating is False
    assert writer.update_snapshots is True  # restored
