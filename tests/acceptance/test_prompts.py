"""Prompt files: text or token ids, streamed; anything else is refused with the line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eagle3_contracts.acceptance.prompts import greedy_prompts, read_prompts
from eagle3_contracts.errors import ConfigError


def _encode(text: str) -> list[int]:
    return [ord(c) % 50 for c in text]


def test_text_file_one_prompt_per_non_empty_line(tmp_path: Path) -> None:
    f = tmp_path / "p.txt"
    f.write_text("def f():\n\n  return 1\n")
    assert list(read_prompts(f, vocab_size=50, encode=_encode)) == [
        _encode("def f():"),
        _encode("  return 1"),
    ]


def test_jsonl_holds_text_ids_and_objects(tmp_path: Path) -> None:
    f = tmp_path / "p.jsonl"
    lines = ['"ab"', "[1, 2, 3]", '{"prompt": "x"}', '{"input_ids": [4]}', '{"token_ids": [5]}']
    f.write_text("\n".join(lines))
    got = list(read_prompts(f, vocab_size=50, encode=_encode))
    assert got == [_encode("ab"), [1, 2, 3], _encode("x"), [4], [5]]


@pytest.mark.parametrize(
    ("name", "data", "fragment"),
    [
        ("bin.txt", bytes(range(128, 256)), "not UTF-8"),
        ("nul.txt", b"abc\x00def\n", "NUL bytes"),
        ("bad.jsonl", b"{nope\n", "not JSON"),
        ("obj.jsonl", b'{"q": 1}\n', "an object needs"),
        ("float.jsonl", b"[1, 2.5]\n", "list of integers"),
        ("range.jsonl", b"[1, 99]\n", "outside the target vocabulary"),
        ("empty.txt", b"\n\n", "no prompts"),
    ],
)
def test_bad_prompt_files_name_the_line(
    tmp_path: Path, name: str, data: bytes, fragment: str
) -> None:
    f = tmp_path / name
    f.write_bytes(data)
    with pytest.raises(ConfigError, match=fragment) as info:
        list(read_prompts(f, vocab_size=50, encode=_encode))
    assert info.value.field == "prompts"


def test_text_without_a_tokenizer_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "p.txt"
    f.write_text("hello\n")
    with pytest.raises(ConfigError, match="needs the target's tokenizer"):
        list(read_prompts(f, vocab_size=50))


def test_prompts_are_streamed(tmp_path: Path) -> None:
    """The first prompt arrives before a bad line far below is read."""
    f = tmp_path / "p.jsonl"
    f.write_text(json.dumps([1, 2]) + "\n" + "[3]\n" * 1000 + "{nope\n")
    stream = read_prompts(f, vocab_size=50)
    assert next(stream) == [1, 2]
    with pytest.raises(ConfigError, match="line 1002"):
        list(stream)


def test_greedy_prompts_are_seeded() -> None:
    a = list(greedy_prompts(3, 100, seed=4))
    assert a == list(greedy_prompts(3, 100, seed=4))
    assert a != list(greedy_prompts(3, 100, seed=5))
    assert all(len(p) == 4 and all(0 <= i < 100 for i in p) for p in a)
