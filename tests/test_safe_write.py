"""``_io.write_text_file``, the one writer of a config a command edits (``fix --write``,
``stamp``): never through a planted link, never into the HF cache, permissions, encoding and
line ends kept, the backup byte-identical, nothing written past the size limit, and two writers
at once lose nothing."""

from __future__ import annotations

import errno
import json
import os
import stat
import threading
from pathlib import Path

import pytest

from eagle3_contracts._io import (
    CONFIG_LIMIT,
    TextFile,
    in_hf_cache,
    read_text_file,
    write_text_file,
)
from eagle3_contracts._json_edit import set_top_level_key
from eagle3_contracts.errors import ConfigError

DOC = {"architectures": ["LlamaForCausalLMEagle3"], "hidden_size": 16, "ids": [1, 2, 3]}


def _config(folder: Path, data: bytes | None = None) -> Path:
    path = folder / "config.json"
    path.write_bytes(data if data is not None else json.dumps(DOC, indent=2).encode() + b"\n")
    return path


def _edit(file: TextFile, key: str = "eagle3_contract", value: object = 1) -> str:
    return set_top_level_key(file.text, key, value)


def _listing(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def test_a_write_replaces_the_file_and_leaves_only_the_backup(tmp_path: Path) -> None:
    path = _config(tmp_path)
    before = path.read_bytes()
    file = read_text_file(path, what="draft config")
    backup = write_text_file(file, _edit(file), what="draft config", backup=True)
    assert backup == tmp_path / "config.json.bak"
    assert backup.read_bytes() == before
    assert json.loads(path.read_bytes()) == {**DOC, "eagle3_contract": 1}
    assert sorted(_listing(tmp_path)) == ["config.json", "config.json.bak"]  # no temp file left


def test_a_taken_backup_name_is_never_overwritten(tmp_path: Path) -> None:
    path = _config(tmp_path)
    (tmp_path / "config.json.bak").write_bytes(b"older backup")
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"not ours")
    (tmp_path / "config.json.bak1").symlink_to(outside)  # a link planted at the next name
    before = path.read_bytes()
    file = read_text_file(path, what="draft config")
    backup = write_text_file(file, _edit(file), what="draft config", backup=True)
    assert backup == tmp_path / "config.json.bak2" and backup.read_bytes() == before
    assert (tmp_path / "config.json.bak").read_bytes() == b"older backup"
    assert outside.read_bytes() == b"not ours"


def test_the_temporary_file_is_created_exclusively_with_a_unique_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A link planted at every old fixed temp name is never followed; the temp name is new."""
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / "victim.json"
    victim.write_bytes(b"precious")
    folder = tmp_path / "drafter"
    folder.mkdir()
    path = _config(folder)
    for planted in (".config.json.eagle3.tmp", "config.json.tmp", ".config.json.tmp"):
        (folder / planted).symlink_to(victim)
    seen: list[str] = []
    real_replace = os.replace

    def spy(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        seen.append(os.fspath(src))
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", spy)
    file = read_text_file(path, what="draft config")
    write_text_file(file, _edit(file), what="draft config")
    assert victim.read_bytes() == b"precious"
    assert not path.is_symlink() and json.loads(path.read_bytes())["eagle3_contract"] == 1
    assert len(seen) == 1 and Path(seen[0]).parent == folder
    assert Path(seen[0]).name not in {".config.json.eagle3.tmp", "config.json.tmp"}


def test_a_symlinked_config_is_refused_and_stays_a_link(tmp_path: Path) -> None:
    real = tmp_path / "elsewhere.json"
    real.write_text(json.dumps(DOC))
    folder = tmp_path / "drafter"
    folder.mkdir()
    link = folder / "config.json"
    link.symlink_to(real)
    file = read_text_file(link, what="draft config")
    with pytest.raises(ConfigError, match="symbolic link") as info:
        write_text_file(file, _edit(file), what="draft config", backup=True)
    assert str(link) in str(info.value)
    assert link.is_symlink() and real.read_text() == json.dumps(DOC)
    assert sorted(p.name for p in folder.iterdir()) == ["config.json"]


def test_a_file_in_the_hf_cache_is_refused(tmp_path: Path) -> None:
    snapshot = tmp_path / "hub" / "models--org--draft" / "snapshots" / ("a" * 40)
    snapshot.mkdir(parents=True)
    path = _config(snapshot)  # a plain file (a copied cache), not a link to a blob
    before = path.read_bytes()
    assert in_hf_cache(path) and not in_hf_cache(tmp_path / "snapshots" / "config.json")
    file = read_text_file(path, what="draft config")
    with pytest.raises(ConfigError, match="Hugging Face cache"):
        write_text_file(file, _edit(file), what="draft config", backup=True)
    assert _listing(snapshot) == {"config.json": before}


@pytest.mark.parametrize("mode", [0o600, 0o640, 0o664, 0o755])
def test_permissions_are_kept(tmp_path: Path, mode: int) -> None:
    path = _config(tmp_path)
    path.chmod(mode)
    file = read_text_file(path, what="draft config")
    backup = write_text_file(file, _edit(file), what="draft config", backup=True)
    assert stat.S_IMODE(path.stat().st_mode) == mode
    assert backup is not None and stat.S_IMODE(backup.stat().st_mode) == mode


def test_a_read_only_file_is_refused_clearly(tmp_path: Path) -> None:
    path = _config(tmp_path)
    before = path.read_bytes()
    path.chmod(0o444)
    file = read_text_file(path, what="draft config")
    with pytest.raises(ConfigError, match=r"read-only \(mode 0444\).*chmod u\+w"):
        write_text_file(file, _edit(file), what="draft config", backup=True)
    assert _listing(tmp_path) == {"config.json": before}


@pytest.mark.parametrize(
    ("encoding", "bom"),
    [
        ("utf-8", b""),
        ("utf-8", b"\xef\xbb\xbf"),
        ("utf-16-le", b"\xff\xfe"),
        ("utf-16-be", b"\xfe\xff"),
        ("utf-16-le", b""),
        ("utf-32-le", b"\xff\xfe\x00\x00"),
    ],
)
@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_encoding_bom_and_line_ends_are_kept(
    tmp_path: Path, encoding: str, bom: bytes, newline: str
) -> None:
    text = json.dumps(DOC, indent=2).replace("\n", newline) + newline
    path = _config(tmp_path, bom + text.encode(encoding))
    before = path.read_bytes()
    file = read_text_file(path, what="draft config")
    assert (file.codec, file.bom, file.newline) == (encoding, bom, newline)
    backup = write_text_file(file, _edit(file), what="draft config", backup=True)
    assert backup is not None and backup.read_bytes() == before
    after = path.read_bytes()
    assert after.startswith(bom)
    written = after[len(bom) :].decode(encoding)
    assert json.loads(written) == {**DOC, "eagle3_contract": 1}
    assert written.count("\n") == written.count(newline)  # every line end is the file's kind
    assert written.count("\n") == text.count("\n") + 1  # one line more: the new member


def test_mixed_line_ends_are_refused_before_any_edit(tmp_path: Path) -> None:
    path = _config(tmp_path, b'{\r\n  "a": 1,\n  "b": 2\r\n}\r\n')
    with pytest.raises(ConfigError, match="mixes line ends"):
        read_text_file(path, what="draft config")


def test_a_result_over_the_limit_writes_nothing(tmp_path: Path) -> None:
    pad = CONFIG_LIMIT - 40
    path = _config(tmp_path, b'{"pad": "' + b"x" * pad + b'"}')
    before = path.read_bytes()
    assert len(before) <= CONFIG_LIMIT
    file = read_text_file(path, what="draft config")
    with pytest.raises(
        ConfigError, match="over the 16777216 byte limit for such a file; nothing was written"
    ):
        write_text_file(file, _edit(file, value="y" * 64), what="draft config", backup=True)
    assert _listing(tmp_path) == {"config.json": before}


def test_a_file_changed_since_it_was_read_is_not_overwritten(tmp_path: Path) -> None:
    path = _config(tmp_path)
    file = read_text_file(path, what="draft config")
    path.write_text(json.dumps({**DOC, "someone": "else"}))
    with pytest.raises(ConfigError, match="changed while it was being edited"):
        write_text_file(file, _edit(file), what="draft config", backup=True)
    assert json.loads(path.read_text())["someone"] == "else"
    assert sorted(_listing(tmp_path)) == ["config.json"]


def test_a_write_error_names_the_users_file_and_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rename fails (a full disk, a folder gone read-only): the error names the config,
    never our temporary file, and neither the temporary file nor the backup is left."""
    path = _config(tmp_path)
    before = path.read_bytes()
    file = read_text_file(path, what="draft config")

    def full(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), os.fspath(src))

    monkeypatch.setattr(os, "replace", full)
    with pytest.raises(ConfigError) as info:
        write_text_file(file, _edit(file), what="draft config", backup=True)
    assert str(info.value) == f"{path}: cannot write the draft config: No space left on device"
    assert _listing(tmp_path) == {"config.json": before}


def _writer(
    path: Path, key: str, value: int, start: threading.Barrier, said: dict[str, str]
) -> None:
    """Add ``key``; refused because the other writer changed the file first, read it again and
    retry, as a user would."""
    for attempt in range(20):
        file = read_text_file(path, what="draft config")
        if attempt == 0:
            start.wait()  # both have read the same bytes: now both write
        try:
            backup = write_text_file(file, _edit(file, key, value), what="c", backup=True)
        except ConfigError as exc:
            said[key] = str(exc)
            continue
        said[key] = "ok" if backup is not None and backup.read_bytes() == file.raw else "bad .bak"
        return


def test_two_writers_at_once_lose_nothing(tmp_path: Path) -> None:
    """50 rounds of two threads each adding its own key to one file at once: every write that
    reports success is in the final file, the other one is refused (never silently lost), no
    temporary file is left and each backup holds exactly the bytes its writer read."""
    path = _config(tmp_path)
    for n in range(50):
        start, said = threading.Barrier(2), {}
        keys = (f"a{n}", f"b{n}")
        threads = [threading.Thread(target=_writer, args=(path, k, n, start, said)) for k in keys]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        assert said == {keys[0]: "ok", keys[1]: "ok"}
        final = json.loads(path.read_text())
        assert final[keys[0]] == final[keys[1]] == n
    final = json.loads(path.read_text())
    assert all(final[f"{w}{n}"] == n for w in "ab" for n in range(50))
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    assert len(list(tmp_path.glob("config.json.bak*"))) == 100
