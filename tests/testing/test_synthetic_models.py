"""Synthetic targets: deterministic, distinct layers, padding-invariant, every variant."""

from __future__ import annotations

import itertools

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from eagle3_contracts.errors import ContractError
from eagle3_contracts.testing.strategies import padded_batches, synthetic_configs, token_batches
from eagle3_contracts.testing.synthetic import SyntheticConfig, build_synthetic


def streams(model, ids, mask=None):
    """All L + 1 canonical states, via the explicit reference loop."""
    state = model.enter(ids, mask)
    out = [model.stream(state)]
    for i in range(model.config.num_layers):
        state = model.run_layer(i, state, mask)
        out.append(model.stream(state))
    return out


def test_same_seed_same_weights_whatever_the_global_rng():
    config = SyntheticConfig(num_layers=3, hidden_size=16, seed=7)
    torch.manual_seed(1)
    a = build_synthetic(config)
    torch.manual_seed(2)
    b = build_synthetic(config)
    c = build_synthetic(SyntheticConfig(num_layers=3, hidden_size=16, seed=8))
    for (name, pa), (_, pb), (_, pc) in zip(
        a.state_dict().items(), b.state_dict().items(), c.state_dict().items(), strict=True
    ):
        assert torch.equal(pa, pb), name
        assert not torch.equal(pa, pc), name


def test_building_leaves_the_global_rng_alone():
    torch.manual_seed(3)
    expected = torch.rand(4)
    torch.manual_seed(3)
    build_synthetic(SyntheticConfig(num_layers=2, hidden_size=8))
    assert torch.equal(torch.rand(4), expected)


@given(
    config=synthetic_configs(num_layers=st.integers(2, 5)),
    ids=token_batches(batch_size=1, seq_len=st.integers(4, 10)),
)
def test_adjacent_layers_are_clearly_distinct(config, ids):
    model = build_synthetic(config)
    states = streams(model, ids)
    for before, after in itertools.pairwise(states):
        rel = ((after - before).norm() / after.norm()).item()
        assert rel > 0.05  # far above any dtype tolerance used by identify_segments


@given(config=synthetic_configs(), batch=padded_batches())
def test_a_sequence_inside_a_padded_batch_equals_it_alone(config, batch):
    ids, mask, lengths = batch
    model = build_synthetic(config)
    batched = streams(model, ids, mask)
    for row, n in enumerate(lengths):
        real = mask[row].bool()
        alone = streams(model, ids[row : row + 1, real])
        for got, want in zip(batched, alone, strict=True):
            torch.testing.assert_close(got[row, real], want[0], rtol=1e-4, atol=1e-5)
        assert int(real.sum()) == n


@given(config=synthetic_configs(num_layers=st.integers(1, 4)))
def test_forward_is_the_final_norm_of_the_last_stream(config):
    model = build_synthetic(config)
    ids = torch.arange(6)[None] % config.vocab_size
    state = model.enter(ids)
    for i in range(config.num_layers):
        state = model.run_layer(i, state)
    torch.testing.assert_close(model(ids), model.finish(state))
    assert not torch.allclose(model(ids), model.stream(state), atol=1e-3)


def test_fused_layers_return_hidden_and_residual_whose_sum_is_the_stream():
    model = build_synthetic(SyntheticConfig(num_layers=3, hidden_size=16, style="fused"))
    ids = torch.arange(5)[None]
    hidden, residual = model.enter(ids)
    assert residual is None
    hidden, residual = model.layers[0](hidden, residual)
    assert hidden.shape == residual.shape
    assert not torch.allclose(hidden, hidden + residual)
    torch.testing.assert_close(model.stream((hidden, residual)), hidden + residual)


@pytest.mark.parametrize(
    ("variant", "differs"),
    [
        ({}, False),
        ({"position_embeddings": True}, True),
        ({"embed_scale": 4.0}, True),
        ({"style": "fused", "position_embeddings": True, "embed_scale": 2.0}, True),
    ],
)
def test_entry_state_differs_from_the_raw_embedding_exactly_for_entry_transforms(variant, differs):
    model = build_synthetic(SyntheticConfig(num_layers=2, hidden_size=16, **variant))
    ids = torch.arange(6)[None]
    entry = model.stream(model.enter(ids))
    assert torch.allclose(entry, model.embed_tokens(ids)) is not differs


def test_tuple_outputs_carry_the_same_stream():
    plain = build_synthetic(SyntheticConfig(num_layers=2, hidden_size=16))
    tupled = build_synthetic(SyntheticConfig(num_layers=2, hidden_size=16, tuple_outputs=True))
    ids = torch.arange(6)[None]
    out = tupled.layers[0](tupled.enter(ids))
    assert isinstance(out, tuple)
    torch.testing.assert_close(out[0], plain.layers[0](plain.enter(ids)))


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"num_layers": 0, "hidden_size": 8}, "num_layers"),
        ({"num_layers": 2, "hidden_size": True}, "hidden_size"),
        ({"num_layers": 2, "hidden_size": 8, "style": "parallel"}, "style"),
        (
            {"num_layers": 2, "hidden_size": 8, "style": "fused", "tuple_outputs": True},
            "tuple_outputs",
        ),
    ],
)
def test_bad_configs_name_the_field(kwargs, field):
    with pytest.raises(ContractError) as info:
        SyntheticConfig(**kwargs)
    assert info.value.field == field


def test_build_rejects_a_non_config():
    with pytest.raises(ContractError, match="SyntheticConfig"):
        build_synthetic({"num_layers": 2})  # type: ignore[arg-type]


def test_dtype_and_eval_mode():
    model = build_synthetic(SyntheticConfig(num_layers=2, hidden_size=8), dtype=torch.bfloat16)
    assert not model.training
    assert {p.dtype for p in model.parameters()} == {torch.bfloat16}
    assert not any(p.requires_grad for p in model.parameters())
