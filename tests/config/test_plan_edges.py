"""``compare``'s findings at their edges: each kind names the layers it concerns, and the fix
restores what the drafter was trained on. Trained side: TensorRT-LLM reading [2, 30, 58] as
outputs, so the served side's ids are canonical as written."""

from __future__ import annotations

import pytest

from eagle3_contracts import compare, resolve
from eagle3_contracts.config.readers import IDS_FIELD

KIMI = {"num_hidden_layers": 61, "hidden_size": 7168, "model_type": "kimi_k25"}


def nested(*ids: int) -> dict:
    return {"eagle_config": {IDS_FIELD: list(ids)}}


TRAINED = resolve(nested(2, 30, 58), KIMI, "trtllm")


def findings(draft: dict, system: str = "trtllm", target: dict = KIMI):
    return [
        (f.kind.value, f.message, f.layers, f.fix_native_ids)
        for f in compare(TRAINED, resolve(draft, target, system))
    ]


def test_fed_what_it_was_trained_on_is_no_finding() -> None:
    assert findings(nested(58, 2, 30)) == []  # an engine concatenates ascending anyway


def test_a_missing_layer_is_named_and_the_width_differs() -> None:
    assert findings(nested(2, 30)) == [
        ("layer-missing", "not fed: layer 58", (58,), (2, 30, 58)),
        (
            "width-differs",
            "width differs: the drafter's fc takes 21504 (3 x 7168), trtllm feeds 14336 (2 x 7168)",
            (),
            (2, 30, 58),
        ),
    ]


def test_an_extra_layer_is_named() -> None:
    assert findings(nested(2, 30, 58, 59))[0] == (
        "extra-layer",
        "fed but not trained on: layer 59",
        (59,),
        (2, 30, 58),
    )


def test_the_last_layer_is_named_pre_norm() -> None:
    trained = resolve(nested(2, 30, 60), KIMI, "trtllm")
    [first, _] = compare(trained, resolve(nested(2, 30), KIMI, "trtllm"))
    assert (first.message, first.layers) == ("not fed: layer 60 (last, pre-norm)", (60,))


def test_the_post_norm_state_is_a_finding_of_its_own() -> None:
    kinds = [f[0] for f in findings(nested(-1, 30, 58))]
    assert kinds == ["layer-missing", "post-norm-fed"]
    assert findings(nested(-1, 30, 58))[1][1] == (
        "trtllm feeds the final post-norm state, which the drafter never saw"
    )


def test_a_list_order_trainer_against_an_ascending_engine_names_both_orders() -> None:
    trained = resolve(nested(58, 2, 30), KIMI, "specforge-hf")
    assert trained.layer_ids == (58, 2, 30)
    [finding] = compare(trained, TRAINED)
    assert finding.kind.value == "order-differs"
    assert finding.message == (
        "same layers, different concatenation order: trained [58, 2, 30], served [2, 30, 58]"
    )


@pytest.mark.parametrize("depth", [60, 62])
def test_another_target_depth_is_one_finding(depth: int) -> None:
    [(kind, message, *_)] = findings(nested(2, 30, 58), target={**KIMI, "num_hidden_layers": depth})
    assert (kind, message) == (
        "target-differs",
        f"trained on a 61 x 7168 target, served on {depth} x 7168",
    )


def test_a_refusal_names_the_system_and_why() -> None:
    [(kind, message, layers, _)] = findings(nested(-1, 2, 30, 58), "specforge-hf")
    assert (kind, layers) == ("refused", ())
    assert message == "specforge-hf refuses it: it requires exactly 3 ids, got 4"
