"""The target's side of the oracle: its greedy continuation of a prompt and the states it feeds.

``run_target`` continues a prompt greedily (KV cache, end-of-sequence ignored, as the engine
test serves with ``ignore_eos``), then runs one forward over prompt and continuation with hooks
on the layers asked for (``capture.hooks.layer_hooks``: id ``-1`` = the stream entering layer 0,
``N`` = output of layer ``N``) and on the final norm (``FINAL``: the post-norm last state).
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from eagle3_contracts.capture.hooks import decoder_layers, final_norm, layer_hooks, stream_of_output
from eagle3_contracts.errors import ContractError

FINAL = "final"
"""A fed state no canonical id names: the target's last state after its final norm."""

StateId = int | str


@dataclass(frozen=True)
class TargetRun:
    """One prompt with the target's continuation, its greedy tokens and the states asked for."""

    tokens: Tensor  # [T]: prompt then continuation
    greedy: Tensor  # [T]: the target's argmax after each position (full-sequence forward)
    prompt_len: int
    states: dict[StateId, Tensor]  # id -> [T, H]
    embeds: Tensor  # [T, H]: token embeddings (what the drafter shares)


def _logits(output: object) -> Tensor:
    logits = getattr(output, "logits", None)
    if logits is None and isinstance(output, tuple):
        logits = output[0]
    if not isinstance(logits, Tensor):
        raise ContractError("the target's forward returned no logits", field="target")
    return logits


def _cache_keyword(model: nn.Module) -> str:
    # transformers 5.24 renamed ``past_key_values`` to ``cache`` (forward and outputs)
    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


def continue_greedy(model: nn.Module, prompt: list[int], new_tokens: int) -> Tensor:
    """``prompt`` followed by ``new_tokens`` greedy tokens (KV cache; EOS ignored)."""
    device = next(model.parameters()).device
    ids = torch.tensor([prompt], device=device)
    key = _cache_keyword(model)
    with torch.no_grad():
        out = model(ids, use_cache=True)
        past = getattr(out, key)
        nxt = _logits(out)[:, -1].argmax(-1, keepdim=True)
        made = [nxt]
        for _ in range(new_tokens - 1):
            out = model(nxt, use_cache=True, **{key: past})
            past = getattr(out, key)
            nxt = _logits(out)[:, -1].argmax(-1, keepdim=True)
            made.append(nxt)
    return torch.cat([ids, *made], dim=1)[0]


def run_target(
    model: nn.Module, prompt: list[int], new_tokens: int, state_ids: Iterable[StateId]
) -> TargetRun:
    """Continue ``prompt``, then capture ``state_ids`` over the whole sequence."""
    tokens = continue_greedy(model, prompt, new_tokens)
    wanted = set(state_ids)
    ints = sorted(i for i in wanted if isinstance(i, int))
    states: dict[StateId, Tensor] = {}
    layers = decoder_layers(model)

    def keep(n: int, state: Tensor) -> None:
        states[n] = state[0].detach()

    handles = []
    if FINAL in wanted:
        norm = final_norm(model)
        if norm is None:
            raise ContractError("the target has no final norm to feed", field="target")

        def on_norm(module: nn.Module, args: tuple[object, ...], output: object) -> None:
            states[FINAL] = stream_of_output(output)[0].detach()

        handles.append(norm.register_forward_hook(on_norm))
    try:
        with layer_hooks(layers, keep, ints), torch.no_grad():
            logits = _logits(model(tokens[None], use_cache=False))
    finally:
        for h in handles:
            h.remove()
    embed: nn.Module = model.get_input_embeddings()  # type: ignore[operator]
    with torch.no_grad():
        embeds = embed(tokens)
    return TargetRun(
        tokens=tokens,
        greedy=logits[0].argmax(-1),
        prompt_len=len(prompt),
        states=states,
        embeds=embeds,
    )


def fed_states(run: TargetRun, wiring: tuple[StateId, ...]) -> Tensor:
    """The concatenated states one wiring feeds, in its order: ``[T, len(wiring) * H]``."""
    return torch.cat([run.states[i] for i in wiring], dim=-1)
