"""Bounded, safe reading of the files a user names (configs, contracts, dumps, weights), and
the one safe writer of a config a command edits (``write_text_file``).

Every path argument goes through ``regular_file``: a FIFO would block forever, ``/dev/zero``
reads until memory runs out and ``/dev/urandom`` never ends, so only regular files are
accepted. ``read_bounded`` reads at most ``limit`` bytes and refuses a larger file;
``load_json`` refuses documents nested deeper than ``MAX_JSON_DEPTH`` (a deep document would
otherwise raise ``RecursionError`` here or in any code that walks it).

The errors are the caller's typed error (``ConfigError``, ``DumpError``, ...), built as
``error(message, source=path)``, so messages name the file and what to change.
"""

from __future__ import annotations

import codecs
import contextlib
import fcntl
import json
import os
import stat
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eagle3_contracts.errors import ConfigError

MiB = 1 << 20

CONFIG_LIMIT = 16 * MiB
"""Largest JSON config/contract file read (real ``config.json`` files are a few KiB)."""

MAX_JSON_DEPTH = 64
"""Deepest JSON nesting accepted (configs nest 3 levels; safetensors headers 3)."""

ErrorType = Callable[..., Exception]

_KINDS = (
    (stat.S_ISFIFO, "a FIFO (named pipe): reading it would wait for a writer forever"),
    (stat.S_ISCHR, "a character device (like /dev/zero or /dev/urandom), not a file"),
    (stat.S_ISBLK, "a block device, not a file"),
    (stat.S_ISSOCK, "a socket, not a file"),
    (stat.S_ISDIR, "a directory"),
)


def regular_file(
    path: str | os.PathLike[str], *, what: str, error: ErrorType = ConfigError
) -> os.stat_result:
    """``os.stat`` of ``path`` (symlinks followed) if it is a regular file; else ``error``."""
    source = str(path)
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise error(f"cannot read the {what}: no such file", source=source) from None
    except OSError as exc:
        raise error(f"cannot read the {what}: {exc.strerror or exc}", source=source) from None
    if not stat.S_ISREG(info.st_mode):
        kind = next((text for test, text in _KINDS if test(info.st_mode)), "not a regular file")
        raise error(f"the {what} must be a regular file; this is {kind}", source=source)
    return info


def read_bounded(
    path: str | os.PathLike[str],
    *,
    what: str,
    limit: int = CONFIG_LIMIT,
    error: ErrorType = ConfigError,
) -> bytes:
    """The bytes of the regular file ``path``, refusing one larger than ``limit``."""
    source = str(path)
    info = regular_file(path, what=what, error=error)
    if info.st_size > limit:
        raise error(
            f"the {what} is {info.st_size} bytes, over the {limit} byte limit for such a file; "
            f"is this the right file?",
            source=source,
        )
    try:
        with open(path, "rb") as fh:
            data = fh.read(limit + 1)  # files under /proc report size 0 and may grow
    except OSError as exc:
        raise error(f"cannot read the {what}: {exc.strerror or exc}", source=source) from None
    if len(data) > limit:
        raise error(f"the {what} is over the {limit} byte limit for such a file", source=source)
    return data


def json_depth(value: Any) -> int:
    """Nesting depth of a parsed JSON value (a scalar is 0), computed without recursion."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, depth + 1)
        stack.extend((child, depth + 1) for child in children)
    return deepest


def load_json(
    text: str | bytes,
    *,
    what: str,
    source: str | None,
    error: ErrorType = ConfigError,
    max_depth: int = MAX_JSON_DEPTH,
) -> Any:
    """``json.loads`` that refuses bad UTF-8, bad JSON and nesting deeper than ``max_depth``."""
    try:
        data = json.loads(text)
    except UnicodeDecodeError as exc:
        raise error(f"the {what} is not UTF-8 text: {exc.reason}", source=source) from None
    except json.JSONDecodeError as exc:
        raise error(
            f"the {what} is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})",
            source=source,
        ) from None
    except RecursionError:
        raise error(
            f"the {what} nests JSON deeper than {max_depth} levels; no config is that deep",
            source=source,
        ) from None
    except (ValueError, TypeError) as exc:
        raise error(f"the {what} is not valid JSON: {exc}", source=source) from None
    depth = json_depth(data)
    if depth > max_depth:
        raise error(
            f"the {what} nests JSON {depth} levels deep, over the limit of {max_depth}; no "
            f"config is that deep",
            source=source,
        )
    return data


def read_json_file(
    path: str | os.PathLike[str],
    *,
    what: str,
    limit: int = CONFIG_LIMIT,
    error: ErrorType = ConfigError,
) -> Any:
    """Read a bounded regular JSON file and parse it with ``load_json``."""
    data = read_bounded(path, what=what, limit=limit, error=error)
    return load_json(data, what=what, source=str(Path(path)), error=error)


@dataclass(frozen=True)
class TextFile:
    """A JSON text file read for a minimal edit, and how to write text back the same way."""

    path: Path
    raw: bytes  # the bytes read: a backup is exactly these, and a writer checks them again
    text: str  # the decoded text, every line end as "\n"
    codec: str  # "utf-8", "utf-16-le", ...: the file's encoding, kept on write
    bom: bytes  # the byte-order mark the file opens with (b"" for none), kept on write
    newline: str  # "\n" or "\r\n": the file's line ends, kept on write

    def encode(self, text: str) -> bytes:
        """``text`` (line ends ``"\n"``) as this file's bytes: its BOM, codec and line ends."""
        return self.bom + text.replace("\n", self.newline).encode(self.codec)


_BOMS = (  # UTF-32 first: its little-endian mark opens with UTF-16's
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)


def read_text_file(
    path: str | os.PathLike[str], *, what: str, error: ErrorType = ConfigError
) -> TextFile:
    """Read a bounded JSON text file for editing: the encodings ``json.loads`` reads (UTF-8,
    -16, -32, with or without a byte-order mark) and one kind of line end, else ``error``."""
    path = Path(path)
    raw = read_bounded(path, what=what, error=error)
    bom, codec = next(((b, c) for b, c in _BOMS if raw.startswith(b)), (b"", ""))
    codec = codec or json.detect_encoding(raw)
    try:
        text = raw[len(bom) :].decode(codec)
    except UnicodeDecodeError as exc:
        raise error(f"the {what} is not {codec} text: {exc.reason}", source=str(path)) from None
    crlf, lf, cr = text.count("\r\n"), text.count("\n"), text.count("\r")
    if crlf and crlf == lf == cr:
        return TextFile(path, raw, text.replace("\r\n", "\n"), codec, bom, "\r\n")
    if cr:
        raise error(
            f"the {what} mixes line ends (CRLF with LF, or a lone CR), which an edit could not "
            f"keep; convert it to one kind (dos2unix or unix2dos) first",
            source=str(path),
        )
    return TextFile(path, raw, text, codec, bom, "\n")


_CACHE_REPOS = ("models--", "datasets--", "spaces--")


def in_hf_cache(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` lies in a Hugging Face cache snapshot (``models--o--n/snapshots/``),
    as written or once links are resolved."""
    for form in (Path(os.path.abspath(path)), Path(path).resolve()):
        parts = form.parts
        if any(
            part == "snapshots" and parts[i - 1].startswith(_CACHE_REPOS)
            for i, part in enumerate(parts[1:-1], start=1)
        ):
            return True
    return False


def _writable(path: Path, *, what: str, error: ErrorType) -> os.stat_result:
    """``os.lstat`` of the file a writer may replace: a regular file of the user's own, never a
    link, a Hugging Face cache file or a read-only file."""
    source = str(path)
    try:
        info = os.lstat(path)
    except OSError as exc:
        raise error(f"cannot write the {what}: {exc.strerror or exc}", source=source) from None
    if stat.S_ISLNK(info.st_mode):
        raise error(
            f"the {what} is a symbolic link (to {os.readlink(path)}); it is never written "
            f"through: copy the drafter into a folder of your own (cp -rL) and write there",
            source=source,
        )
    if in_hf_cache(path):
        raise error(
            f"the {what} is in the Hugging Face cache (.../snapshots/), which is read-only "
            f"data: download the drafter to a folder (hf download REPO --local-dir DIR) and "
            f"write there",
            source=source,
        )
    regular_file(path, what=what, error=error)
    if not info.st_mode & 0o222 or not os.access(path, os.W_OK):
        raise error(
            f"the {what} is read-only (mode {stat.S_IMODE(info.st_mode):04o}); nothing was "
            f"written: make it writable (chmod u+w) to replace it",
            source=source,
        )
    return info


@contextlib.contextmanager
def _locked(path: Path, *, what: str, error: ErrorType) -> Iterator[int]:
    """Hold an exclusive ``flock`` on the file now at ``path``: a writer that replaced it
    meanwhile left another inode there, so lock again until the lock and the path agree."""
    for _ in range(100):
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError as exc:
            raise error(
                f"cannot write the {what}: {exc.strerror or exc}", source=str(path)
            ) from None
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                held, now = os.fstat(fd), os.lstat(path)
            except OSError as exc:  # a file system without locks, the file gone meanwhile
                raise error(
                    f"cannot lock the {what}: {exc.strerror or exc}", source=str(path)
                ) from None
            if (held.st_dev, held.st_ino) == (now.st_dev, now.st_ino):
                yield fd
                return
        finally:
            os.close(fd)
    raise error(f"cannot lock the {what}: it keeps being replaced", source=str(path))


def _create(folder: Path, name: str | None, data: bytes, info: os.stat_result) -> Path:
    """A new file in ``folder`` holding ``data`` with ``info``'s permissions, created
    exclusively (never through a link planted there) and synced; ``name`` ``None``: a unique
    temporary name."""
    if name is None:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".eagle3-", suffix=".tmp")  # O_EXCL
        made = Path(tmp)
    else:
        made = folder / name
        fd = os.open(
            made, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600
        )
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            with contextlib.suppress(PermissionError):  # another owner's file, as root
                os.fchown(fh.fileno(), info.st_uid, info.st_gid)
            os.fchmod(fh.fileno(), stat.S_IMODE(info.st_mode))
            os.fsync(fh.fileno())
    except BaseException:
        made.unlink(missing_ok=True)
        raise
    return made


def _backup(path: Path, data: bytes, info: os.stat_result) -> Path:
    """``data`` as ``NAME.bak`` beside ``path`` (``.bak1``, ``.bak2`` ... when taken)."""
    for n in range(1000):
        try:
            return _create(path.parent, f"{path.name}.bak{n or ''}", data, info)
        except FileExistsError:
            continue
    raise FileExistsError(f"{path.name}.bak ... {path.name}.bak999 all exist")


def write_text_file(
    file: TextFile,
    text: str,
    *,
    what: str,
    backup: bool = False,
    limit: int = CONFIG_LIMIT,
    error: ErrorType = ConfigError,
) -> Path | None:
    """Replace ``file`` with ``text`` in its encoding and line ends, safely; return the backup.

    Refused, writing nothing: a link, a Hugging Face cache file, a read-only file, a result
    over ``limit`` (the tool would then refuse to read it), a file that changed since it was
    read (another writer). Else, under an exclusive lock: the backup (``backup``: exactly
    ``file.raw``) and a uniquely named temporary file are created exclusively in the file's
    folder with its permissions, synced, and the temporary file renamed over the file
    (``os.replace``): a reader sees the old file or the new one, never half of one.
    """
    path, source = file.path, str(file.path)
    data = file.encode(text)
    if len(data) > limit:
        raise error(
            f"the edited {what} would be {len(data)} bytes, over the {limit} byte limit for such "
            f"a file; nothing was written",
            source=source,
        )
    info = _writable(path, what=what, error=error)
    with _locked(path, what=what, error=error) as fd:
        with os.fdopen(os.dup(fd), "rb") as fh:
            now = fh.read(limit + 1)
        if now != file.raw:
            raise error(
                f"the {what} changed while it was being edited (another writer?); nothing was "
                f"written: run the command again",
                source=source,
            )
        saved = tmp = None
        try:
            saved = _backup(path, file.raw, info) if backup else None
            tmp = _create(path.parent, None, data, info)
            os.replace(tmp, path)
            tmp = None
            _sync_folder(path.parent)
        except OSError as exc:
            for left in (tmp, saved):
                if left is not None:
                    left.unlink(missing_ok=True)
            raise error(f"cannot write the {what}: {exc.strerror or exc}", source=source) from None
    return saved


def _sync_folder(folder: Path) -> None:
    """fsync a folder, so a rename in it survives a crash (best effort: not every file system
    opens folders)."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def replace_text(
    path: str | os.PathLike[str], text: str, *, what: str, error: ErrorType = ConfigError
) -> None:
    """Write ``text`` over ``path`` atomically: a uniquely named temporary file beside it,
    flushed to disk, then ``os.replace``. A reader (or a concurrent writer) sees the old file or
    a whole new one, never half of one; the file keeps its permission bits (new files: 0644)."""
    path = Path(path)
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        mode = 0o644
    tmp: str | None = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".eagle3.tmp", dir=path.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
        _sync_folder(path.parent)
    except OSError as exc:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        raise error(f"cannot write the {what}: {exc.strerror or exc}", source=str(path)) from None


CACHE_DIR_NAME = "eagle3-contracts"


def user_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/eagle3-contracts``, else ``~/.cache/eagle3-contracts`` (a relative
    ``XDG_CACHE_HOME`` is ignored, as the XDG base-directory spec says: it would write under the
    working directory). Where probes write; never the package or the working directory."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    return base / CACHE_DIR_NAME


__all__ = [
    "CONFIG_LIMIT",
    "MAX_JSON_DEPTH",
    "TextFile",
    "in_hf_cache",
    "json_depth",
    "load_json",
    "read_bounded",
    "read_json_file",
    "read_text_file",
    "regular_file",
    "replace_text",
    "user_cache_dir",
    "write_text_file",
]
