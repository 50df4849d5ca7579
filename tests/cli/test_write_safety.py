"""``fix --write`` and ``stamp`` through the installed entry point on files a writer must not
harm: a symlinked config, a planted link, the HF cache, a read-only file, CRLF, a BOM, UTF-16,
a file at the size limit, a malformed stamp. Each: the exit code, exactly one stderr line for
bad input, and no byte written outside the file named (every other file compared)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from tests.cli._entry import run_entry
from tests.hub._cache import DRAFT, TARGET

TOP = "eagle_aux_hidden_state_layer_ids"


def _tree(root: Path) -> dict[str, bytes | str]:
    """Every entry under ``root``: a file's bytes, a link's target."""
    out: dict[str, bytes | str] = {}
    for path in sorted(root.rglob("*")):
        key = str(path.relative_to(root))
        if path.is_symlink():
            out[key] = "-> " + os.readlink(path)
        elif path.is_file():
            out[key] = path.read_bytes()
    return out


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Path]:
    draft = tmp_path / "drafter"
    draft.mkdir()
    (draft / "config.json").write_text(json.dumps(DRAFT, indent=2) + "\n")
    (tmp_path / "target.json").write_text(json.dumps(TARGET))
    return {"root": tmp_path, "draft": draft, "config": draft / "config.json"}


def fix(world: dict[str, Path], *extra: str, draft: Path | None = None):
    return run_entry(
        "fix",
        str(draft or world["draft"]),
        "--target",
        str(world["root"] / "target.json"),
        "--serve-with",
        "vllm==0.33.0",
        "--trained-with",
        "specforge",
        "--write",
        *extra,
        drop=("EAGLE3_CONTRACTS_TRAINED_WITH",),
    )


def stamp(world: dict[str, Path], *extra: str, draft: Path | None = None):
    return run_entry(
        "stamp",
        str(draft or world["draft"]),
        "--trained-with",
        "specforge",
        "--target",
        str(world["root"] / "target.json"),
        *extra,
    )


WRITERS = {"fix": fix, "stamp": stamp}


def _refused(done, *needles: str) -> str:
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert "Traceback" not in done.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize("writer", WRITERS)
def test_a_symlinked_config_is_refused_and_stays_a_link(world, writer: str) -> None:
    real = world["root"] / "shared-config.json"
    world["config"].rename(real)
    world["config"].symlink_to(real)
    before = _tree(world["root"])
    _refused(WRITERS[writer](world), str(world["config"]), "symbolic link")
    assert _tree(world["root"]) == before


@pytest.mark.parametrize("writer", WRITERS)
def test_a_planted_temp_link_is_never_followed(world, writer: str) -> None:
    victim = world["root"] / "victim.txt"
    victim.write_bytes(b"precious")
    for name in (".config.json.eagle3.tmp", "config.json.tmp", "config.json.bak.tmp"):
        (world["draft"] / name).symlink_to(victim)
    done = WRITERS[writer](world)
    assert done.returncode == 0, done.stderr
    assert victim.read_bytes() == b"precious"
    assert not world["config"].is_symlink()
    assert json.loads(world["config"].read_text()) != DRAFT  # written


@pytest.mark.parametrize("writer", WRITERS)
def test_a_config_in_the_hf_cache_is_never_written(world, writer: str) -> None:
    snapshot = world["root"] / "hub" / "models--org--draft" / "snapshots" / ("c" * 40)
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_bytes(world["config"].read_bytes())  # a plain copy
    before = _tree(world["root"])
    _refused(WRITERS[writer](world, draft=snapshot), "Hugging Face cache")
    assert _tree(world["root"]) == before


@pytest.mark.parametrize("writer", WRITERS)
def test_a_read_only_config_is_refused_clearly(world, writer: str) -> None:
    world["config"].chmod(0o444)
    before = _tree(world["root"])
    _refused(WRITERS[writer](world), "read-only (mode 0444)", "chmod u+w")
    assert _tree(world["root"]) == before


@pytest.mark.parametrize("writer", WRITERS)
@pytest.mark.parametrize("mode", [0o600, 0o640])
def test_permissions_are_kept(world, writer: str, mode: int) -> None:
    world["config"].chmod(mode)
    assert WRITERS[writer](world).returncode == 0
    assert stat.S_IMODE(world["config"].stat().st_mode) == mode
    for backup in world["draft"].glob("config.json.bak*"):
        assert stat.S_IMODE(backup.stat().st_mode) == mode


@pytest.mark.parametrize("writer", WRITERS)
@pytest.mark.parametrize(
    ("encoding", "bom", "newline"),
    [
        ("utf-8", b"", "\r\n"),
        ("utf-8", b"\xef\xbb\xbf", "\n"),
        ("utf-8", b"\xef\xbb\xbf", "\r\n"),
        ("utf-16-le", b"\xff\xfe", "\r\n"),
        ("utf-16-be", b"\xfe\xff", "\n"),
    ],
)
def test_encoding_bom_and_line_ends_are_kept_and_the_backup_is_the_original(
    world, writer: str, encoding: str, bom: bytes, newline: str
) -> None:
    text = json.dumps(DRAFT, indent=2).replace("\n", newline) + newline
    original = bom + text.encode(encoding)
    world["config"].write_bytes(original)
    done = WRITERS[writer](world)
    assert done.returncode == 0, done.stderr
    after = world["config"].read_bytes()
    assert after.startswith(bom) and after != original
    written = after[len(bom) :].decode(encoding)
    assert written.count("\n") == written.count(newline) > text.count("\n")
    assert run_entry("stamp", str(world["draft"]), "--show").returncode in (0, 1)  # reads it
    if writer == "fix":
        assert json.loads(written)[TOP] == [1, 3, 5]
        assert (world["draft"] / "config.json.bak").read_bytes() == original


@pytest.mark.parametrize("writer", WRITERS)
def test_at_the_size_limit_nothing_is_written(world, writer: str) -> None:
    """A config just under 16 MiB that the edit would take over: exit 2, file untouched, no
    backup, never a file the tool then refuses to read."""
    text = json.dumps(dict(DRAFT, padding=""), indent=2) + "\n"
    pad = (16 << 20) - 10 - len(text)  # 10 bytes under the limit: any edit takes it over
    world["config"].write_text(json.dumps(dict(DRAFT, padding="x" * pad), indent=2) + "\n")
    assert world["config"].stat().st_size == (16 << 20) - 10
    before = _tree(world["root"])
    _refused(WRITERS[writer](world), "over the 16777216 byte limit", "nothing was written")
    assert _tree(world["root"]) == before


def test_fix_says_nothing_before_its_error(world) -> None:
    """The claim line is printed with the result, never before a refusal (one stderr line)."""
    world["config"].chmod(0o444)
    line = _refused(fix(world), "read-only")
    assert "training claim" not in line


def test_fix_names_the_users_file_never_a_temp_file(world) -> None:
    world["config"].chmod(0o444)
    line = _refused(fix(world))
    assert str(world["config"]) in line and ".tmp" not in line


def test_a_malformed_stamp_is_replaced_with_force_as_its_message_says(world) -> None:
    data = dict(DRAFT, eagle3_contract={"schema": "nonsense"})
    world["config"].write_text(json.dumps(data, indent=2) + "\n")
    line = _refused(stamp(world), "eagle3_contract.schema")
    assert "--force" in line
    done = stamp(world, "--force")
    assert done.returncode == 0, done.stderr
    assert json.loads(world["config"].read_text())["eagle3_contract"]["schema"] != "nonsense"
    assert run_entry("stamp", str(world["draft"]), "--show").returncode == 0


def test_two_fix_write_at_once_never_collide(world) -> None:
    """Two ``fix --write`` processes on one config, five times: each exits 0 (the fix, or
    nothing left to write) or 2 with the one line saying the file changed under it; the
    config ends fixed, no temporary file is left, and the first backup is the original."""
    import subprocess

    from tests.cli._entry import entry_env, entry_point

    original = world["config"].read_bytes()
    argv = [
        entry_point(),
        "fix",
        str(world["draft"]),
        "--target",
        str(world["root"] / "target.json"),
        "--serve-with",
        "vllm==0.33.0",
        "--trained-with",
        "specforge",
        "--write",
    ]
    env = entry_env(drop=("EAGLE3_CONTRACTS_TRAINED_WITH",))
    for _ in range(5):
        world["config"].write_bytes(original)
        for backup in world["draft"].glob("config.json.bak*"):
            backup.unlink()
        procs = [
            subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            for _ in range(2)
        ]
        results = [(p.wait(timeout=120), p.stderr.read().decode()) for p in procs]  # type: ignore[union-attr]
        for code, err in results:
            assert code in (0, 2), err
            if code == 2:
                (line,) = err.splitlines()
                assert "changed while it was being edited" in line
        assert 0 in [code for code, _ in results]
        assert json.loads(world["config"].read_text())[TOP] == [1, 3, 5]
        assert (world["draft"] / "config.json.bak").read_bytes() == original
        assert sorted(p.name for p in world["draft"].iterdir() if p.name.endswith(".tmp")) == []
