"""Which states each system feeds a drafter, as wirings the oracle can run.

The trained wiring comes from the drafter's stamp (``eagle3_contract.layer_ids``), else from
the trainer named with ``trained_with`` (``config.plan.resolve``). Each serve name
(``sglang==0.5.23``, ``vllm==0.32.0:v1``, ``vllm``) is answered by the registry's prediction
for that release (``config.plan.resolve``: the same answer ``check`` prints). A row is measured
only when the release runs the drafter on residual-stream segments; a crash, an unsupported or
unknown model file, or fed states that are not the residual stream (layer deltas, raw states
that skip fc) are reported with the reason and not measured.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from eagle3_contracts.acceptance.target import FINAL, ZERO, StateId
from eagle3_contracts.errors import ConfigError

Wiring = tuple[StateId, ...]
STREAM = "residual stream"


@dataclass(frozen=True)
class ServedRow:
    """What one serving system feeds, and whether the oracle can run it."""

    serve: str  # the name as given
    key: str  # "vllm==0.32.0:v1 llama.py" (release, runner, model file)
    wiring: Wiring | None  # None: not measurable (see ``why_not``)
    why_not: str = ""
    assumptions: tuple[str, ...] = ()


@dataclass(frozen=True)
class Trained:
    """The wiring a drafter was trained on and where that claim came from."""

    wiring: Wiring
    source: str


def trained_wiring(
    draft: str | os.PathLike[str],
    target_config: Mapping[str, Any] | str | os.PathLike[str],
    trained_with: str | None,
) -> Trained:
    """The stamp's canonical ids, else what ``trained_with`` trained on (``ConfigError``):
    the one claim resolver (``config.claim.trained_claim``)."""
    from eagle3_contracts.config.claim import trained_claim
    from eagle3_contracts.config.readers import read_draft_config, read_target_config

    claim = trained_claim(read_draft_config(draft), read_target_config(target_config), trained_with)
    plan = claim.plan
    if plan is None:
        raise ConfigError(
            "the drafter has no eagle3_contract stamp: say what it was trained on with "
            "--trained-with (specforge==0.2.0, sglang==0.5.14, ...) or stamp it",
            source=str(draft),
            field="trained_with",
        )
    if plan.kind != "segments" or plan.refused or not plan.layer_ids:
        raise ConfigError(
            f"{claim.trained_with} gives no trained layers for this drafter "
            f"({plan.refused or plan.crash or plan.kind})",
            source=str(draft),
            field="trained_with",
        )
    return Trained(_plan_wiring(plan), claim.describe())


def _plan_wiring(plan: Any) -> Wiring:
    return (*plan.layer_ids, *(FINAL for _ in plan.non_canonical))


def served_rows(
    draft: str | os.PathLike[str],
    target_config: Mapping[str, Any] | str | os.PathLike[str],
    serve_with: Sequence[str],
) -> list[ServedRow]:
    """One row per serve name: the registry's wiring for that release, or why none runs."""
    from eagle3_contracts.config.plan import resolve

    rows = []
    for serve in serve_with:
        plan = resolve(draft, target_config, serve)
        key = plan.key
        if plan.refused:
            rows.append(ServedRow(serve, key, None, f"refused at load: {plan.refused}"))
            continue
        if plan.kind != "segments":
            why = f"{plan.kind}" + (f" ({plan.crash})" if plan.crash else "")
            notes = "; ".join(plan.notes[:1])
            rows.append(ServedRow(serve, key, None, why + (f": {notes}" if notes else "")))
            continue
        if plan.state != STREAM:
            rows.append(ServedRow(serve, key, None, f"feeds {plan.state}: not measured"))
            continue
        rows.append(ServedRow(serve, key, _plan_wiring(plan), assumptions=plan.assumptions))
    return rows


def parse_wiring(text: str, option: str = "--wiring") -> Wiring:
    """``"-1,1,5"`` or ``"2,6,final"`` -> a wiring (``ConfigError`` naming ``option``)."""
    items: list[StateId] = []
    for i, part in enumerate(p.strip() for p in text.split(",")):
        if part in (FINAL, ZERO):
            items.append(part)
            continue
        try:
            items.append(int(part))
        except ValueError:
            raise ConfigError(
                f"{option} item {i} ({part!r}) is not a canonical id, {FINAL!r} or {ZERO!r}; "
                "give e.g. -1,1,5",
                field=option,
            ) from None
    return tuple(items)


def describe(wiring: Wiring) -> str:
    return "[" + ", ".join(str(i) for i in wiring) + "]"
