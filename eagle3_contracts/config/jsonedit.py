"""Minimal textual edits of a JSON document: set one member, keep every other byte.

``set_member(text, "eagle_config.eagle_aux_hidden_state_layer_ids", [1, 3, 5])`` replaces the
member's value where it is (an array keeps its style: one line with the same separator, or one
element per line at the same indentation) or appends it to its object in the style of that
object's last member (its indentation and ``": "`` spacing). Key order, indentation, compact
arrays, unknown keys and the final newline are untouched. The edited text is parsed again and
must equal the intended document, else ``ConfigError``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from json.decoder import scanstring  # type: ignore[attr-defined]
from typing import Any

from eagle3_contracts.errors import ConfigError

_WS = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


@dataclass(frozen=True)
class _Member:
    key: str
    key_start: int  # the opening quote of the key
    colon: str  # the text from the key's end to the value (": ")
    value_start: int
    value_end: int


def _skip(text: str, i: int) -> int:
    match = _WS.match(text, i)
    assert match is not None
    return match.end()


def _members(text: str, start: int, source: str) -> tuple[list[_Member], int]:
    """The members of the object opening at ``start``, and the index of its ``}``."""
    if text[start : start + 1] != "{":
        raise ConfigError("expected a JSON object here", source=source)
    members: list[_Member] = []
    i = _skip(text, start + 1)
    if text[i : i + 1] == "}":
        return members, i
    while True:
        if text[i : i + 1] != '"':
            raise ConfigError(f"expected a key at character {i}", source=source)
        key, key_end = scanstring(text, i + 1)
        value_start = _skip(text, _skip(text, key_end) + 1)
        _, value_end = _DECODER.raw_decode(text, value_start)
        members.append(_Member(key, i, text[key_end:value_start], value_start, value_end))
        i = _skip(text, value_end)
        if text[i : i + 1] == ",":
            i = _skip(text, i + 1)
            continue
        if text[i : i + 1] == "}":
            return members, i
        raise ConfigError(f"expected ',' or '}}' at character {i}", source=source)


def _render_ids(ids: Sequence[int], old: str | None) -> str:
    """``ids`` as a JSON array in the style of the array it replaces (if any)."""
    items = [str(int(i)) for i in ids]
    if old is None or not old.startswith("["):
        return "[" + ", ".join(items) + "]"
    if "\n" not in old:
        sep = "," if re.search(r",\S", old) else ", "
        pad = " " if old.startswith("[ ") and old.endswith(" ]") else ""
        return "[" + pad + sep.join(items) + pad + "]" if items else "[]"
    inner = re.match(r"\[\s*?\n([ \t]*)", old)
    close = re.search(r"\n([ \t]*)\]$", old)
    indent = inner.group(1) if inner else "  "
    closing = close.group(1) if close else ""
    return "[\n" + ",\n".join(indent + i for i in items) + "\n" + closing + "]"


def set_member(text: str, path: str, ids: Sequence[int], *, source: str = "<text>") -> str:
    """``text`` with the member at the dotted ``path`` set to the id list ``ids``."""
    keys = path.split(".")
    start = _skip(text, 0)
    for depth, key in enumerate(keys):
        members, close = _members(text, start, source)
        found = [m for m in members if m.key == key]
        if not found:
            return _insert(text, members, start, close, keys[depth:], ids)
        member = found[-1]  # json.loads keeps the last of duplicate keys
        if depth == len(keys) - 1:
            old = text[member.value_start : member.value_end]
            return text[: member.value_start] + _render_ids(ids, old) + text[member.value_end :]
        if text[member.value_start] != "{":
            raise ConfigError(
                f"{'.'.join(keys[: depth + 1])} is not a JSON object; cannot set {path} in it",
                source=source,
                field=path,
            )
        start = member.value_start
    raise AssertionError("unreachable: the path has at least one key")


def _insert(
    text: str,
    members: list[_Member],
    start: int,
    close: int,
    keys: Sequence[str],
    ids: Sequence[int],
) -> str:
    """Add ``keys[0]`` (holding the rest of the path) to the object at ``start``."""
    value = _render_ids(ids, None)
    for key in reversed(keys[1:]):
        value = "{" + json.dumps(key) + ": " + value + "}"
    entry_key = json.dumps(keys[0])
    if not members:
        return text[: start + 1] + entry_key + ": " + value + text[close:]
    last = members[-1]
    gap_start = last.key_start
    while gap_start > 0 and text[gap_start - 1] in " \t\r\n":
        gap_start -= 1
    gap = text[gap_start : last.key_start]  # "\n  " before the last key, as written
    return (
        text[: last.value_end] + "," + gap + entry_key + last.colon + value + text[last.value_end :]
    )


def edit_ids(
    text: str, edits: Sequence[tuple[str, Sequence[int]]], expected: Any, source: str
) -> str:
    """Apply every ``(path, ids)`` edit to ``text``; the result must parse to ``expected``."""
    for path, ids in edits:
        text = set_member(text, path, ids, source=source)
    try:
        again = json.loads(text)
    except json.JSONDecodeError as exc:  # a bug here, never the user's: say so
        raise ConfigError(
            f"the edited config is not valid JSON ({exc.msg})", source=source
        ) from None
    if again != expected:
        raise ConfigError(
            "the minimal edit does not give the fixed config (duplicate keys?); edit the file by "
            "hand",
            source=source,
        )
    return text


__all__ = ["edit_ids", "set_member"]
