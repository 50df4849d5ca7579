"""Prompts for the acceptance oracle, streamed one at a time (memory stays bounded).

A prompt file is read line by line, never whole:

* ``*.jsonl``: one prompt per line, a JSON string (text), a list of token ids, or an object
  with ``"prompt"``/``"text"`` (text) or ``"input_ids"``/``"token_ids"`` (ids);
* any other file: UTF-8 text, one prompt per non-empty line (``\\n`` inside a line is the
  two characters; use ``.jsonl`` for multi-line prompts).

``greedy_prompts`` needs no file: short seeded starts whose continuations the target writes
itself (the oracle always measures on the target's own greedy continuation of each prompt).
A line that is none of these raises ``ConfigError`` naming the file, the line and the field.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import torch

from eagle3_contracts.errors import ConfigError

Encode = Callable[[str], list[int]]
MAX_LINE_BYTES = 1 << 20
"""Longest prompt line read (1 MiB): a longer line is refused, not loaded."""


def _ids(value: object, vocab_size: int, where: str, source: str) -> list[int]:
    if (
        not isinstance(value, list)
        or not value
        or not all(isinstance(i, int) and not isinstance(i, bool) for i in value)
    ):
        raise ConfigError(
            f"{where}: token ids must be a non-empty list of integers",
            source=source,
            field="prompts",
        )
    bad = [i for i in value if not 0 <= i < vocab_size]
    if bad:
        raise ConfigError(
            f"{where}: token id {bad[0]} is outside the target vocabulary [0, {vocab_size})",
            source=source,
            field="prompts",
        )
    return list(value)


def _json_prompt(
    line: str, encode: Encode | None, vocab_size: int, where: str, source: str
) -> list[int]:
    try:
        item = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"{where}: not JSON ({exc.msg}); a .jsonl prompt file holds one JSON string, "
            "list of token ids or object per line",
            source=source,
            field="prompts",
        ) from None
    except RecursionError:
        raise ConfigError(
            f"{where}: JSON nested too deeply to be a prompt (a string, a list of token ids "
            "or a flat object)",
            source=source,
            field="prompts",
        ) from None
    if isinstance(item, dict):
        for key in ("input_ids", "token_ids"):
            if key in item:
                return _ids(item[key], vocab_size, where, source)
        for key in ("prompt", "text"):
            if isinstance(item.get(key), str):
                item = item[key]
                break
        else:
            raise ConfigError(
                f"{where}: an object needs 'prompt'/'text' (a string) or "
                f"'input_ids'/'token_ids' (a list), got keys {sorted(item)[:4]}",
                source=source,
                field="prompts",
            )
    if isinstance(item, str):
        return _text(item, encode, vocab_size, where, source)
    return _ids(item, vocab_size, where, source)


def _text(text: str, encode: Encode | None, vocab_size: int, where: str, source: str) -> list[int]:
    if encode is None:
        raise ConfigError(
            f"{where}: a text prompt needs the target's tokenizer (tokenizer.json beside its "
            "config.json); give token ids instead",
            source=source,
            field="prompts",
        )
    ids = encode(text)
    if not ids:
        raise ConfigError(
            f"{where}: the prompt encodes to no tokens", source=source, field="prompts"
        )
    return _ids(ids, vocab_size, where, source)


def read_prompts(
    path: str | os.PathLike[str], *, vocab_size: int, encode: Encode | None = None
) -> Iterator[list[int]]:
    """Token ids of each prompt in ``path``, one at a time (see the module docstring)."""
    file = Path(path)
    source = str(file)
    if not file.exists():
        raise ConfigError("no such prompt file", source=source, field="prompts")
    if not file.is_file():
        raise ConfigError(
            "not a regular file: prompts are read from a text or .jsonl file",
            source=source,
            field="prompts",
        )
    jsonl = file.suffix == ".jsonl"
    count = 0
    with file.open("rb") as fh:
        for number, raw in enumerate(iter(lambda: fh.readline(MAX_LINE_BYTES + 1), b""), 1):
            where = f"line {number}"
            if len(raw) > MAX_LINE_BYTES:
                raise ConfigError(
                    f"{where} is over {MAX_LINE_BYTES} bytes: one prompt per line",
                    source=source,
                    field="prompts",
                )
            try:
                line = raw.decode("utf-8").rstrip("\r\n")
            except UnicodeDecodeError:
                raise ConfigError(
                    f"{where} is not UTF-8: a prompt file is text (one prompt per line) or "
                    ".jsonl (text or token ids per line)",
                    source=source,
                    field="prompts",
                ) from None
            if "\x00" in line:
                raise ConfigError(
                    f"{where} holds NUL bytes: a prompt file is text or .jsonl, not binary",
                    source=source,
                    field="prompts",
                )
            if not line.strip():
                continue
            count += 1
            if jsonl:
                yield _json_prompt(line, encode, vocab_size, where, source)
            else:
                yield _text(line, encode, vocab_size, where, source)
    if count == 0:
        raise ConfigError("the prompt file holds no prompts", source=source, field="prompts")


def greedy_prompts(
    count: int, vocab_size: int, *, length: int = 4, seed: int = 0
) -> Iterator[list[int]]:
    """``count`` seeded starts of ``length`` random token ids (the target continues them)."""
    gen = torch.Generator().manual_seed(seed)
    for _ in range(count):
        yield torch.randint(0, vocab_size, (length,), generator=gen).tolist()


def tokenizer_encoder(model_dir: str | os.PathLike[str]) -> Encode | None:
    """``encode(text) -> ids`` from ``tokenizer.json`` beside the target, else ``None``."""
    path = Path(model_dir)
    file = (path if path.is_dir() else path.parent) / "tokenizer.json"
    if not file.is_file():
        return None
    from tokenizers import Tokenizer

    try:
        tok = Tokenizer.from_file(str(file))
    except Exception as exc:  # the tokenizers library raises its own Exception subclass
        raise ConfigError(
            f"not a tokenizer the tokenizers library reads ({' '.join(str(exc).split())[:120]})",
            source=str(file),
            field="tokenizer.json",
        ) from None
    return lambda text: tok.encode(text).ids
