"""On-demand probes go to the user's cache, atomically; the package and the working directory
stay as they were; a cached table is read after the shipped ones (offline: the release's
sources are put in the cache by hand, as ``probe.fetch`` would extract them)."""

from __future__ import annotations

import hashlib
import json
import os
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

import eagle3_contracts
from eagle3_contracts import _io
from eagle3_contracts.conventions import releases
from eagle3_contracts.conventions.predict import predict_feed
from eagle3_contracts.errors import ContractError
from eagle3_contracts.probe import fetch
from eagle3_contracts.probe.__main__ import main
from eagle3_contracts.probe.frameworks import FRAMEWORKS, SGLANG

from ._fixtures import BEFORE_LAYER, CAUSAL_LM, RUNNER

PACKAGE = Path(eagle3_contracts.__file__).resolve().parent
LLAMA = {"architectures": ["LlamaForCausalLM"], "num_hidden_layers": 32, "hidden_size": 64}
DRAFT = {"eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, 15, 28]}}


def _snapshot(root: Path) -> dict[str, str]:
    """Every file under ``root`` (bytecode caches left out) -> sha256 of its bytes."""
    out = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            out[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def _extracted(version: str) -> Path:
    """A fake sglang release extracted into the user cache, as ``fetch.fetch`` leaves it."""
    root = fetch.release_dir(SGLANG, version)
    for rel, text in {
        "sglang/srt/models/llama.py": BEFORE_LAYER + CAUSAL_LM,
        SGLANG.reader_files[0]: RUNNER,
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(textwrap.dedent(text))
    info = {"files": 2, "sha256": "0" * 64, "wheel": f"sglang-{version}-py3-none-any.whl"}
    (root / "wheel.json").write_text(json.dumps(info))
    return root


@pytest.fixture
def user_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """This test's own user cache (what it probes is gone after it)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    releases.load_table.cache_clear()
    yield tmp_path / "xdg" / "eagle3-contracts"
    releases.load_table.cache_clear()  # typed tables read from this cache go with it


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return work


def test_the_user_cache_follows_xdg_and_ignores_a_relative_one(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert _io.user_cache_dir() == tmp_path / "eagle3-contracts"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")  # would write under the CWD
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert _io.user_cache_dir() == tmp_path / "home" / ".cache" / "eagle3-contracts"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert _io.user_cache_dir() == tmp_path / "home" / ".cache" / "eagle3-contracts"
    assert fetch.default_cache() == tmp_path / "home" / ".cache" / "eagle3-contracts" / "src"
    assert releases.cache_dir() == tmp_path / "home" / ".cache" / "eagle3-contracts" / "tables"


def test_an_on_demand_probe_leaves_the_package_and_the_working_directory_unchanged(
    workdir: Path, user_cache: Path
) -> None:
    _extracted("0.5.98")
    package_before = _snapshot(PACKAGE)
    assert predict_feed("sglang==0.5.98", DRAFT, LLAMA).unprobed  # before: one unknown line

    assert main(["refresh", "--release", "sglang==0.5.98"]) == 0

    assert _snapshot(PACKAGE) == package_before  # nothing written into the package data
    assert sorted(p.name for p in workdir.iterdir()) == []  # no .cache/ in the CWD
    written = user_cache / "tables" / "sglang-0.5.98.json"
    assert json.loads(written.read_text())["version"] == "0.5.98"
    assert [p.name for p in written.parent.iterdir()] == ["sglang-0.5.98.json"]  # no temp left
    assert "0.5.98" in releases.known_releases()["sglang"]
    assert "0.5.98" not in releases.shipped_releases()["sglang"]
    feed = predict_feed("sglang==0.5.98", DRAFT, LLAMA)
    assert (feed.kind, feed.canonical, feed.unprobed) == ("segments", (1, 15, 28), False)
    assert releases.load_table("sglang", "0.5.98").path == str(written)  # cited from the cache


def test_a_shipped_table_is_read_before_a_cached_one_of_the_same_release(
    user_cache: Path,
) -> None:
    version = releases.shipped_releases()["sglang"][-1]
    cached = user_cache / "tables" / f"sglang-{version}.json"
    cached.parent.mkdir(parents=True, exist_ok=True)
    cached.write_text("{not json")  # never read: the shipped table wins
    assert releases.read_json("sglang", version)["version"] == version


def test_a_broken_cached_table_is_one_error_naming_it_and_the_command(user_cache: Path) -> None:
    cached = user_cache / "tables" / "sglang-0.5.97.json"
    cached.parent.mkdir(parents=True, exist_ok=True)
    cached.write_text('{"framework": "sglang", "vers')  # cut short by a crashed writer
    with pytest.raises(ContractError) as err:
        releases.read_json("sglang", "0.5.97")
    message = str(err.value)
    assert str(cached) in message
    assert "probe refresh --release sglang==0.5.97" in message


def test_an_unprobed_release_is_one_line_naming_the_command(user_cache: Path) -> None:
    feed = predict_feed("sglang==0.4.0", DRAFT, LLAMA)
    assert feed.kind == "unknown" and feed.unprobed
    assert feed.notes == ()  # said once, in the source, not again as a note
    known = releases.known_releases()["sglang"]
    assert feed.source == (
        f"sglang==0.4.0 has no probed table ({len(known)} probed, {known[0]} to {known[-1]}; "
        "`eagle3-contracts check --list` names them); probe it with `python -m "
        "eagle3_contracts.probe refresh --release sglang==0.4.0` (needs the package index; "
        "writes to the user cache)"
    )


def test_a_table_write_is_atomic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """While the new table is written and flushed, readers still see the whole old one; the
    temporary file is uniquely named beside the target and gone afterwards."""
    target = tmp_path / "sglang-0.5.98.json"
    target.write_text('{"old": true}')
    target.chmod(0o640)
    seen: list[str] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        seen.append(target.read_text())  # a reader in the middle of the write
        seen.extend(p.name for p in tmp_path.iterdir() if p != target)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    _io.replace_text(target, '{"new": true}', what="release table")
    assert seen[0] == '{"old": true}'
    assert seen[1].startswith(".sglang-0.5.98.json.") and seen[1].endswith(".eagle3.tmp")
    assert target.read_text() == '{"new": true}'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sglang-0.5.98.json"]
    assert target.stat().st_mode & 0o777 == 0o640  # the file keeps its permissions


def test_a_concurrent_extraction_keeps_the_finished_folder(
    user_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Sources already extracted (by another run) are used as they are: no download."""
    root = _extracted("0.5.96")

    def no_download(*args: object, **kwargs: object) -> object:
        raise AssertionError("fetch downloaded a release already extracted")

    monkeypatch.setattr(fetch.subprocess, "run", no_download)
    assert fetch.fetch(SGLANG, "0.5.96") == root


def test_every_final_and_post_release_from_the_floor_is_reprobed() -> None:
    """``scripts/reprobe_releases.py``'s list: SGLang from 0.5.0, vLLM from 0.10.0, post-releases
    in, pre-releases out, oldest first."""
    index = ["0.4.10.post2", "0.5.0rc1", "0.5.10", "0.5.1.post3", "0.5.1", "0.5.9", "0.6.0.dev1"]
    assert fetch.releases_since(SGLANG, index) == ["0.5.1", "0.5.1.post3", "0.5.9", "0.5.10"]
    vllm = ["0.9.2", "0.10.0", "0.10.1.1", "0.10.1", "0.33.0", "0.11.0rc2"]
    assert fetch.releases_since(FRAMEWORKS["vllm"], vllm) == [
        "0.10.0",
        "0.10.1",
        "0.10.1.1",
        "0.33.0",
    ]
