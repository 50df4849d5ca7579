"""How two lists of layer ids differ, and the words every report says it in.

One classifier for every caller, then one wording table for every renderer, then the plain-text
table layout the reports share.

``classify(expected, observed)`` compares two feeds, each a list of canonical ids in
concatenation order (``None``: a segment no layer was identified for), and returns the
differences as data, keyed by ``FindingKind``. It decides *what* differs; the callers only
*render* it in their own words:

* ``config.plan.compare`` (trained plan vs served plan, ``check``);
* ``dumps.diagnose`` (a dump vs its claim, a training dump vs a serving dump);
* ``capture.verify`` (a capture vs its contract, the causes of a ``ContractViolation``).

The rules, in the order the differences are returned:

1. identical and every segment identified: no difference;
2. ``WIDTH_DIFFERS``: the two hold a different number of segments;
3. with every segment identified and the same count, two *complete* explanations:
   ``ORDER_DIFFERS`` (the same layers in another order) and ``SHIFTED`` (every segment the
   same number of layers off). After either, only ``EMBEDDING_INSERTED`` (a shift that brings
   in the embedding also feeds a state the drafter never saw) and the per-segment details follow;
4. ``EMBEDDING_INSERTED``: the embedding (-1) is observed but not expected, at ``position``;
   ``displaced`` names the expected id pushed off the end when the rest moved one position
   right (the EAGLE#239 pattern), at any position, not only the first;
5. ``POST_NORM_FED``: an unidentified segment the caller knows to be the final post-norm state;
6. with every segment identified: ``LAYER_MISSING`` (expected, observed nowhere),
   ``EXTRA_LAYER`` (observed, expected nowhere; the embedding is rule 4's) and
   ``ORDER_DIFFERS`` for the shared layers. Each is a fact of its own, also next to a width
   difference or an inserted embedding; with an unidentified segment they are not claimed
   (the unidentified segment may be a corrupted copy of the "missing" layer);
7. ``SEGMENT``: one per position whose ids differ or whose observed segment is unidentified.

Wording: ``classify`` decides *what* differs; ``WORDING``, one declarative table keyed by
``FindingKind``, says it. ``check``'s matrix
(``config.check``: the short ``label`` of a row's verdict cell), its explanations
(``config.plan``), ``diagnose`` (``dumps.diagnose``) and the vLLM/SGLang guards
(``integrations._guard.verdict``, used by ``integrations.sglang.hooks``) all take their words
from ``WORDING``; a renderer adds only what it alone knows (``diagnose`` the usual ``cause``).

Templates are ``str.format`` strings over the fields ``say`` fills in:

* ``{want}`` / ``{got}``: the two sides' names (``trained``/``served``, ``expected``/``dump``);
* ``{want_ids}`` / ``{got_ids}``: their canonical ids in concatenation order (``?``: unidentified);
* ``{layers}``: the ids concerned; ``{shared_got}``: ``got``'s ids among them, in its order;
* ``{names}``: the ids concerned as ``layer_ids.describe`` names them;
* ``{shift}``, ``{shift_words}``: a uniform shift (``-1``, ``"1 layer early"``);
* ``{position}``, ``{displaced}``, ``{want_state}``, ``{got_state}``: one segment's detail;
* ``{want_width}`` / ``{got_width}``: the fc input widths.

This module is torch-free and imports only ``layer_ids``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from types import MappingProxyType

from eagle3_contracts.layer_ids import EMBEDDING, describe, uniform_shift


class FindingKind(str, Enum):
    """How one feed of layer ids differs from another (the values appear in JSON output)."""

    REFUSED = "refused"  # a system refuses the config (plans only)
    SHIFTED = "shifted"  # every segment the same number of layers off
    EMBEDDING_INSERTED = "embedding-inserted"  # the embedding (-1) fed, not expected
    LAYER_MISSING = "layer-missing"  # an expected layer fed nowhere
    EXTRA_LAYER = "extra-layer"  # a layer fed that was not expected
    ORDER_DIFFERS = "order-differs"  # the same (or the shared) layers in another order
    POST_NORM_FED = "post-norm-fed"  # the final post-norm state fed as if it were a layer
    WIDTH_DIFFERS = "width-differs"  # a different number of segments (fc input width)
    TARGET_DIFFERS = "target-differs"  # trained and served on different targets (plans only)
    CRASHES = "crashes"  # the stock engine raises (fc width, hidden_states + None) (plans only)
    UNSUPPORTED = "unsupported"  # the engine release cannot serve EAGLE-3 on this target (plans)
    UNKNOWN = "unknown"  # the release's code for this target needs reading (plans only)
    WRONG_STATE = "wrong-state"  # segments hold something else than the residual stream (plans)
    FLAG_IGNORED = "flag-ignored"  # a norm flag the drafter was trained with, never read (plans)
    UNIDENTIFIED = "unidentified"  # segments equal to no state of the target (dumps only)
    SEGMENT = "segment"  # one position's detail: expected X, observed Y


@dataclass(frozen=True)
class Difference:
    """One difference between an expected and an observed feed, as data (no wording)."""

    kind: FindingKind
    layers: tuple[int, ...] = ()  # canonical ids concerned
    shift: int | None = None  # SHIFTED: observed = expected + shift
    position: int | None = None  # EMBEDDING_INSERTED / POST_NORM_FED / SEGMENT: which segment
    displaced: int | None = None  # EMBEDDING_INSERTED: expected id pushed off the end
    expected: int | None = None  # SEGMENT: the expected id there (None: unidentified/none)
    observed: int | None = None  # SEGMENT: the observed id there (None: unidentified/none)
    partial: bool = False  # ORDER_DIFFERS: only the layers both hold are in another order


def classify(
    expected: Sequence[int | None],
    observed: Sequence[int | None],
    *,
    post_norm: Collection[int] = (),
) -> tuple[Difference, ...]:
    """How ``observed`` differs from ``expected`` (empty when identical and identified).

    Both are canonical ids per segment in concatenation order; ``None`` is a segment no layer
    was identified for. ``post_norm`` holds the positions of ``observed`` known to be the final
    post-norm state. See the module docstring for the rules.
    """
    want, got = list(expected), list(observed)
    fully = None not in want and None not in got
    if want == got and fully:
        return ()
    out: list[Difference] = []
    if len(want) != len(got):
        out.append(Difference(FindingKind.WIDTH_DIFFERS))
    known_want = [n for n in want if n is not None]
    known_got = [n for n in got if n is not None]
    complete = False
    if fully and len(want) == len(got):
        if sorted(known_want) == sorted(known_got):
            out.append(Difference(FindingKind.ORDER_DIFFERS, tuple(known_got)))
            complete = True
        else:
            shift = uniform_shift(known_want, known_got)
            if shift is not None:
                out.append(Difference(FindingKind.SHIFTED, tuple(known_got), shift=shift))
                complete = True
    if EMBEDDING in got and EMBEDDING not in want:
        out.append(_embedding_inserted(want, got))
    if not complete:
        out += [
            Difference(FindingKind.POST_NORM_FED, position=p)
            for p in sorted(post_norm)
            if p < len(got) and got[p] is None
        ]
        if fully:
            out += _set_differences(known_want, known_got)
    out += _segments(want, got)
    return tuple(out)


def shift_words(shift: int) -> str:
    """How far a uniform shift moves every segment: ``-1`` -> ``"1 layer early"``.

    ``0`` is no shift (``classify`` never reports one) and raises ``ValueError``.
    """
    if shift == 0:
        raise ValueError("a shift of 0 layers is no shift: nothing to put in words")
    return f"{abs(shift)} layer{'s' * (abs(shift) != 1)} {'early' if shift < 0 else 'late'}"


def _embedding_inserted(want: list[int | None], got: list[int | None]) -> Difference:
    p = got.index(EMBEDDING)
    rest = got[:p] + got[p + 1 :]
    displaced = want[-1] if len(got) == len(want) and rest == want[:-1] else None
    return Difference(FindingKind.EMBEDDING_INSERTED, (EMBEDDING,), position=p, displaced=displaced)


def _set_differences(want: list[int], got: list[int]) -> list[Difference]:
    out: list[Difference] = []
    missing = tuple(n for n in want if n not in got)
    if missing:
        out.append(Difference(FindingKind.LAYER_MISSING, missing))
    extra = tuple(n for n in got if n not in want and n != EMBEDDING)
    if extra:
        out.append(Difference(FindingKind.EXTRA_LAYER, extra))
    # the shared layers in first-appearance order: a layer fed twice is a segment difference,
    # not an order difference ([1, 2, 3] against [1, 1, 3] keeps 1 before 3)
    shared_want = tuple(dict.fromkeys(n for n in want if n in got))
    shared_got = tuple(dict.fromkeys(n for n in got if n in want))
    if shared_want != shared_got:
        out.append(Difference(FindingKind.ORDER_DIFFERS, shared_want, partial=True))
    return out


def _segments(want: list[int | None], got: list[int | None]) -> list[Difference]:
    out: list[Difference] = []
    for p in range(max(len(want), len(got))):
        w = want[p] if p < len(want) else None
        g = got[p] if p < len(got) else None
        if p < len(want) and p < len(got) and w == g and g is not None:
            continue
        out.append(Difference(FindingKind.SEGMENT, position=p, expected=w, observed=g))
    return out


# -- wording --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Wording:
    """The words for one ``FindingKind``."""

    # -- check's matrix --------------------------------------------------------------------
    label: str  # the verdict cell (``{shift:+d}``, ``{crash}`` filled in by ``label``)
    # -- explanations (check's details, diagnose's findings, the guards' lines) -------------
    sentence: str = ""  # the finding in one sentence ("": each renderer's own, see ``renderer``)
    partial: str = ""  # ORDER_DIFFERS: only the shared layers in another order
    # -- diagnose: the failure this usually is in a capture ---------------------------------
    cause: str = ""  # appended after "; " where a dump is diagnosed
    renderer: str = ""  # the one module that words a kind no other renderer sees


WORDING: Mapping[FindingKind, Wording] = MappingProxyType(
    {
        FindingKind.REFUSED: Wording("refused", "{got} refuses it: {reason}"),
        FindingKind.SHIFTED: Wording(
            "shifted {shift:+d}",
            "shifted by {shift:+d}: every state is {shift_words} ({got_ids} instead of {want_ids})",
            cause="an offset rule mismatch",  # a shift of -1/+1 names its bug: SHIFT_CAUSES
        ),
        FindingKind.EMBEDDING_INSERTED: Wording(
            "embedding inserted",
            "the embedding (canonical -1) is fed; the drafter was not trained on it",
            cause="at segment {position}",  # one that displaced a layer: DISPLACED_CAUSE
        ),
        FindingKind.LAYER_MISSING: Wording("layer missing", "not fed: {names}"),
        FindingKind.EXTRA_LAYER: Wording("extra layer", "fed but not trained on: {names}"),
        FindingKind.ORDER_DIFFERS: Wording(
            "order differs",
            "same layers, different concatenation order: {want} {want_ids}, {got} {got_ids}",
            partial=(
                "shared layers are concatenated in a different order: {want} {layers}, "
                "{got} {shared_got}"
            ),
            cause="config-list order vs ascending order?",
        ),
        FindingKind.POST_NORM_FED: Wording(
            "post norm fed",
            "{got} feeds the final post-norm state, which the drafter never saw",
            # TorchSpec#87: hidden_states[-1] taken for the last layer's output
            cause=(
                "segment {position}: hidden_states[-1] used as the last layer (TorchSpec#87); "
                "capture the last layer's output with a forward hook instead"
            ),
        ),
        FindingKind.WIDTH_DIFFERS: Wording(
            "width differs",
            "width differs: the drafter's fc takes {want_width}, {got} feeds {got_width}",
        ),
        FindingKind.TARGET_DIFFERS: Wording(
            "target differs",
            "trained on a {want_target} target, served on {got_target}",
        ),
        FindingKind.CRASHES: Wording("crashes ({crash})", renderer="config.plan"),
        FindingKind.UNSUPPORTED: Wording("unsupported", renderer="config.plan"),
        FindingKind.UNKNOWN: Wording("unknown", renderer="config.plan"),
        FindingKind.WRONG_STATE: Wording("wrong state", renderer="config.plan"),
        FindingKind.FLAG_IGNORED: Wording("flag ignored", renderer="config.plan"),
        FindingKind.UNIDENTIFIED: Wording("unidentified", renderer="dumps.diagnose"),
        FindingKind.SEGMENT: Wording(
            "segment", "segment {position}: {want} {want_state}, {got} {got_state}"
        ),
    }
)
"""Every ``FindingKind``'s words (``tests/test_wording.py`` holds it complete)."""

SHIFT_CAUSES: Mapping[int, str] = MappingProxyType(
    {
        -1: "ids read as loop indices / layer inputs where layer outputs were meant: "
        "the sglang#25454 / vllm#43671 off-by-one",
        1: "a +1 applied to ids that already named layer outputs",
    }
)
"""A uniform shift -> the failure it usually is (else ``WORDING[SHIFTED].cause``)."""

DISPLACED_CAUSE = (
    "at segment {position}, so the segments after it moved one position right and {displaced} "
    "was dropped: the embedding counted as a layer, EAGLE#239"
)
"""An inserted embedding that pushed the last expected layer off the end."""


def label(kind: FindingKind, *, shift: int | None = None, crash: str = "weight-load") -> str:
    """The short verdict of one finding: ``"shifted -1"``, ``"layer missing"``, ..."""
    return WORDING[kind].label.format(shift=shift or 0, crash=crash)


def ids_text(ids: Sequence[int | None]) -> str:
    """``[1, 2, ?]``: canonical ids, ``?`` for a segment no layer was identified for."""
    return "[" + ", ".join("?" if n is None else str(n) for n in ids) + "]"


def state_name(layer_id: int | None, num_layers: int) -> str:
    """A segment's state in words (``"no layer"`` when none was identified)."""
    return "no layer" if layer_id is None else describe(layer_id, num_layers)


def width_text(states: int, hidden_size: int | None) -> str:
    """An fc input width: ``"21504 (3 x 7168)"`` (``"3 states"`` when the size is unknown)."""
    if hidden_size is None:
        return f"{states} states"
    return f"{states * hidden_size} ({states} x {hidden_size})"


def say(
    d: Difference,
    want: Sequence[int | None],
    got: Sequence[int | None],
    num_layers: int,
    *,
    names: tuple[str, str] = ("trained", "served"),
    got_labels: Sequence[str] | None = None,
    hidden_size: int | None = None,
    cause: bool = False,
) -> str:
    """``d`` in ``WORDING``'s sentence (``cause``: append the failure it usually is)."""
    words = WORDING[d.kind]
    fields = _fields(d, want, got, num_layers, names, got_labels, hidden_size)
    template = (
        words.partial if d.kind is FindingKind.ORDER_DIFFERS and d.partial else words.sentence
    )
    text = template.format(**fields)
    if not cause:
        return text
    why = _cause(d, words)
    return f"{text}; {why.format(**fields)}" if why else text


def _fields(
    d: Difference,
    want: Sequence[int | None],
    got: Sequence[int | None],
    num_layers: int,
    names: tuple[str, str],
    got_labels: Sequence[str] | None,
    hidden_size: int | None,
) -> dict[str, object]:
    """The values ``say``'s templates are filled with (the module docstring lists them)."""
    p = d.position if d.position is not None else 0
    labels = (
        list(got_labels) if got_labels is not None else [state_name(n, num_layers) for n in got]
    )
    return {
        "want": names[0],
        "got": names[1],
        "want_ids": ids_text(want),
        "got_ids": ids_text(got),
        "layers": ids_text(d.layers),
        "shared_got": ids_text([n for n in got if n in d.layers]),
        "names": ", ".join(describe(i, num_layers) for i in d.layers),
        "shift": d.shift or 0,
        "shift_words": shift_words(d.shift) if d.shift else "",
        "position": p,
        "displaced": "" if d.displaced is None else state_name(d.displaced, num_layers),
        "want_state": "nothing"
        if p >= len(want)
        else "an unidentified state"
        if d.expected is None
        else state_name(d.expected, num_layers),
        "got_state": labels[p] if p < len(got) else "nothing",
        "want_width": width_text(len(want), hidden_size),
        "got_width": width_text(len(got), hidden_size),
    }


def _cause(d: Difference, words: Wording) -> str:
    """The failure a difference usually is (an embedding pushing a trained layer off the end,
    a shift by its sign, else the kind's own)."""
    if d.kind is FindingKind.EMBEDDING_INSERTED and d.displaced is not None:
        return DISPLACED_CAUSE
    if d.kind is FindingKind.SHIFTED:
        return SHIFT_CAUSES.get(d.shift or 0, words.cause)
    return words.cause


# -- the reports' plain-text tables ---------------------------------------------------------------


DEFAULT_WIDTH = 100
"""Columns a report may use when stdout is not a terminal and ``COLUMNS`` is unset."""

MIN_COLUMN = 8
"""The narrowest a table column is wrapped to."""


def terminal_width() -> int:
    """Columns the reports may use: ``COLUMNS`` when it is a positive integer, else the
    terminal's width when stdout is one, else ``DEFAULT_WIDTH`` (piped output, files, CI)."""
    import os
    import sys

    given = os.environ.get("COLUMNS", "").strip()
    if given.isascii() and given.isdigit() and int(given) > 0:
        return max(int(given), 2 * MIN_COLUMN)
    try:
        if sys.stdout.isatty():
            return max(os.get_terminal_size(sys.stdout.fileno()).columns, 2 * MIN_COLUMN)
    except (AttributeError, OSError, ValueError):  # no real stdout (captured, closed)
        pass
    return DEFAULT_WIDTH


def _column_widths(natural: list[int], room: int) -> list[int]:
    """Each column's width within ``room``: the widest columns are narrowed to one common
    width (never below ``MIN_COLUMN`` nor below what the narrower columns need)."""
    if sum(natural) <= room:
        return natural
    cap = max(natural)
    while cap > MIN_COLUMN and sum(min(w, cap) for w in natural) > room:
        cap -= 1
    return [min(w, cap) for w in natural]


def text_table(
    rows: Sequence[Sequence[str]], indent: str = "", width: int | None = None
) -> list[str]:
    """One line per row, each column padded to its widest cell; trailing spaces stripped.
    A table wider than ``width`` (default ``terminal_width()``) wraps the cells of its widest
    columns onto continuation lines, the other cells blank there."""
    import textwrap

    limit = terminal_width() if width is None else width
    natural = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    widths = _column_widths(natural, limit - len(indent) - 2 * (len(natural) - 1))
    lines = []
    for row in rows:
        cells = [
            textwrap.wrap(cell, w, break_on_hyphens=False) or [""] if len(cell) > w else [cell]
            for cell, w in zip(row, widths, strict=True)
        ]
        for k in range(max(len(c) for c in cells)):
            parts = [
                (c[k] if k < len(c) else "").ljust(w) for c, w in zip(cells, widths, strict=True)
            ]
            lines.append(indent + "  ".join(parts).rstrip())
    return lines


COMMANDS = ("eagle3-contracts ", "python ", "$ ", "result: ")
"""How the lines that ``fit_text`` never wraps start: commands a reader copies, and the one
``result:`` line a script reads as the last line."""

_GLUE = "\x00"  # stands for a space inside a `quoted command` while a line is wrapped


def fit_text(text: str, width: int | None = None) -> str:
    """Every line of a report wrapped to ``width`` (default ``terminal_width()``) at spaces,
    continuation lines indented under the text of a ``- ``/``* `` item, else by two more
    spaces than the line; words longer than the width (paths, ids), command lines
    (``COMMANDS``) and a `backquoted command` inside a line are left whole."""
    import re
    import textwrap

    limit = terminal_width() if width is None else width
    out = []
    for line in text.split("\n"):
        if len(line) <= limit or line.lstrip().startswith(COMMANDS):
            out.append(line)  # a command line stays whole: it is copied, not read
            continue
        lead = line[: len(line) - len(line.lstrip())]
        item = line.lstrip()[:2] in ("- ", "* ")
        hang = lead + ("  " if item else "    ")
        glued = re.sub(r"`[^`]*`", lambda m: m.group(0).replace(" ", _GLUE), line)
        wrapped = textwrap.wrap(
            glued,
            limit,
            initial_indent="",
            subsequent_indent=hang,
            break_long_words=False,
            break_on_hyphens=False,
            drop_whitespace=True,
        )
        out += [w.replace(_GLUE, " ") for w in wrapped] or [line]
    return "\n".join(out)


__all__ = [
    "DISPLACED_CAUSE",
    "SHIFT_CAUSES",
    "WORDING",
    "Difference",
    "FindingKind",
    "Wording",
    "classify",
    "fit_text",
    "ids_text",
    "label",
    "say",
    "shift_words",
    "state_name",
    "terminal_width",
    "text_table",
    "width_text",
]
