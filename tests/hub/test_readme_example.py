"""The Hub-id ``check`` and ``fix --write`` round trip of docs/readme/check.md, run as written
(installed entry point, a local HF cache, offline): every output line shown appears, in order."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

from tests.hub._cache import add_repo, config_bytes

PAGE = Path(__file__).parents[2] / "docs" / "readme" / "check.md"
MARK = "<!-- hub-fix-example:"
TARGET = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 4096,
    "num_hidden_layers": 32,
    "vocab_size": 128256,
}
DRAFT = {
    "architectures": ["LlamaForCausalLMEagle3"],
    "model_type": "llama",
    "hidden_size": 4096,
    "num_hidden_layers": 1,
    "vocab_size": 128256,
    "draft_vocab_size": 32000,
    "eagle_config": {"eagle_aux_hidden_state_layer_ids": [2, 16, 29]},
}


def _session() -> list[tuple[str, list[str]]]:
    text = PAGE.read_text()
    block = text[text.index(MARK) :]
    block = block[block.index("```console\n") + 11 :]
    block = block[: block.index("\n```")]
    steps: list[tuple[str, list[str]]] = []
    for line in block.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        else:
            steps[-1][1].append(line)
    return steps


def test_readme_hub_round_trip(tmp_path: Path) -> None:
    cache = tmp_path / "hub"
    add_repo(cache, "my-org/llama3-eagle3", {"config.json": config_bytes(DRAFT)})
    add_repo(cache, "my-org/llama3-target", {"config.json": config_bytes(TARGET)})
    (tmp_path / "drafter").mkdir()
    (tmp_path / "drafter" / "config.json").write_text(json.dumps(DRAFT, indent=2) + "\n")
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("HF_")},
        "HF_HUB_CACHE": str(cache),
        "PYTHONPATH": os.pathsep.join(sys.path),
    }
    entry = str(Path(sys.executable).with_name("eagle3-contracts"))
    steps = _session()
    assert [c.split()[:2] for c, _ in steps] == [
        ["export", "HF_HUB_OFFLINE=1"],
        ["eagle3-contracts", "check"],
        ["eagle3-contracts", "fix"],
        ["eagle3-contracts", "check"],
    ]
    for command, shown in steps:
        argv = shlex.split(command)
        if argv[0] == "export":
            key, value = argv[1].split("=", 1)
            env[key] = value
            continue
        done = subprocess.run(
            [entry, *argv[1:]],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        code = int(re.search(r"exit (\d)\)", shown[-1]).group(1)) if "exit" in shown[-1] else 0
        assert done.returncode == code, done.stdout + done.stderr
        lines = done.stdout.splitlines()
        at = 0
        for want in shown:
            prefix = want.removesuffix("...")
            found = [
                i
                for i in range(at, len(lines))
                if (lines[i].startswith(prefix) if want.endswith("...") else lines[i] == want)
            ]
            assert found, f"{command}: {want!r} not in output after line {at}:\n{done.stdout}"
            at = found[0] + 1
    fixed = json.loads((tmp_path / "drafter" / "config.json").read_text())
    assert fixed["eagle_aux_hidden_state_layer_ids"] == [3, 17, 30]
    assert json.loads((tmp_path / "drafter" / "config.json.bak").read_text()) == DRAFT
