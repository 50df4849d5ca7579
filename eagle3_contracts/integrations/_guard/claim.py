"""The trained ids the guard judges against, for both engines: the one claim resolver
(``config.claim.trained_claim``: the drafter's stamp, else ``EAGLE3_CONTRACTS_TRAINED_WITH``)
on the configs the engine loaded. The environment's claim is the one ``Settings`` read at
engine start, so a prefill never reads the environment again."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from eagle3_contracts.config.claim import trained_claim
from eagle3_contracts.config.readers import DraftConfig, read_draft_config, read_target_config
from eagle3_contracts.integrations._guard.settings import Settings
from eagle3_contracts.stamp import ENV_TRAINED_WITH, claim_source


def guard_claim(
    draft: DraftConfig | Mapping[str, Any] | None,
    target: Mapping[str, Any],
    settings: Settings,
    *,
    where: str | None = None,
) -> tuple[tuple[int, ...] | None, str]:
    """(the trained canonical ids or ``None``, a phrase saying where the claim comes from).

    ``draft``: the drafter's config (``None`` when the engine did not say where it is: there
    are no ids to read the claim against, so the guard cannot judge);
    ``where``: how to name the drafter's config in the phrase (default: its source)."""
    environ = {ENV_TRAINED_WITH: settings.trained_with} if settings.trained_with else {}
    if draft is None:
        return None, claim_source(None, None, environ).describe()
    config = draft if isinstance(draft, DraftConfig) else read_draft_config(dict(draft))
    claim = trained_claim(config, read_target_config(dict(target)), None, environ, where=where)
    return (None if claim.plan is None else claim.plan.layer_ids), claim.describe()
