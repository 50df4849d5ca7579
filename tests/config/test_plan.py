"""resolve() and compare(): what each system feeds, and what fixes a mismatch."""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from eagle3_contracts import CapturePlan, ContractError, compare, conventions, resolve
from eagle3_contracts.config.plan import FindingKind as K
from eagle3_contracts.config.readers import IDS_FIELD
from eagle3_contracts.parallel.partition import LayerPartition

KIMI = {"num_hidden_layers": 61, "hidden_size": 7168, "model_type": "kimi_k25"}


def nested(*ids: int) -> dict:
    return {"eagle_config": {IDS_FIELD: list(ids)}}


def top(*ids: int) -> dict:
    return {IDS_FIELD: list(ids)}


TRAINED = resolve(nested(2, 30, 58), KIMI, "specforge")

# (draft, system) -> canonical ids fed, kinds of the findings against TRAINED, fix ids
KIMI_STORY = [
    (nested(2, 30, 58), "sglang-legacy", (2, 30, 58), (), None),
    (nested(2, 30, 58), "sglang", (1, 29, 57), (K.SHIFTED,), (3, 31, 59)),
    (nested(2, 30, 58), "vllm", (1, 29, 57), (K.SHIFTED,), (3, 31, 59)),
    (nested(2, 30, 58), "vllm-nested", (1, 29, 57), (K.SHIFTED,), (3, 31, 59)),
    (nested(2, 30, 58), "trtllm", (2, 30, 58), (), None),
    (
        nested(-1, 2, 30),
        "sglang-legacy",
        (2, 30),  # stock 0.5.12 llama.py: loop index 0 appends hidden_states + None
        (K.LAYER_MISSING, K.WIDTH_DIFFERS),
        (2, 30, 58),
    ),
    (
        nested(-1, 2, 30),
        "sglang",
        (1, 29),
        (K.LAYER_MISSING, K.EXTRA_LAYER, K.WIDTH_DIFFERS),
        (3, 31, 59),
    ),
    (nested(-1, 2, 30), "trtllm", (2, 30), (K.LAYER_MISSING, K.POST_NORM_FED), (2, 30, 58)),
]


@pytest.mark.parametrize(("draft", "system", "fed", "kinds", "fix"), KIMI_STORY)
def test_kimi_story(draft: dict, system: str, fed: tuple, kinds: tuple, fix: tuple | None) -> None:
    plan = resolve(draft, KIMI, system)
    assert plan.layer_ids == fed
    findings = compare(TRAINED, plan)
    assert tuple(f.kind for f in findings) == kinds
    if kinds:
        assert all(f.fix_native_ids == fix for f in findings)
        assert str(list(fix)) in findings[0].fix
    shifted = [f for f in findings if f.kind is K.SHIFTED]
    if shifted:
        assert shifted[0].shift == -1


def test_vllm_ignores_nested_only_and_reports_the_default() -> None:
    plan = resolve(nested(2, 30, 58), KIMI, "vllm")
    assert plan.native_ids is None and plan.ids_source == "default"
    (note,) = plan.notes
    assert "fell back to the default" in note and "(2, 30, 58)" in note and "ignored" in note
    assert resolve(nested(2, 30, 58), KIMI, "vllm-nested").ids_source == f"eagle_config.{IDS_FIELD}"


def test_sglang_legacy_default_is_loop_indices_not_explicit_ids() -> None:
    default = resolve({}, KIMI, "sglang-legacy")
    explicit = resolve(nested(2, 30, 58), KIMI, "sglang-legacy")
    assert default.layer_ids == (1, 29, 57)  # [2, L//2, L-3] as loop indices
    assert explicit.layer_ids == (2, 30, 58)  # explicit ids get +1
    assert any("fell back" in n for n in default.notes)


def test_sglang_plus_one_only_when_the_first_id_is_one() -> None:
    assert resolve(nested(1, 29, 57), KIMI, "sglang").layer_ids == (1, 29, 57)
    assert resolve(nested(2, 30, 58), KIMI, "sglang").layer_ids == (1, 29, 57)


def test_vllm_sorts_and_dedups_with_notes() -> None:
    plan = resolve(top(58, 2, 2, 30), KIMI, "vllm")
    assert plan.layer_ids == (1, 29, 57)
    assert any("listed twice" in n for n in plan.notes)
    assert any("ascending" in n for n in plan.notes)


def test_unreachable_ids_are_absent_with_a_note() -> None:
    plan = resolve(nested(2, 30, 60), KIMI, "sglang-legacy")  # loop index 61 never runs
    assert plan.layer_ids == (2, 30)
    assert any("last layer's output" in n for n in plan.notes)
    trained = resolve(nested(1, 30, 60), KIMI, "specforge")
    (finding, *_) = compare(trained, resolve(nested(1, 30, 60), KIMI, "sglang-legacy"))
    assert finding.fix_native_ids is None and "no native ids can express it" in finding.fix


def test_specforge_list_order_cannot_be_served_by_an_engine() -> None:
    trained = resolve(nested(58, 2, 30), KIMI, "specforge")
    assert trained.layer_ids == (58, 2, 30) and trained.order == "as_listed"
    findings = compare(trained, resolve(nested(58, 2, 30), KIMI, "sglang-legacy"))
    assert [f.kind for f in findings] == [K.ORDER_DIFFERS]
    assert findings[0].fix_native_ids is None and "sorted list" in findings[0].fix


@pytest.mark.parametrize(
    ("draft", "system", "why"),
    [
        (nested(1, 2), "specforge", "exactly 3"),
        (nested(-1, 2, 30), "specforge", "outside"),
        (top(2, 2, 30), "speculators", "duplicate"),
        (top(2, 30, 62), "speculators", "outside"),
    ],
)
def test_refusals(draft: dict, system: str, why: str) -> None:
    plan = resolve(draft, KIMI, system)
    assert plan.refused and why in plan.refused
    with pytest.raises(ContractError, match="refuses"):
        plan.contract  # noqa: B018
    assert [f.kind for f in compare(TRAINED, plan)] == [K.REFUSED]
    (finding,) = compare(plan, TRAINED)  # a refused training config is reported as such
    assert finding.kind is K.REFUSED and finding.fix_native_ids is None


def test_hard_coded_reference_ignores_config_ids() -> None:
    plan = resolve(nested(2, 30, 58), KIMI, "eagle-reference")
    assert plan.layer_ids == (1, 29, 57) and plan.ids_source == "hard-coded"
    (finding,) = compare(TRAINED, plan)
    assert finding.fix_native_ids is None and "no config field" in finding.fix


def test_hf_hidden_states_needs_ids() -> None:
    with pytest.raises(ContractError, match="needs explicit ids"):
        resolve({}, KIMI, "hf-hidden-states")
    plan = resolve(nested(3, 31, 61), KIMI, "hf-hidden-states")
    assert plan.layer_ids == (2, 30) and plan.non_canonical == ("final post-norm state",)


def test_small_depth_default_drops_invalid_ids() -> None:
    plan = resolve({}, {"num_hidden_layers": 2, "hidden_size": 8}, "trtllm")
    assert -2 not in plan.layer_ids and any("dropped" in n for n in plan.notes)


def test_contract_and_width() -> None:
    plan = resolve(nested(2, 30, 58), KIMI, "vllm-nested")
    assert plan.contract.layer_ids == (1, 29, 57)
    assert plan.width == plan.contract.width == 3 * 7168
    assert plan.to_dict()["layer_ids"] == [1, 29, 57]
    assert isinstance(plan, CapturePlan)


def test_target_mismatch() -> None:
    other = resolve(nested(2, 30, 58), {"num_hidden_layers": 61, "hidden_size": 4096}, "trtllm")
    (finding,) = compare(TRAINED, other)
    assert finding.kind is K.TARGET_DIFFERS and finding.fix_native_ids is None


# -- pipeline parallel ----------------------------------------------------------------------
def test_sglang_drops_ids_captured_on_earlier_stages() -> None:
    part = LayerPartition.even(61, 4, rule="sglang")  # 15,15,15,16: last stage runs 45..60
    plan = resolve(nested(2, 30, 44), KIMI, "sglang-legacy", partition=part)
    # canonical 44 is taken entering layer 45, on the last stage; 2 and 30 are lost
    assert plan.layer_ids == (44,) and plan.pp_dropped == (2, 30)
    trained = resolve(nested(2, 30, 44), KIMI, "specforge")
    findings = compare(trained, plan)
    assert K.LAYER_MISSING in [f.kind for f in findings]
    assert "last pipeline stage" in findings[0].fix


def test_partition_must_match_the_target() -> None:
    with pytest.raises(ContractError, match="covers 60 layers"):
        resolve(nested(2, 30, 58), KIMI, "sglang", partition=LayerPartition((30, 30)))


def test_vllm_pipeline_behaviour_is_reported_not_assumed() -> None:
    part = LayerPartition.even(61, 4)
    plan = resolve(top(3, 31, 59), KIMI, "vllm", partition=part)
    assert plan.layer_ids == (2, 30, 58) and not plan.pp_dropped
    assert any("depends on the release" in n for n in plan.notes)


# -- properties ------------------------------------------------------------------------------
ENGINES = ("sglang-legacy", "sglang", "sglang-gpt-oss", "vllm", "vllm-nested", "trtllm")


@st.composite
def trained_cases(draw: st.DrawFn) -> tuple[int, tuple[int, ...], str]:
    n = draw(st.integers(4, 128))
    ids = tuple(sorted(draw(st.lists(st.integers(0, n - 1), min_size=3, max_size=3, unique=True))))
    return n, ids, draw(st.sampled_from(ENGINES))


def _config_for(system: str, ids: tuple[int, ...]) -> dict:
    path = conventions.get(system).id_paths[0]
    return nested(*ids) if path.startswith("eagle_config.") else top(*ids)


@settings(max_examples=60, deadline=None)
@given(trained_cases())
def test_the_suggested_fix_makes_serving_match_training(case: tuple) -> None:
    n, ids, system = case
    target = {"num_hidden_layers": n, "hidden_size": 16}
    trained = resolve(nested(*ids), target, "specforge")
    served = resolve(_config_for(system, ids), target, system)
    findings = compare(trained, served)
    if not findings:
        return
    fix = findings[0].fix_native_ids
    if fix is None:  # only when the engine cannot reach a trained layer
        conv = conventions.get(system)
        assert any(i not in conv.canonical_range(n) for i in ids)
        return
    assert compare(trained, resolve(_config_for(system, fix), target, system)) == ()


@settings(max_examples=60, deadline=None)
@given(trained_cases(), st.integers(1, 4096))
def test_width_is_segments_times_hidden(case: tuple, h: int) -> None:
    n, ids, system = case
    plan = resolve(_config_for(system, ids), {"num_hidden_layers": n, "hidden_size": h}, system)
    assume(plan.layer_ids)
    assert plan.width == (len(plan.layer_ids) + len(plan.non_canonical)) * h
    assert plan.contract.width == len(plan.layer_ids) * h


@settings(max_examples=60, deadline=None)
@given(trained_cases())
def test_engines_feed_ascending_unique_ids(case: tuple) -> None:
    n, ids, system = case
    shuffled = (ids[2], ids[0], ids[1])
    plan = resolve(
        _config_for(system, shuffled), {"num_hidden_layers": n, "hidden_size": 8}, system
    )
    assert list(plan.layer_ids) == sorted(set(plan.layer_ids))
    assert compare(plan, plan) == ()
