"""The TensorRT-LLM, ModelOpt and speculators entries as read in their released code: each
cites file and line, and each behaviour the code shows is an answer of its own (TensorRT-LLM's
unwritten buffer slots, ModelOpt's crash at the first forward, speculators' converter)."""

from __future__ import annotations

import re

import pytest

from eagle3_contracts import conventions
from eagle3_contracts.config.check import check_drafter
from eagle3_contracts.config.plan import compare, resolve
from eagle3_contracts.differences import FindingKind

L = 61
KIMI = {"architectures": ["DeepseekV3ForCausalLM"], "num_hidden_layers": L, "hidden_size": 32}


def nested(*ids: int) -> dict:
    return {"hidden_size": 32, "eagle_config": {"eagle_aux_hidden_state_layer_ids": list(ids)}}


@pytest.mark.parametrize("name", ["trtllm", "modelopt", "speculators"])
def test_each_entry_cites_the_released_file_and_line(name):
    entry = conventions.get(name)
    assert entry.release
    assert any(re.search(r"\.py:\d+", s) for s in entry.sources)


@pytest.mark.parametrize("name", ["trtllm", "modelopt", "speculators"])
def test_check_json_rows_cite_the_released_file_and_line(name):
    report = check_drafter(
        nested(2, 30, 58), target=KIMI, trained_with="specforge-hf", serve_with=[name]
    )
    row = report.to_dict()["rows"][0]
    assert re.search(r"\.py:\d+", row["plan"]["source"]), row["plan"]["source"]


# -- TensorRT-LLM -----------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [[2, 30, L], [2, 30, L + 5], [-2, 2, 30]])
def test_trtllm_ids_outside_the_layers_read_uninitialised_memory(bad):
    """eagle3.py: the buffer is torch.empty and only a slot whose id equals a layer index is
    written; nothing refuses the id. The answer is that verdict, never the layers it does feed."""
    trained = resolve(nested(2, 30, 58), KIMI, "specforge-hf")
    served = resolve(nested(*bad), KIMI, "trtllm")
    assert (served.kind, served.crash, served.layer_ids) == ("crash", "uninitialised-aux-slots", ())
    assert "uninitialised memory" in served.notes[-1]
    (finding,) = compare(trained, served)
    assert finding.kind is FindingKind.CRASHES
    assert "uninitialised-aux-slots" in finding.message


def test_trtllm_ids_inside_the_layers_are_fed_and_minus_one_is_the_post_norm_state():
    assert resolve(nested(2, 30, 58), KIMI, "trtllm").layer_ids == (2, 30, 58)
    plan = resolve(nested(-1, 2, 30), KIMI, "trtllm")
    assert plan.kind == "segments"
    assert plan.non_canonical == ("final post-norm state",)
    assert "one-model path" in plan.assumptions[0]


# -- ModelOpt ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ids", "why"),
    [
        ([1, 1, 57], "listed twice"),
        ([-1, 2, 30], "no layer"),
        ([2, 30, L], "no layer"),
    ],
)
def test_modelopt_cannot_train_on_ids_without_a_hook_each(ids, why):
    """hf_eagle.py:401-406 hooks each layer_idx in range(L) once; modeling_eagle.py:61 builds fc
    for len(ids) states: fewer states than fc expects, training crashes at its first forward."""
    plan = resolve(nested(*ids), KIMI, "modelopt")
    assert plan.refused is not None and why in plan.refused
    assert "crashes at its first forward" in plan.refused
    report = check_drafter(
        nested(*ids), target=KIMI, trained_with="modelopt", serve_with=["vllm==0.33.0:v1"]
    )
    assert not report.ok
    assert report.rows[0].findings[0].kind is FindingKind.REFUSED


def test_modelopt_answers_say_offline_capture_must_have_used_the_same_ids():
    plan = resolve(nested(1, 29, 57), KIMI, "modelopt")
    assert plan.layer_ids == (1, 29, 57) and plan.refused is None
    assert any("offline and streaming" in a for a in plan.assumptions)


# -- speculators ------------------------------------------------------------------------------


def test_a_converted_speculators_drafter_says_what_the_conversion_did():
    """speculators 0.9.0 eagle3_converter.py:146 writes the ids only from a keyword argument:
    a converted drafter without ids is served the default boundaries."""
    converted = {
        "speculators_model_type": "eagle3",
        "transformer_layer_config": {"hidden_size": 32, "num_hidden_layers": 1},
        "speculators_config": {"verifier": {"name_or_path": "moonshotai/Kimi-K2"}},
    }
    report = check_drafter(
        converted, target=KIMI, trained_with="specforge-hf", serve_with=["speculators"]
    )
    said = " ".join(report.notes)
    assert "eagle3_converter.py:110-147" in said
    assert f"[2, {L // 2}, {L - 3}]" in said
