"""How two lists of layer ids differ: one classifier for every caller.

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

This module is torch-free and imports only ``layer_ids``.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from enum import Enum

from eagle3_contracts.layer_ids import EMBEDDING, uniform_shift


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


__all__ = ["Difference", "FindingKind", "classify", "shift_words"]
