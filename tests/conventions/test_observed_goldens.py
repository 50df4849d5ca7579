"""Every engine golden, on every observed release, held against that release's shipped table.

``goldens/engines/<framework>-<release>/`` holds what a real engine release did (recorded by
``scripts/record_engine_goldens.sh``: vLLM through the plugin's dump of the drafter's fc input,
SGLang through its own model code's capture, each identified against the HF forward). Each is
answered here through the one simulation ``check`` uses (``conventions.predict.predict_feed``)
with the release's shipped table: the canonical layers predicted as fed must equal those
observed. Offline, no engine, no torch.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from eagle3_contracts.conventions import releases
from eagle3_contracts.conventions.predict import predict_feed
from tests.integrations.sglang import engine_goldens as sglang_goldens

ROOT = Path(__file__).resolve().parents[2] / "goldens" / "engines"
RELEASE_DIRS = sorted(p for p in ROOT.iterdir() if p.is_dir())
CASES = sorted(ROOT.glob("*/**/*.json"))  # vllm-<release>/dflash/: the DFlash proposer
FRAMEWORKS = ("sglang", "vllm")


def _release(directory: Path) -> tuple[str, str]:
    framework, _, version = directory.name.partition("-")
    return framework, version


def _load(path: Path) -> dict[str, Any]:
    record: dict[str, Any] = json.loads(path.read_text())
    return record


def vllm_problem(record: Mapping[str, Any]) -> str | None:
    """Why ``predict_feed`` differs from a vLLM golden (engine level: the drafter's fc input,
    or the crash), ``None`` when it agrees. A crash before the drafter ran leaves no dump
    (observed canonical ``None``): only the crash class is compared then."""
    observed = record["observed"]
    feed = predict_feed(record["serve"], record["draft_config"], record["target_config"])
    model_file = (record.get("model_file") or "").split(":")[0]
    problems = []
    if (feed.kind, feed.crash) != (observed["kind"], observed["crash"]):
        problems.append(
            f"outcome {feed.kind}/{feed.crash} vs {observed['kind']}/{observed['crash']}"
        )
    if observed["canonical"] is not None and list(feed.canonical) != observed["canonical"]:
        problems.append(f"fed {list(feed.canonical)} vs observed {observed['canonical']}")
    if feed.model_file != model_file:
        problems.append(f"model file {feed.model_file!r} vs {model_file!r}")
    if not problems:
        return None
    return f"{record['serve']} draft {record['draft_config']}: predicted ({feed.source}) " + (
        "; ".join(problems)
    )


def test_goldens_cover_several_releases_of_each_engine() -> None:
    """Observation across releases, not one: at least 6 vLLM and 8 SGLang releases."""
    observed = {fw: [d for d in RELEASE_DIRS if _release(d)[0] == fw] for fw in FRAMEWORKS}
    assert len(observed["vllm"]) >= 6, [d.name for d in observed["vllm"]]
    assert len(observed["sglang"]) >= 8, [d.name for d in observed["sglang"]]


@pytest.mark.parametrize("directory", RELEASE_DIRS, ids=[d.name for d in RELEASE_DIRS])
def test_each_observed_release_ships_a_table_and_holds_only_its_own_goldens(
    directory: Path,
) -> None:
    framework, version = _release(directory)
    assert framework in FRAMEWORKS, f"{directory.name}: not <sglang|vllm>-<release>"
    shipped = releases.shipped_releases()[framework]
    assert version in shipped, f"{directory.name}: no shipped table for {framework}=={version}"
    goldens = sorted(directory.rglob("*.json"))
    assert goldens, f"{directory.name}: empty"
    serves = {_load(p)["serve"].split(":")[0] for p in goldens}
    assert serves == {f"{framework}=={version}"}, f"{directory.name}: goldens of {serves}"


@pytest.mark.parametrize("path", CASES, ids=[f"{p.parent.name}/{p.stem}" for p in CASES])
def test_the_shipped_table_predicts_the_observed_feed(path: Path) -> None:
    record = _load(path)
    if record["serve"].startswith("vllm=="):
        problem = vllm_problem(record)
    else:
        problem = sglang_goldens.unexplained(record)
    assert problem is None, f"{path.parent.name}/{path.name}: {problem}"
