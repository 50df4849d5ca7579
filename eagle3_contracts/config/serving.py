"""Release-true answers inside ``check``: engine rows and trainer releases through
``conventions.predict``, and fixes proven by re-prediction.

``plan.resolve`` hands every name ``predict`` answers (``sglang``, ``vllm==0.33.0:v1``,
``specforge==0.2.0``, ``sglang-legacy`` ...) to ``feed_for``; the ``Feed`` becomes the plan's
layers plus its key (release, runner, model file) and its verdict class (``crash``,
``unsupported``, ``unknown``). ``proven_fix`` searches the native id lists a fix could write at
the place that release reads, applies each to a copy of the drafter's config, predicts again, and
returns the first one whose prediction is exactly what the drafter was trained on: a printed fix
is never a guess.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from eagle3_contracts.config.readers import DraftConfig, TargetConfig
from eagle3_contracts.conventions import predict, trainers
from eagle3_contracts.conventions.predict import Feed


def feed_for(system: str, draft: DraftConfig, target: TargetConfig) -> Feed:
    """What ``system`` feeds the drafter; for a trainer release (``specforge==0.2.0``), what it
    trained the drafter on (an engine release's answer is the same either way: its captures)."""
    return trainers.predict_training(system, dict(draft.raw), target)


@dataclass(frozen=True)
class Fix:
    """Native ids proven to make a release feed the trained layers, or why none exist."""

    native_ids: tuple[int, ...] | None
    path: str | None  # the JSON path to write them at
    why: str  # the fix in words

    @property
    def label(self) -> str:
        if self.native_ids is None or self.path is None:
            return "no native ids can fix it (see details)"
        return f"{self.path} = [{', '.join(map(str, self.native_ids))}]"


def proven_fix(
    want: Sequence[int],
    trained_count: int,
    system: str,
    feed: Feed,
    draft: DraftConfig,
    target: TargetConfig,
    *,
    state: str = "residual stream",
) -> Fix:
    """The id list to write where ``system`` reads ids so that it feeds exactly ``want``
    (canonical, trained order), checked by predicting again; else why no list does."""
    if feed.kind == "unsupported":
        return Fix(None, None, f"no native ids can fix it: {feed.source}")
    if feed.kind == "unknown":
        return Fix(None, None, "no fix is printed for an unknown answer: " + "; ".join(feed.notes))
    if feed.final_state:
        return Fix(
            None,
            None,
            "no native ids can fix it: eagle_config.use_aux_hidden_state is false, so no aux "
            "states are captured; remove it (or set it true) to serve an EAGLE-3 drafter",
        )
    if list(want) != sorted(want) or len(set(want)) != len(want):
        return Fix(
            None,
            None,
            f"no native ids can express it: {feed.release} concatenates each layer once in "
            f"ascending order, the drafter was trained on [{', '.join(map(str, want))}]; "
            "retrain with a sorted list of distinct ids",
        )
    if feed.state == predict.DELTA and state != predict.DELTA:
        return Fix(
            None,
            None,
            f"no native ids can fix it: {feed.system} feeds the {feed.state} "
            f"({feed.notes[-1] if feed.notes else feed.source}); serve with a release that "
            "captures the residual stream",
        )
    if feed.read_path is None:
        return Fix(None, None, f"no native ids can fix it: {feed.release} reads no config field")
    base = tuple(want)
    seen: set[tuple[int, ...]] = set()
    for form in (base, tuple(i + 1 for i in base)):
        for k in range(len(form)):
            cand = form[k:] + form[:k]
            if cand in seen:
                continue
            seen.add(cand)
            again = predict.predict_feed(system, _with_ids(draft.raw, feed.read_path, cand), target)
            if (
                again.kind == "segments"
                and again.canonical == base
                and again.width_states == trained_count
                and again.state == state
            ):
                why = f"set {feed.read_path} = [{', '.join(map(str, cand))}]"
                return Fix(cand, feed.read_path, why + f": {again.system} then feeds them")
    reason = (
        f"no id list written at {feed.read_path} makes {feed.system} feed canonical {list(base)}"
    )
    if feed.width_states is not None and feed.width_states != trained_count:
        reason += (
            f"; its fc takes {feed.width_states} states, the drafter has {trained_count}: set "
            f"num_aux_hidden_states = {trained_count}"
        )
    return Fix(None, None, reason)


def _with_ids(raw: Mapping[str, Any], path: str, ids: Sequence[int]) -> dict[str, Any]:
    out = copy.deepcopy(dict(raw))
    node = out
    *heads, last = path.split(".")
    for head in heads:
        child = node.get(head)
        if not isinstance(child, dict):
            child = {}
            node[head] = child
        node = child
    node[last] = list(ids)
    return out


def apply_fix(raw: Mapping[str, Any], fix: Fix) -> dict[str, Any]:
    """A copy of the drafter's config with ``fix`` applied (for tests and ``--json`` users)."""
    if fix.native_ids is None or fix.path is None:
        raise ValueError("this fix has no native ids to apply")
    return _with_ids(raw, fix.path, fix.native_ids)
