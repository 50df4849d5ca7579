"""``sglang==installed``: the engine installed in this environment is probed from its files
(a fake installed package built here: no engine needed), compared with the released wheel's
files, and a locally patched file changes the answer."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from eagle3_contracts.conventions import releases
from eagle3_contracts.conventions.predict import predict_feed
from eagle3_contracts.errors import ContractError
from eagle3_contracts.probe import fetch
from eagle3_contracts.probe.__main__ import main
from eagle3_contracts.probe.frameworks import SGLANG
from eagle3_contracts.probe.installed import locate, resolve, resolve_names

from ._fixtures import BEFORE_LAYER, CAUSAL_LM
from .test_probe_cache import RUNNER

VERSION = "0.5.98"
LLAMA = {"architectures": ["LlamaForCausalLM"], "num_hidden_layers": 32, "hidden_size": 64}
DRAFT = {"eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, 15, 28]}}
RELEASED = {
    "sglang/srt/models/llama.py": BEFORE_LAYER + CAUSAL_LM,
    SGLANG.reader_files[0]: RUNNER,
}
PATCH = (  # a local edit: the setter stops adding one (the ids become loop indices as given)
    "self.model.layers_to_capture = [val + 1 for val in layer_ids]",
    "self.model.layers_to_capture = list(layer_ids)",
)


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(textwrap.dedent(text))


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A user cache holding the released wheel's table, a work dir, and a site folder on
    ``sys.path`` where the test installs a fake sglang."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    released = fetch.release_dir(SGLANG, VERSION)
    _write(released, RELEASED)
    info = {"files": 2, "sha256": "0" * 64, "wheel": f"sglang-{VERSION}-py3-none-any.whl"}
    (released / "wheel.json").write_text(json.dumps(info))
    assert main(["refresh", "--release", f"sglang=={VERSION}"]) == 0  # the wheel's table
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    releases.load_table.cache_clear()
    yield site
    releases.load_table.cache_clear()  # typed tables read from this cache go with it


def _install(site: Path, files: dict[str, str]) -> None:
    _write(site, {"sglang/__init__.py": "raise ImportError('never imported')\n", **files})
    meta = site / f"sglang-{VERSION}.dist-info"
    meta.mkdir(exist_ok=True)
    (meta / "METADATA").write_text(f"Metadata-Version: 2.1\nName: sglang\nVersion: {VERSION}\n")


def test_an_installed_engine_is_found_without_importing_it(env: Path) -> None:
    _install(env, RELEASED)  # its __init__ raises: importing it would fail the test
    assert locate("sglang") == (env, VERSION)


def test_installed_files_equal_to_the_wheel_answer_as_the_release(env: Path) -> None:
    _install(env, RELEASED)
    found = resolve("sglang")
    assert found.release == f"sglang=={VERSION}"
    assert (found.differs, found.only_installed) == ((), ())
    assert "match the released wheel" in found.note()


def test_a_locally_patched_file_changes_the_answer_and_is_named(env: Path) -> None:
    patched = {**RELEASED, "sglang/srt/models/llama.py": RELEASED["sglang/srt/models/llama.py"]}
    patched["sglang/srt/models/llama.py"] = patched["sglang/srt/models/llama.py"].replace(*PATCH)
    _install(env, patched)
    names, notes = resolve_names(["sglang==installed", "sglang==0.5.98"])
    found = resolve("sglang")
    assert names == [found.release, "sglang==0.5.98"]
    assert found.release == f"sglang=={VERSION}+installed.{found.digest}"
    assert found.differs == ("llama.py",)
    assert notes == [found.note()] and "llama.py" in notes[0]
    released = predict_feed(f"sglang=={VERSION}", DRAFT, LLAMA)
    installed = predict_feed(found.release, DRAFT, LLAMA)
    assert released.canonical == (1, 15, 28)  # the wheel adds one: loop index i+1 = output i
    assert installed.canonical == (0, 14, 27)  # the patched setter does not
    table = releases.cache_dir() / f"sglang-{VERSION}+installed.{found.digest}.json"
    local = found.release.split("==")[1]
    assert releases.load_table("sglang", local).path == str(table)  # keyed by the files' hash
    assert f"{VERSION}+installed.{found.digest}" not in releases.known_releases()["sglang"]
    assert list(Path.cwd().iterdir()) == []


def test_no_installed_engine_is_one_clear_error(env: Path) -> None:
    with pytest.raises(ContractError) as err:
        locate("vllm")
    assert err.value.field == "serve_with"
    assert "no vllm package is installed" in str(err.value)


def test_check_serves_with_the_installed_engine_and_notes_the_patch(
    env: Path, capsys: pytest.CaptureFixture[str], wide_output: None
) -> None:
    from eagle3_contracts.cli import main

    patched = dict(RELEASED)
    patched["sglang/srt/models/llama.py"] = patched["sglang/srt/models/llama.py"].replace(*PATCH)
    _install(env, patched)
    code = main(["check", "--example", "kimi-k2.5", "--serve-with", "sglang==installed"])
    out = capsys.readouterr().out
    found = resolve("sglang")
    assert code == 1  # the fake release has no deepseek_v2.py: that row is unknown
    assert f"note: {found.note()}" in out.splitlines()
    assert f"sglang=={VERSION}+installed.{found.digest}" in out
