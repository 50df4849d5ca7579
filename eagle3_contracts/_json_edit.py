"""Minimal textual edits of a JSON document: set one member, keep every other byte.

``set_member(text, "eagle_config.eagle_aux_hidden_state_layer_ids", [1, 3, 5])`` replaces the
member's value where it is or appends it to its object in the style of that object's last
member (the whitespace before it and its ``": "`` spacing). An id list keeps the style of the
array it replaces (one line with the same separator, or one element per line at the same
indentation); an object value (the stamp block) is written one member per line, indented one
step deeper than its key, or on one line in a compact file. Key order, indentation, compact
arrays, unknown keys and the final newline are untouched. Used by ``fix`` (id lists) and
``stamp`` (the ``eagle3_contract`` block); the edited text is parsed again and must equal the
intended document, else ``ConfigError``.
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
_STEP = "  "  # the indentation step where a file shows none


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


def _line_indent(text: str, start: int) -> str | None:
    """The whitespace before ``start`` on its line; ``None`` when other text precedes it
    (a compact, one-line object)."""
    head = text[text.rfind("\n", 0, start) + 1 : start]
    return head if not head.strip(" \t") and "\n" in text[:start] else None


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


def _render(value: Any, old: str | None, indent: str | None) -> str:
    """``value`` as JSON for a member whose key sits at ``indent`` (``None``: one line)."""
    if isinstance(value, (list, tuple)) and all(
        isinstance(v, int) and not isinstance(v, bool) for v in value
    ):
        return _render_ids(value, old)
    if indent is None or not isinstance(value, dict) or not value:
        return json.dumps(value)
    inner = indent + (indent or _STEP)
    members = [f"{inner}{json.dumps(k)}: {json.dumps(v)}" for k, v in value.items()]
    return "{\n" + ",\n".join(members) + f"\n{indent}}}"


def set_member(text: str, path: str | Sequence[str], value: Any, *, source: str = "<text>") -> str:
    """``text`` with the member at ``path`` (dotted, or a sequence of keys) set to ``value``."""
    keys = path.split(".") if isinstance(path, str) else list(path)
    start = _skip(text, 0)
    for depth, key in enumerate(keys):
        members, close = _members(text, start, source)
        found = [m for m in members if m.key == key]
        if not found:
            return _insert(text, members, start, close, keys[depth:], value)
        member = found[-1]  # json.loads keeps the last of duplicate keys
        if depth == len(keys) - 1:
            old = text[member.value_start : member.value_end]
            new = _render(value, old, _line_indent(text, member.key_start))
            return text[: member.value_start] + new + text[member.value_end :]
        if text[member.value_start] != "{":
            where = ".".join(keys[: depth + 1])
            raise ConfigError(
                f"{where} is not a JSON object; cannot set {'.'.join(keys)} in it",
                source=source,
                field=".".join(keys),
            )
        start = member.value_start
    raise AssertionError("unreachable: the path has at least one key")


def _insert(
    text: str,
    members: list[_Member],
    start: int,
    close: int,
    keys: Sequence[str],
    value: Any,
) -> str:
    """Add ``keys[0]`` (holding the rest of the path) to the object at ``start``."""
    entry_key = json.dumps(keys[0])
    if not members:
        if isinstance(value, dict) and value and len(keys) == 1:  # a block: one member a line
            entry = entry_key + ": " + _render(value, None, _STEP)
            return text[:close].rstrip(" \t\n\r") + "\n" + _STEP + entry + "\n" + text[close:]
        rendered = _render(value, None, None)
        for key in reversed(keys[1:]):
            rendered = "{" + json.dumps(key) + ": " + rendered + "}"
        return text[: start + 1] + entry_key + ": " + rendered + text[close:]
    last = members[-1]
    gap_start = last.key_start
    while gap_start > 0 and text[gap_start - 1] in " \t\r\n":
        gap_start -= 1
    gap = text[gap_start : last.key_start]  # "\n  " before the last key, as written
    if len(members) == 1 and "\n" not in gap:  # what follows "{" in a one-line object
        gap = " "
    indent = gap.rpartition("\n")[2] if "\n" in gap else None
    rendered = _render(value, None, indent if len(keys) == 1 else None)
    for key in reversed(keys[1:]):
        rendered = "{" + json.dumps(key) + ": " + rendered + "}"
    return (
        text[: last.value_end]
        + ","
        + gap
        + entry_key
        + last.colon
        + rendered
        + text[last.value_end :]
    )


def _checked(text: str, expected: Any, source: str) -> str:
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


def edit_ids(
    text: str, edits: Sequence[tuple[str, Sequence[int]]], expected: Any, source: str
) -> str:
    """Apply every ``(path, ids)`` edit to ``text``; the result must parse to ``expected``."""
    for path, ids in edits:
        text = set_member(text, path, ids, source=source)
    return _checked(text, expected, source)


def set_top_level_key(text: str, key: str, value: Any, *, source: str = "<text>") -> str:
    """``text`` (a JSON object) with the top-level ``key`` set to ``value``, every other byte
    kept (a key with a dot in it is one key here, not a path)."""
    data = json.loads(text)  # a malformed file fails here, before any scanning
    if not isinstance(data, dict):
        raise ConfigError("not a JSON object", source=source, field=key)
    data[key] = value
    return _checked(set_member(text, [key], value, source=source), data, source)


__all__ = ["edit_ids", "set_member", "set_top_level_key"]
