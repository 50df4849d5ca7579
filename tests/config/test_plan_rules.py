"""``resolve``'s rules at their edges, through registry entries (not release answers): each
default, drop, ignored list, refusal, dedup, re-sort and pipeline-parallel drop leaves a note
naming the ids, layers or boundary concerned and the system (nothing is silently defaulted),
and ``compare`` words each layer finding and fix with the layers and the setting to write.

A ``Convention`` object is resolved by its row; an engine name (``"sglang==0.5.12"``) is
answered per release by ``conventions.predict`` (``test_plan_release.py``), and its fixes and
pipeline drops are worded here too."""

from __future__ import annotations

import dataclasses

import pytest

from eagle3_contracts import ContractError, compare, conventions, resolve
from eagle3_contracts.config.plan import FindingKind as K
from eagle3_contracts.config.readers import IDS_FIELD
from eagle3_contracts.conventions.predict import fixed_feed
from eagle3_contracts.parallel.partition import LayerPartition

KIMI = {"num_hidden_layers": 61, "hidden_size": 7168, "model_type": "kimi_k25"}
NESTED = f"eagle_config.{IDS_FIELD}"

TRT = conventions.get("trtllm").system  # TensorRT-LLM (PyTorch backend)
SF_HF = conventions.get("specforge-hf").system
EAGLE = conventions.get("eagle-reference").system
# releases for Kimi-K2.5's model file, deepseek_v2.py: +1 if ids[0] == 1 (0.5.23); +1 always
# (0.5.12), captured only on the last pipeline stage
SGLANG = "sglang==0.5.23"
LEGACY = "sglang==0.5.12"
LEGACY_KEY = "sglang==0.5.12 deepseek_v2.py"
GPT_OSS_TARGET = {"num_hidden_layers": 61, "hidden_size": 7168, "model_type": "gpt_oss"}
TRT_SETTING_NOTE = (
    f"{TRT} takes ids from EagleDecodingConfig.eagle3_layers_to_capture, not the draft config: "
    f"assumed to be the config's {NESTED} = "
)


def nested(*ids: int) -> dict:
    return {"eagle_config": {IDS_FIELD: list(ids)}}


def top(*ids: int) -> dict:
    return {IDS_FIELD: list(ids)}


def depth(n: int) -> dict:
    return {"num_hidden_layers": n, "hidden_size": 8}


# -- where ids come from ----------------------------------------------------------------------
def test_a_hard_coded_system_says_what_it_uses_and_what_it_ignores() -> None:
    assert (
        conventions.get("trtllm").configurable
        and not conventions.get("eagle-reference").configurable
    )
    bare = resolve({}, KIMI, "eagle-reference")
    assert (bare.native_ids, bare.ids_source, bare.layer_ids) == (None, "hard-coded", (1, 29, 57))
    assert bare.notes == (
        f"{EAGLE} uses boundaries (2, L//2, L-3), hard-coded = (2, 30, 58) for L = 61",
    )
    written = resolve(nested(2, 30, 58), KIMI, "eagle-reference")
    assert written.notes == (
        f"{EAGLE} reads no config field: the config's ids [2, 30, 58] are ignored; it uses "
        "boundaries (2, L//2, L-3), hard-coded = (2, 30, 58) for L = 61",
    )


def test_ids_set_outside_the_config_are_assumed_to_be_the_configs_with_a_note() -> None:
    plan = resolve(nested(2, 30, 58), KIMI, "trtllm")
    assert (plan.native_ids, plan.ids_source) == ((2, 30, 58), NESTED)
    assert plan.notes == (TRT_SETTING_NOTE + "[2, 30, 58]",)


def test_a_default_names_every_path_it_looked_at() -> None:
    plan = resolve({}, KIMI, "trtllm")
    assert (plan.native_ids, plan.ids_source, plan.refused) == (None, "default", None)
    assert plan.to_dict()["refused"] is None and plan.to_dict()["ids_source"] == "default"
    assert plan.layer_ids == (1, 29, 57)
    assert plan.notes == (
        f"no ids at {NESTED} or {IDS_FIELD}: fell back to the default outputs "
        "(1, L//2-1, L-4) = (1, 29, 57) for L = 61",
    )


def test_a_default_names_the_ids_it_ignored_and_where() -> None:
    plan = resolve(nested(2, 30, 58), KIMI, "speculators")  # reads the top-level ids only
    assert (plan.ids_source, plan.layer_ids) == ("default", (1, 29, 57))
    assert plan.notes == (
        f"no ids at {IDS_FIELD}: fell back to the default boundaries (2, L//2, L-3) = "
        f"(2, 30, 58) for L = 61; the ids [2, 30, 58] at {NESTED} are ignored by "
        f"{conventions.get('speculators').system}",
    )


def test_a_system_that_needs_ids_refuses_none_naming_where_it_reads() -> None:
    with pytest.raises(ContractError) as err:
        resolve({}, KIMI, "hf-hidden-states")
    assert err.value.field == "layer_ids"
    assert str(err.value) == (
        f"hf-hidden-states needs explicit ids and the draft config has none at {NESTED} or "
        f"{IDS_FIELD}"
    )


# -- refusals -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("draft", "system", "why"),
    [
        # output ids, embedding unreachable: boundaries 1..61 = ids 0..60
        (nested(2, 30, 61), "specforge-hf", "ids [61] are outside the accepted range 0..60"),
        (nested(-1, 2, 30), "specforge-hf", "ids [-1] are outside the accepted range 0..60"),
        # boundary ids (offset 0), embedding and last output reachable: 0..61
        (top(2, 30, 62), "speculators", "ids [62] are outside the accepted range 0..61"),
        (top(-1, 30, 58), "speculators", "ids [-1] are outside the accepted range 0..61"),
        # output ids (offset 1) with the embedding reachable: -1..60
        (nested(2, 30, 61), "output", "ids [61] are outside the accepted range -1..60"),
        (top(2, 30, 62), "boundary", "ids [62] are outside the accepted range 0..61"),
    ],
)
def test_a_refusal_names_the_ids_and_the_range_accepted(draft: dict, system: str, why: str) -> None:
    plan = resolve(draft, KIMI, system)
    assert plan.refused == f"{why} for 61 layers"
    assert (plan.layer_ids, plan.non_canonical) == ((), ())


def test_a_refused_config_feeds_nothing_and_says_so() -> None:
    plan = resolve(nested(1, 2), KIMI, "specforge-hf")
    assert plan.refused == "it requires exactly 3 ids, got 2"
    assert plan.layer_ids == () and plan.native_ids == (1, 2)
    assert plan.notes == (f"{SF_HF} refuses this config at load: it requires exactly 3 ids, got 2",)
    assert plan.describe() == "specforge-hf: [nothing]"


# -- what can never be captured -----------------------------------------------------------------
def test_a_default_boundary_the_system_cannot_reach_is_dropped_with_a_note() -> None:
    # boundaries (2, L//2, L-3) for L = 2: 2 is the last output, -1 no layer at all
    plan = resolve({}, depth(2), "eagle-reference")
    assert plan.layer_ids == (0,)
    assert plan.notes[1:] == (
        f"default boundary is never captured by {EAGLE}: canonical 1, the last layer's output, "
        "which it cannot reach",
        "default boundary -1 is not a layer of a 2-layer target: dropped",
    )
    # outputs (1, L//2-1, L-4) for L = 3: boundary 0 is the embedding
    plan = resolve({}, depth(3), "specforge-hf")
    assert plan.layer_ids == (1, 0)
    assert plan.notes[1:] == (
        f"default boundary is never captured by {SF_HF}: the embedding, which it cannot reach",
    )


# -- duplicates and order -----------------------------------------------------------------------
def test_a_repeated_id_is_noted_as_gathered_twice_or_captured_once() -> None:
    repeated = resolve(nested(2, 2, 30), KIMI, "specforge-hf")  # list-order gather
    assert repeated.layer_ids == (2, 30)
    assert repeated.notes == (
        f"layer 2 is listed twice: {SF_HF} gathers it twice; the plan keeps one",
    )
    once = resolve(nested(60, 60, 30), KIMI, "trtllm")  # the layer loop tests membership
    assert once.layer_ids == (30, 60)
    assert once.notes[1] == "layer 60 (last, pre-norm) is listed twice: captured once"


def test_an_ascending_system_notes_a_re_sort_only_when_it_re_sorts() -> None:
    listed = resolve(nested(58, 2, 30), KIMI, "trtllm")
    assert listed.layer_ids == (2, 30, 58)
    assert listed.notes == (
        TRT_SETTING_NOTE + "[58, 2, 30]",
        f"{TRT} concatenates in ascending layer order, not the listed order",
    )
    assert resolve(nested(2, 30, 58), KIMI, "trtllm").notes == (TRT_SETTING_NOTE + "[2, 30, 58]",)


# -- offsets decided per list, post-norm ids, the embedding -------------------------------------
@pytest.mark.parametrize(
    ("draft", "target", "fed"),
    [
        (nested(1, 29, 57), KIMI, (1, 29, 57)),  # ids[0] == 1: +1
        (nested(2, 30, 58), KIMI, (1, 29, 57)),  # else loop indices
        (nested(2, 30, 61), GPT_OSS_TARGET, (1, 29, 60)),  # gpt_oss.py, max == L: loop
        (nested(2, 30, 58), GPT_OSS_TARGET, (2, 30, 58)),  # else +1
    ],
)
def test_a_list_level_offset_rule_reads_the_whole_list(
    draft: dict, target: dict, fed: tuple
) -> None:
    release = SGLANG if target is KIMI else "sglang==0.5.17"
    assert resolve(draft, target, release).layer_ids == fed


def test_a_post_norm_id_is_fed_named_and_noted() -> None:
    plan = resolve(nested(-1, 30, 58), KIMI, "trtllm")
    assert plan.layer_ids == (30, 58) and plan.non_canonical == ("final post-norm state",)
    assert plan.notes[-1] == (
        f"native id -1 is the final post-norm hidden state in {TRT}: it is fed, but no "
        "canonical id names it (canonical 60 is the pre-norm output)"
    )
    assert plan.describe() == "trtllm: [layer 30, layer 58, final post-norm state]"
    hf = resolve(nested(3, 61, -1), KIMI, "hf-hidden-states")  # both spellings of post-norm
    assert (
        hf.describe() == "hf-hidden-states: [layer 2, final post-norm state, final post-norm state]"
    )


def test_describe_names_each_layer_in_concatenation_order() -> None:
    plan = resolve(nested(2, 30, 60), KIMI, "trtllm")
    assert plan.describe() == "trtllm: [layer 2, layer 30, layer 60 (last, pre-norm)]"


def test_the_embedding_is_read_as_boundary_0_without_a_caveat() -> None:
    plain = resolve(top(0, 30, 58), KIMI, "speculators")
    assert (plain.layer_ids, plain.notes) == ((-1, 29, 57), ())


def test_a_convention_object_is_kept_on_the_plan() -> None:
    trtllm = conventions.get("trtllm")
    plan = resolve(nested(2, 30, 58), KIMI, trtllm)
    assert plan.convention is trtllm and plan.system == "trtllm" and plan.release is None


# -- pipeline parallel --------------------------------------------------------------------------
def test_last_stage_only_drops_earlier_stages_with_a_note_at_pp_2() -> None:
    part = LayerPartition.even(61, 2, rule="sglang")  # 0-29 | 30-60
    plan = resolve(nested(2, 20, 58), KIMI, LEGACY, partition=part)
    assert (plan.layer_ids, plan.pp_dropped) == ((58,), (2, 20))
    assert plan.notes[-1] == (
        f"pipeline parallel ({part.describe()}): {LEGACY_KEY} captures only on the last "
        "stage; layer 2, layer 20 are captured on earlier stages and dropped"
    )


def test_depends_keeps_every_layer_and_names_the_ones_at_risk() -> None:
    part = LayerPartition.even(61, 2)  # 0-30 | 31-60
    plan = resolve(nested(2, 30, 58), KIMI, "trtllm", partition=part)
    assert (plan.layer_ids, plan.pp_dropped) == ((2, 30, 58), ())
    assert plan.notes[1:] == (
        f"pipeline parallel ({part.describe()}): layer 2, layer 30 are captured on earlier "
        f"stages; no code read says whether {TRT} carries them to the drafter's stage: "
        "unknown, not ok",
    )
    assert plan.kind == "unknown"  # nothing read proves them fed: never ok
    (finding,) = compare(resolve(nested(2, 30, 58), KIMI, "trtllm"), plan)
    assert finding.kind is K.UNKNOWN


def test_no_note_without_pipeline_parallelism_or_for_an_offline_trainer() -> None:
    one = resolve(nested(2, 30, 58), KIMI, "trtllm", partition=LayerPartition.even(61, 1))
    assert one.notes == (TRT_SETTING_NOTE + "[2, 30, 58]",) and one.pp_dropped == ()
    offline = resolve(nested(2, 30, 58), KIMI, "specforge-hf", partition=LayerPartition.even(61, 2))
    assert (offline.layer_ids, offline.pp_dropped, offline.notes) == ((2, 30, 58), (), ())


@pytest.mark.parametrize("system", ["trtllm", "sglang"])
def test_a_partition_of_another_depth_is_refused_naming_the_partition(system: str) -> None:
    with pytest.raises(ContractError) as err:
        resolve(nested(2, 30, 58), KIMI, system, partition=LayerPartition((30, 30)))
    assert err.value.field == "partition"
    assert str(err.value) == "the pipeline partition covers 60 layers but the target has 61"


# -- compare: layer findings in words -----------------------------------------------------------
TRAINED = resolve(nested(2, 30, 58), KIMI, "trtllm")


def test_missing_layers_are_all_named() -> None:
    (missing, _) = compare(TRAINED, resolve(nested(2), KIMI, "trtllm"))
    assert (missing.kind, missing.layers) == (K.LAYER_MISSING, (30, 58))
    assert missing.message == "not fed: layer 30, layer 58"
    assert missing.fix == "set EagleDecodingConfig.eagle3_layers_to_capture = [2, 30, 58]"


def test_a_partial_order_difference_names_the_shared_layers_in_both_orders() -> None:
    trained = resolve(nested(30, 2, 58), KIMI, "specforge-hf")  # list order
    findings = compare(trained, resolve(nested(2, 30, 59), KIMI, "trtllm"))
    assert [f.kind for f in findings] == [K.LAYER_MISSING, K.EXTRA_LAYER, K.ORDER_DIFFERS]
    order = findings[-1]
    assert order.layers == (30, 2)
    assert order.message == (
        "shared layers are concatenated in a different order: trained [30, 2], served [2, 30]"
    )


def test_an_inserted_embedding_is_its_own_finding() -> None:
    findings = compare(TRAINED, resolve(top(0, 3, 31), KIMI, "speculators"))
    assert [f.kind for f in findings] == [K.EMBEDDING_INSERTED, K.LAYER_MISSING]
    assert findings[0].layers == (-1,)
    assert findings[0].message == (
        "the embedding (canonical -1) is fed; the drafter was not trained on it"
    )
    assert findings[0].fix_native_ids == (3, 31, 59)
    assert findings[0].fix == f"set {IDS_FIELD} = [3, 31, 59]"


# -- compare: fixes -----------------------------------------------------------------------------
def test_list_order_cannot_be_served_ascending_and_the_fix_says_retrain() -> None:
    trained = resolve(nested(58, 2, 30), KIMI, "specforge-hf")
    (finding,) = compare(trained, TRAINED)
    assert finding.fix_native_ids is None
    assert finding.fix == (
        f"no native ids can express it: {TRT} concatenates ascending, the drafter was trained "
        "in list order [58, 2, 30]; retrain with a sorted list"
    )


def test_a_list_order_server_is_fixed_in_list_order() -> None:
    trained = resolve(nested(58, 2, 30), KIMI, "specforge-hf")
    (finding,) = compare(trained, resolve(nested(2, 30, 58), KIMI, "specforge-hf"))
    assert finding.kind is K.ORDER_DIFFERS and finding.fix_native_ids == (58, 2, 30)
    assert finding.fix == f"set {NESTED} = [58, 2, 30]"


def test_another_target_is_fixed_by_serving_on_the_trained_one() -> None:
    (finding,) = compare(
        TRAINED, resolve(nested(2, 30, 58), {**KIMI, "hidden_size": 4096}, "trtllm")
    )
    assert finding.kind is K.TARGET_DIFFERS and finding.fix_native_ids is None
    assert finding.fix == "serve the drafter on the target it was trained on"


def test_a_pipeline_drop_with_the_right_ids_names_the_partition_never_the_ids() -> None:
    part = LayerPartition.even(61, 2, rule="sglang")
    served = resolve(nested(2, 30, 58), KIMI, LEGACY, partition=part)
    findings = compare(TRAINED, served)
    assert [f.kind for f in findings] == [K.LAYER_MISSING, K.WIDTH_DIFFERS]
    assert all(f.fix_native_ids is None for f in findings)  # [2, 30, 58] is already there
    assert findings[0].fix == (
        f"no id list changes it: {LEGACY_KEY} already feeds canonical [2, 30, 58] from {NESTED} "
        f"= [2, 30, 58]; keep every trained layer on the last pipeline stage, the only one "
        f"{LEGACY_KEY} captures on: serve without pipeline parallelism, or with a --pp-partition "
        "whose last stage starts at layer 3 or earlier"
    )


def test_a_pipeline_drop_with_wrong_ids_gives_the_ids_and_the_partition() -> None:
    part = LayerPartition.even(61, 2, rule="sglang")
    served = resolve(nested(1, 29, 57), KIMI, LEGACY, partition=part)
    findings = compare(TRAINED, served)
    assert all(f.fix_native_ids == (2, 30, 58) for f in findings)
    assert findings[0].fix == (
        f"set {NESTED} = [2, 30, 58]: {LEGACY_KEY} then feeds them, and keep every trained "
        f"layer on the last pipeline stage, the only one {LEGACY_KEY} captures on: serve without "
        "pipeline parallelism, or with a --pp-partition whose last stage starts at layer 3 or "
        "earlier"
    )


def test_a_drafter_trained_on_no_layer_has_no_fix() -> None:
    # a plan feeding nothing (a release that reaches none of its ids crashes instead)
    trained = dataclasses.replace(TRAINED, feed=fixed_feed(()))
    assert trained.layer_ids == () and not trained.refused
    findings = compare(trained, TRAINED)
    assert findings and all(f.fix_native_ids is None for f in findings)
    assert findings[0].fix == "no native ids can express it: the drafter was trained on no layer"


def test_a_release_is_fixed_by_the_proven_search() -> None:
    (finding,) = compare(TRAINED, resolve(nested(2, 30, 58), KIMI, SGLANG))
    assert (finding.kind, finding.shift, finding.fix_native_ids) == (K.SHIFTED, -1, (3, 31, 59))
    assert (
        finding.fix == f"set {NESTED} = [3, 31, 59]: sglang==0.5.23 deepseek_v2.py then feeds them"
    )


def test_a_plan_without_its_convention_is_fixed_through_the_registry_entry() -> None:
    served = dataclasses.replace(resolve(nested(2, 30), KIMI, "trtllm"), convention=None)
    findings = compare(TRAINED, served)
    assert all(f.fix_native_ids == (2, 30, 58) for f in findings)
    assert findings[0].fix == "set EagleDecodingConfig.eagle3_layers_to_capture = [2, 30, 58]"


# -- a user's own convention (resolve takes a Convention) ----------------------------------------
def own(**changes: object) -> conventions.Convention:
    """A user's registry row for an in-house engine: output ids read from eagle_config."""
    base = conventions.Convention(
        name="in-house",
        system="in-house engine",
        role=conventions.Role.ENGINE,
        meaning=conventions.Meaning.OUTPUT,
        offset_rule=conventions.OffsetRule.IDENTITY,
        id_paths=(NESTED,),
        default=conventions.DefaultRule.OUTPUTS_1_MIDM1_LM4,
        validation=conventions.Validation.REFUSED,
        sources=("in-house wiki",),
    )
    return dataclasses.replace(base, **changes)


@pytest.mark.parametrize(
    ("rule", "ids", "refused"),
    [
        # ids[0] == 1: +1, so 61 is boundary 62, past a 61-layer target (range -1..60)
        (conventions.OffsetRule.PLUS_ONE_IF_FIRST_IS_ONE, [1, 61], "ids [61] are outside the "
         "accepted range -1..60 for 61 layers"),
        (conventions.OffsetRule.PLUS_ONE_IF_FIRST_IS_ONE, [2, 61], None),  # loop indices
        # max(ids) == L: loop indices, so 61 is boundary 61 (the last layer's output)
        (conventions.OffsetRule.LOOP_IF_MAX_IS_L, [2, 61], None),
        (conventions.OffsetRule.LOOP_IF_MAX_IS_L, [2, 60], None),
        (conventions.OffsetRule.LOOP_IF_MAX_IS_L, [-2, 60], "ids [-2] are outside the accepted "
         "range -1..60 for 61 layers"),
    ],
)  # fmt: skip
def test_a_refusal_applies_a_list_level_offset_rule_to_the_whole_list(
    rule: conventions.OffsetRule, ids: list[int], refused: str | None
) -> None:
    plan = resolve(nested(*ids), KIMI, own(offset_rule=rule))
    assert plan.refused == refused


def test_ids_set_outside_any_config_ignore_every_id_written_naming_each() -> None:
    system = own(id_paths=(), id_setting="--aux-layers")
    plan = resolve({**nested(2, 30, 58), IDS_FIELD: [3, 31, 59]}, KIMI, system)
    assert (plan.ids_source, plan.layer_ids) == ("default", (1, 29, 57))
    assert plan.notes == (
        "no ids in the config: fell back to the default outputs (1, L//2-1, L-4) = (1, 29, 57) "
        f"for L = 61; the ids [2, 30, 58] at {NESTED} are ignored by in-house engine; the ids "
        f"[3, 31, 59] at {IDS_FIELD} are ignored by in-house engine",
    )


def test_required_ids_set_outside_any_config_are_refused_naming_where_to_set_them() -> None:
    system = own(id_paths=(), id_setting="--aux-layers", default=conventions.DefaultRule.REQUIRED)
    with pytest.raises(ContractError) as err:
        resolve(nested(2, 30, 58), KIMI, system)
    assert err.value.field == "layer_ids"
    assert str(err.value) == (
        "in-house needs explicit ids and the draft config has none in the config (they are set "
        "with --aux-layers)"
    )


def test_a_registry_fix_is_proven_by_resolving_again() -> None:
    """``_fix``'s ids for a registry entry are kept only when resolving the config with them
    feeds the trained layers (as a release's proven fix); other ids are named as not doing so."""
    from eagle3_contracts.config.plan import _unproven

    served = resolve(nested(1, 29, 57), KIMI, "trtllm")
    conv = conventions.get("trtllm")
    assert _unproven(conv, (2, 30, 58), (2, 30, 58), served) == ""
    assert _unproven(conv, (3, 31, 59), (2, 30, 58), served) == (
        f"no native ids can express it: {TRT} given [3, 31, 59] at {NESTED} feeds trtllm: "
        "[layer 3, layer 31, layer 59]"
    )
