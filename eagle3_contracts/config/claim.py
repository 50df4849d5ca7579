"""The training claim pinned: the stamp that records what a trained plan fed the drafter.

``stamp`` writes it on request; ``fix --write`` writes it in the same atomic write as its id
edits whenever those edits would move a claim read from the drafter's own ids
(``specforge-hf``, ``hf-hidden-states``, a trainer reading the config): the claim is pinned
before anything edits the ids it is read from, so ``check`` with the same arguments afterwards
judges against the original training.
"""

from __future__ import annotations

from eagle3_contracts.config.plan import CapturePlan
from eagle3_contracts.config.readers import TargetConfig
from eagle3_contracts.contract import CaptureContract
from eagle3_contracts.errors import ContractError
from eagle3_contracts.stamp import Stamp


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


__all__ = ["trained_stamp"]
