"""Hub ids through the installed ``eagle3-contracts`` entry point and the pytest plugin,
against a local HF cache with ``HF_HUB_OFFLINE=1`` (no network at test time)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.hub._cache import DRAFT, TARGET, add_repo, config_bytes

ENTRY = str(Path(sys.executable).with_name("eagle3-contracts"))
pytest_plugins = ["pytester"]


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    cache = tmp_path / "hf" / "hub"
    add_repo(cache, "org/draft", {"config.json": config_bytes(DRAFT)})
    add_repo(cache, "org/target", {"config.json": config_bytes(TARGET)}, commit="f" * 40)
    return {
        **os.environ,
        "HF_HUB_CACHE": str(cache),
        "HF_HUB_OFFLINE": "1",
        "PYTHONPATH": os.pathsep.join(sys.path),
    }


def cli(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [ENTRY, *argv], env=env, capture_output=True, text=True, timeout=120, check=False
    )


def test_check_with_hub_ids_reads_the_cache(env: dict[str, str]) -> None:
    done = cli(
        env,
        "check",
        "org/draft",
        "--target",
        "org/target@" + "f" * 40,
        "--trained-with",
        "specforge",
        "--serve-with",
        "sglang==0.5.23",
        "--json",
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["ok"] and report["target"]["num_layers"] == 6
    assert report["draft"]["source"].startswith(env["HF_HUB_CACHE"])
    assert any(n.startswith("draft org/draft: HF cache") for n in report["notes"])


def test_missing_hub_id_is_one_line(env: dict[str, str]) -> None:
    done = cli(env, "check", "org/nothing@v2", "--num-layers", "6", "--hidden-size", "16")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1, done.stderr
    assert "draft org/nothing@v2: no such local path, and not in the HF cache" in done.stderr
    assert "HF_HUB_OFFLINE is set, so the network was not tried" in done.stderr


def test_stamp_shows_a_hub_drafter_and_never_writes_into_the_cache(
    env: dict[str, str], tmp_path: Path
) -> None:
    shown = cli(env, "stamp", "org/draft", "--show")
    assert shown.returncode == 1 and "not stamped" in shown.stdout, shown.stderr  # no stamp
    refused = cli(
        env, "stamp", "org/draft", "--trained-with", "specforge", "--target", "org/target"
    )
    assert refused.returncode == 2 and "never written" in refused.stderr
    blobs = list(Path(env["HF_HUB_CACHE"]).glob("models--org--draft/blobs/*"))
    assert [json.loads(b.read_text()) for b in blobs] == [DRAFT]
    local = tmp_path / "mine"
    local.mkdir()
    (local / "config.json").write_text(json.dumps(DRAFT))
    stamped = cli(env, "stamp", str(local), "--trained-with", "specforge", "--target", "org/target")
    assert stamped.returncode == 0, stamped.stderr
    assert json.loads((local / "config.json").read_text())["eagle3_contract"]["num_layers"] == 6


def test_diagnose_target_hub_id_miss_is_one_line(env: dict[str, str], tmp_path: Path) -> None:
    done = cli(env, "diagnose", "--dump", str(tmp_path / "d.safetensors"), "--target", "org/gone")
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "target org/gone: no such local path, and not in the HF cache" in done.stderr


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A tiny llama's saved files, and a dump captured from it (canonical 1, 2, 3)."""
    from eagle3_contracts.capture.hooks import capture_hidden_states, seeded_input_ids
    from eagle3_contracts.dumps.format import write_dump
    from eagle3_contracts.testing.hf_models import build_tiny_hf, tiny_hf_config

    tmp = tmp_path_factory.mktemp("tiny")
    model = build_tiny_hf(tiny_hf_config("llama", num_layers=5, hidden_size=32), seed=3)
    model.save_pretrained(tmp / "model")
    ids = seeded_input_ids(96, 1, 6, seed=0)
    captured = capture_hidden_states(model, ids, (1, 2, 3))
    dump = write_dump(
        tmp / "good.safetensors",
        captured,
        ids,
        layer_ids=[2, 3, 4],
        convention="vllm",
        system="t",
    )
    return {"model": tmp / "model", "dump": dump}


def test_diagnose_target_as_a_cached_hub_id(env: dict[str, str], tiny: dict[str, Path]) -> None:
    cache = Path(env["HF_HUB_CACHE"])
    files = {p.name: p.read_bytes() for p in tiny["model"].iterdir() if p.is_file()}
    add_repo(cache, "org/tiny", files)
    done = cli(env, "diagnose", "--dump", str(tiny["dump"]), "--target", "org/tiny")
    assert done.returncode == 0, done.stderr
    assert "verdict: OK" in done.stdout and "target org/tiny: HF cache" in done.stdout
    # only the config cached: the weights are never downloaded, the refusal says what to do
    add_repo(cache, "org/tiny-config", {"config.json": files["config.json"]})
    done = cli(env, "diagnose", "--dump", str(tiny["dump"]), "--target", "org/tiny-config")
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "no *.safetensors weights" in done.stderr


def test_plugin_target_as_hub_id(
    pytester: pytest.Pytester, env: dict[str, str], monkeypatch
) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", env["HF_HUB_CACHE"])
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    (pytester.path / "drafters").mkdir()
    (pytester.path / "drafters" / "config.json").write_text(json.dumps(DRAFT))
    pytester.makeini(
        "[pytest]\ntestpaths = drafters\neagle3_configs = drafters/config.json\n"
        "eagle3_target = org/target\neagle3_trained_with = specforge\n"
        "eagle3_serve_with = sglang==0.5.23\n"
    )
    result = pytester.runpytest("-p", "no:cacheprovider", "-v")
    result.assert_outcomes(passed=1)


def test_plugin_drafter_as_hub_id(
    pytester: pytest.Pytester, env: dict[str, str], monkeypatch
) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", env["HF_HUB_CACHE"])
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    (pytester.path / "tests").mkdir()
    pytester.makeini(
        "[pytest]\ntestpaths = tests\neagle3_configs = org/draft\n"
        "eagle3_target = org/target\neagle3_trained_with = specforge\n"
        "eagle3_serve_with = sglang==0.5.23 vllm==0.33.0\n"
    )
    result = pytester.runpytest("-p", "no:cacheprovider", "-v")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*hub:org/draft::serve[[]sglang==0.5.23[]] PASSED*",
            "*hub:org/draft::serve[[]vllm==0.33.0[]] FAILED*",
        ]
    )
    pytester.makeini("[pytest]\ntestpaths = tests\neagle3_configs = org/missing\n")
    missing = pytester.runpytest("-p", "no:cacheprovider")
    assert missing.ret == pytest.ExitCode.USAGE_ERROR
    missing.stderr.fnmatch_lines(["*org/missing*not in the HF cache*network was not tried*"])


# -- no network, a mistyped path, '..' ---------------------------------------------------------
def _closed_port() -> str:
    """An address nothing listens on: a connection to it is refused at once."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


def test_a_cache_miss_without_network_is_one_try_and_one_line(env: dict[str, str]) -> None:
    """huggingface_hub retries a refused HEAD five times with backoff (~47 s, a warning a
    retry); the miss asks once and answers in one line."""
    import time

    online = {k: v for k, v in env.items() if k != "HF_HUB_OFFLINE"}
    online["HF_ENDPOINT"] = _closed_port()
    began = time.monotonic()
    done = cli(online, "stamp", "org/nothing", "--show")
    took = time.monotonic() - began
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(
        "eagle3-contracts: error: draft org/nothing: no such local path, and not in the HF cache"
    )
    assert "the Hub was tried: ConnectError" in lines[0]
    assert took < 15, f"{took:.1f} s"


@pytest.mark.parametrize(
    "name",
    ["./drafts/mine", "drafts/mine-eagle3", "drafts/mine@main", "org--x/name", "org/name."],
)
def test_a_missing_local_path_is_no_hub_id(env: dict[str, str], tmp_path: Path, name: str) -> None:
    """A name that reads as a path (``./``, a first part that is a local folder, not a valid
    repo id) is a local path that does not exist: one line, and the network never tried."""
    (tmp_path / "drafts").mkdir()
    online = {k: v for k, v in env.items() if k != "HF_HUB_OFFLINE"}
    online["HF_ENDPOINT"] = _closed_port()
    done = subprocess.run(
        [ENTRY, "stamp", name, "--show"],
        env=online,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=tmp_path,
    )
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert "no such file" in done.stderr and "Hub" not in done.stderr, done.stderr


@pytest.mark.parametrize("revision", ["main/../../x", "..", "v1//x", "./main"])
def test_a_revision_with_dotdot_is_refused(env: dict[str, str], revision: str) -> None:
    done = cli(env, "stamp", f"org/draft@{revision}", "--show")
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert f"the revision {revision!r} has an empty, '.' or '..' part" in done.stderr


def test_a_ref_file_naming_a_folder_outside_the_cache_is_refused(
    env: dict[str, str], tmp_path: Path
) -> None:
    """``refs/main`` holding ``../../../elsewhere`` would read a config.json outside the cache."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "config.json").write_bytes(config_bytes(DRAFT))
    ref = Path(env["HF_HUB_CACHE"]) / "models--org--draft" / "refs" / "main"
    ref.write_text(os.path.relpath(elsewhere, ref.parent.parent / "snapshots"))
    done = cli(env, "stamp", "org/draft", "--show")
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert "not a 40-hex commit hash; the HF cache is damaged" in done.stderr
    assert str(elsewhere) not in done.stdout
