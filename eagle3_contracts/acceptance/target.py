"""The target's side of the oracle: the greedy continuation of a batch of prompts and the states
it feeds, captured while the target writes them.

``run_targets`` continues every prompt of a batch in one greedy generation (KV cache, prompts
left-padded with an attention mask and per-row positions, end-of-sequence ignored, as the engine
test serves with ``ignore_eos``), with hooks on the layers asked for (``capture.hooks.layer_hooks``:
id ``-1`` = the stream entering layer 0, ``N`` = output of layer ``N``) and on the final norm
(``FINAL``: the post-norm last state; ``ZERO``: zeros, a missing segment). The last generated token is fed once more, so every
position has its state and the target's greedy token after it, with no second forward.
"""

from __future__ import annotations

import inspect
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from eagle3_contracts.capture.hooks import decoder_layers, final_norm, layer_hooks, stream_of_output
from eagle3_contracts.errors import ConfigError, ContractError

FINAL = "final"
"""A fed state no canonical id names: the target's last state after its final norm."""

ZERO = "zero"
"""A fed state of zeros: a segment the serving side leaves missing (zero-filled)."""

StateId = int | str


@dataclass(frozen=True)
class TargetBatch:
    """Prompts with the target's continuations, left-padded to one width ``T``."""

    tokens: Tensor  # [B, T]: padding, prompt, continuation
    greedy: Tensor  # [B, T]: the target's argmax after each position
    pad: Tensor  # [B]: columns of left padding in each row
    prompt_end: int  # the first continuation column (the longest prompt's length)
    states: dict[StateId, Tensor]  # id -> [B, T, H], zero on padding
    embeds: Tensor  # [B, T, H]: token embeddings (what the drafter shares)


def _logits(output: object) -> Tensor:
    logits = getattr(output, "logits", None)
    if logits is None and isinstance(output, tuple):
        logits = output[0]
    if not isinstance(logits, Tensor):
        raise ContractError("the target's forward returned no logits", field="target")
    return logits


def cache_keyword(model: nn.Module) -> str:
    """``cache`` or ``past_key_values``: transformers 5.24 renamed the KV cache argument."""
    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


def run_targets(
    model: nn.Module, prompts: Sequence[list[int]], new_tokens: int, state_ids: Iterable[StateId]
) -> TargetBatch:
    """Continue every prompt by ``new_tokens`` greedy tokens in one batched generation and
    capture ``state_ids`` at every position on the way."""
    device = next(model.parameters()).device
    width = max(len(p) for p in prompts)
    ids = torch.zeros(len(prompts), width, dtype=torch.long, device=device)
    mask = torch.zeros_like(ids)
    for b, p in enumerate(prompts):
        ids[b, width - len(p) :] = torch.tensor(p, device=device)
        mask[b, width - len(p) :] = 1
    pad = width - mask.sum(1)
    wanted = set(state_ids)
    ints = sorted(i for i in wanted if isinstance(i, int))
    pieces: dict[StateId, list[Tensor]] = {i: [] for i in wanted - {ZERO}}

    def keep(n: StateId, state: Tensor) -> None:
        pieces[n].append(state.detach())

    handles = []
    if FINAL in wanted:
        norm = final_norm(model)
        if norm is None:
            raise ContractError("the target has no final norm to feed", field="target")

        def on_norm(module: nn.Module, args: tuple[object, ...], output: object) -> None:
            keep(FINAL, stream_of_output(output))

        handles.append(norm.register_forward_hook(on_norm))
    key = cache_keyword(model)
    positions = (mask.cumsum(1) - 1).clamp(min=0)
    try:
        with layer_hooks(decoder_layers(model), keep, ints), torch.no_grad():
            out = model(ids, attention_mask=mask, position_ids=positions, use_cache=True)
            greedy = [_logits(out).argmax(-1)]
            made = [greedy[-1][:, -1:]]
            for step in range(new_tokens):
                mask = torch.cat([mask, mask.new_ones(len(prompts), 1)], dim=1)
                step_pos = (positions[:, -1:] + step + 1).clamp(min=0)
                out = model(
                    made[-1],
                    attention_mask=mask,
                    position_ids=step_pos,
                    use_cache=True,
                    **{key: getattr(out, key)},
                )
                greedy.append(_logits(out)[:, -1:].argmax(-1))
                if step < new_tokens - 1:
                    made.append(greedy[-1])
    finally:
        for h in handles:
            h.remove()
    tokens = torch.cat([ids, *made], dim=1)
    valid = mask.bool()[..., None]
    states = {i: torch.where(valid, torch.cat(p, dim=1), 0.0) for i, p in pieces.items()}
    embed: nn.Module = model.get_input_embeddings()  # type: ignore[operator]
    with torch.no_grad():
        embeds = embed(tokens)
    if ZERO in wanted:
        states[ZERO] = torch.zeros_like(embeds)
    return TargetBatch(
        tokens=tokens,
        greedy=torch.cat(greedy, dim=1),
        pad=pad,
        prompt_end=width,
        states=states,
        embeds=embeds,
    )


def fed_states(batch: TargetBatch, wiring: tuple[StateId, ...]) -> Tensor:
    """The concatenated states one wiring feeds, in its order: ``[B, T, len(wiring) * H]``."""
    return torch.cat([batch.states[i] for i in wiring], dim=-1)


_LAYER_KEY = re.compile(r"(?:^|\.)layers\.(\d+)\.")


def check_target_weights(
    folder: Path, num_layers: int, hidden_size: int, vocab_size: int | None
) -> None:
    """The target's weights hold what its config claims, read from the safetensors headers
    before anything is loaded (``ConfigError`` naming the config field): transformers fills
    missing layers at random and re-initialises mismatched tensors, and a measurement on them
    would be a false figure."""
    from safetensors import safe_open

    held: dict[str, list[int]] = {}
    for file in sorted(folder.glob("*.safetensors")):
        try:
            with safe_open(str(file), framework="pt") as fh:
                held.update({k: list(fh.get_slice(k).get_shape()) for k in fh.keys()})  # noqa: SIM118
        except Exception:  # an unreadable file is named when the model loads
            return
    layers = {int(m.group(1)) for key in held if (m := _LAYER_KEY.search(key))}
    if layers and max(layers) + 1 < num_layers:
        raise ConfigError(
            f"num_hidden_layers is {num_layers} but the weights hold layers 0-{max(layers)} "
            f"only: transformers would fill layers {max(layers) + 1}-{num_layers - 1} at "
            "random; set num_hidden_layers to the checkpoint's depth",
            source=str(folder),
            field="num_hidden_layers",
        )
    embed = next((s for k, s in held.items() if k.endswith("embed_tokens.weight")), None)
    if embed is not None and len(embed) == 2 and embed != [vocab_size or embed[0], hidden_size]:
        which = "hidden_size" if embed[1] != hidden_size else "vocab_size"
        raise ConfigError(
            f"{which} disagrees with the weights: the embedding is {embed[0]} x {embed[1]}, the "
            f"config says vocab_size {vocab_size} x hidden_size {hidden_size}",
            source=str(folder),
            field=which,
        )


def check_finite(model: nn.Module, source: str) -> None:
    """Every floating weight of the loaded target is finite (``ConfigError`` naming it)."""
    with torch.no_grad():
        for name, param in model.named_parameters():
            if param.is_floating_point() and not bool(param.isfinite().all()):
                raise ConfigError(
                    f"{name} holds NaN or infinite values: the checkpoint is damaged",
                    source=source,
                    field=name,
                )


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_REPORT_ROW = re.compile(r"^(\S+)\s*\|\s*(MISSING|MISMATCH|CONVERSION)\s*\|?(.*)$")


def load_checked(spec: str | os.PathLike[str]) -> Any:
    """``capture.targets.load_target`` with transformers' load report taken, not printed: a
    report of MISSING, MISMATCH or CONVERSION rows (weights transformers would fill at random
    or could not convert, ``transformers/utils/loading_report.py``) is one ``ConfigError``."""
    import logging

    from eagle3_contracts.capture.targets import load_target

    reports: list[str] = []

    def take(record: logging.LogRecord) -> bool:
        if "LOAD REPORT" in str(record.msg):
            reports.append(_ANSI.sub("", record.getMessage()))
            return False
        return True

    logger = logging.getLogger("transformers.modeling_utils")
    logger.addFilter(take)
    try:
        loaded = load_target(spec)
    except ConfigError:
        if not reports:
            raise
        loaded = None
    finally:
        logger.removeFilter(take)
    lines = "\n".join(reports).splitlines()
    rows = sorted(
        (m for line in lines if (m := _REPORT_ROW.match(line.strip()))), key=lambda m: m.group(1)
    )
    if rows:
        kinds = sorted({m.group(2) for m in rows})
        first = rows[0]
        detail = " ".join(first.group(3).replace("|", " ").split())[:120]
        raise ConfigError(
            f"the weights do not hold what config.json describes: {len(rows)} tensor group(s) "
            f"{'/'.join(kinds)}, first {first.group(1)}{f' ({detail})' if detail else ''}; "
            "transformers would fill them at random: fix config.json's sizes or the checkpoint",
            source=str(spec),
            field="config.json",
        )
    if loaded is None:  # a refusal that came with a report of nothing wrong
        return load_target(spec)
    return loaded
