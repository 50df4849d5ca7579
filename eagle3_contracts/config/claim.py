"""The training claim: resolved once per entry point, and pinned before a fix moves it.

``trained_claim`` is the one resolver every entry point calls (``check``, ``fix``, the
acceptance wiring, the SGLang guard): the stamp, then ``--trained-with``, then
``EAGLE3_CONTRACTS_TRAINED_WITH`` (``stamp.resolve_claim``: a lower claim that disagrees is
named), answered as the trained plan: the stamp's canonical ids, or what the named trainer fed
this drafter on this target (``plan.resolve``). ``trained_stamp`` is the stamp recording a
trained plan: ``stamp`` writes it on request; ``fix --write`` writes it in the same atomic write as its id
edits whenever those edits would move a claim read from the drafter's own ids
(``specforge-hf``, ``hf-hidden-states``, a trainer reading the config): the claim is pinned
before anything edits the ids it is read from, so ``check`` with the same arguments afterwards
judges against the original training.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from eagle3_contracts.config.plan import CapturePlan, resolve
from eagle3_contracts.config.readers import DraftConfig, TargetConfig
from eagle3_contracts.contract import CaptureContract
from eagle3_contracts.conventions import SYSTEM_TYPES, SystemName, system_name
from eagle3_contracts.conventions.predict import fixed_feed
from eagle3_contracts.errors import ContractError
from eagle3_contracts.stamp import ENV_TRAINED_WITH, ClaimSource, Stamp, resolve_claim


@dataclass(frozen=True)
class Claim:
    """What the drafter was trained on, and where that claim came from."""

    source: ClaimSource  # stamp, --trained-with, environment, or none (and what it overrode)
    plan: CapturePlan | None  # the trained plan; None when nobody claims anything
    # the claimed name, typed (None: a stamp or no claim): what re-resolves the claim on an
    # edited config (``fix``) without parsing it again
    name: SystemName | None = None

    @property
    def trained_with(self) -> str | None:
        """The trainer name the claim reads the drafter with (the stamp's own for a stamp)."""
        return self.source.trained_with

    def describe(self) -> str:
        return self.source.describe()


def trained_claim(
    draft: DraftConfig,
    target: TargetConfig,
    trained_with: str | SystemName | None,
    environ: Mapping[str, str] | None = None,
    *,
    where: str | None = None,
    env_name: SystemName | None = None,
) -> Claim:
    """The claim for ``draft`` on ``target``, resolved once (see the module docstring); a
    stamp made for another target is a ``ConfigError`` naming both sizes. ``where``: how to
    name the drafter's config in the claim (default: its source). ``trained_with`` and
    ``env_name`` (the environment's name) may come typed, parsed where they entered; the name
    the claim answers with is parsed here otherwise, once, naming the option or variable."""
    given = trained_with.given if isinstance(trained_with, SYSTEM_TYPES) else trained_with
    source = resolve_claim(draft.raw, where or draft.source, given, environ)
    if source.kind == "none":
        return Claim(source, None)
    if source.stamp is None:
        assert source.trained_with is not None
        if source.kind == "--trained-with":
            assert trained_with is not None
            name = system_name(trained_with, field="trained_with")
        else:
            name = system_name(env_name or source.trained_with, field=ENV_TRAINED_WITH)
        return Claim(source, resolve(draft, target, name), name)
    stamp, note = source.stamp, source.describe()
    stamp.check_target(target.num_layers, target.hidden_size, draft.source)
    trained = stamp.contract
    plan = CapturePlan(
        system=f"stamp ({stamp.trained_with or 'unnamed trainer'})",
        num_layers=trained.num_layers,
        hidden_size=trained.hidden_size,
        order=trained.order,
        feed=fixed_feed(
            trained.layer_ids, native_ids=stamp.native_ids, ids_source="stamp", notes=(note,)
        ),
    )
    return Claim(source, plan)


def trained_stamp(plan: CapturePlan, trained_with: str, target: TargetConfig) -> Stamp:
    """The stamp recording ``plan`` (what ``trained_with`` fed the drafter on ``target``);
    ``ContractError`` (field ``trained_with``) when the plan has no canonical contract."""
    if plan.refused:
        raise ContractError(
            f"{trained_with} refuses this drafter config: {plan.refused}", field="trained_with"
        )
    if plan.non_canonical or not plan.layer_ids:
        raise ContractError(
            f"{trained_with} feeds this drafter {plan.describe()}: no canonical contract can be "
            "stamped",
            field="trained_with",
        )
    import eagle3_contracts

    return Stamp(
        CaptureContract(plan.layer_ids, plan.num_layers, plan.hidden_size, order="as_listed"),
        trained_with=trained_with,
        native_ids=plan.native_ids,
        ids_source=plan.ids_source,
        target={"model_type": target.model_type, "architectures": list(target.architectures)},
        stamped_by=f"eagle3-contracts {eagle3_contracts.__version__}",
    )


__all__ = ["Claim", "trained_claim", "trained_stamp"]
