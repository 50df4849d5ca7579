"""``accept``: load a drafter and its target, wire it as each system would, measure, report."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

import torch

from eagle3_contracts.acceptance.drafter import (
    check_against_target,
    check_method,
    draft_config,
    load_drafter,
)
from eagle3_contracts.acceptance.measure import measure
from eagle3_contracts.acceptance.observed import Observed, candidates, explain
from eagle3_contracts.acceptance.prompts import greedy_prompts, read_prompts, tokenizer_encoder
from eagle3_contracts.acceptance.report import AcceptReport, judge
from eagle3_contracts.acceptance.target import check_finite, check_target_weights, load_checked
from eagle3_contracts.acceptance.wiring import Wiring, describe, served_rows, trained_wiring
from eagle3_contracts.errors import ConfigError

MAX_SEED = 2**63 - 1
MAX_TOKENS = 32768
"""Longest sequence (prompt + new tokens) measured when the target declares no
``max_position_embeddings``: time and memory stay bounded."""


def _device(name: str) -> torch.device:
    try:
        dev = torch.device(name)
    except RuntimeError:
        raise ConfigError(
            f"--device {name!r} is not a torch device (cpu or cuda)", field="device"
        ) from None
    if dev.type not in ("cpu", "cuda"):
        raise ConfigError(
            f"--device {name}: the oracle runs on cpu or cuda, not {dev.type}", field="device"
        )
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ConfigError(f"--device {name}: CUDA is not available here", field="device")
    return dev


def _check_counts(num_prompts: int, seed: int, k: int, new_tokens: int) -> None:
    if not 0 <= seed <= MAX_SEED:
        raise ConfigError(f"--seed {seed} is outside [0, 2**63 - 1]", field="seed")
    if num_prompts < 2:
        raise ConfigError(
            f"--num-prompts {num_prompts}: the intervals are over prompts; give at least 2",
            field="num_prompts",
        )
    if k < 1 or new_tokens <= k or new_tokens > MAX_TOKENS:
        raise ConfigError(
            f"--new-tokens {new_tokens} with --num-drafts {k}: need 1 <= k < new tokens <= "
            f"{MAX_TOKENS}",
            field="new_tokens",
        )


def _bounded(prompts: Iterable[list[int]], limit: int, new_tokens: int) -> Iterator[list[int]]:
    """Each prompt, refused (``ConfigError``) when it and its continuation pass ``limit``."""
    for n, prompt in enumerate(prompts, 1):
        if len(prompt) + new_tokens > limit:
            raise ConfigError(
                f"prompt {n} has {len(prompt)} tokens: with {new_tokens} new tokens it passes "
                f"the target's {limit} positions (max_position_embeddings); shorten it",
                field="prompts",
            )
        yield prompt


def accept(
    draft: str | os.PathLike[str],
    target: str | os.PathLike[str],
    *,
    serve_with: Sequence[str] = (),
    wirings: Sequence[Wiring] = (),
    trained_with: str | None = None,
    prompts: str | os.PathLike[str] | None = None,
    num_prompts: int = 16,
    seed: int = 0,
    k: int = 4,
    new_tokens: int = 64,
    device: str = "cpu",
    observed: Observed | None = None,
    progress: Callable[[str], None] | None = None,
) -> AcceptReport:
    """Acceptance of ``draft`` on ``target`` for its trained wiring, each ``serve_with``
    release's wiring and each explicit wiring (``ConfigError`` for bad input). With
    ``observed``, also the error family around the trained wiring, ranked by how well each
    explains the observed figures (``observed.explain``); ``progress`` hears each step."""
    say = progress or (lambda text: None)
    from eagle3_contracts.capture.hooks import text_config
    from eagle3_contracts.config.readers import read_target_config

    start = time.time()
    dev = _device(device)
    _check_counts(num_prompts if prompts is None else 2, seed, k, new_tokens)
    check_method(*draft_config(draft))  # refuse a method the oracle cannot run, first
    config_file = os.path.join(target, "config.json") if os.path.isdir(target) else target
    trained = trained_wiring(draft, config_file, trained_with)
    rows = served_rows(draft, config_file, serve_with)
    drafter, _ = load_drafter(draft)
    if os.path.isdir(target):
        facts = read_target_config(config_file)
        check_target_weights(Path(target), facts.num_layers, facts.hidden_size, facts.vocab_size)
    loaded = load_checked(target)
    check_finite(loaded.model, loaded.source)
    check_against_target(drafter, loaded.vocab_size, loaded.hidden_size, str(draft))
    limit = getattr(text_config(loaded.model), "max_position_embeddings", None)
    limit = limit if isinstance(limit, int) and limit > 0 else MAX_TOKENS
    model = loaded.model.to(dev)
    drafter = drafter.to(dev)
    if prompts is None:
        stream: Iterable[list[int]] = greedy_prompts(num_prompts, loaded.vocab_size, seed=seed)
        said = f"{num_prompts} seeded 4-token starts (seed {seed})"
    else:
        encode = tokenizer_encoder(target)
        stream = read_prompts(prompts, vocab_size=loaded.vocab_size, encode=encode)
        said = str(prompts)
    stream = _bounded(stream, limit, new_tokens)
    named = [(r.serve, r.wiring) for r in rows if r.wiring]
    named += [(f"wiring {describe(w)}", tuple(w)) for w in wirings]
    family = candidates(trained.wiring, loaded.num_layers, named) if observed else []
    todo = [trained.wiring, *(w for _, w in named), *(w for _, w in family)]
    total = num_prompts if prompts is None else None
    t0 = time.time()

    def done(n: int) -> None:
        left = ""
        if total:
            left = f", about {(time.time() - t0) / n * (total - n):.0f} s left"
        say(f"{n}{f'/{total}' if total else ''} prompts measured ({len(set(todo))} wirings){left}")

    say(f"measuring {len(set(todo))} wirings on {said}")
    results = measure(
        model,
        drafter,
        stream,
        todo,
        num_layers=loaded.num_layers,
        k=k,
        new_tokens=new_tokens,
        progress=done,
    )
    base = results[trained.wiring]
    explanation = None
    if observed is not None:
        explanation = explain(observed, [(label, results[w]) for label, w in family], base.prompts)
    out = [judge(r.serve, r, results[r.wiring] if r.wiring else None, base) for r in rows]
    out += [judge(f"wiring {describe(w)}", None, results[tuple(w)], base) for w in wirings]
    return AcceptReport(
        drafter=str(draft),
        target=loaded.describe(),
        trained=trained,
        trained_acceptance=base,
        rows=tuple(out),
        prompts=said,
        k=k,
        new_tokens=new_tokens,
        device=str(dev),
        seconds=time.time() - start,
        explanation=explanation,
    )
