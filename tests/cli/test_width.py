"""Output fits the terminal (``COLUMNS``; 100 columns when stdout is not a terminal): tables wrap
their widest cells, prose wraps under its item, a row's note is said once, and the assumption
that decides a row (vLLM's runner) comes right after its verdict."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eagle3_contracts.cli import main
from eagle3_contracts.differences import (
    DEFAULT_WIDTH,
    MIN_COLUMN,
    fit_text,
    terminal_width,
    text_table,
)

WORDS = st.text(alphabet="abcdefghij.,=[]", min_size=1, max_size=12)
CELLS = st.lists(WORDS, min_size=1, max_size=6).map(" ".join)


@pytest.mark.parametrize(
    "columns, width", [("60", 60), ("250", 250), (None, DEFAULT_WIDTH), ("abc", 100), ("٣", 100)]
)
def test_the_width_is_columns_else_100_off_a_terminal(
    monkeypatch: pytest.MonkeyPatch, columns: str | None, width: int
) -> None:
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    assert terminal_width() == width  # pytest's captured stdout is not a terminal


@given(
    rows=st.integers(1, 5).flatmap(
        lambda n: st.lists(st.lists(CELLS, min_size=n, max_size=n), min_size=1, max_size=6)
    ),
    width=st.integers(50, 160),
)
def test_a_table_fits_and_keeps_every_word_of_every_cell(rows: list[list[str]], width: int) -> None:
    lines = text_table(rows, width=width)
    assert all(len(line) <= width for line in lines)
    assert sorted(" ".join(lines).split()) == sorted(
        w for row in rows for c in row for w in c.split()
    )
    if (
        sum(max(len(r[i]) for r in rows) for i in range(len(rows[0]))) + 2 * (len(rows[0]) - 1)
        <= width
    ):
        assert len(lines) == len(rows)  # a table that fits is one line per row, as before


@given(
    words=st.lists(WORDS, min_size=1, max_size=40),
    lead=st.sampled_from(["", "  ", "    - ", "    * "]),
    width=st.integers(2 * MIN_COLUMN, 120),
)
def test_prose_wraps_under_its_item_and_keeps_its_words(
    words: list[str], lead: str, width: int
) -> None:
    line = lead + " ".join(words)
    out = fit_text(line, width).split("\n")
    assert [w for o in out for w in o.split()] == line.split()
    assert all(len(o) <= width or " " not in o.strip() for o in out)
    assert all(o.startswith(" " * len(lead.rstrip("-* "))) for o in out[1:])


def _check(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, columns: str | None
) -> list[str]:
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    assert main(["check", "--example", "kimi-k2.5"]) == 1
    return capsys.readouterr().out.splitlines()


@pytest.mark.parametrize("columns, width", [(None, 100), ("80", 80), ("120", 120)])
def test_check_fits_the_terminal(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    columns: str | None,
    width: int,
) -> None:
    lines = _check(capsys, monkeypatch, columns)
    assert max(len(line) for line in lines) <= width
    # the fix column does not fit here: each failing row says its fix once, in its details
    assert "(fix per row: in the details below)" in lines
    assert sum(line.startswith("    fix: ") for line in lines) == 5


def test_a_wide_terminal_keeps_the_fix_column(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = _check(capsys, monkeypatch, "250")
    header = next(line for line in lines if line.startswith("config "))
    assert header.split()[-1] == "fix" and "(fix per row: in the details below)" not in lines


def test_a_note_is_said_once_and_the_runner_next_to_the_verdict(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = _check(capsys, monkeypatch, "400")
    text = "\n".join(lines)
    block = text[text.index("  draft-fixed.json / sglang: crashes") :]
    block = block[: block.index("\n  draft-fixed.json / vllm")]
    assert block.count("sizes its collector by len(layers_to_capture)") == 1
    for row in ("  draft.json / vllm: shifted -1", "  draft-fixed.json / vllm: shifted -1"):
        at = lines.index(row)
        assert lines[at + 1].startswith("    - shifted by -1")
        assert lines[at + 2].startswith("    * assumed: runner v2 (the release's default")


@given(
    before=st.lists(WORDS, min_size=1, max_size=20),
    command=st.lists(WORDS, min_size=2, max_size=8),
    width=st.integers(2 * MIN_COLUMN, 120),
)
def test_a_backquoted_command_in_prose_stays_on_one_line(
    before: list[str], command: list[str], width: int
) -> None:
    quoted = "`" + " ".join(command) + "`"
    line = " ".join(before) + " run " + quoted + " then"
    out = fit_text(line, width).split("\n")
    assert any(quoted in o for o in out)  # copied whole, never split at its spaces
    assert [w for o in out for w in o.split()] == line.split()


def test_the_result_line_is_never_wrapped() -> None:
    line = "result: " + " ".join(["word"] * 60) + " (exit 1)"
    assert fit_text(line, 60) == line  # scripts read it as the last line
