"""capture_hidden_states: the k canonical states by hooks, for every target layout."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch import nn

from eagle3_contracts import CaptureContract, capture_hidden_states, to_hf_index
from eagle3_contracts.capture.hooks import (
    capture_states,
    decoder_layers,
    final_norm,
    reference_states,
    run_forward,
)
from eagle3_contracts.errors import ContractError
from eagle3_contracts.testing.hf_models import HF_ARCHITECTURES, entry_transform
from eagle3_contracts.testing.strategies import contracts, synthetic_configs, token_batches
from eagle3_contracts.testing.synthetic import build_synthetic

from ._targets import (
    all_targets,
    forward_calls,
    hf_model,
    synthetic_model,
    target,
    tokens,
    vocab_of,
)


def segments(captured: torch.Tensor, contract: CaptureContract):
    return {s.layer_id: captured[..., s.slice] for s in contract.segments}


# -- capture == reference, per segment ------------------------------------------------------
@given(data=st.data(), config=synthetic_configs())
def test_capture_equals_reference_per_segment_on_synthetic_models(data, config):
    model = build_synthetic(config)
    contract = data.draw(contracts(num_layers=config.num_layers, hidden_size=config.hidden_size))
    ids = data.draw(token_batches(config.vocab_size))
    captured = capture_hidden_states(model, ids, contract.layer_ids, order=contract.order)
    contract.validate(captured)
    reference = reference_states(model, ids, contract.layer_ids)
    for layer_id, segment in segments(captured, contract).items():
        torch.testing.assert_close(segment, reference[layer_id], rtol=0, atol=0)


@pytest.mark.parametrize("name", all_targets())
def test_capture_equals_reference_for_every_layer_of_every_target(name):
    model = target(name)
    num_layers = len(decoder_layers(model))
    every = tuple(range(-1, num_layers))
    ids = tokens(vocab_of(model))
    captured = capture_states(model, ids, every)
    reference = reference_states(model, ids, every)
    for n in every:
        torch.testing.assert_close(captured[n], reference[n], rtol=1e-6, atol=1e-6)
    # and every state is distinct from its neighbours
    for n in every[1:]:
        assert not torch.allclose(captured[n], captured[n - 1], atol=1e-3)


# -- -1 is the input of layer 0 -----------------------------------------------------------
@pytest.mark.parametrize("arch", HF_ARCHITECTURES)
def test_minus_one_is_the_input_of_layer_0_not_raw_embed_tokens(arch):
    model = hf_model(arch)
    ids = tokens(vocab_of(model))
    entry = capture_hidden_states(model, ids, [-1])
    hf0 = run_forward(model, ids, output_hidden_states=True).hidden_states[0]
    torch.testing.assert_close(entry, hf0)
    raw = nn.functional.embedding(ids, model.get_input_embeddings().weight)
    if entry_transform(arch) is None:
        torch.testing.assert_close(entry, raw)
    else:  # gpt2 (position embeddings), gemma (sqrt(H) scaling)
        assert not torch.allclose(entry, raw, atol=1e-3), arch


def test_entry_transforms_are_declared_for_gpt2_and_gemma_only():
    assert {a for a in HF_ARCHITECTURES if entry_transform(a)} == {"gpt2", "gemma"}


@pytest.mark.parametrize("variant", ["positions", "scaled", "fused-positions-scaled"])
def test_minus_one_includes_synthetic_entry_transforms(variant):
    model = synthetic_model(variant)
    ids = tokens(64)
    entry = capture_hidden_states(model, ids, [-1])
    torch.testing.assert_close(entry, model.stream(model.enter(ids)))
    assert not torch.allclose(entry, model.embed_tokens(ids), atol=1e-3)


# -- L-1 is pre-norm; the HF index mapping -------------------------------------------------
@pytest.mark.parametrize("name", all_targets())
def test_last_layer_is_pre_norm_and_hf_indices_map_to_canonical(name):
    model = target(name)  # synthetic targets offer output_hidden_states the HF way too
    num_layers = len(decoder_layers(model))
    ids = tokens(vocab_of(model))
    hidden = run_forward(model, ids, output_hidden_states=True).hidden_states
    assert len(hidden) == num_layers + 1
    states = capture_states(model, ids, tuple(range(-1, num_layers)))
    last = states[num_layers - 1]
    assert not torch.allclose(last, hidden[-1], atol=1e-3)  # HF's last entry is post-norm
    torch.testing.assert_close(final_norm(model)(last), hidden[-1])
    for n in range(-1, num_layers - 1):
        torch.testing.assert_close(states[n], hidden[to_hf_index(n, num_layers)])
    with pytest.raises(ContractError, match=r"post-norm|final norm"):
        to_hf_index(num_layers - 1, num_layers)


# -- order --------------------------------------------------------------------------------
def test_ascending_sorts_and_as_listed_keeps_the_given_order():
    model = synthetic_model("residual")
    ids = tokens(64)
    states = capture_states(model, ids, (4, -1, 2))
    asc = capture_hidden_states(model, ids, (4, -1, 2))
    listed = capture_hidden_states(model, ids, (4, -1, 2), order="as_listed")
    torch.testing.assert_close(asc, torch.cat([states[-1], states[2], states[4]], -1))
    torch.testing.assert_close(listed, torch.cat([states[4], states[-1], states[2]], -1))
    with pytest.raises(ContractError) as info:
        capture_hidden_states(model, ids, (1,), order="descending")
    assert info.value.field == "order"


# -- fused style: hidden + residual --------------------------------------------------------
def test_fused_layers_are_captured_as_hidden_plus_residual():
    model = synthetic_model("fused")
    ids = tokens(64)
    hidden_only = {}

    def keep_hidden(module, args, out):  # returns None: the output is left alone
        hidden_only[2] = out[0].clone()

    handle = model.layers[2].register_forward_hook(keep_hidden)
    try:
        captured = capture_hidden_states(model, ids, [2])
    finally:
        handle.remove()
    hidden, residual = model.run_layer(2, model.run_layer(1, model.run_layer(0, model.enter(ids))))
    torch.testing.assert_close(captured, hidden + residual)
    assert not torch.allclose(captured, hidden_only[2], atol=1e-3)  # residual not dropped


def test_fused_entry_state_is_read_from_the_layer_0_call():
    model = synthetic_model("fused")
    ids = tokens(64)
    torch.testing.assert_close(capture_hidden_states(model, ids, [-1]), model.embed_tokens(ids))


# -- mechanics: hooks, kwargs, stop early, attention mask ------------------------------------
def _hook_count(model) -> int:
    return sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for m in decoder_layers(model))


def test_hooks_are_removed_when_the_forward_raises():
    model = build_synthetic(synthetic_model("residual").config)

    def boom(module, args, output):
        raise RuntimeError("layer 3 exploded")

    handle = model.layers[3].register_forward_hook(boom)
    before = _hook_count(model)
    with pytest.raises(RuntimeError, match="exploded"):
        capture_hidden_states(model, tokens(64), [-1, 1, 4])
    handle.remove()
    assert _hook_count(model) == before - 1 == 0


@pytest.mark.parametrize("name", ["synthetic-residual", "hf-llama"])
def test_hooks_are_removed_after_a_capture(name):
    model = target(name)
    before = _hook_count(model)  # HF installs its own output-capturing hooks once
    capture_hidden_states(model, tokens(vocab_of(model)), [-1, 0, 1])
    assert _hook_count(model) == before


def test_stop_early_gives_the_same_states_as_a_full_forward():
    model = synthetic_model("fused-positions-scaled")
    ids = tokens(64)
    early = capture_hidden_states(model, ids, [-1, 1])
    full = capture_hidden_states(model, ids, [-1, 1], stop_early=False)
    torch.testing.assert_close(early, full, rtol=0, atol=0)


def test_stop_early_skips_the_layers_after_the_deepest_id():
    model = synthetic_model("residual")
    ran = []
    handles = [
        layer.register_forward_pre_hook(lambda m, a, i=i: ran.append(i))
        for i, layer in enumerate(model.layers)
    ]
    try:
        capture_hidden_states(model, tokens(64), [0, 2])
    finally:
        for h in handles:
            h.remove()
    assert ran == [0, 1, 2]


def test_never_asks_for_output_hidden_states():
    model = hf_model("llama")
    with forward_calls(model) as calls:
        capture_hidden_states(model, tokens(vocab_of(model)), [0, 3])
    seen = {k: v for kwargs in calls for k, v in kwargs.items()}
    assert "output_hidden_states" not in seen
    assert seen.get("use_cache") is False


def test_forward_kwargs_and_attention_mask_reach_the_model():
    model = synthetic_model("positions")
    ids = tokens(64, batch=2, seq=7)
    mask = torch.ones_like(ids)
    mask[1, :3] = 0  # left padding
    captured = capture_hidden_states(model, ids, [-1, 3], attention_mask=mask)
    alone = capture_hidden_states(model, ids[1:, 3:], [-1, 3])
    torch.testing.assert_close(captured[1, 3:], alone[0], rtol=1e-4, atol=1e-5)


class KeywordLayer(nn.Module):
    """A layer called with keywords only, returning an HF-style tuple (hidden, attn weights)."""

    def __init__(self, h: int) -> None:
        super().__init__()
        self.lin = nn.Linear(h, h)

    def forward(self, *, hidden_states, scale):
        out = hidden_states + self.lin(hidden_states) * scale
        return out, torch.zeros(out.shape[0], 1, out.shape[1], out.shape[1])


class OddModel(nn.Module):
    """Unknown layout: layers under ``stack.blocks``, plus a decoy ModuleList."""

    def __init__(self, h: int = 8, n: int = 3) -> None:
        super().__init__()
        self.embed = nn.Embedding(16, h)
        self.stack = nn.Module()
        self.stack.blocks = nn.ModuleList(KeywordLayer(h) for _ in range(n))
        self.heads = nn.ModuleList([nn.Linear(h, 2), nn.Linear(h, 3)])

    def forward(self, input_ids, scale=0.5):
        x = self.embed(input_ids)
        for block in self.stack.blocks:
            x = block(hidden_states=x, scale=scale)[0]
        return x


def test_keyword_calls_tuple_outputs_and_layers_path_override():
    torch.manual_seed(0)
    model = OddModel().eval()
    ids = tokens(16)
    captured = capture_states(model, ids, (-1, 0, 2), layers_path="stack.blocks", scale=2.0)
    with torch.no_grad():
        x = model.embed(ids)
        torch.testing.assert_close(captured[-1], x)
        for i, block in enumerate(model.stack.blocks):
            x = block(hidden_states=x, scale=2.0)[0]
            if i in captured:
                torch.testing.assert_close(captured[i], x)


def test_generic_finder_picks_the_longest_uniform_module_list():
    model = OddModel()
    assert decoder_layers(model) is model.stack.blocks


@pytest.mark.parametrize(("arch", "path"), [("gpt2", "transformer.h"), ("llama", "model.layers")])
def test_known_layouts_are_found(arch, path):
    model = hf_model(arch)
    found = model
    for part in path.split("."):
        found = getattr(found, part)
    assert decoder_layers(model) is found


def test_ambiguous_and_missing_layouts_ask_for_layers_path():
    class Twins(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.ModuleList([nn.Linear(2, 2), nn.Linear(2, 2)])
            self.b = nn.ModuleList([nn.ReLU(), nn.ReLU()])

    with pytest.raises(ContractError, match="layers_path") as info:
        decoder_layers(Twins())
    assert "'a'" in str(info.value) and "'b'" in str(info.value)
    with pytest.raises(ContractError, match="layers_path"):
        decoder_layers(nn.Linear(2, 2))
    with pytest.raises(ContractError, match=r"stack\.nothing"):
        decoder_layers(OddModel(), "stack.nothing")


@pytest.mark.parametrize(
    ("ids", "field"),
    [((), "layer_ids"), ((1, 1), "layer_ids"), ((5,), "layer_ids[0]"), ((-2,), "layer_ids[0]")],
)
def test_bad_layer_ids_raise_contract_errors(ids, field):
    with pytest.raises(ContractError) as info:
        capture_hidden_states(synthetic_model("residual"), tokens(64), ids)
    assert info.value.field == field


def test_a_layer_list_the_forward_never_runs_is_reported():
    model = OddModel()
    with pytest.raises(ContractError, match="never ran"):
        capture_states(model, tokens(16), (0,), layers_path="heads", stop_early=False)
