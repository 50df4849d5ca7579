"""A plan composes one answer (``Feed``), whatever kind of name it is for: a release's, or a
fixed reading's (``predict.fixed_feed``), which names no release and no model file."""

from __future__ import annotations

import pytest

from eagle3_contracts import compare, conventions, resolve
from eagle3_contracts.config.readers import IDS_FIELD, read_target_config
from eagle3_contracts.conventions.predict import fixed_feed
from eagle3_contracts.errors import ContractError
from eagle3_contracts.parallel.partition import LayerPartition

KIMI = {"num_hidden_layers": 61, "hidden_size": 7168, "model_type": "kimi_k25"}


def test_a_fixed_feed_names_no_release_and_defaults_to_segments() -> None:
    feed = fixed_feed((2, 30, 58))
    assert (feed.kind, feed.crash, feed.canonical) == ("segments", None, (2, 30, 58))
    assert (feed.release, feed.runner, feed.model_file, feed.width_states) == ("", None, "", None)
    assert (feed.source, feed.ids_source, feed.native_ids, feed.notes) == ("", "", None, ())


def test_a_fixed_reading_plan_reads_its_answer_through_its_feed() -> None:
    plan = resolve({"eagle_config": {IDS_FIELD: [2, 30, 58]}}, KIMI, "trtllm")
    assert plan.feed.release == "" and plan.release is None
    data = plan.to_dict()
    assert (data["release"], data["runner"], data["model_file"]) == (None, None, None)
    assert data["layer_ids"] == list(plan.feed.canonical) == [2, 30, 58]
    assert data["source"] == plan.feed.source != ""  # the entry's sources are cited


def test_a_release_plan_is_its_feed_less_what_the_pipeline_drops() -> None:

    draft = {"eagle_config": {IDS_FIELD: [2, 30, 58]}}
    target = {**KIMI, "architectures": ["KimiK25ForConditionalGeneration"]}
    whole = resolve(draft, target, "sglang==0.5.23")
    split = resolve(
        draft, target, "sglang==0.5.23", partition=LayerPartition.even(61, 4, rule="sglang")
    )
    assert split.feed == whole.feed  # the answer does not depend on the deployment
    assert split.pp_dropped and set(split.layer_ids) == set(whole.layer_ids) - set(split.pp_dropped)
    assert split.notes[: len(whole.notes)] == whole.notes and split.pp_notes


def _split(stages: int) -> LayerPartition:

    return LayerPartition.even(61, stages, rule="vllm")


def test_unread_pipeline_code_makes_the_plan_unknown_only_with_ids_on_earlier_stages() -> None:
    draft = {"eagle_config": {IDS_FIELD: [2, 30, 58]}}
    one_stage = resolve(draft, KIMI, "trtllm", partition=_split(1))
    assert (one_stage.kind, one_stage.pp_unread, one_stage.pp_notes) == ("segments", False, ())
    four = resolve(draft, KIMI, "trtllm", partition=_split(4))
    assert (four.kind, four.pp_unread) == ("unknown", True) and four.crash is None
    assert four.pp_notes[0].endswith(
        "no code read says whether TensorRT-LLM (PyTorch backend) carries them to the drafter's "
        "stage: unknown, not ok"
    )


def test_a_system_without_pipeline_parallelism_is_not_made_unknown_by_a_partition() -> None:
    plan = resolve({IDS_FIELD: [2, 30, 58]}, KIMI, "speculators", partition=_split(4))
    assert (plan.kind, plan.pp_unread, plan.pp_dropped, plan.pp_notes) == (
        "segments",
        False,
        (),
        (),
    )


def test_check_says_why_a_row_with_unread_pipeline_code_is_unknown() -> None:

    draft = {"eagle_config": {IDS_FIELD: [2, 30, 58]}}
    trained = resolve(draft, KIMI, "specforge-hf")
    served = resolve(draft, KIMI, "trtllm", partition=_split(4))
    (finding,) = compare(trained, served)
    assert finding.message == (
        "unknown: no code read says whether trtllm carries states captured on earlier pipeline "
        "stages to the drafter"
    )


BEYOND = {"eagle_config": {IDS_FIELD: [2, 30, 70]}}  # 70: no layer of a 61-layer target


def test_a_fixed_reading_that_crashes_claims_no_layers_and_no_post_norm_state() -> None:
    plan = resolve(BEYOND, KIMI, "trtllm")
    assert (plan.kind, plan.crash, plan.layer_ids) == ("crash", "uninitialised-aux-slots", ())
    assert plan.non_canonical == () and plan.width == 0
    assert plan.to_dict()["crash"] == "uninitialised-aux-slots"


def test_a_refusal_says_whether_the_system_cannot_train_or_refuses_at_load() -> None:
    modelopt = resolve(BEYOND, KIMI, "modelopt")  # training crashes at its first forward
    assert modelopt.refused and modelopt.non_canonical == () and modelopt.layer_ids == ()
    assert (
        modelopt.notes[-1]
        == f"NVIDIA ModelOpt 0.47.0 cannot train on this config: {modelopt.refused}"
    )
    hf = resolve(BEYOND, KIMI, "specforge-hf")
    assert hf.refused == "ids [70] are outside the accepted range 0..60 for 61 layers"
    assert hf.notes[-1].endswith(f"refuses this config at load: {hf.refused}")


def test_a_fixed_reading_cites_its_sources_only_when_it_names_a_release() -> None:

    draft = {"eagle_config": {IDS_FIELD: [2, 30, 58]}}
    trtllm = resolve(draft, KIMI, "trtllm")
    assert trtllm.source == "; ".join(conventions.REGISTRY["trtllm"].sources)
    hf = resolve(draft, KIMI, "specforge-hf")  # a removed backend: no release to cite
    assert (hf.source, hf.crash, hf.to_dict()["crash"]) == ("", None, None)


def test_an_unknown_system_is_refused_naming_the_system_field() -> None:

    with pytest.raises(ContractError) as err:
        resolve({}, KIMI, "spcforge")
    assert err.value.field == "system"


def test_a_target_given_as_a_dict_is_named_as_the_caller_says() -> None:

    sizes = {"num_hidden_layers": 2, "hidden_size": 4}
    assert read_target_config(sizes, source="target.json").source == "target.json"
    assert read_target_config(sizes).source == "<dict>"


def test_a_release_name_drops_what_its_capture_stage_drops() -> None:
    """SGLang 0.5.23 deepseek_v2.py takes canonical 44 entering layer 45, the last stage's first
    layer, so it is kept on this split; 1 and 29 are dropped."""
    arch = ["DeepseekV3ForCausalLM"]
    target = {**KIMI, "model_type": "deepseek_v3", "architectures": arch}
    draft = {"eagle_config": {IDS_FIELD: [2, 30, 45]}}  # loop indices: canonical 1, 29, 44
    split = LayerPartition.even(61, 4, rule="sglang")  # 0-14 | 15-29 | 30-44 | 45-60
    by_name = resolve(draft, target, "sglang==0.5.23", partition=split)
    assert (by_name.layer_ids, by_name.pp_dropped) == ((44,), (1, 29))
