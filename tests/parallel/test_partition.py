"""``LayerPartition``: the engines' split rules, explicit partitions, ownership (no processes)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eagle3_contracts.errors import ContractError
from eagle3_contracts.parallel import SPLIT_RULES, LayerPartition, stage_ownership


@dataclass(frozen=True)
class SplitCase:
    """One default split read from (or checked against) an engine's own source/tests."""

    rule: str  # SPLIT_RULES key
    num_layers: int
    pp_size: int
    sizes: tuple[int, ...]  # expected per-stage counts
    source: str  # where the expectation comes from


SPLIT_CASES = (
    SplitCase("vllm", 20, 4, (5, 5, 5, 5), "vllm tests/distributed/test_pipeline_partition.py"),
    SplitCase("vllm", 5, 3, (2, 2, 1), "vllm tests/distributed/test_pipeline_partition.py"),
    SplitCase("vllm", 7, 3, (2, 3, 2), "vllm get_pp_indices: remainder on the middle stage"),
    SplitCase("vllm", 61, 4, (15, 15, 16, 15), "vllm#46217 table, DeepSeek-V3.1 'before'"),
    SplitCase("vllm", 94, 4, (23, 24, 24, 23), "vllm#46217 table, Qwen3-235B 'before'"),
    SplitCase("vllm", 61, 8, (7, 7, 8, 8, 8, 8, 8, 7), "sglang#6666 (vLLM's rule), DeepSeek-R1"),
    SplitCase("vllm", 43, 10, (4, 4, 4, 4, 4, 4, 5, 5, 5, 4), "vllm get_pp_indices"),
    SplitCase("sglang", 61, 4, (15, 15, 15, 16), "sglang get_pp_indices after sglang#13977"),
    SplitCase("sglang", 61, 8, (7, 7, 7, 8, 8, 8, 8, 8), "sglang get_pp_indices after #13977"),
    SplitCase(
        "sglang-before-13282", 61, 8, (7, 7, 7, 7, 7, 7, 7, 12), "sglang#13282 'original impl'"
    ),
    SplitCase("sglang-before-13282", 94, 8, (11,) * 7 + (17,), "sglang#9798 (94 layers, PP=8)"),
)


@pytest.mark.parametrize("case", SPLIT_CASES, ids=lambda c: f"{c.rule}-{c.num_layers}x{c.pp_size}")
def test_even_matches_engine(case: SplitCase) -> None:
    partition = LayerPartition.even(case.num_layers, case.pp_size, rule=case.rule)
    assert partition.sizes == case.sizes, case.source
    assert partition.rule == case.rule


def test_even_default_rule_is_vllm_and_reported() -> None:
    partition = LayerPartition.even(61, 4)
    assert partition.rule == "vllm"
    assert "vllm rule" in partition.describe()
    assert LayerPartition.from_sizes((15, 15, 16, 15)).rule == "explicit"
    assert partition == LayerPartition((15, 15, 16, 15))  # rule is provenance, not identity


def test_kimi_ids_over_four_stages() -> None:
    partition = LayerPartition.even(61, 4)
    assert partition.describe() == "4 stages: 0-14 | 15-29 | 30-45 | 46-60 (vllm rule)"
    assert stage_ownership([58, 2, 30, -1], partition) == ((58, 3), (2, 0), (30, 2), (-1, 0))
    assert partition.local_index(58) == 12  # what a stage-local loop sees (vllm#36151)
    assert partition.local_index(-1) == -1
    assert partition.is_stage_boundary(14) and not partition.is_stage_boundary(60)


# -- explicit partitions: validation names the field ---------------------------------------
@pytest.mark.parametrize(
    ("sizes", "kwargs", "field", "words"),
    [
        ((15, 0, 46), {}, "pp_partition[1]", "at least one layer"),
        ((15, -2, 48), {}, "pp_partition[1]", "at least one layer"),
        ((15, 1.5, 45), {}, "pp_partition[1]", "positive integer"),
        ((True, 60), {}, "pp_partition[0]", "positive integer"),
        ((), {}, "pp_partition", "empty"),
        ((30, 30), {"num_layers": 61}, "pp_partition", "sums to 60"),
        ((30, 31), {"num_layers": 61, "pp_size": 4}, "pp_partition", "2 stages but pp_size = 4"),
        ((30, 31), {"pp_size": 0}, "pp_size", "positive integer"),
        ((30, 31), {"num_layers": 0}, "num_layers", ">= 1"),
    ],
)
def test_from_sizes_rejects(sizes, kwargs, field, words) -> None:
    with pytest.raises(ContractError, match=words) as info:
        LayerPartition.from_sizes(sizes, **kwargs)
    assert info.value.field == field


def test_from_sizes_custom_field_name_and_direct_construction() -> None:
    with pytest.raises(ContractError) as info:
        LayerPartition.from_sizes([3, 0], field_name="VLLM_PP_LAYER_PARTITION")
    assert info.value.field == "VLLM_PP_LAYER_PARTITION[1]"
    with pytest.raises(ContractError) as info:
        LayerPartition((4, 0))
    assert info.value.field == "sizes[1]"
    with pytest.raises(ContractError) as info:
        LayerPartition("4,4")  # type: ignore[arg-type]
    assert info.value.field == "sizes"


@pytest.mark.parametrize(
    ("text", "field", "words"),
    [("15,x,46", "pp_partition[1]", "not an integer"), ("", "pp_partition[0]", "not an integer")],
)
def test_parse_rejects(text: str, field: str, words: str) -> None:
    with pytest.raises(ContractError, match=words) as info:
        LayerPartition.parse(text, num_layers=61)
    assert info.value.field == field


def test_parse_accepts_engine_syntax() -> None:
    assert LayerPartition.parse(" 15, 15,16 ,15", num_layers=61, pp_size=4).sizes == (
        15,
        15,
        16,
        15,
    )


def test_parse_takes_a_sequence_as_sizes() -> None:
    assert LayerPartition.parse((15, 15, 16, 15), num_layers=61).sizes == (15, 15, 16, 15)
    with pytest.raises(ContractError, match="sums to 46") as info:
        LayerPartition.parse([15, 15, 16], num_layers=61)
    assert info.value.field == "pp_partition"


def test_capturing_stage_before_layer_moves_a_boundary_id_to_the_next_stage() -> None:
    p = LayerPartition((4, 4))
    assert [p.capturing_stage(n) for n in (-1, 3, 4, 7)] == [0, 0, 1, 1]
    # canonical 3 taken entering layer 4 runs on stage 1; the last layer's output stays put
    assert [p.capturing_stage(n, before_layer=True) for n in (-1, 2, 3, 7)] == [0, 0, 1, 1]
    with pytest.raises(ContractError):
        p.capturing_stage(8, before_layer=True)


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda: LayerPartition.even(3, 4), "pp_size"),
        (lambda: LayerPartition.even(8, 2, rule="trtllm"), "rule"),
        (lambda: LayerPartition.even(8, True), "pp_size"),
        (lambda: LayerPartition((4, 4)).stage_of(8), "layer_id"),
        (lambda: LayerPartition((4, 4)).stage_of(-2), "layer_id"),
        (lambda: LayerPartition((4, 4)).stage_range(2), "stage"),
        (lambda: stage_ownership([1, 9], LayerPartition((4, 4))), "layer_ids[1]"),
    ],
)
def test_bad_arguments_name_the_field(call, field: str) -> None:
    with pytest.raises(ContractError) as info:
        call()
    assert info.value.field == field


# -- properties over every rule and random explicit partitions ------------------------------
@st.composite
def partitions(draw: st.DrawFn, max_stages: int = 8, max_size: int = 12) -> LayerPartition:
    sizes = draw(st.lists(st.integers(1, max_size), min_size=1, max_size=max_stages))
    return LayerPartition(tuple(sizes))


@settings(max_examples=60, deadline=None)
@given(
    num_layers=st.integers(1, 128),
    pp_size=st.integers(1, 16),
    rule=st.sampled_from(sorted(SPLIT_RULES)),
)
def test_even_is_a_partition(num_layers: int, pp_size: int, rule: str) -> None:
    if pp_size > num_layers:
        with pytest.raises(ContractError):
            LayerPartition.even(num_layers, pp_size, rule=rule)
        return
    sizes = LayerPartition.even(num_layers, pp_size, rule=rule).sizes
    assert len(sizes) == pp_size and sum(sizes) == num_layers and min(sizes) >= 1
    if rule != "sglang-before-13282":  # the balanced rules differ by at most one layer per stage
        assert max(sizes) - min(sizes) <= 1
    if rule == "vllm" and num_layers % pp_size:
        assert sizes[-1] == num_layers // pp_size  # the last stage never gets an extra layer


@settings(max_examples=60, deadline=None)
@given(partition=partitions(), data=st.data())
def test_ownership_agrees_with_ranges(partition: LayerPartition, data: st.DataObject) -> None:
    layer_id = data.draw(st.integers(-1, partition.num_layers - 1), label="layer_id")
    stage = partition.stage_of(layer_id)
    if layer_id == -1:
        assert stage == 0
        return
    span = partition.stage_range(stage)
    assert layer_id in span
    assert partition.local_index(layer_id) == layer_id - span.start
    assert partition.is_stage_boundary(layer_id) == (
        layer_id == span.stop - 1 and stage < partition.pp_size - 1
    )
    covered = [i for s in range(partition.pp_size) for i in partition.stage_range(s)]
    assert covered == list(range(partition.num_layers))  # contiguous, disjoint, complete
    again = LayerPartition.parse(
        ",".join(map(str, partition.sizes)), num_layers=partition.num_layers
    )
    assert again == partition
