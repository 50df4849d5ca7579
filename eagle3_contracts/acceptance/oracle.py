"""``accept``: load a drafter and its target, wire it as each system would, measure, report."""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Sequence

import torch

from eagle3_contracts.acceptance.drafter import check_against_target, load_drafter
from eagle3_contracts.acceptance.measure import measure
from eagle3_contracts.acceptance.prompts import greedy_prompts, read_prompts, tokenizer_encoder
from eagle3_contracts.acceptance.report import AcceptReport, judge
from eagle3_contracts.acceptance.wiring import Wiring, describe, served_rows, trained_wiring
from eagle3_contracts.errors import ConfigError


def _device(name: str) -> torch.device:
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise ConfigError(f"--device {name}: CUDA is not available here", field="device")
    try:
        return torch.device(name)
    except RuntimeError:
        raise ConfigError(f"--device {name!r} is not a torch device", field="device") from None


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
) -> AcceptReport:
    """Acceptance of ``draft`` on ``target`` for its trained wiring, each ``serve_with``
    release's wiring and each explicit wiring (``ConfigError`` for bad input)."""
    from eagle3_contracts.capture.targets import load_target

    start = time.time()
    dev = _device(device)
    config_file = os.path.join(target, "config.json") if os.path.isdir(target) else target
    trained = trained_wiring(draft, config_file, trained_with)
    rows = served_rows(draft, config_file, serve_with)
    loaded = load_target(target)
    drafter, _ = load_drafter(draft)
    check_against_target(drafter, loaded.vocab_size, loaded.hidden_size, str(draft))
    model = loaded.model.to(dev)
    drafter = drafter.to(dev)
    if prompts is None:
        stream: Iterable[list[int]] = greedy_prompts(num_prompts, loaded.vocab_size, seed=seed)
        said = f"{num_prompts} seeded 4-token starts (seed {seed})"
    else:
        encode = tokenizer_encoder(target)
        stream = read_prompts(prompts, vocab_size=loaded.vocab_size, encode=encode)
        said = str(prompts)
    todo = [trained.wiring, *(r.wiring for r in rows if r.wiring), *wirings]
    results = measure(
        model,
        drafter,
        stream,
        todo,
        num_layers=loaded.num_layers,
        k=k,
        new_tokens=new_tokens,
    )
    base = results[trained.wiring]
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
    )
