"""Release plans (``resolve`` of ``sglang==0.5.23``, ``vllm==0.32.0:v1``, ``specforge==0.2.0``)
and ``compare``'s release verdicts and fixes.

A release plan is the release's ``Feed`` (``conventions.predict.predict_system``) in plan form: the fields
``check`` prints and emits in JSON are the feed's, and an unknown, unsupported or crashing row, or
an fc built for another number of states, is one finding that names the release, why, and (for an
fc) both widths; its fix says there is none, or writes the ids where that release reads them.
"""

from __future__ import annotations

import pytest

from eagle3_contracts import ContractError, compare, resolve
from eagle3_contracts.config.plan import FindingKind as K
from eagle3_contracts.config.readers import IDS_FIELD, read_draft_config, read_target_config
from eagle3_contracts.conventions import predict
from eagle3_contracts.conventions.predict import Feed
from eagle3_contracts.parallel.partition import LayerPartition

KIMI = {"num_hidden_layers": 61, "hidden_size": 7168, "model_type": "kimi_k25"}
DSV3 = {"architectures": ["DeepseekV3ForCausalLM"], "num_hidden_layers": 61, "hidden_size": 7168}
LLAMA = {"architectures": ["LlamaForCausalLM"], "num_hidden_layers": 32, "hidden_size": 4096}
GEMMA = {"architectures": ["Gemma3ForCausalLM"], "num_hidden_layers": 34, "hidden_size": 8}
NAMELESS = {"num_hidden_layers": 32, "hidden_size": 8}  # neither architectures nor model_type
NESTED = f"eagle_config.{IDS_FIELD}"
NO_AUX_FIX = (
    "no native ids can express it: the drafter was trained on (or is served) the final "
    "post-norm state instead of aux states (eagle_config.use_aux_hidden_state)"
)


def nested(*ids: int, **extra: object) -> dict:
    return {"eagle_config": {IDS_FIELD: list(ids), **extra}}


def feed(draft: dict, target: dict, system: str) -> Feed:
    return predict.predict_system(
        system, dict(read_draft_config(draft).raw), read_target_config(target)
    )


# -- the plan is the feed -----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("system", "family"),
    [("sglang==0.5.23", "sglang"), ("vllm==0.32.0:v1", "vllm"), ("specforge==0.2.0", "sglang")],
)
def test_a_release_plan_carries_its_feed(system: str, family: str) -> None:
    draft = nested(2, 30, 58)
    plan, fed = resolve(draft, KIMI, system), feed(draft, KIMI, system)
    assert plan.feed == fed and plan.system == system
    assert (plan.kind, plan.crash, plan.layer_ids) == (fed.kind, fed.crash, fed.canonical)
    assert (plan.release, plan.runner, plan.model_file) == (fed.release, fed.runner, fed.model_file)
    assert plan.native_ids == fed.native_ids == (2, 30, 58)
    assert plan.ids_source == fed.ids_source == NESTED
    assert plan.source == fed.source and plan.source
    assert plan.width_states == fed.width_states == 3
    assert (plan.notes, plan.assumptions) == (fed.notes, fed.assumptions)
    assert (plan.state, plan.read_path) == (fed.state, fed.read_path)
    assert (plan.order, plan.non_canonical, plan.refused, plan.pp_dropped) == (
        "ascending",
        (),
        None,
        (),
    )
    assert plan.convention is None  # a release row is its feed, not a registry entry
    data = plan.to_dict()
    assert (data["source"], data["width_states"], data["native_ids"]) == (
        fed.source,
        3,
        [2, 30, 58],
    )


@pytest.mark.parametrize(
    ("draft", "target", "system", "kind"),
    [
        (nested(1, 16, 30), GEMMA, "vllm==0.33.0", "unsupported"),
        (nested(2, 16, 29), LLAMA, "sglang==0.4.0", "unknown"),  # not probed
    ],
)
def test_a_row_that_read_no_ids_says_default(
    draft: dict, target: dict, system: str, kind: str
) -> None:
    plan = resolve(draft, target, system)
    assert plan.feed is not None and plan.feed.ids_source == ""
    assert (plan.kind, plan.ids_source, plan.native_ids) == (kind, "default", None)
    assert plan.source == plan.feed.source and plan.source


def test_no_aux_states_feeds_the_final_post_norm_state() -> None:
    plan = resolve(nested(2, 30, 58, use_aux_hidden_state=False), KIMI, "sglang==0.5.23")
    assert (plan.kind, plan.layer_ids, plan.width_states) == ("segments", (), None)
    assert plan.non_canonical == ("final post-norm state",)
    assert plan.width == 7168 and plan.to_dict()["non_canonical"] == ["final post-norm state"]


def test_a_trainer_refusal_is_the_plans_refusal() -> None:
    plan = resolve(nested(1, 2), KIMI, "specforge==0.2.0")
    assert (plan.kind, plan.crash) == ("crash", "trainer-refused")
    assert (
        plan.refused
        == plan.notes[-1]
        == ("specforge==0.2.0 refuses this config: needs exactly 3 non-negative ids, got [1, 2]")
    )


# -- pipeline parallel on release rows ----------------------------------------------------------
def test_a_crashing_row_still_loses_earlier_stages_to_pipeline_parallelism() -> None:
    part = LayerPartition.even(61, 4, rule="sglang")  # 0-14 | 15-29 | 30-44 | 45-60
    plan = resolve(nested(-1, 2, 30), KIMI, "sglang==0.5.23", partition=part)
    assert (plan.kind, plan.crash) == ("crash", "aux-count-short")
    assert (plan.layer_ids, plan.pp_dropped) == ((), (1, 29))
    assert plan.notes[-1] == (
        f"pipeline parallel ({part.describe()}): sglang==0.5.23 deepseek_v2.py captures only "
        "on the last stage; layer 1, layer 29 are captured on earlier stages and dropped"
    )


def test_an_unsupported_row_has_nothing_to_drop() -> None:
    draft = nested(1, 16, 30)
    plan = resolve(draft, GEMMA, "vllm", partition=LayerPartition.even(34, 2))
    assert (plan.kind, plan.pp_dropped, plan.layer_ids) == ("unsupported", (), ())
    assert plan.notes == feed(draft, GEMMA, "vllm").notes


def test_a_partition_of_another_depth_is_refused_on_every_row() -> None:
    # an unsupported row collects nothing, but a partition for a 30-layer model on a 34-layer
    # target is still the user's mistake, named as such
    with pytest.raises(ContractError) as err:
        resolve(nested(1, 16, 30), GEMMA, "vllm", partition=LayerPartition.even(30, 2))
    assert err.value.field == "partition"
    assert str(err.value) == "the pipeline partition covers 30 layers but the target has 34"


# -- verdicts on the trained side ---------------------------------------------------------------
def test_an_unknown_training_row_is_one_finding_with_its_reason() -> None:
    trained = resolve(nested(2, 16, 29), NAMELESS, "specforge==0.2.0")
    assert trained.kind == "unknown" and len(trained.notes) == 1
    (finding,) = compare(trained, resolve(nested(2, 16, 29), NAMELESS, "trtllm"))
    assert (finding.kind, finding.layers, finding.fix_native_ids) == (K.UNKNOWN, (), None)
    assert finding.message == f"unknown: what specforge==0.2.0 trained on: {trained.notes[0]}"
    assert finding.fix == "none: the row is unknown"


def test_an_unsupported_training_row_names_the_release_and_its_source() -> None:
    trained = resolve(nested(1, 16, 30), GEMMA, "vllm==0.33.0")
    (finding,) = compare(trained, resolve(nested(1, 16, 30), GEMMA, "trtllm"))
    assert finding.kind is K.UNSUPPORTED
    assert finding.message == (
        "unsupported: vllm==0.33.0 gemma3.py cannot capture training features for this target "
        f"({trained.source})"
    )
    assert (finding.fix_native_ids, finding.fix) == (None, "none: the row is unsupported")


def test_a_crashing_training_row_names_the_crash_and_its_last_note() -> None:
    trained = resolve(nested(2, 2, 30), DSV3, "sglang==0.5.23")  # collector sized 3, gets 2
    assert (trained.kind, trained.crash, len(trained.notes)) == ("crash", "aux-count-short", 2)
    (finding,) = compare(trained, resolve(nested(2, 30, 58), DSV3, "trtllm"))
    assert finding.kind is K.CRASHES
    assert finding.message == (
        "sglang==0.5.23 deepseek_v2.py crashes (aux-count-short) when capturing the training "
        f"features: {trained.notes[-1]}"
    )
    assert (finding.fix_native_ids, finding.fix) == (None, "none: the row is crashes")


def test_a_refused_training_config_gets_no_release_fix() -> None:
    trained = resolve(nested(1, 2), KIMI, "specforge-hf")
    (finding,) = compare(trained, resolve(nested(2, 30, 58), KIMI, "sglang"))
    assert finding.kind is K.REFUSED and finding.fix_native_ids is None
    assert finding.fix.startswith("no fix: the trained side") and "specforge-hf" in finding.fix


# -- verdicts on the served side ----------------------------------------------------------------
TRAINED = resolve(nested(2, 30, 58), KIMI, "trtllm")


def test_an_unsupported_serving_row_is_one_finding_without_a_fix() -> None:
    served = resolve(nested(1, 16, 30), GEMMA, "vllm")
    (finding,) = compare(resolve(nested(1, 16, 30), GEMMA, "trtllm"), served)
    assert (finding.kind, finding.message) == (K.UNSUPPORTED, f"unsupported: {served.source}")
    assert (finding.fix_native_ids, finding.fix) == (None, "none: the row is unsupported")


def test_an_unknown_serving_row_says_what_needs_reading() -> None:
    served = resolve(nested(2, 16, 29), NAMELESS, "sglang")
    (finding,) = compare(resolve(nested(2, 16, 29), NAMELESS, "trtllm"), served)
    assert finding.kind is K.UNKNOWN
    assert finding.message == f"unknown: needs reading at {served.source}"
    assert (finding.fix_native_ids, finding.fix) == (None, "none: the row is unknown")


def test_a_crashing_serving_row_names_its_last_note_and_the_layers_it_collects() -> None:
    served = resolve(nested(-1, 2, 30), KIMI, "sglang==0.5.23")
    assert len(served.notes) == 2 and served.layer_ids == (1, 29)
    (finding,) = compare(TRAINED, served)
    assert (finding.kind, finding.layers) == (K.CRASHES, (1, 29))
    assert finding.message == (
        f"sglang==0.5.23 deepseek_v2.py crashes (aux-count-short): {served.notes[-1]}"
    )
    assert finding.fix_native_ids == (3, 31, 59)


def test_an_fc_built_for_another_number_of_states_is_a_crash_naming_both_widths() -> None:
    trained = resolve(nested(2, 30), KIMI, "trtllm")  # 2 states
    served = resolve(nested(1, 29, 57), KIMI, "sglang==0.5.23")  # fc for the 3 nested ids
    assert served.kind == "segments" and served.width_states == 3
    (finding,) = compare(trained, served)
    assert (finding.kind, finding.layers) == (K.CRASHES, ())
    assert finding.message == (
        "sglang==0.5.23 deepseek_v2.py builds the drafter's fc for 3 states (21504 wide), the "
        "checkpoint's fc was trained on 2: weight-load error at startup"
    )
    assert finding.fix_native_ids == (3, 31)
    assert finding.fix == f"set {NESTED} = [3, 31]: sglang==0.5.23 deepseek_v2.py then feeds them"


def test_a_post_norm_state_counts_as_a_trained_state() -> None:
    trained = resolve(nested(-1, 30, 58), KIMI, "trtllm")  # 2 layers + the post-norm state
    served = resolve(nested(2, 30, 58), KIMI, "sglang==0.5.23")  # fc for 3: no width crash
    findings = compare(trained, served)
    assert [f.kind for f in findings] == [K.LAYER_MISSING, K.EXTRA_LAYER]
    assert all(f.fix_native_ids is None and f.fix == NO_AUX_FIX for f in findings)


def test_serving_the_final_state_has_no_id_fix() -> None:
    served = resolve(nested(2, 30, 58, use_aux_hidden_state=False), KIMI, "sglang==0.5.23")
    findings = compare(TRAINED, served)
    assert [f.kind for f in findings] == [K.LAYER_MISSING, K.POST_NORM_FED, K.WIDTH_DIFFERS]
    assert findings[1].message == (
        "sglang==0.5.23 feeds the final post-norm state, which the drafter never saw"
    )
    assert all(f.fix_native_ids is None and f.fix == NO_AUX_FIX for f in findings)


# -- what each segment holds --------------------------------------------------------------------
GEMMA_DELTA = resolve(nested(1, 16, 33), GEMMA, "sglang==0.5.23")  # layer deltas, not residuals


def test_a_release_feeding_layer_deltas_is_a_wrong_state_naming_why() -> None:
    assert GEMMA_DELTA.state.startswith("layer delta")
    (finding,) = compare(resolve(nested(1, 16, 33), GEMMA, "trtllm"), GEMMA_DELTA)
    assert finding.kind is K.WRONG_STATE
    assert finding.message == (
        f"sglang==0.5.23 gemma3_causal.py feeds the {GEMMA_DELTA.state}; the drafter was "
        f"trained on the residual stream ({GEMMA_DELTA.notes[-1]})"
    )
    assert finding.fix_native_ids is None


def test_a_drafter_trained_on_deltas_is_fixed_for_a_release_feeding_deltas() -> None:
    served = resolve(nested(1, 16, 30), GEMMA, "sglang==0.5.23")
    findings = compare(GEMMA_DELTA, served)
    assert [(f.kind, f.layers) for f in findings] == [
        (K.LAYER_MISSING, (33,)),
        (K.EXTRA_LAYER, (30,)),
    ]
    assert all(f.fix_native_ids == (1, 16, 33) for f in findings)
    assert findings[0].fix == (
        f"set {NESTED} = [1, 16, 33]: sglang==0.5.23 gemma3_causal.py then feeds them"
    )


@pytest.mark.parametrize("name", ["specforge==0.2.0", "specforge == 0.2.0", " specforge==0.2.0 "])
def test_a_trainer_release_is_answered_per_release_however_it_is_spaced(name: str) -> None:
    # "specforge == 0.2.0" used to skip the release path: conventions.get read it as SGLang
    # 0.5.14's rule, losing SpecForge's own refusal of two ids
    plan = resolve(nested(1, 2), KIMI, name)
    assert (plan.release, plan.kind, plan.crash) == ("specforge==0.2.0", "crash", "trainer-refused")
    assert plan.refused == (
        "specforge==0.2.0 refuses this config: needs exactly 3 non-negative ids, got [1, 2]"
    )


def test_a_trainer_default_is_a_default_not_a_config_read() -> None:
    plan = resolve({}, KIMI, "specforge==0.2.0")
    assert (plan.native_ids, plan.ids_source, plan.read_path) == ((1, 29, 57), "default", NESTED)
    assert (
        "no eagle_config.eagle_aux_hidden_state_layer_ids: specforge==0.2.0's default "
        "[1, L//2-1, L-4] = [1, 29, 57]" in plan.assumptions
    )
    assert resolve(nested(1, 29, 57), KIMI, "specforge==0.2.0").ids_source == NESTED


def test_a_trainer_release_on_the_serving_side_gets_no_fix_instead_of_an_error() -> None:
    trained = resolve(nested(2, 30, 58), DSV3, "trtllm")
    served = resolve(nested(2, 30, 58), DSV3, "specforge==0.2.0")
    [finding] = compare(trained, served)
    assert (finding.kind, finding.fix_native_ids) == (K.SHIFTED, None)
    assert finding.fix == (
        "no fix: specforge==0.2.0 deepseek_v2.py is a trainer release, not a serving engine"
    )


def test_unread_pipeline_behaviour_makes_an_answered_row_unknown_but_keeps_a_crash() -> None:
    part = LayerPartition.even(61, 4)  # vllm rule: 0-14 | 15-29 | 30-45 | 46-60
    draft = {"eagle_aux_hidden_state_layer_ids": [3, 31, 59]}
    fed = resolve(draft, KIMI, "vllm==0.33.0:v1", partition=part)
    assert (fed.kind, fed.crash, fed.layer_ids) == ("unknown", None, (2, 30, 58))
    short = {**draft, "num_aux_hidden_states": 2}  # fc for 2 states, 3 collected: a crash anyway
    crashed = resolve(short, KIMI, "vllm==0.33.0:v1", partition=part)
    assert (crashed.kind, crashed.crash) == ("crash", "fc-width-mismatch")
    late = resolve({"eagle_aux_hidden_state_layer_ids": [47, 50, 59]}, KIMI, "vllm", partition=part)
    assert late.kind == "segments"  # every id on the last stage: nothing unread
