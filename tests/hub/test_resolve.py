"""``eagle3_contracts.config.readers``: Hub ids read from a local HF cache, offline first."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from eagle3_contracts.config import readers as hub
from eagle3_contracts.config.check import check_drafter
from eagle3_contracts.errors import ConfigError
from tests.hub._cache import DRAFT, TARGET, add_repo, config_bytes, safetensors_bytes


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("org/name", ("org/name", None)),
        ("meta-llama/Llama-3.1-8B", ("meta-llama/Llama-3.1-8B", None)),
        ("org/name@v1.0", ("org/name", "v1.0")),
        ("org/name@" + "a" * 40, ("org/name", "a" * 40)),
        ("org/name@refs/pr/3", ("org/name", "refs/pr/3")),
        ("drafts/config.json", None),  # a file name: a local path, even when missing
        ("a/b/c", None),
        ("/abs/path", None),
        ("./rel/path", None),
        ("name", None),
        ("org/", None),
    ],
)
def test_parse_hub_id(text: str, expected: tuple[str, str | None] | None) -> None:
    parsed = hub.parse_hub_id(text)
    assert (None if parsed is None else (parsed.repo_id, parsed.revision)) == expected


def test_existing_local_path_is_never_a_hub_id(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "org").mkdir()
    (tmp_path / "org" / "name").mkdir()
    monkeypatch.chdir(tmp_path)
    assert hub.parse_hub_id("org/name") is None


def test_cache_layout_matches_huggingface_hub(cache: Path) -> None:
    """Our cache reader and the library's ``try_to_load_from_cache`` find the same file."""
    from huggingface_hub import try_to_load_from_cache

    add_repo(cache, "org/draft", {"config.json": config_bytes(DRAFT)}, commit="c" * 40)
    add_repo(cache, "org/draft", {"config.json": b"{}"}, commit="d" * 40, branch="v2")
    for revision in (None, "v2", "c" * 40):
        ours = hub.cached_file(hub.HubId("org/draft", revision), "config.json")
        theirs = try_to_load_from_cache(
            "org/draft", "config.json", cache_dir=cache, revision=revision
        )
        assert ours is not None and str(ours) == theirs
    assert hub.cached_file(hub.HubId("org/draft", "v3"), "config.json") is None
    assert (
        try_to_load_from_cache("org/draft", "config.json", cache_dir=cache, revision="v3") is None
    )


def test_cache_dir_follows_the_library_environment(monkeypatch, tmp_path: Path) -> None:
    for key in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert hub.cache_dir() == tmp_path / "xdg" / "huggingface" / "hub"
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
    assert hub.cache_dir() == tmp_path / "home" / "hub"
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "explicit"))
    assert hub.cache_dir() == tmp_path / "explicit"
    code = (
        "from huggingface_hub import constants; from eagle3_contracts.config import readers as hub; "
        "assert str(hub.cache_dir()) == constants.HF_HUB_CACHE, "
        "(str(hub.cache_dir()), constants.HF_HUB_CACHE)"
    )
    for env in ({"HF_HOME": str(tmp_path / "h2")}, {"HF_HUB_CACHE": str(tmp_path / "c2")}):
        clean = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), **env}
        done = subprocess.run(
            [sys.executable, "-c", code],
            env={**clean, "PYTHONPATH": ":".join(sys.path)},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr[-800:]


def test_offline_miss_names_the_id_and_that_the_network_was_not_tried(cache: Path) -> None:
    with pytest.raises(ConfigError) as err:
        hub.resolve_model("org/missing@v1", what="draft")
    text = str(err.value)
    assert "org/missing@v1" in text and str(cache) in text
    assert "network was not tried" in text and "\n" not in text


_NOT_FOUND_HUB = """
import http.server, threading
class NotFound(http.server.BaseHTTPRequestHandler):
    def _answer(self):
        self.send_response(404)
        self.send_header("X-Error-Code", "RepoNotFound")
        self.send_header("Content-Length", "0")
        self.end_headers()
    do_GET = do_HEAD = _answer
    def log_message(self, *args):
        pass
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), NotFound)
threading.Thread(target=server.serve_forever, daemon=True).start()
import os
os.environ["HF_ENDPOINT"] = f"http://127.0.0.1:{server.server_port}"
from eagle3_contracts.config import readers as hub
for call in (lambda: hub.resolve_model("org/missing", what="target"),
             lambda: hub.resolve_weights("org/missing")):
    try:
        call()
    except Exception as e:
        print(type(e).__name__, e)
"""


def test_online_miss_says_the_hub_was_tried(cache: Path, monkeypatch) -> None:
    """A local endpoint answering 404 stands in for the Hub: nothing leaves this machine, and
    the library's own download and metadata calls run."""
    monkeypatch.delenv("HF_HUB_OFFLINE")
    done = subprocess.run(
        [sys.executable, "-c", _NOT_FOUND_HUB], capture_output=True, text=True, timeout=120
    )
    lines = done.stdout.splitlines()
    assert len(lines) == 2, done.stdout + done.stderr[-800:]
    assert lines[0].startswith(
        "ConfigError target org/missing: no such local path, and not in the HF cache"
    )
    assert lines[1].startswith(
        "ConfigError weights org/missing: no such local path, and not in the HF cache"
    )
    assert all("the Hub was tried" in line for line in lines)


def test_check_drafter_reads_hub_ids_from_the_cache(cache: Path) -> None:
    add_repo(cache, "org/draft", {"config.json": config_bytes(DRAFT)})
    add_repo(cache, "org/target", {"config.json": config_bytes(TARGET)}, commit="e" * 40)
    report = check_drafter(
        "org/draft",
        target="org/target@" + "e" * 40,
        trained_with="specforge",
        serve_with=("sglang==0.5.23",),
    )
    assert report.ok, report.render_text()
    assert report.target.num_layers == 6
    assert any(n.startswith("draft org/draft: HF cache") for n in report.notes)


def _draft_with_weights(fc_in: int, d2t_ok: bool = True) -> dict[str, bytes]:
    import torch

    draft = dict(DRAFT, draft_vocab_size=8)
    d2t = torch.zeros(8, dtype=torch.int64) if d2t_ok else torch.full((8,), 100)
    t2d = torch.zeros(64, dtype=torch.bool)
    t2d[:8] = True
    weights = {"fc.weight": torch.zeros(16, fc_in), "d2t": d2t, "t2d": t2d}
    return {"config.json": config_bytes(draft), "model.safetensors": safetensors_bytes(weights)}


def test_a_drafter_directory_is_read_whole(tmp_path: Path) -> None:
    """fc width and d2t/t2d come from the directory's weights without ``weights=``."""
    (tmp_path / "t.json").write_text(json.dumps(TARGET))
    for fc_in, d2t_ok, want in (
        (48, True, ()),
        (32, True, ("fc-width",)),
        (48, False, ("vocab-mapping",)),
    ):
        folder = tmp_path / f"d{fc_in}{d2t_ok}"
        folder.mkdir()
        for name, data in _draft_with_weights(fc_in, d2t_ok).items():
            (folder / name).write_bytes(data)
        report = check_drafter(
            str(folder),
            target=str(tmp_path / "t.json"),
            trained_with="specforge",
            serve_with=("sglang==0.5.23",),
        )
        checks = {c.name: c for c in report.drafter}
        assert "from the weights" in checks["fc-width"].message or want == ("fc-width",)
        errors = tuple(c.name for c in report.drafter if c.status == "error")
        assert errors == want, report.render_text()
        assert checks["vocab-mapping"].status in ("ok", "error")  # checked, not skipped


def test_hub_weights_from_the_cached_snapshot(cache: Path, tmp_path: Path) -> None:
    add_repo(cache, "org/draft", _draft_with_weights(32))
    add_repo(cache, "org/target", {"config.json": config_bytes(TARGET)})
    report = check_drafter(
        "org/draft", target="org/target", trained_with="specforge", serve_with=("sglang==0.5.23",)
    )
    assert [c.name for c in report.drafter if c.status == "error"] == ["fc-width"]
    again = check_drafter(
        "org/draft",
        target="org/target",
        trained_with="specforge",
        serve_with=("sglang==0.5.23",),
        weights="org/draft",
    )
    assert any(n.startswith("weights org/draft: HF cache") for n in again.notes)


def test_hub_weights_not_cached_offline_is_one_line(cache: Path) -> None:
    add_repo(cache, "org/draft", {"config.json": config_bytes(DRAFT)})
    with pytest.raises(
        ConfigError,
        match=r"weights org/draft: no such local path, and not in the HF cache .*not tried",
    ):
        check_drafter(
            "org/draft",
            num_layers=6,
            hidden_size=16,
            trained_with="specforge",
            weights="org/draft",
        )


def test_remote_headers_check_shapes_and_skip_values() -> None:
    """Headers fetched from the Hub (no local file) check fc width and d2t/t2d shapes."""
    from eagle3_contracts.config.drafter import TensorInfo, check_drafter_coherence
    from eagle3_contracts.config.readers import read_draft_config, read_target_config

    draft = read_draft_config(dict(DRAFT, draft_vocab_size=8))
    target = read_target_config(TARGET)
    remote = "org/draft:model.safetensors"
    tensors = {
        "fc.weight": TensorInfo(remote, "BF16", (16, 48)),
        "d2t": TensorInfo(remote, "I64", (8,)),
        "t2d": TensorInfo(remote, "BOOL", (64,)),
    }
    checks = {c.name: c for c in check_drafter_coherence(draft, target, 3, weights=tensors)}
    assert checks["fc-width"].status == "ok" and "from the weights" in checks["fc-width"].message
    assert checks["vocab-mapping"].status == "warning"
    assert "values were not read" in checks["vocab-mapping"].message
    bad = dict(tensors, d2t=TensorInfo(remote, "I64", (9,)))
    checks = {c.name: c for c in check_drafter_coherence(draft, target, 3, weights=bad)}
    assert checks["vocab-mapping"].status == "error"
