"""identify_segments: which canonical layer each segment is, and the near misses worth naming."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from eagle3_contracts import identify_segments
from eagle3_contracts.capture.hooks import capture_states, decoder_layers, final_norm
from eagle3_contracts.capture.identify import (
    DEFAULT_RTOL,
    DELTA,
    FINAL_NORM,
    RAW_EMBED,
    SHIFTED_LEFT,
    SHIFTED_RIGHT,
)
from eagle3_contracts.errors import ContractError
from eagle3_contracts.testing.strategies import layer_ids, synthetic_configs, token_batches
from eagle3_contracts.testing.synthetic import SyntheticConfig, build_synthetic

from ._targets import (
    all_targets,
    forward_calls,
    hf_model,
    synthetic_model,
    target,
    tokens,
    vocab_of,
)


def every_state(model, ids):
    num_layers = len(decoder_layers(model))
    return num_layers, capture_states(model, ids, tuple(range(-1, num_layers)))


@pytest.mark.parametrize("name", all_targets())
def test_every_state_is_identified_as_itself(name):
    model = target(name)
    ids = tokens(vocab_of(model))
    num_layers, states = every_state(model, ids)
    order = list(reversed(range(-1, num_layers)))  # any order: identity is per segment
    found = identify_segments(torch.cat([states[n] for n in order], -1), model, ids)
    assert found.layer_ids == tuple(order)
    assert all(m.near_miss is None and m.rel_error <= found.rtol for m in found)
    assert all(m.runner_up_rel_error > 2 * found.rtol for m in found)  # margin, never adjacent


@given(config=synthetic_configs(num_layers=st.integers(2, 5)), data=st.data())
def test_generated_models_and_ids_are_identified(config, data):
    model = build_synthetic(config)
    ids = data.draw(token_batches(config.vocab_size, seq_len=st.integers(3, 8)))
    wanted = data.draw(layer_ids(config.num_layers))
    states = capture_states(model, ids, wanted)
    found = identify_segments(torch.cat([states[n] for n in wanted], -1), model, ids)
    assert found.layer_ids == wanted


@pytest.mark.parametrize(
    "name", ["synthetic-fused", "synthetic-positions", "hf-gpt2", "hf-qwen3_moe"]
)
def test_near_misses_are_named(name):
    model = target(name)
    ids = tokens(vocab_of(model))
    num_layers, states = every_state(model, ids)
    last = num_layers - 1
    cases = {
        FINAL_NORM: (final_norm(model)(states[last]), last),
        DELTA: (states[2] - states[1], 2),
        SHIFTED_LEFT: (torch.cat([states[1][:, :1], states[1][:, :-1]], 1), 1),
        SHIFTED_RIGHT: (torch.cat([states[1][:, 1:], states[1][:, -1:]], 1), 1),
    }
    for label, (segment, source) in cases.items():
        (match,) = identify_segments(segment, model, ids).segments
        assert match.layer_id is None, label
        assert (match.near_miss, match.near_miss_layer) == (label, source)
        assert label in match.label


@pytest.mark.parametrize("name", ["hf-gpt2", "hf-gemma", "synthetic-positions", "synthetic-scaled"])
def test_raw_embed_tokens_is_a_near_miss_where_the_entry_transforms_it(name):
    model = target(name)
    ids = tokens(vocab_of(model))
    weight = (
        model.get_input_embeddings().weight
        if hasattr(model, "get_input_embeddings")
        else model.embed_tokens.weight
    )
    (match,) = identify_segments(torch.nn.functional.embedding(ids, weight), model, ids)
    assert (match.layer_id, match.near_miss) == (None, RAW_EMBED)


def test_raw_embed_tokens_is_the_embedding_where_nothing_transforms_it():
    model = hf_model("llama")
    ids = tokens(vocab_of(model))
    (match,) = identify_segments(model.get_input_embeddings()(ids), model, ids)
    assert match.layer_id == -1


def test_fused_hidden_without_residual_is_a_delta_near_miss():
    model = synthetic_model("fused")
    ids = tokens(64)
    hidden, _ = model.run_layer(1, model.run_layer(0, model.enter(ids)))
    (match,) = identify_segments(hidden, model, ids)
    assert (match.layer_id, match.near_miss, match.near_miss_layer) == (None, DELTA, 1)


def test_identical_adjacent_layers_are_reported_ambiguous_never_guessed():
    model = build_synthetic(SyntheticConfig(4, 16, seed=3))
    with torch.no_grad():  # layer 2 becomes the identity: its output equals layer 1's
        model.layers[2].attn.o.weight.zero_()
        model.layers[2].mlp.down.weight.zero_()
    ids = tokens(64)
    states = capture_states(model, ids, (1, 2, 3))
    found = identify_segments(torch.cat([states[1], states[3]], -1), model, ids)
    assert found.layer_ids == (None, 3)
    assert "ambiguous" in found[0].label and {found[0].closest, found[0].runner_up} == {1, 2}


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_low_precision_uses_a_looser_tolerance_and_still_separates_layers(dtype):
    model = build_synthetic(SyntheticConfig(6, 32, seed=1), dtype=dtype)
    ids = tokens(64)
    _num_layers, states = every_state(model, ids)
    found = identify_segments(torch.cat([states[n] for n in range(-1, 6)], -1), model, ids)
    assert found.rtol == DEFAULT_RTOL[dtype] and str(dtype) in found.rtol_source
    assert found.layer_ids == tuple(range(-1, 6))
    # a state recomputed in another batch layout still matches within the loose tolerance
    padded = torch.cat([ids, torch.zeros_like(ids[:, :2])], 1)
    mask = torch.cat([torch.ones_like(ids), torch.zeros_like(ids[:, :2])], 1)
    again = capture_states(model, padded, (3,), attention_mask=mask)[3]
    (match,) = identify_segments(again, model, padded, attention_mask=mask)
    assert match.layer_id == 3


def test_only_real_tokens_are_compared():
    model = synthetic_model("residual")
    ids = tokens(64)
    mask = torch.ones_like(ids)
    mask[0, -3:] = 0
    state = capture_states(model, ids, (2,), attention_mask=mask)[2].clone()
    state[0, -3:] = float("nan")  # garbage at padding positions
    state[0, -1] = float("inf")
    (match,) = identify_segments(state, model, ids, attention_mask=mask)
    assert match.layer_id == 2


def test_render_text_and_given_rtol_are_reported():
    model = synthetic_model("residual")
    ids = tokens(64)
    states = capture_states(model, ids, (0, 4))
    found = identify_segments(torch.cat([states[0], states[4]], -1), model, ids, rtol=1e-4)
    text = found.render_text()
    assert "rtol 0.0001, given" in text and "layer 4 (last, pre-norm)" in text
    assert len(found) == 2 and [m.position for m in found] == [0, 1]


@pytest.mark.parametrize(
    ("captured", "kwargs", "match"),
    [
        (torch.zeros(2, 9, 20), {}, "not a positive multiple"),
        (torch.zeros(2, 8, 16), {}, "input_ids shape"),
        (torch.zeros(2, 9, 16), {"rtol": 2.0}, "rtol"),
    ],
)
def test_bad_input_raises_contract_errors(captured, kwargs, match):
    with pytest.raises(ContractError, match=match):
        identify_segments(captured, synthetic_model("residual"), tokens(64), **kwargs)


def test_identification_is_one_streaming_forward_without_output_hidden_states():
    model = hf_model("qwen2")
    ids = tokens(vocab_of(model))
    captured = capture_states(model, ids, (1,))[1]
    with forward_calls(model) as calls:
        (match,) = identify_segments(captured, model, ids)
    assert match.layer_id == 1
    assert len(calls) == 1 and "output_hidden_states" not in calls[0]


def test_margin_rule_accepts_clear_half_precision_matches_only() -> None:
    from eagle3_contracts.capture.identify import _matches

    # bf16 (rtol 3e-2): an exact match whose neighbour is only 4% away (deep layers of a
    # 61-layer model) is a match, not "ambiguous"
    assert _matches(0.0, 0.04, 3e-2)
    # a bf16 engine 3% off an fp32 reference, neighbour 12% away: a match
    assert _matches(0.032, 0.12, 3e-2)
    # ... but not when the neighbour is nearly as close: ambiguous
    assert not _matches(0.032, 0.05, 3e-2)
    # never above the 10% cap, however far the runner-up
    assert not _matches(0.11, 0.9, 3e-2)
    # fp32 keeps the strict rule: 2e-3 error is no match even with a distant runner-up
    assert not _matches(2e-3, 0.5, 1e-3)
    assert _matches(5e-4, 0.5, 1e-3)
