"""resolve() and compare(): what each system feeds, and what fixes a mismatch."""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from eagle3_contracts import CapturePlan, ContractError, compare, conventions, resolve
from eagle3_contracts.config.plan import FindingKind as K
from eagle3_contracts.config.readers import IDS_FIELD
from eagle3_contracts.conventions import EngineSpec, parse_system
from eagle3_contracts.parallel.partition import LayerPartition

KIMI = {"num_hidden_layers": 61, "hidden_size": 7168, "model_type": "kimi_k25"}


def nested(*ids: int) -> dict:
    return {"eagle_config": {IDS_FIELD: list(ids)}}


def top(*ids: int) -> dict:
    return {IDS_FIELD: list(ids)}


TRAINED = resolve(nested(2, 30, 58), KIMI, "specforge-hf")  # the seed: outputs 2, 30, 58

# (draft, system) -> canonical ids fed, kinds of the findings against TRAINED, fix ids.
# Engine names are releases (unversioned = newest probed) read for the target's model file
# (kimi_k25 -> deepseek_v2.py); every fix is proven by predicting again.
KIMI_STORY = [
    (nested(2, 30, 58), "sglang-legacy", (2, 30, 58), (), None),  # sglang==0.5.12: +1 always
    (nested(2, 30, 58), "sglang", (1, 29, 57), (K.SHIFTED,), (3, 31, 59)),
    (nested(2, 30, 58), "vllm", (1, 29, 57), (K.SHIFTED,), (3, 31, 59)),  # V2 ignores nested
    (nested(2, 30, 58), "vllm-nested", (1, 29, 57), (K.SHIFTED,), (3, 31, 59)),  # 0.33.0:v1
    (nested(2, 30, 58), "trtllm", (2, 30, 58), (), None),
    # stock 0.5.12 deepseek_v2.py: +1 makes -1 loop index 0, which appends hidden_states + None
    (nested(-1, 2, 30), "sglang-legacy", (), (K.CRASHES,), (2, 30, 58)),
    # 0.5.23: loop indices [-1, 2, 30]; -1 never matches, 2 states for a 3-state fc
    (nested(-1, 2, 30), "sglang", (1, 29), (K.CRASHES,), (3, 31, 59)),
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
    plan = resolve(nested(2, 30, 58), KIMI, "vllm")  # vllm==0.33.0, default runner V2
    assert plan.native_ids is None and plan.ids_source == "default"
    assert (plan.release, plan.runner, plan.model_file) == ("vllm==0.33.0", "v2", "deepseek_v2.py")
    ignored, default = plan.notes
    assert "ignored" in ignored and "eagle3_utils.py" in ignored
    assert "its default" in default and "[2, 30, 58]" in default
    assert any("unversioned 'vllm'" in a for a in plan.assumptions)
    assert resolve(nested(2, 30, 58), KIMI, "vllm-nested").ids_source == f"eagle_config.{IDS_FIELD}"


def test_sglang_legacy_default_is_loop_indices_not_explicit_ids() -> None:
    default = resolve({}, KIMI, "sglang-legacy")
    explicit = resolve(nested(2, 30, 58), KIMI, "sglang-legacy")
    assert default.layer_ids == (1, 29, 57)  # [2, L//2, L-3] as loop indices
    assert explicit.layer_ids == (2, 30, 58)  # explicit ids get +1
    assert any("its default" in n for n in default.notes)


def test_sglang_plus_one_only_when_the_first_id_is_one() -> None:
    assert resolve(nested(1, 29, 57), KIMI, "sglang").layer_ids == (1, 29, 57)
    assert resolve(nested(2, 30, 58), KIMI, "sglang").layer_ids == (1, 29, 57)


def test_vllm_sorts_and_dedups_with_notes() -> None:
    plan = resolve(top(58, 2, 2, 30), KIMI, "vllm")
    assert plan.layer_ids == (1, 29, 57)
    assert any("duplicate" in n for n in plan.notes)
    assert any("ascending" in n for n in plan.notes)


def test_unreachable_ids_are_absent_with_a_note() -> None:
    plan = resolve(nested(2, 30, 60), KIMI, "sglang-legacy")  # loop index 61 never runs
    assert plan.layer_ids == (2, 30) and plan.kind == "crash" and plan.crash == "fc-width-mismatch"
    assert any("never reached" in n for n in plan.notes)
    trained = resolve(nested(1, 30, 60), KIMI, "specforge-hf")
    (finding, *_) = compare(trained, resolve(nested(1, 30, 60), KIMI, "sglang-legacy"))
    assert finding.kind is K.CRASHES
    assert finding.fix_native_ids is None and "no id list" in finding.fix


def test_specforge_list_order_cannot_be_served_by_an_engine() -> None:
    trained = resolve(nested(58, 2, 30), KIMI, "specforge-hf")
    assert trained.layer_ids == (58, 2, 30) and trained.order == "as_listed"
    findings = compare(trained, resolve(nested(58, 2, 30), KIMI, "sglang-legacy"))
    assert [f.kind for f in findings] == [K.ORDER_DIFFERS]
    assert findings[0].fix_native_ids is None and "sorted list" in findings[0].fix


@pytest.mark.parametrize(
    ("draft", "system", "why"),
    [
        (nested(1, 2), "specforge-hf", "exactly 3"),
        (nested(-1, 2, 30), "specforge-hf", "outside"),
        (nested(1, 2), "specforge==0.2.0", "exactly 3"),
        (nested(2, 2, 30), "specforge==0.2.0", "duplicate"),
        (nested(2, 30, 61), "specforge==0.2.0", "exceed the target depth"),
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
    trained = resolve(nested(2, 30, 44), KIMI, "specforge-hf")
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
    # no code read says whether vLLM carries earlier stages' states: unknown, never ok
    assert plan.kind == "unknown" and plan.crash is None
    assert plan.notes[-1].endswith("carries them to the drafter's stage: unknown, not ok")
    trained = resolve(top(3, 31, 59), KIMI, "boundary")
    (finding,) = compare(trained, plan)
    assert finding.kind is K.UNKNOWN and finding.fix_native_ids is None
    assert resolve(top(3, 31, 59), KIMI, "vllm").kind == "segments"  # without PP: answered


# -- properties ------------------------------------------------------------------------------
ENGINES = ("sglang-legacy", "sglang", "sglang-gpt-oss", "vllm", "vllm-nested", "trtllm")
ARCHS = ("LlamaForCausalLM", "DeepseekV3ForCausalLM", "GptOssForCausalLM", "Qwen3MoeForCausalLM")


@st.composite
def trained_cases(draw: st.DrawFn) -> tuple[int, tuple[int, ...], str, str]:
    n = draw(st.integers(4, 128))
    ids = tuple(sorted(draw(st.lists(st.integers(0, n - 1), min_size=3, max_size=3, unique=True))))
    return n, ids, draw(st.sampled_from(ENGINES)), draw(st.sampled_from(ARCHS))


def _target(n: int, arch: str, h: int = 16) -> dict:
    return {"num_hidden_layers": n, "hidden_size": h, "architectures": [arch]}


def _config_for(system: str, ids: tuple[int, ...]) -> dict:
    spec = parse_system(system, field="system")
    if isinstance(spec, EngineSpec):  # SGLang reads only the nested ids, vLLM the top-level first
        return nested(*ids) if spec.framework == "sglang" else top(*ids)
    path = conventions.get(system).id_paths[0]
    return nested(*ids) if path.startswith("eagle_config.") else top(*ids)


def _with_fix(config: dict, plan: CapturePlan, fix: tuple[int, ...]) -> dict:
    """The served config with a printed fix applied where that release reads ids."""
    if plan.read_path is None:
        return _config_for(plan.system, fix)
    out = {k: (dict(v) if isinstance(v, dict) else v) for k, v in config.items()}
    head, _, key = plan.read_path.rpartition(".")
    (out.setdefault(head, {}) if head else out)[key] = list(fix)
    return out


@settings(max_examples=80, deadline=None)
@given(trained_cases())
def test_the_suggested_fix_makes_serving_match_training(case: tuple) -> None:
    """Every printed fix, applied where the release reads ids, re-checks as ok."""
    n, ids, system, arch = case
    target = _target(n, arch)
    trained = resolve(nested(*ids), target, "specforge-hf")
    config = _config_for(system, ids)
    served = resolve(config, target, system)
    findings = compare(trained, served)
    assume(findings)  # a case the release already serves right has no fix to check
    fix = findings[0].fix_native_ids
    if fix is None:  # only when no id list makes the engine feed every trained layer
        assert findings[0].fix.startswith("no ")
        return
    assert compare(trained, resolve(_with_fix(config, served, fix), target, system)) == ()


@settings(max_examples=60, deadline=None)
@given(trained_cases(), st.integers(1, 4096))
def test_width_is_segments_times_hidden(case: tuple, h: int) -> None:
    n, ids, system, arch = case
    plan = resolve(_config_for(system, ids), _target(n, arch, h), system)
    assume(plan.layer_ids)
    assert plan.width == (len(plan.layer_ids) + len(plan.non_canonical)) * h
    assert plan.contract.width == len(plan.layer_ids) * h


@settings(max_examples=60, deadline=None)
@given(trained_cases())
def test_engines_feed_ascending_unique_ids(case: tuple) -> None:
    n, ids, system, arch = case
    shuffled = (ids[2], ids[0], ids[1])
    plan = resolve(_config_for(system, shuffled), _target(n, arch, 8), system)
    assert list(plan.layer_ids) == sorted(set(plan.layer_ids))
    assume(plan.kind == "segments")
    assert compare(plan, plan) == ()


@st.composite
def hostile_cases(draw: st.DrawFn) -> tuple[int, tuple[int, ...], str, str, str]:
    n = draw(st.integers(4, 64))
    ids = tuple(draw(st.lists(st.integers(-1, n), min_size=1, max_size=4)))
    reading = draw(st.sampled_from(("output", "boundary", "specforge-hf", "specforge==0.2.0")))
    system = draw(st.sampled_from((*ENGINES, "speculators", "hf-hidden-states", "modelopt")))
    return n, ids, reading, system, draw(st.sampled_from(ARCHS))


@settings(max_examples=120, deadline=None)
@given(hostile_cases())
def test_every_printed_fix_rechecks_as_ok_for_any_ids(case: tuple) -> None:
    """Unsorted, duplicated, -1 and past-L ids under every reading: a printed fix, applied where
    the serving system reads ids, always re-checks as ok (else no fix is printed)."""
    n, ids, reading, system, arch = case
    target = _target(n, arch)
    config = top(*ids) if reading == "boundary" else nested(*ids)
    try:
        trained = resolve(config, target, reading)
    except ContractError:
        return  # a reading that needs ids it cannot take is refused before any fix
    served = resolve(config, target, system)
    findings = compare(trained, served)
    if not findings or findings[0].fix_native_ids is None:
        return
    fix = findings[0].fix_native_ids
    assert compare(trained, resolve(_with_fix(config, served, fix), target, system)) == (), (
        reading,
        system,
        ids,
        fix,
    )
