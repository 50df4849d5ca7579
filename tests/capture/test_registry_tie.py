"""The registry tie: each convention's ``to_canonical`` is checked against that system's own loop.

For every name in ``eagle3_contracts.conventions.names()`` the test runs a simulation of the
system's native capture loop (written from its source: capture before or after layer i, its
offset rule, its concatenation) on a synthetic model, and checks that the states it yields are
exactly the canonical states ``to_canonical`` claims, in the convention's concatenation order.
Where ``to_canonical`` refuses a list, the loop must indeed fail to yield those pre-norm states.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

import pytest
import torch

from eagle3_contracts import conventions
from eagle3_contracts.capture.hooks import reference_states
from eagle3_contracts.conventions.release_ids import ReleaseReading
from eagle3_contracts.errors import ContractError
from eagle3_contracts.testing.synthetic import SyntheticConfig, SyntheticTarget, build_synthetic

NUM_LAYERS = 4
Loop = Callable[[SyntheticTarget, torch.Tensor, tuple[int, ...]], list[torch.Tensor]]


def _stream(hidden: torch.Tensor, residual: torch.Tensor | None) -> torch.Tensor:
    return hidden if residual is None else hidden + residual


# -- engines (fused layers: hidden, residual) ------------------------------------------------
# SGLang placements follow the released wheels (goldens/registry/sglang-*.json probes).
def _sglang_loop(model, input_ids, layers_to_capture, *, residual_none_ok, after_stack=False):
    """sglang models/*.py: `if i in self.layers_to_capture: aux.append(h + residual)` before
    layer i runs. Old loops add a None residual at i = 0 and raise (``residual_none_ok``
    False); newer ones capture ``hidden`` alone there. gpt_oss.py (>= 0.5.17) also captures
    loop index L after the stack (``after_stack``)."""
    hidden, residual = model.enter(input_ids)
    aux = []
    for i in range(len(model.layers)):
        if i in layers_to_capture:
            if residual is None and not residual_none_ok:
                raise TypeError("unsupported operand type(s) for +: 'Tensor' and 'NoneType'")
            aux.append(_stream(hidden, residual))
        hidden, residual = model.layers[i](hidden, residual)
    if after_stack and len(model.layers) in layers_to_capture:
        aux.append(_stream(hidden, residual))
    return aux


def sglang_legacy(model, input_ids, ids):  # set_eagle3_layers_to_capture, <= 0.5.12
    return _sglang_loop(model, input_ids, [v + 1 for v in ids], residual_none_ok=False)


def sglang(model, input_ids, ids):  # sglang#25454 (deepseek_v2.py): +1 only if ids[0] == 1
    ltc = [v + 1 for v in ids] if ids[0] == 1 else list(ids)
    return _sglang_loop(model, input_ids, ltc, residual_none_ok=True)


def sglang_gpt_oss(model, input_ids, ids):  # gpt_oss.py >= 0.5.17: loop indices if max == L
    num_layers = len(model.layers)
    ltc = list(ids) if max(ids) == num_layers else [v + 1 for v in ids]
    return _sglang_loop(model, input_ids, ltc, residual_none_ok=True, after_stack=True)


def vllm(model, input_ids, ids):
    """vLLM EagleModelMixin: aux layers = sorted(set(ids)); boundary 0 before the loop,
    boundary idx + 1 after layer idx (the last layer's pre-norm output included)."""
    aux_layers = tuple(sorted(set(ids)))
    hidden, residual = model.enter(input_ids)
    aux = [_stream(hidden, residual)] if 0 in aux_layers else []
    for idx in range(len(model.layers)):
        hidden, residual = model.layers[idx](hidden, residual)
        if idx + 1 in aux_layers:
            aux.append(_stream(hidden, residual))
    return aux


def trtllm(model, input_ids, ids):
    """TensorRT-LLM: maybe_capture_hidden_states(layer_idx, h, residual) after layer idx;
    buffer order sorted with -1 (the final post-norm state) moved to the end."""
    hidden, residual = model.enter(input_ids)
    captured = {}
    for idx in range(len(model.layers)):
        hidden, residual = model.layers[idx](hidden, residual)
        if idx in ids:
            captured[idx] = _stream(hidden, residual)
    if -1 in ids:
        captured[-1] = model.norm(_stream(hidden, residual))
    order = sorted(n for n in captured if n != -1) + ([-1] if -1 in captured else [])
    return [captured[n] for n in order]


# -- trainers and formats (HF-style residual layers) -----------------------------------------
def specforge(model, input_ids, ids):
    """SpecForge HF backend: a forward hook on layers[idx], concatenated in config order."""
    got = {}
    handles = [
        model.layers[idx].register_forward_hook(
            lambda m, a, out, idx=idx: got.__setitem__(idx, out)
        )
        for idx in ids
        if 0 <= idx < len(model.layers)  # resolve_eagle_capture_layers: non-negative ints
    ]
    try:
        model(input_ids)
    finally:
        for h in handles:
            h.remove()
    return [got[idx] for idx in ids if idx in got]


def modelopt(model, input_ids, ids):  # layer-output hooks, ascending
    return specforge(model, input_ids, tuple(sorted(ids)))


def eagle_reference(model, input_ids, ids):
    """SafeAILab/EAGLE modeling_llama_kv.py: `if idx in (...): all_hidden_states += (h,)`
    before layer idx runs."""
    hidden = model.enter(input_ids)
    out = []
    for idx in range(len(model.layers)):
        if idx in ids:
            out.append(hidden)
        hidden = model.layers[idx](hidden)
    return out


def hf_hidden_states(model, input_ids, ids):
    """output_hidden_states: (input of layer 0, outputs of 0..L-2, norm(output of L-1))."""
    hidden = model.enter(input_ids)
    states = [hidden]
    for idx in range(len(model.layers)):
        hidden = model.layers[idx](hidden)
        states.append(hidden)
    states[-1] = model.norm(states[-1])
    return [states[k] for k in ids if -len(states) <= k < len(states)]  # Python indexing


LOOPS: dict[str, tuple[str, Loop]] = {
    # name: (layer style the system runs, its native loop)
    "hf-hidden-states": ("residual", hf_hidden_states),
    "specforge-hf": ("residual", specforge),
    "eagle-reference": ("residual", eagle_reference),
    "sglang-legacy": ("fused", sglang_legacy),
    "sglang": ("fused", sglang),
    "sglang-gpt-oss": ("fused", sglang_gpt_oss),
    "vllm": ("fused", vllm),
    "vllm-nested": ("fused", vllm),
    "trtllm": ("fused", trtllm),
    "speculators": ("fused", vllm),  # a format: vLLM's loop serves it
    "modelopt": ("residual", modelopt),
}


def _native_lists(num_layers: int):
    """Every unique id list of length 1..3 from -1..L, ascending and descending."""
    pool = range(-1, num_layers + 1)
    for k in (1, 2, 3):
        for combo in itertools.combinations(pool, k):
            yield combo
            if k > 1:
                yield tuple(reversed(combo))


@pytest.fixture(scope="module")
def models():
    built = {
        style: build_synthetic(SyntheticConfig(NUM_LAYERS, 16, seed=11, style=style))
        for style in ("residual", "fused")
    }
    ids = torch.arange(7)[None] % 64
    # The tests compare states bit for bit, and a module fixture runs before the autouse
    # one-thread fixture: compute the references on one thread too, or the kernel's reduction
    # order (and so the last bits) can differ from the loops the tests run.
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        refs = {
            style: reference_states(m, ids, tuple(range(-1, NUM_LAYERS)))
            for style, m in built.items()
        }
    finally:
        torch.set_num_threads(before)
    return built, refs, ids


# The model file whose rule each engine name's loop simulates (an engine name means its release's
# rule for the target's model file).
ARCHITECTURE = {
    "sglang-legacy": "LlamaForCausalLM",
    "sglang": "DeepseekV3ForCausalLM",
    "sglang-gpt-oss": "GptOssForCausalLM",
    "vllm": "LlamaForCausalLM",
    "vllm-nested": "LlamaForCausalLM",
}


def _convention(name: str) -> conventions.Convention | ReleaseReading:
    arch = ARCHITECTURE.get(name)
    return conventions.get(name, architectures=[arch] if arch else [])


def _concat_order(
    convention: conventions.Convention | ReleaseReading,
    native: Sequence[int],
    canonical: Sequence[int],
) -> list[int]:
    """The canonical ids in the order the system concatenates them: a registry entry's stated
    order, or, for an engine release, the order its simulation feeds (``conventions.predict``)."""
    if isinstance(convention, ReleaseReading):
        return list(convention.feed(native, NUM_LAYERS).canonical)
    return list(canonical) if convention.concat_order == "as_listed" else sorted(canonical)


def test_every_registry_convention_has_a_native_loop():
    missing = sorted(set(conventions.names()) - set(LOOPS))
    assert not missing, f"add a native-loop simulation for {missing} to LOOPS"


@pytest.mark.parametrize("name", conventions.names())
def test_to_canonical_names_the_states_the_native_loop_captures(name, models):
    built, refs, input_ids = models
    style, loop = LOOPS[name]
    model, ref = built[style], refs[style]
    convention = _convention(name)
    checked = refused = 0
    with torch.no_grad():
        for native in _native_lists(NUM_LAYERS):
            try:
                got = loop(model, input_ids, native)
            except TypeError:  # the engine itself fails on this list
                got = None
            try:
                canonical = conventions.to_canonical(native, convention, NUM_LAYERS)
            except ContractError:
                refused += 1
                if got is None:
                    continue
                # the loop must not deliver these ids as pre-norm canonical states
                exact = len(got) == len(native) and all(
                    any(torch.equal(g, r) for r in ref.values()) for g in got
                )
                assert not exact, f"{name} refuses {native} but its loop captures them"
                continue
            checked += 1
            assert got is not None, f"{name} accepts {native} but its loop fails on it"
            order = _concat_order(convention, native, canonical)
            assert len(got) == len(order), (name, native, canonical)
            for position, (state, n) in enumerate(zip(got, order, strict=True)):
                assert torch.equal(state, ref[n]), (
                    f"{name}: native {native} -> canonical {canonical}, but segment {position} "
                    f"of the native loop is not canonical {n}"
                )
    assert checked > 0 and refused > 0  # both branches exercised for every convention


@pytest.mark.parametrize("name", conventions.names())
def test_from_canonical_round_trips_through_the_native_loop(name, models):
    built, refs, input_ids = models
    style, loop = LOOPS[name]
    model, ref = built[style], refs[style]
    convention = _convention(name)
    wanted = (2, 0, 1)  # reachable for every convention; unsorted to test the order
    if isinstance(convention, ReleaseReading):  # an engine concatenates ascending: no id list
        with pytest.raises(ContractError, match="ascending order"):  # feeds [2, 0, 1]
            conventions.from_canonical(wanted, convention, NUM_LAYERS)
        wanted = (0, 1, 2)
    native = conventions.from_canonical(wanted, convention, NUM_LAYERS)
    with torch.no_grad():
        got = loop(model, input_ids, native)
    order = _concat_order(convention, native, wanted)
    assert [next(n for n, r in ref.items() if torch.equal(r, g)) for g in got] == list(order)
