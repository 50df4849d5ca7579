"""Minimal textual edits of a JSON object file: set one top-level key, keep every other byte.

A config a user wrote (key order, indentation, compact arrays, a trailing newline) stays as it
was: only the value of the one key changes, or, for a new key, one member is added after the
last one, indented like its siblings. The result is parsed again and must equal the intended
object, so an edit never writes what a JSON reader would read differently.
"""

from __future__ import annotations

import json
from typing import Any

from eagle3_contracts.errors import ConfigError

_WS = " \t\n\r"
_STEP = "  "  # the indentation step where a file shows none


def _indent(text: str, start: int) -> str:
    """The whitespace before ``start`` on its line (two spaces when something else is there)."""
    head = text[text.rfind("\n", 0, start) + 1 : start]
    return head if head and not head.strip(" \t") else _STEP


def _skip(text: str, i: int) -> int:
    while i < len(text) and text[i] in _WS:
        i += 1
    return i


def member_spans(text: str) -> tuple[dict[str, tuple[int, int, int]], int]:
    """For a JSON object text: each top-level key's (key start, value start, value end), the
    last occurrence winning as in ``json.loads``; and the index of the closing brace."""
    decoder = json.JSONDecoder()
    i = _skip(text, 0)
    if i >= len(text) or text[i] != "{":
        raise ConfigError("not a JSON object", field="*")
    i = _skip(text, i + 1)
    spans: dict[str, tuple[int, int, int]] = {}
    while True:
        if text[i] == "}":
            return spans, i
        start = i
        key, i = decoder.raw_decode(text, i)
        if not isinstance(key, str):
            raise ConfigError("a JSON object key is a string", field="*")
        i = _skip(text, i)
        if text[i] != ":":
            raise ConfigError(f"expected ':' after key {key!r}", field=key)
        i = _skip(text, i + 1)
        _, end = decoder.raw_decode(text, i)
        spans[key] = (start, i, end)
        i = _skip(text, end)
        if text[i] == ",":
            i = _skip(text, i + 1)


def render_value(value: Any, indent: str | None, unit: str) -> str:
    """``value`` as JSON: objects one member per line at ``indent`` + ``unit`` (lists and
    nested objects inline), or all on one line when ``indent`` is ``None`` (a compact file)."""
    if indent is None or not isinstance(value, dict) or not value:
        return json.dumps(value)
    inner = indent + unit
    members = [f"{inner}{json.dumps(k)}: {json.dumps(v)}" for k, v in value.items()]
    return "{\n" + ",\n".join(members) + f"\n{indent}}}"


def set_top_level_key(text: str, key: str, value: Any) -> str:
    """``text`` (a JSON object) with ``key`` set to ``value``, every other byte kept."""
    data = json.loads(text)  # a malformed file fails here, before any scanning
    spans, close = member_spans(text)
    multiline = "\n" in text[: close + 1]
    if key in spans:
        start, vstart, vend = spans[key]
        indent = _indent(text, start) if multiline else None
        out = text[:vstart] + render_value(value, indent, indent or _STEP) + text[vend:]
    elif spans:
        last = max(spans.values(), key=lambda s: s[2])
        indent = _indent(text, last[0]) if multiline else None
        sep = f",\n{indent}" if indent is not None else ", "
        member = f"{json.dumps(key)}: {render_value(value, indent, indent or _STEP)}"
        out = text[: last[2]] + sep + member + text[last[2] :]
    else:
        member = f"{json.dumps(key)}: {render_value(value, _STEP, _STEP)}"
        out = text[:close].rstrip(_WS) + "\n  " + member + "\n" + text[close:]
    data[key] = value
    if json.loads(out) != data:  # pragma: no cover - a bug in this module, never written
        raise ConfigError(f"editing {key!r} in place would change other keys", field=key)
    return out
