"""The two data flows pass through the modules ``docs/architecture.md`` lists, each entered once.

Each flow runs in a fresh interpreter under ``tests/_flow_trace.py`` (cold caches, as a user's
command runs). A module added to or dropped from a flow, or a call back into a module the flow
already left, fails here: update the flow's row in ``docs/architecture.md`` on purpose, or fold
the new module into the one that owns its concept.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from eagle3_contracts.capture.hooks import capture_hidden_states, seeded_input_ids
from eagle3_contracts.dumps.format import write_dump
from eagle3_contracts.testing.hf_models import build_tiny_hf, tiny_hf_config

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"


def documented(flow: str) -> list[str]:
    """The modules ``docs/architecture.md``'s flow table lists for the row starting with
    ``flow``, with the count the row states checked against the list."""
    for line in DOC.read_text(encoding="utf-8").splitlines():
        if line.startswith(f"| `{flow}"):
            cell = line.split("|")[2]
            modules = re.findall(r"`([\w.]+)`", cell)
            stated = re.search(r"\((\d+)\)\s*$", cell.strip())
            assert stated and int(stated.group(1)) == len(modules), line
            return modules
    raise AssertionError(f"docs/architecture.md has no flow row for {flow!r}")


def traced(*argv: object) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-m", "tests._flow_trace", *map(str, argv)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def test_check_flow() -> None:
    run = traced("check", "--example", "kimi-k2.5")
    assert run["exit"] == 1  # the seed incident's drafter: several engines feed other layers
    assert run["modules"] == documented("check --example kimi-k2.5")
    assert run["returns"] == []


@pytest.fixture(scope="module")
def dumps(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A tiny Llama's config, a training dump labelled with a fixed reading, a serving dump
    labelled with an engine release (answered for the target's model file) that fed the
    embedding in front, as in the seed incident, and the contract of the trained layers."""
    tmp = tmp_path_factory.mktemp("flow")
    config = tiny_hf_config("llama", num_layers=5, hidden_size=32)
    model = build_tiny_hf(config, seed=0)
    (tmp / "config.json").write_text(config.to_json_string())
    ids = seeded_input_ids(96, 1, 6, seed=0)
    trained, served = (1, 2, 3), (-1, 1, 2)
    (tmp / "contract.json").write_text(
        json.dumps(
            {"layer_ids": list(trained), "num_layers": 5, "hidden_size": 32, "order": "as_listed"}
        )
    )
    return {
        "config": tmp / "config.json",
        "contract": tmp / "contract.json",
        "training": write_dump(
            tmp / "training.safetensors",
            capture_hidden_states(model, ids, trained),
            ids,
            layer_ids=[2, 3, 4],  # hidden_states[k] = output of layer k - 1
            convention="hf-hidden-states",
            system="training",
        ),
        "serving": write_dump(
            tmp / "serving.safetensors",
            capture_hidden_states(model, ids, served),
            ids,
            layer_ids=[1, 2, 3],  # what the serving config said; the embedding came first
            convention="sglang==0.5.23",
            system="serving",
        ),
    }


def test_diagnose_flow(dumps: dict[str, Path]) -> None:
    run = traced(
        "diagnose",
        "--dump",
        dumps["training"],
        "--dump",
        dumps["serving"],
        "--target",
        dumps["config"],
        "--contract",
        dumps["contract"],
    )
    assert run["exit"] == 1  # the serving dump is not the trained layers
    assert run["modules"] == documented("diagnose")
    assert run["returns"] == []
