"""SGLang engine goldens: what each release's own model code collected, held against the registry.

A golden is one JSON file per case under ``goldens/engines/sglang-<release>/`` in the schema
of the vLLM goldens (``eagle3-contracts.engine-golden/1``): ``serve``, ``engine``,
``model_file``, ``target_config``, ``draft_config`` and ``observed`` (``kind``, ``canonical``,
``crash``, ``error``), plus for SGLang ``level: "model"`` and ``explicit_ids``: the ids handed
to the release's own ``set_eagle3_layers_to_capture`` (``null``: the setter's default), as
SpecForge 0.2.0's capture does. They are recorded by the engine suite
(``EAGLE3_RECORD_ENGINE_GOLDENS=1 pytest -m engine tests/engines/sglang`` in
``.venv-sglang-<release>``) and read offline here, without torch or SGLang.

**Model level.** The observation is the target forward: the states it collects, in the order
it concatenates them, or the crash it raises. The drafter's fc is not in the loop, so the
registry's ``fc-width-mismatch`` (a crash at the drafter's first step) is compared by the
states the target collected (``Feed.canonical``), and a segment that the registry says is not
the residual stream (``Feed.state``, e.g. sglang 0.5.23 ``gemma3_causal.py``) is expected to
match no layer (``None``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SCHEMA = "eagle3-contracts.engine-golden/1"
ROOT = Path(__file__).resolve().parents[3] / "goldens" / "engines"
RESIDUAL_STREAM = "residual stream"
HOW = (
    "tests/engines/sglang (pytest -m engine, .venv-sglang-<release>): the release's own model "
    "class built on CPU with tiny random weights loaded from the HF transformers model, its own "
    "set_eagle3_layers_to_capture(explicit_ids), one EXTEND forward (attention: causal SDPA "
    "stand-in), every collected state identified against the HF forward"
)


def model_level(feed: Any) -> dict[str, Any]:
    """The registry's ``Feed`` as a model-level outcome (kind, canonical, crash)."""
    if feed.kind in ("unknown", "unsupported"):
        return {"kind": feed.kind, "canonical": None, "crash": None}
    if feed.kind == "crash" and feed.crash != "fc-width-mismatch":
        return {"kind": "crash", "canonical": None, "crash": feed.crash}
    stream = feed.state == RESIDUAL_STREAM
    canonical = [c if stream or c == -1 else None for c in feed.canonical]
    return {"kind": "segments", "canonical": canonical, "crash": None}


def predicted(record: Mapping[str, Any]) -> dict[str, Any]:
    """``predict_feed`` for a golden's serve, configs and explicit ids, at model level."""
    from eagle3_contracts.conventions.predict import predict_feed

    ids = record.get("explicit_ids")
    feed = predict_feed(
        record["serve"],
        record["draft_config"],
        record["target_config"],
        explicit_ids=None if ids is None else tuple(ids),
    )
    return {**model_level(feed), "source": feed.source}


def outcome(observed: Mapping[str, Any]) -> dict[str, Any]:
    return {k: observed[k] for k in ("kind", "canonical", "crash")}


Outcome = Mapping[str, Any]


@dataclass(frozen=True)
class Disagreement:
    """An observation the registry does not predict yet (registry-disagreements.md entry).

    ``applies(record, observed, predicted)`` names the cases it explains. The offline test
    fails when one explains no golden any more (the registry was fixed: delete the entry).
    """

    key: str
    text: str
    applies: Callable[[Mapping[str, Any], Outcome, Outcome], bool]


DISAGREEMENTS: tuple[Disagreement, ...] = ()
"""Open disagreements. Resolved in the registry (predict_feed) from these observations:
D1 ``no-aux-states`` (an empty collection crashes the target's forward: sglang 0.5.23
llama.py:621, 0.5.12 llama.py:534), D2 ``setter-index-error`` (0.5.23 qwen2_moe.py:1153-1156
flags ``self.layers[id + 1]``; negative ids wrap), D3 ``aux-count-short`` (0.5.23
deepseek_v2.py:3175 sizes the packer by ``len(layers_to_capture)``), D4 sglang 0.5.21 qwen2.py:421
stores ``snapshot(hidden_states, residual)`` (access.py:141 read: the embedding is captured), D5
sglang 0.5.22 gpt_oss.py's ``final_norm`` (batch.py:59 read: the final add's residual)."""


def explained_by(record: Mapping[str, Any], obs: Outcome, pred: Outcome) -> Disagreement | None:
    for d in DISAGREEMENTS:
        if d.applies(record, obs, pred):
            return d
    return None


def unexplained(record: Mapping[str, Any]) -> str | None:
    """Why the registry's prediction for a golden record differs from what was observed, with
    no listed disagreement explaining it; ``None`` when they agree (or one explains it)."""
    observed = outcome(record["observed"])
    pred = predicted(record)
    source = pred.pop("source")
    if observed == pred or explained_by(record, observed, pred) is not None:
        return None
    seen = record["observed"].get("error") or ", ".join(record["observed"].get("identified", []))
    return (
        f"{record['serve']} {record['model_file']} ids {record['explicit_ids']}: observed "
        f"{observed} ({seen or 'nothing collected'}), the registry predicts {pred} ({source})"
    )


def load(release: str | None = None) -> list[tuple[Path, dict[str, Any]]]:
    """Every SGLang golden (of one release), sorted by path; schema checked."""
    pattern = f"sglang-{release}" if release else "sglang-*"
    out = []
    for path in sorted(ROOT.glob(f"{pattern}/*.json")):
        record = json.loads(path.read_text())
        if record.get("schema") != SCHEMA or record.get("level") != "model":
            raise ValueError(f"{path}: not an SGLang model-level engine golden ({SCHEMA})")
        out.append((path, record))
    return out


def case_name(model_file: str, ids: tuple[int, ...] | None) -> str:
    text = "default" if ids is None else ("empty" if not ids else "_".join(map(str, ids)))
    return f"{model_file.removesuffix('.py')}-ids-{text.replace('-', 'm')}"


def golden_record(
    release: str,
    model_file: str,
    target_config: Mapping[str, Any],
    observed: Mapping[str, Any],
    environment: Mapping[str, str],
) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "level": "model",
        "serve": f"sglang=={release}",
        "engine": f"sglang=={release} model code on CPU, fp32 ("
        + ", ".join(f"{k} {v}" for k, v in sorted(environment.items()))
        + ")",
        "model_file": model_file,
        "target_config": dict(target_config),
        "draft_config": {},
        "explicit_ids": observed["ids"],
        "observed": {k: v for k, v in observed.items() if k != "ids"},
        "how": HOW,
    }


def write_golden(record: Mapping[str, Any]) -> Path:
    release = record["serve"].split("==", 1)[1]
    ids = record["explicit_ids"]
    path = (
        ROOT
        / f"sglang-{release}"
        / (case_name(record["model_file"], None if ids is None else tuple(ids)) + ".json")
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
    return path
