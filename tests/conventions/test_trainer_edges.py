"""A trainer release at its edges: names that are no trainer, and refusals that say where the
refused ids came from (SpecForge 0.2.0's default for a shallow target, or the config)."""

from __future__ import annotations

import pytest

from eagle3_contracts.conventions import parse_system
from eagle3_contracts.conventions.hf import NESTED
from eagle3_contracts.conventions.trainers import predict_trainer, trainer_release
from eagle3_contracts.errors import ContractError

SPEC = parse_system("specforge==0.2.0", field="trained_with")
LLAMA = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 16}


@pytest.mark.parametrize("name", ["sglang==0.5.23", "vllm", "specforge-hf"])
def test_a_name_that_is_no_trainer_release_is_refused_naming_trained_with(name: str) -> None:
    with pytest.raises(ContractError) as err:
        trainer_release(name)
    assert err.value.field == "trained_with"
    assert str(err.value).startswith(f"{name!r} is not a trainer release")


def test_an_unknown_name_is_refused_by_the_parser_naming_trained_with() -> None:
    with pytest.raises(ContractError) as err:
        trainer_release("spcforge")
    assert err.value.field == "trained_with" and "specforge" in str(err.value)


@pytest.mark.parametrize(
    ("draft", "ids_source", "native"),
    [
        ({}, "default", (1, 0, -1)),  # SpecForge's default [1, L//2-1, L-4] for L = 3
        ({"eagle_config": {"eagle_aux_hidden_state_layer_ids": [0, 0, 1]}}, None, (0, 0, 1)),
    ],
)
def test_a_refusal_says_where_the_refused_ids_came_from(
    draft: dict[str, object], ids_source: str | None, native: tuple[int, ...]
) -> None:
    feed = predict_trainer(SPEC, draft, {**LLAMA, "num_hidden_layers": 3})
    assert (feed.kind, feed.crash, feed.native_ids) == ("crash", "trainer-refused", native)
    assert feed.ids_source == (ids_source or NESTED)
