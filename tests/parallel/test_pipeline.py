"""Pipeline-parallel capture on real gloo processes: the reference equals the single-process
capture exactly on every layout; each real bug is rejected naming the id, stage and cause."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from eagle3_contracts.capture.hooks import capture_hidden_states, seeded_input_ids
from eagle3_contracts.contract import CaptureContract
from eagle3_contracts.errors import ContractError, ContractViolation
from eagle3_contracts.layer_ids import describe
from eagle3_contracts.parallel import (
    PIPELINE_FAULTS,
    REFERENCE,
    LayerPartition,
    pipeline_capture,
    pipeline_risks,
    run_pipeline,
    verify_pipeline_capture,
)
from eagle3_contracts.parallel.faults import DROP_AUX, LAST_STAGE_ONLY, STAGE_LOCAL
from eagle3_contracts.parallel.strategies import Layout, pipeline_layouts
from eagle3_contracts.testing.strategies import padded_batches
from eagle3_contracts.testing.synthetic import SyntheticConfig, build_synthetic

pytestmark = pytest.mark.distributed

H = 16
# no shrinking: a failing layout is already small, and each shrink step runs real processes
PHASES = (Phase.explicit, Phase.reuse, Phase.generate)
MODEL_VARIANTS = st.fixed_dictionaries(
    {
        "style": st.sampled_from(("residual", "fused")),
        "position_embeddings": st.booleans(),
        "embed_scale": st.sampled_from((None, math.sqrt(H))),
        "seed": st.integers(0, 2**16),
    }
)


def _config(layout: Layout, variant: dict) -> SyntheticConfig:
    return SyntheticConfig(num_layers=layout.partition.num_layers, hidden_size=H, **variant)


@settings(max_examples=15, deadline=None, phases=PHASES)
@given(
    layout=pipeline_layouts(hidden_size=H),
    variant=MODEL_VARIANTS,
    padded=st.none() | padded_batches(64, seq_len=st.integers(3, 8)),
)
def test_reference_equals_single_process_capture(pool, layout, variant, padded) -> None:
    config = _config(layout, variant)
    input_ids, mask = (seeded_input_ids(64), None) if padded is None else padded[:2]
    run = run_pipeline(
        REFERENCE,
        config,
        layout.contract,
        layout.partition,
        input_ids=input_ids,
        attention_mask=mask,
        pool=pool,
    )
    expected = capture_hidden_states(
        build_synthetic(config),
        input_ids,
        list(layout.contract.layer_ids),
        order=layout.contract.order,
        attention_mask=mask,
    )
    assert torch.equal(run.captured, expected)  # exactly, in this (the parent) process too
    assert run.exact and run.findings() == ()
    # every stage captured exactly the ids it owns, and forwarded everything it received
    for log in run.stages:
        owned = {n for n in layout.contract.layer_ids if layout.partition.stage_of(n) == log.stage}
        assert set(log.captured) == owned
        assert log.dropped == ()


@settings(max_examples=12, deadline=None, phases=PHASES)
@given(layout=pipeline_layouts(hidden_size=H, order="ascending"), variant=MODEL_VARIANTS)
def test_each_fault_rejected_exactly_when_it_matters(pool, layout, variant) -> None:
    config = _config(layout, variant)
    risks = pipeline_risks(layout.contract.layer_ids, layout.partition)
    for fault in PIPELINE_FAULTS:
        if not fault.affects(layout.contract, layout.partition):
            report = verify_pipeline_capture(
                fault.path, config, layout.contract, layout.partition, pool=pool
            )
            assert report.run.exact  # the bug is invisible on this layout: no false alarm
            continue
        with pytest.raises(ContractViolation) as info:
            verify_pipeline_capture(
                fault.path, config, layout.contract, layout.partition, pool=pool
            )
        text = " | ".join(info.value.findings)
        assert fault.diagnosis in text, (fault.system.name, text)
        lost = {
            "STAGE_LOCAL": risks.stage_local_lost,
            "LAST_STAGE_ONLY": risks.last_stage_only_lost,
            "DROP_AUX": risks.dropped_at_boundary,
        }[fault.attribute]
        for n in lost:  # every lost id is named with the stage that owns it
            owner = layout.partition.stage_of(n)
            assert f"{describe(n, layout.contract.num_layers)} (owned by stage {owner}," in text, (
                text
            )


KIMI_LIKE = CaptureContract((2, 7, 10), num_layers=12, hidden_size=H)  # 2, 30, 58 of 61, scaled
KIMI_PARTITION = LayerPartition.even(12, 4)  # 3,3,3,3 -> layer 7 on stage 2, 10 on stage 3


@pytest.mark.parametrize(
    ("system", "expected"),
    [
        (
            STAGE_LOCAL,
            [
                "layer 7 (owned by stage 2, layers 6-8): never captured; a local loop index on "
                "stage 2 runs 0..2 and never equals the global id 7: stage-local indexing "
                "(vllm#36151) (seen on stage 1, 2, 3)",
                "layer 10 (owned by stage 3, layers 9-11)",
                "stage 1 captured layer 5 as layer 2, its local index there",
            ],
        ),
        (
            LAST_STAGE_ONLY,
            [
                "layer 2 (owned by stage 0, layers 0-2): never captured; no stage before the "
                "last (stage 3) captured anything: last-stage-only capture (sglang#39644)",
                "layer 7 (owned by stage 2, layers 6-8): never captured",
                "the last stage assembled width 16, the contract needs 48",
            ],
        ),
        (
            DROP_AUX,
            [
                "layer 2 (owned by stage 0, layers 0-2): captured on stage 0, but stage 1 "
                "received it but did not send it on: aux states dropped at a stage boundary "
                "(vllm#45985)",
                "layer 7 (owned by stage 2, layers 6-8): captured on stage 2, but stage 3 "
                "received it but did not send it on",
            ],
        ),
    ],
    ids=lambda v: getattr(v, "name", None),
)
def test_fault_diagnosis_names_stage_and_id(pool, system, expected) -> None:
    config = SyntheticConfig(num_layers=12, hidden_size=H, style="fused")
    with pytest.raises(ContractViolation) as info:
        verify_pipeline_capture(system, config, KIMI_LIKE, KIMI_PARTITION, pool=pool)
    text = " | ".join(info.value.findings)
    for words in expected:
        assert words in text
    assert str(info.value).startswith("pipeline capture eagle3_contracts.parallel.faults:")


def test_pipeline_capture_and_report(pool) -> None:
    config = SyntheticConfig(num_layers=12, hidden_size=H)
    captured = pipeline_capture(REFERENCE, config, KIMI_LIKE, KIMI_PARTITION, pool=pool)
    assert captured.shape == (2, 8, 3 * H)
    report = verify_pipeline_capture(REFERENCE, config, KIMI_LIKE, KIMI_PARTITION, pool=pool)
    assert report.ownership == ((2, 0), (7, 2), (10, 3))
    assert report.render_text() == (
        "eagle3_contracts.parallel.pipeline:REFERENCE: 4 stages: 0-2 | 3-5 | 6-8 | 9-11 "
        "(vllm rule); layer 2 -> stage 0, layer 7 -> stage 2, layer 10 -> stage 3; the capture "
        "equals the single-process capture exactly"
    )


def test_a_pool_of_exactly_pp_size_is_started_without_one() -> None:
    config = SyntheticConfig(num_layers=3, hidden_size=H)
    contract = CaptureContract((-1, 1, 2), 3, H)
    report = verify_pipeline_capture(REFERENCE, config, contract, LayerPartition((2, 1)))
    assert report.ownership == ((-1, 0), (1, 0), (2, 1))


# -- bad input: rejected before any process starts ------------------------------------------
@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"partition": LayerPartition((6, 5))}, "partition"),
        ({"model": SyntheticConfig(num_layers=12, hidden_size=32)}, "model.hidden_size"),
        ({"model": 42}, "model"),
        ({"system": "eagle3_contracts.parallel.pipeline:capture_stage"}, "system"),
        ({"contract": (2, 7, 10)}, "contract"),
    ],
)
def test_bad_arguments_raise_contract_error(kwargs, field) -> None:
    args = {
        "system": REFERENCE,
        "model": SyntheticConfig(num_layers=12, hidden_size=H),
        "contract": KIMI_LIKE,
        "partition": KIMI_PARTITION,
    }
    args.update(kwargs)
    with pytest.raises(ContractError) as info:
        run_pipeline(args["system"], args["model"], args["contract"], args["partition"])
    assert info.value.field == field


def test_pool_smaller_than_the_partition_is_rejected(pool) -> None:
    contract = CaptureContract((1,), 5, H)
    with pytest.raises(ContractError, match="4 ranks but the partition has 5 stages"):
        run_pipeline(
            REFERENCE, SyntheticConfig(5, H), contract, LayerPartition((1,) * 5), pool=pool
        )
