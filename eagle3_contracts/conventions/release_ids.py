"""Explicit ids in an engine or trainer release's numbering, answered by simulating the release.

``conventions.get``, ``to_canonical`` and ``from_canonical`` answer an engine name
(``sglang==0.5.23``, ``vllm``) or a trainer name (``specforge``) with the same simulation as
``check`` (``conventions.predict``): the ids are written into a drafter config (the caller's, or
a plain EAGLE-3 one carrying them where every release reads ids), the release reads it, and
what its target feeds is the answer. So a conversion knows what ``check`` knows: setter arming,
ids the model file never reaches, a capture that crashes, a drafter the release cannot load;
each is a ``ContractError`` naming why, never a translation that differs from ``check``.
``from_canonical`` is the one proven fix (``config.plan.proven_fix``): candidates written where
the release reads ids, kept only when predicting again feeds exactly the wanted layers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from eagle3_contracts.conventions import (
    EngineSpec,
    Framework,
    SystemName,
    TrainerSpec,
    predict,
)
from eagle3_contracts.conventions.hf import NESTED, TOP_LEVEL
from eagle3_contracts.conventions.predict import Feed
from eagle3_contracts.errors import ContractError


@dataclass(frozen=True)
class NamedTarget:
    """The target facts a name's conversion is given (``predict.TargetFacts``): its depth and
    model file. ``hidden_size`` is 0 when the caller gives no width: the probe drafter names no
    width of its own, so no check of the simulation reads it."""

    num_layers: int
    architectures: tuple[str, ...]
    model_type: str | None
    hidden_size: int = 0
    text_model_type: str | None = None
    is_moe: bool = False  # vLLM's default runner for MoE/quantized targets: name the runner
    quantized: bool = False


def probe_drafter(ids: Sequence[int]) -> dict[str, Any]:
    """A plain EAGLE-3 drafter config carrying ``ids`` at both paths releases read them from
    (``eagle_config.eagle_aux_hidden_state_layer_ids``, SGLang and vLLM v1/v2; the top-level
    list, vLLM's fallback), with no architectures (no registry refusal) and an fc sized by the
    ids' count (``llama_eagle3.py``: ``len(eagle_config ids)``)."""
    return {NESTED.split(".")[0]: {TOP_LEVEL: list(ids)}, TOP_LEVEL: list(ids)}


def feed_of(
    spec: EngineSpec | TrainerSpec,
    ids: Sequence[int],
    target: predict.TargetLike,
    draft: Mapping[str, Any] | None = None,
) -> Feed:
    """What the release named by ``spec`` feeds a drafter holding ``ids`` on ``target``: the
    caller's ``draft`` (its ids as they are), else ``probe_drafter(ids)``."""
    config = probe_drafter(ids) if draft is None else draft
    if isinstance(spec, EngineSpec):
        return predict.predict_feed(spec, config, target)
    from eagle3_contracts.conventions.trainers import predict_trainer  # trainers imports predict

    return predict_trainer(spec, config, target)


def canonical_of(spec: SystemName, ids: Sequence[int], feed: Feed, field: str) -> tuple[int, ...]:
    """The canonical id each of ``ids`` becomes in ``feed`` (same order), or a ``ContractError``
    naming the crash, refusal or id the release never captures."""
    ids = tuple(ids)
    why = refusal(spec, feed)
    if why:
        raise ContractError(why, field=field)
    distinct = sorted(set(ids))
    if len(feed.canonical) != len(distinct):  # the release's selection is monotone in the ids
        said = "; ".join(n for n in feed.notes if "never" in n) or feed.source
        raise ContractError(
            f"{spec.given!r} ({feed.system}) captures {list(feed.canonical)} for ids {list(ids)}: "
            f"not every id names a layer it feeds ({said})",
            field=field,
        )
    by_id = dict(zip(distinct, feed.canonical, strict=True))
    return tuple(by_id[i] for i in ids)


def refusal(spec: SystemName, feed: Feed) -> str:
    """Why ``feed`` names no canonical layers ("" when it feeds segments; what each holds, a
    layer's delta or the residual stream, is ``feed.state``, which ``check`` compares)."""
    if feed.kind == "segments" and not feed.final_state:
        return ""
    if feed.kind == "segments":
        return f"{spec.given!r} ({feed.system}) feeds the target's final state, no canonical id"
    said = "; ".join(feed.notes[-1:]) or feed.source
    crash = f" ({feed.crash})" if feed.crash else ""
    return f"{spec.given!r} ({feed.system or feed.release}) is {feed.kind}{crash}: {said}"


def from_canonical(
    spec: EngineSpec | TrainerSpec, canonical: Sequence[int], target: predict.TargetFacts
) -> tuple[int, ...]:
    """The native ids that make the release feed exactly ``canonical`` (ascending, distinct, as
    engines concatenate), found by the one proven-fix search; a trainer's ids are what its
    pinned capture engine reads. ``ContractError`` when no id list does."""
    from eagle3_contracts.config.plan import proven_fix  # the one search (config imports us)
    from eagle3_contracts.config.readers import read_draft_config

    want = tuple(canonical)
    engine = engine_of(spec)
    draft = probe_drafter(want)
    feed = predict.predict_feed(engine, draft, target)
    fix = proven_fix(want, len(want), engine.key, feed, read_draft_config(draft), target)
    if fix.native_ids is not None:
        return fix.native_ids
    if feed.kind == "segments" and feed.canonical == want and not refusal(engine, feed):
        return want  # written as they are, they already feed exactly these layers
    raise ContractError(f"{spec.given!r}: {fix.why}", field="ids")


def engine_of(spec: EngineSpec | TrainerSpec) -> EngineSpec:
    """The engine release that reads the ids: the spec itself, or a trainer's pinned capture
    engine (SpecForge 0.2.0 hands its ids to ``sglang==0.5.14``'s setter)."""
    if isinstance(spec, EngineSpec):
        return spec
    from eagle3_contracts.conventions import engine_spec
    from eagle3_contracts.conventions.trainers import trainer_release

    return engine_spec(trainer_release(spec.release).engine, field="convention")


@dataclass(frozen=True)
class ReleaseReading:
    """What ``conventions.get`` answers for an engine or trainer name: the release simulated for
    the target's model file (``to_canonical`` / ``from_canonical`` as a ``Convention`` has them,
    answered by ``conventions.predict`` and the proven fix)."""

    spec: EngineSpec | TrainerSpec
    model_type: str | None
    architectures: tuple[str, ...]

    @property
    def name(self) -> str:
        return self.spec.key

    @property
    def system(self) -> str:
        """``sglang==0.5.23 deepseek_v2.py``: the release and the model file it answers with
        (the release and the target as given when no model file is found)."""
        feed = self.feed((), 2)  # the model file is chosen before any id is read
        if feed.model_file:
            return feed.system
        return f"{self.spec.key} for {', '.join(self.architectures) or self.model_type}"

    @property
    def pp_split_rule(self) -> str:
        """The engine's default layer split (``parallel.partition.SPLIT_RULES``)."""
        return engine_of(self.spec).framework.value

    @property
    def captures_before_layer(self) -> bool:
        """SGLang takes layer N's output as layer N + 1 starts; vLLM records it after layer N."""
        return engine_of(self.spec).framework is not Framework.VLLM

    def feed(self, ids: Sequence[int], num_layers: int) -> Feed:
        """What the release feeds a plain EAGLE-3 drafter holding ``ids``."""
        return feed_of(self.spec, ids, self._target(num_layers))

    def to_canonical(self, ids: Sequence[int], num_layers: int) -> tuple[int, ...]:
        return canonical_of(self.spec, ids, self.feed(ids, num_layers), "ids")

    def from_canonical(self, ids: Sequence[int], num_layers: int) -> tuple[int, ...]:
        return from_canonical(self.spec, ids, self._target(num_layers))

    def summary(self) -> str:
        return f"{self.name}: {self.system}, answered per drafter by conventions.predict"

    def _target(self, num_layers: int) -> NamedTarget:
        return NamedTarget(num_layers, self.architectures, self.model_type)
