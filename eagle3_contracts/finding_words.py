"""How every renderer words a finding: one declarative table keyed by ``FindingKind``.

``differences.classify`` decides *what* differs; this table says it. ``check``'s matrix
(``config.check``: the short ``label`` of a row's verdict cell), its explanations
(``config.plan``), ``diagnose`` (``dumps.diagnose``) and the vLLM/SGLang guards
(``integrations.vllm.verdict``, used by ``integrations.sglang.hooks``) all take their words
from ``WORDING``; a renderer adds only what it alone knows (``diagnose`` the usual ``cause``).

Templates are ``str.format`` strings over the fields ``say`` fills in:

* ``{want}`` / ``{got}``: the two sides' names (``trained``/``served``, ``expected``/``dump``);
* ``{want_ids}`` / ``{got_ids}``: their canonical ids in concatenation order (``?``: unidentified);
* ``{layers}``: the ids concerned; ``{shared_got}``: ``got``'s ids among them, in its order;
* ``{names}``: the ids concerned as ``layer_ids.describe`` names them;
* ``{shift}``, ``{shift_words}``: a uniform shift (``-1``, ``"1 layer early"``);
* ``{position}``, ``{displaced}``, ``{want_state}``, ``{got_state}``: one segment's detail;
* ``{want_width}`` / ``{got_width}``: the fc input widths.

This module is torch-free and imports only ``differences`` and ``layer_ids``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from eagle3_contracts.differences import Difference, FindingKind, shift_words
from eagle3_contracts.layer_ids import describe


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
"""Every ``FindingKind``'s words (``tests/test_finding_words.py`` holds it complete)."""

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
    p = d.position if d.position is not None else 0
    labels = (
        list(got_labels) if got_labels is not None else [state_name(n, num_layers) for n in got]
    )
    fields = {
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
    template = (
        words.partial if d.kind is FindingKind.ORDER_DIFFERS and d.partial else words.sentence
    )
    text = template.format(**fields)
    if not cause:
        return text
    why = (
        DISPLACED_CAUSE
        if d.kind is FindingKind.EMBEDDING_INSERTED and d.displaced is not None
        else SHIFT_CAUSES.get(d.shift or 0, words.cause)
        if d.kind is FindingKind.SHIFTED
        else words.cause
    )
    return f"{text}; {why.format(**fields)}" if why else text


__all__ = [
    "DISPLACED_CAUSE",
    "SHIFT_CAUSES",
    "WORDING",
    "Wording",
    "ids_text",
    "label",
    "say",
    "state_name",
    "width_text",
]
