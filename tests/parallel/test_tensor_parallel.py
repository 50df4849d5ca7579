"""Tensor-parallel capture on real gloo processes: column/row-sharded blocks with all-reduce give
the same state on every rank, equal to the unsharded capture within fp32 tolerance (bit-exact at
tp_size 1); a rank capturing before its all-reduce is rejected with that diagnosis."""

from __future__ import annotations

import pytest
import torch
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from eagle3_contracts.contract import CaptureContract
from eagle3_contracts.errors import ContractError, ContractViolation
from eagle3_contracts.parallel import (
    AFTER_ALL_REDUCE,
    BEFORE_ALL_REDUCE,
    run_tensor_parallel,
    verify_tensor_parallel_capture,
)
from eagle3_contracts.parallel.tensor import ATOL, RTOL, check_tp_size
from eagle3_contracts.testing.strategies import padded_batches
from eagle3_contracts.testing.synthetic import SyntheticConfig

pytestmark = pytest.mark.distributed

PHASES = (Phase.explicit, Phase.reuse, Phase.generate)


@st.composite
def tp_cases(draw: st.DrawFn) -> tuple[SyntheticConfig, CaptureContract, int]:
    num_layers = draw(st.integers(1, 4), label="num_layers")
    config = SyntheticConfig(
        num_layers=num_layers,
        hidden_size=draw(st.sampled_from((16, 32)), label="hidden_size"),
        style=draw(st.sampled_from(("residual", "fused")), label="style"),
        position_embeddings=draw(st.booleans(), label="position_embeddings"),
        seed=draw(st.integers(0, 2**16), label="seed"),
    )
    ids = draw(st.sets(st.integers(-1, num_layers - 1), min_size=1, max_size=3), label="layer_ids")
    order = draw(st.sampled_from(("ascending", "as_listed")), label="order")
    contract = CaptureContract(
        tuple(draw(st.permutations(sorted(ids)))), num_layers, config.hidden_size, order
    )
    return config, contract, draw(st.sampled_from((1, 2, 4)), label="tp_size")


@settings(max_examples=10, deadline=None, phases=PHASES)
@given(case=tp_cases(), padded=st.none() | padded_batches(64, seq_len=st.integers(3, 8)))
def test_sharded_capture_is_identical_on_every_rank_and_equals_unsharded(
    pool, case, padded
) -> None:
    config, contract, tp_size = case
    kwargs = {} if padded is None else {"input_ids": padded[0], "attention_mask": padded[1]}
    run = verify_tensor_parallel_capture(config, contract, tp_size, pool=pool, **kwargs)
    assert len(run.captured) == tp_size
    assert run.identical_across_ranks  # exactly: every rank holds the all-reduced bits
    assert run.close and run.max_abs_error <= ATOL
    if tp_size == 1:
        assert torch.equal(run.captured[0], run.reference)  # no reduction: bit-exact


@settings(max_examples=8, deadline=None, phases=PHASES)
@given(case=tp_cases())
def test_capture_before_all_reduce_is_rejected_when_it_matters(pool, case) -> None:
    config, contract, tp_size = case
    if not BEFORE_ALL_REDUCE.affects(contract, tp_size):  # tp 1, or only the embedding
        run = verify_tensor_parallel_capture(
            config, contract, tp_size, capture_point=BEFORE_ALL_REDUCE, pool=pool
        )
        assert run.identical_across_ranks and run.close
        return
    with pytest.raises(ContractViolation) as info:
        verify_tensor_parallel_capture(
            config, contract, tp_size, capture_point=BEFORE_ALL_REDUCE, pool=pool
        )
    findings = info.value.findings
    layers = [n for n in contract.concat_ids if n >= 0]
    assert len(findings) == len(layers)  # one finding per layer id, none for the embedding
    for finding in findings:
        assert f"the {tp_size} ranks captured different states" in finding
        assert "captured before the all-reduce" in finding


def test_the_gap_to_the_unsharded_model_is_rounding_only(pool) -> None:
    config = SyntheticConfig(num_layers=4, hidden_size=32)
    contract = CaptureContract((-1, 0, 2, 3), 4, 32)
    exact = run_tensor_parallel(config, contract, 1, pool=pool)
    sharded = run_tensor_parallel(
        config, contract, 4, pool=pool, capture_point=AFTER_ALL_REDUCE.name
    )
    assert exact.max_abs_error == 0.0
    assert 0.0 <= sharded.max_abs_error <= ATOL
    # the embedding segment involves no matmul and no reduction: bit-exact at any tp size
    assert torch.equal(sharded.captured[3][..., :32], sharded.reference[..., :32])
    scale = float(sharded.reference.abs().max())
    assert sharded.max_abs_error <= 8 * torch.finfo(torch.float32).eps * scale * 32


@pytest.mark.parametrize(
    ("tp_size", "field", "words"),
    [(3, "tp_size", "does not divide the 4 attention heads"), (0, "tp_size", "positive")],
)
def test_bad_tp_size(tp_size, field, words) -> None:
    with pytest.raises(ContractError, match=words) as info:
        check_tp_size(SyntheticConfig(num_layers=2, hidden_size=16), tp_size)
    assert info.value.field == field


def test_bad_arguments_rejected_before_processes_start() -> None:
    config = SyntheticConfig(num_layers=2, hidden_size=16)
    with pytest.raises(ContractError) as info:
        run_tensor_parallel(config, CaptureContract((1,), 3, 16), 2)
    assert info.value.field == "model.num_layers"
    with pytest.raises(ContractError) as info:
        run_tensor_parallel(config, CaptureContract((1,), 2, 16), 2, capture_point="sometime")
    assert info.value.field == "capture_point"
    assert RTOL < 1e-5
