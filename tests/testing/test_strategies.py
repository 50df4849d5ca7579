"""Public hypothesis strategies: values or strategies accepted, valid output, small bounds."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from eagle3_contracts import CaptureContract
from eagle3_contracts.config.readers import read_draft_config
from eagle3_contracts.testing.strategies import (
    SCHEMAS,
    contracts,
    draft_configs,
    layer_ids,
    padded_batches,
    synthetic_configs,
    synthetic_models,
    token_batches,
)
from eagle3_contracts.testing.synthetic import SyntheticConfig, SyntheticTarget


@given(data=st.data(), num_layers=st.integers(1, 8))
def test_layer_ids_are_unique_valid_and_respect_the_flags(data, num_layers):
    ids = data.draw(layer_ids(num_layers, min_size=1, max_size=4, allow_embedding=False))
    assert 1 <= len(ids) <= min(4, num_layers)
    assert len(set(ids)) == len(ids) and all(0 <= n < num_layers for n in ids)
    ordered = data.draw(layer_ids(st.just(num_layers), sorted_=True))
    assert list(ordered) == sorted(ordered) and min(ordered) >= -1


@given(
    contract=CaptureContract.contracts(
        num_layers=st.integers(3, 5), hidden_size=8, order="as_listed"
    )
)
def test_contract_strategy_takes_values_and_strategies(contract):
    assert 3 <= contract.num_layers <= 5 and contract.hidden_size == 8
    assert contract.order == "as_listed"
    assert CaptureContract.from_json(contract.to_json()) == contract


@given(contracts(layer_ids=(4, -1), num_layers=6))
def test_contract_ids_can_be_fixed(contract):
    assert contract.layer_ids == (4, -1) and contract.num_layers == 6


@given(config=synthetic_configs(style="fused", num_layers=st.integers(2, 3)))
def test_synthetic_configs_cover_the_variant_asked_for(config):
    assert config.style == "fused" and 2 <= config.num_layers <= 3 and not config.tuple_outputs


def test_synthetic_configs_reach_every_variant():
    seen = set()

    @settings(max_examples=60, derandomize=True, database=None)
    @given(synthetic_configs())
    def collect(config):
        seen.add(
            (
                config.style,
                config.position_embeddings,
                config.embed_scale is not None,
                config.tuple_outputs,
            )
        )

    collect()
    styles = {s for s, *_ in seen}
    assert styles == {"residual", "fused"}
    assert (
        any(p for _, p, _, _ in seen) and any(s for _, _, s, _ in seen) and any(t for *_, t in seen)
    )


@given(model=synthetic_models(num_layers=2, hidden_size=8, dtype=torch.bfloat16))
def test_synthetic_models_are_built(model):
    assert isinstance(model, SyntheticTarget) and model.config.num_layers == 2
    assert next(model.parameters()).dtype == torch.bfloat16


@given(model=synthetic_models(SyntheticConfig(3, 8, seed=5)))
def test_synthetic_models_from_a_fixed_config(model):
    assert model.config.seed == 5


@given(ids=token_batches(10, batch_size=2, seq_len=st.integers(3, 4)))
def test_token_batches_shape_and_range(ids):
    assert ids.dtype == torch.long and ids.shape[0] == 2 and ids.shape[1] in (3, 4)
    assert int(ids.min()) >= 0 and int(ids.max()) < 10


@given(batch=padded_batches(side="left"))
def test_padded_batches_pad_on_the_side_asked(batch):
    ids, mask, lengths = batch
    assert mask.sum(1).tolist() == list(lengths)
    for row, n in enumerate(lengths):
        assert mask[row, ids.shape[1] - n :].all() and not mask[row, : ids.shape[1] - n].any()
        assert (ids[row][mask[row] == 0] == 0).all()


@pytest.mark.parametrize("schema", SCHEMAS)
def test_draft_configs_parse_in_their_schema(schema):
    @settings(max_examples=10, derandomize=True, database=None)
    @given(draft_configs(schema))
    def check(config):
        parsed = read_draft_config(config)
        assert parsed.schema == schema
        if schema == "none":
            assert parsed.ids is None
        else:
            assert len(parsed.ids) == 3 and list(parsed.ids) == sorted(parsed.ids)

    check()


@given(draft_configs("eagle_config", layer_ids=(2, 30, 58), num_target_layers=61))
def test_draft_config_ids_can_be_fixed(config):
    assert config["eagle_config"]["eagle_aux_hidden_state_layer_ids"] == [2, 30, 58]


def test_unknown_schema_is_refused():
    with pytest.raises(InvalidArgument, match="schema='yaml' must be one of"):
        draft_configs("yaml")


# -- arguments checked when the strategy is built, never clamped ----------
@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: layer_ids(4, min_size=3, max_size=2), "min_size=3 must be <= max_size=2"),
        (lambda: layer_ids(0), "num_layers=0 must be >= 1"),
        (lambda: layer_ids(4, min_size=0), "min_size=0 must be >= 1"),
        (lambda: layer_ids(4, sorted_="yes"), "sorted_='yes' must be True or False"),
        (lambda: contracts(hidden_size=-8), "hidden_size=-8 must be >= 1"),
        (lambda: contracts(order="descending"), "order='descending' must be one of"),
        (lambda: contracts(min_size=4, max_size=1), "min_size=4 must be <= max_size=1"),
        (lambda: token_batches(0), "vocab_size=0 must be >= 1"),
        (lambda: token_batches(seq_len=True), "seq_len=True must be an integer"),
        (lambda: synthetic_configs(style="fancy"), "style='fancy' must be one of"),
        (lambda: synthetic_configs(embed_scale=-1.0), "embed_scale=-1.0 must be None"),
        (lambda: draft_configs(num_target_layers=0), "num_target_layers=0 must be >= 1"),
    ],
)
def test_bad_arguments_raise_invalid_argument_when_built(build, message):
    with pytest.raises(InvalidArgument, match=re.escape(message)):
        build()


def test_more_ids_than_the_depth_has_is_an_error_not_a_clamp():
    @settings(max_examples=2, database=None)
    @given(layer_ids(2, min_size=4, max_size=5, allow_embedding=False))
    def draw(ids):
        pass

    with pytest.raises(InvalidArgument, match="min_size=4 ids do not exist for num_layers=2"):
        draw()


def test_a_drafter_vocab_above_the_targets_is_an_error_not_a_clamp():
    @settings(max_examples=2, database=None)
    @given(draft_configs(vocab_size=100, draft_vocab_size=200))
    def draw(config):
        pass

    with pytest.raises(InvalidArgument, match="draft_vocab_size=200 must be <= vocab_size=100"):
        draw()


def test_drawn_arguments_are_checked_too():
    @settings(max_examples=2, database=None)
    @given(contracts(hidden_size=st.just(0)))
    def draw(contract):
        pass

    with pytest.raises(InvalidArgument, match=r"hidden_size=0 .drawn from its strategy. must be"):
        draw()


# -- torch's RNG is managed by hypothesis (the package's `hypothesis` entry point) -----------
def test_torch_rng_is_registered_with_hypothesis():
    from hypothesis.internal.entropy import RANDOMS_TO_MANAGE

    from eagle3_contracts.testing._hypothesis import _TORCH_RANDOM

    assert _TORCH_RANDOM in list(RANDOMS_TO_MANAGE.values())


def test_loading_hypothesis_does_not_import_torch():
    """The entry point runs in every downstream process that imports hypothesis."""
    code = (
        "import sys, hypothesis\n"
        "from hypothesis import given, strategies as st\n"
        "given(st.integers())(lambda x: None)()\n"
        "assert 'torch' not in sys.modules, 'torch imported'\n"
        "from hypothesis.internal.entropy import RANDOMS_TO_MANAGE\n"
        "from eagle3_contracts.testing._hypothesis import _TORCH_RANDOM\n"
        "assert _TORCH_RANDOM in list(RANDOMS_TO_MANAGE.values())\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_torch_rng_is_seeded_per_example_and_restored_afterwards():
    draws = []

    @settings(max_examples=5, derandomize=True, database=None)
    @given(st.integers(0, 10))
    def body(_):
        draws.append(torch.rand(3))

    torch.manual_seed(123)
    expected_after = torch.rand(2)
    torch.manual_seed(123)
    body()
    assert len(draws) >= 2 and all(torch.equal(d, draws[0]) for d in draws)
    assert torch.equal(torch.rand(2), expected_after)  # the outer stream is untouched
