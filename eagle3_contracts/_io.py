"""Bounded, safe reading of the files a user names (configs, contracts, dumps, weights).

Every path argument goes through ``regular_file``: a FIFO would block forever, ``/dev/zero``
reads until memory runs out and ``/dev/urandom`` never ends, so only regular files are
accepted. ``read_bounded`` reads at most ``limit`` bytes and refuses a larger file;
``load_json`` refuses documents nested deeper than ``MAX_JSON_DEPTH`` (a deep document would
otherwise raise ``RecursionError`` here or in any code that walks it).

The errors are the caller's typed error (``ConfigError``, ``DumpError``, ...), built as
``error(message, source=path)``, so messages name the file and what to change.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
from collections.abc import Callable
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
    "json_depth",
    "load_json",
    "read_bounded",
    "read_json_file",
    "regular_file",
    "replace_text",
    "user_cache_dir",
]
