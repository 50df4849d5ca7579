"""Which canonical layer is each H-wide segment of a capture? Streaming identification.

``identify_segments`` runs the model once with a hook on every decoder layer (and one on the
final norm) and, as each boundary state appears, compares it with every captured segment,
keeping only a few numbers per (segment, candidate). Memory: the k segments plus O(1)
full-width states (the current and the previous one), never all L+1.

A segment *matches* canonical id N when its relative error ``||seg - state_N|| / ||state_N||``
is within ``rtol`` (chosen from the dtype unless given) **and** no other state comes near
(runner-up error > 2 x rtol): adjacent layers are never confused; too-similar states give no
match and say so. At half precision (rtol >= 1e-2) a segment also matches when its error is
within ``min(0.1, 10 x rtol)`` and the runner-up is ``MARGIN_FACTOR`` times farther (and
farther than rtol): deep layers of a bf16 model differ from their neighbours by only a few
percent, and a bf16 engine drifts from an fp32 reference by about as much, so a fixed
tolerance alone would call exact matches ambiguous. Segments that match nothing are checked
against near misses worth naming.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import torch
from torch import Tensor, nn

from eagle3_contracts.capture.hooks import (
    check_captured,
    check_input_ids,
    check_model,
    decoder_layers,
    final_norm,
    forward_until,
    input_embeddings,
    known_vocab_size,
    layer_hooks,
)
from eagle3_contracts.capture.hooks import hidden_size as model_hidden_size
from eagle3_contracts.errors import ContractError
from eagle3_contracts.layer_ids import EMBEDDING, describe

# Relative-error tolerance by dtype: capture and reference may run different batch shapes.
DEFAULT_RTOL: dict[torch.dtype, float] = {
    torch.float64: 1e-6,
    torch.float32: 1e-3,
    torch.float16: 1e-2,
    torch.bfloat16: 3e-2,
}
AMBIGUITY_FACTOR = 2.0  # the runner-up must be farther than this x rtol for a match
MARGIN_FACTOR = 3.0  # half precision: a looser match needs the runner-up this x farther
HALF_PRECISION_RTOL = 1e-2  # rtol from which the margin rule applies
MARGIN_MAX_REL = 0.1  # the margin rule never accepts a relative error above this


class NearMiss(str, Enum):
    """A known transform of a layer's state that a segment holds instead of the state itself.

    The values are stable strings (they appear in goldens and labels); ``capture.verify`` maps
    each to its likely cause.
    """

    FINAL_NORM = "final-norm output"  # the final norm applied (HF hidden_states[-1])
    DELTA = "layer delta without residual"  # a layer's own contribution, residual not added
    SHIFTED_LEFT = "shifted by one token"  # segment[t] holds state[t - 1]
    SHIFTED_RIGHT = "shifted by one token (ahead)"  # segment[t] holds state[t + 1]
    RAW_EMBED = "embed_tokens without position embeddings/scaling"  # bare table lookup


class MatchKind(str, Enum):
    """What one segment turned out to be (the values appear in the diagnose JSON)."""

    LAYER = "layer"  # the output of a layer 0..L-1
    EMBEDDING = "embedding"  # canonical -1, the residual stream entering layer 0
    POST_NORM = "post-norm"  # the final-norm output (NearMiss.FINAL_NORM)
    NEAR_MISS = "near miss"  # another NearMiss
    AMBIGUOUS = "ambiguous"  # equal to two states within rtol: too similar to tell apart
    NOTHING = "nothing"  # equal to no state of the target


# Module-level names of the near misses (the vLLM guard builds its own candidate lists).
FINAL_NORM = NearMiss.FINAL_NORM
DELTA = NearMiss.DELTA
SHIFTED_LEFT = NearMiss.SHIFTED_LEFT
SHIFTED_RIGHT = NearMiss.SHIFTED_RIGHT
RAW_EMBED = NearMiss.RAW_EMBED
NEAR_MISSES: tuple[NearMiss, ...] = tuple(NearMiss)


@dataclass(frozen=True)
class SegmentMatch:
    """What one segment of the capture holds."""

    # -- where ----------------------------------------------------------------------------
    position: int  # index of the segment in the concatenation
    # -- the verdict ------------------------------------------------------------------------
    layer_id: int | None  # canonical id it equals (None: no unambiguous match)
    label: str  # human text: "layer 3", "no match: final-norm output of layer 5", ...
    near_miss: NearMiss | None  # set when the segment is a known transform of a state
    near_miss_layer: int | None  # the canonical id the near miss is derived from
    # -- the evidence -----------------------------------------------------------------------
    closest: int  # canonical id with the smallest relative error
    rel_error: float  # ||seg - closest|| / ||closest||
    similarity: float  # cosine similarity with the closest state
    max_abs_error: float  # max |seg - closest|
    runner_up: int | None  # second-closest canonical id
    runner_up_rel_error: float  # its relative error (inf when there is none)
    kind: MatchKind = MatchKind.NOTHING  # what the segment is, as a type (see ``label``)


@dataclass(frozen=True)
class SegmentIdentification:
    """``identify_segments`` result: one ``SegmentMatch`` per segment, in capture order."""

    segments: tuple[SegmentMatch, ...]
    num_layers: int
    hidden_size: int
    rtol: float
    rtol_source: str  # "given" or "default for torch.bfloat16", ...
    notes: tuple[str, ...] = field(default=())

    @property
    def layer_ids(self) -> tuple[int | None, ...]:
        return tuple(s.layer_id for s in self.segments)

    def __iter__(self) -> Iterator[SegmentMatch]:
        return iter(self.segments)

    def __len__(self) -> int:
        return len(self.segments)

    def __getitem__(self, i: int) -> SegmentMatch:
        return self.segments[i]

    def render_text(self) -> str:
        lines = [
            f"{len(self.segments)} segments of {self.hidden_size} from a {self.num_layers}-layer "
            f"target (rtol {self.rtol:g}, {self.rtol_source})"
        ]
        for s in self.segments:
            lines.append(
                f"  segment {s.position}: {s.label} (closest {describe(s.closest, self.num_layers)}, "
                f"rel error {s.rel_error:.3g}, cosine {s.similarity:.4f})"
            )
        lines.extend(f"  note: {n}" for n in self.notes)
        return "\n".join(lines)


# -- comparison ------------------------------------------------------------------------
class _Stats:
    """Running best/second-best over candidate states for one segment."""

    def __init__(self) -> None:
        self.exact: list[tuple[float, int, float, float]] = []  # (rel, id, cos, max_abs)
        self.near: list[tuple[float, NearMiss, int]] = []  # (rel, near miss, id)

    def best_two(self) -> list[tuple[float, int, float, float]]:
        return sorted(self.exact)[:2]


def segment_metrics(seg: Tensor, ref: Tensor, keep: Tensor | None) -> tuple[float, float, float]:
    """(relative error, cosine similarity, max abs error) in fp32 over the tokens ``keep``
    (``[B, T, 1]`` bool, ``None`` = all) selects. Works on views: O(1) full-width temporaries.
    """
    a, b = seg.float(), ref.float()
    if keep is not None:  # masked_fill, not a product: garbage (inf, NaN) at padding is ignored
        a, b = a.masked_fill(~keep, 0), b.masked_fill(~keep, 0)
    diff = a - b
    b_norm = torch.linalg.vector_norm(b).clamp_min(1e-12)
    rel = (torch.linalg.vector_norm(diff) / b_norm).item()
    cos = ((a * b).sum() / (torch.linalg.vector_norm(a).clamp_min(1e-12) * b_norm)).item()
    return rel, cos, diff.abs().max().item() if diff.numel() else 0.0


def rel_error(seg: Tensor, ref: Tensor, keep: Tensor | None) -> float:
    """``||seg - ref|| / ||ref||`` over the tokens ``keep`` selects (``None``: all)."""
    return segment_metrics(seg, ref, keep)[0]


def _raw_embedding(model: nn.Module, input_ids: Tensor) -> Tensor | None:
    """The bare embedding-table lookup (no position embeddings, no scaling)."""
    weight = getattr(input_embeddings(model), "weight", None)
    if not isinstance(weight, Tensor):
        return None
    return nn.functional.embedding(input_ids, weight)


def identify_segments(
    captured: Tensor,
    model: nn.Module,
    input_ids: Tensor,
    *,
    hidden_size: int | None = None,
    attention_mask: Tensor | None = None,
    rtol: float | None = None,
    layers_path: str | None = None,
    **forward_kwargs: Any,
) -> SegmentIdentification:
    """Identify each ``hidden_size``-wide segment of ``captured`` ``[B, T, k*H]``.

    ``input_ids`` / ``attention_mask`` must be those the capture ran on; only real tokens
    (mask 1) are compared. ``rtol`` defaults by the lower-precision dtype of capture and model.
    """
    check_captured(captured)
    check_model(model)
    check_input_ids(input_ids, vocab_size=known_vocab_size(model))
    layers = decoder_layers(model, layers_path)
    num_layers = len(layers)
    h = hidden_size if hidden_size is not None else model_hidden_size(model)
    if captured.dim() != 3 or captured.shape[:2] != input_ids.shape:
        raise ContractError(
            f"captured has shape {tuple(captured.shape)}; expected [B, T, k*H] with "
            f"[B, T] = input_ids shape {tuple(input_ids.shape)}",
            field="captured",
        )
    k, rem = divmod(captured.shape[-1], h)
    if rem or k == 0:
        raise ContractError(
            f"captured width {captured.shape[-1]} is not a positive multiple of hidden_size {h}",
            field="captured",
        )
    rtol, rtol_source = choose_rtol(rtol, captured, model)
    # real tokens ([B, T, 1]; None: all real), and tokens whose neighbour is real too
    weight = None if attention_mask is None else attention_mask.to(captured.device).bool()
    weight = None if weight is None or bool(weight.all()) else weight[..., None]
    pair = None if weight is None else weight[:, 1:] & weight[:, :-1]
    segs = [captured[..., j * h : (j + 1) * h].detach() for j in range(k)]  # views
    stats = [_Stats() for _ in range(k)]
    raw = _raw_embedding(model, input_ids)
    prev: dict[str, Tensor] = {}
    notes: list[str] = []

    def observe(n: int, state: Tensor, extra: tuple[tuple[NearMiss, Tensor], ...] = ()) -> None:
        state = state.detach().to(captured.device)
        for seg, st in zip(segs, stats, strict=True):
            rel, cos, mx = segment_metrics(seg, state, weight)
            st.exact.append((rel, n, cos, mx))
            if state.shape[1] > 1:
                st.near.append((rel_error(seg[:, 1:], state[:, :-1], pair), SHIFTED_LEFT, n))
                st.near.append((rel_error(seg[:, :-1], state[:, 1:], pair), SHIFTED_RIGHT, n))
            for label, cand in extra:
                st.near.append(
                    (rel_error(seg, cand.detach().to(captured.device), weight), label, n)
                )

    def on_state(n: int, state: Tensor) -> None:
        extra: list[tuple[NearMiss, Tensor]] = []
        if n == EMBEDDING:
            if (
                raw is not None
                and raw.shape == state.shape
                and rel_error(raw, state, weight) > rtol
            ):
                extra.append((RAW_EMBED, raw))
        elif "stream" in prev:
            extra.append((DELTA, state - prev["stream"]))
        if "hidden" in prev:  # fused layers: hidden alone, residual not added
            extra.append((DELTA, prev.pop("hidden")))
        observe(n, state, tuple(extra))
        prev["stream"] = state

    # Capture fused (hidden, residual) pairs' bare hidden for the "residual dropped" miss.
    def fused_hidden_hook(module: nn.Module, args: tuple, output: Any) -> None:
        if (
            isinstance(output, (tuple, list))
            and len(output) > 1
            and isinstance(output[1], torch.Tensor)
            and output[1].shape == output[0].shape
        ):
            prev["hidden"] = output[0].detach()

    norm = final_norm(model)
    normed: list[bool] = []

    def norm_hook(module: nn.Module, args: tuple, output: Any) -> None:
        out = output[0] if isinstance(output, (tuple, list)) else output
        if isinstance(out, Tensor) and out.shape == segs[0].shape and not normed:
            normed.append(True)
            for seg, st in zip(segs, stats, strict=True):
                st.near.append((rel_error(seg, out.detach(), weight), FINAL_NORM, num_layers - 1))

    # Registered before layer_hooks' own: torch runs forward hooks in registration order.
    handles = [layer.register_forward_hook(fused_hidden_hook) for layer in layers]
    if norm is not None:
        handles.append(norm.register_forward_hook(norm_hook))
    else:
        notes.append("no final norm found: the final-norm near miss was not checked")
    try:
        ids = (EMBEDDING, *range(num_layers))
        with layer_hooks(layers, on_state, ids):
            forward_until(model, input_ids, attention_mask, **forward_kwargs)
    finally:
        for handle in handles:
            handle.remove()
    prev.clear()
    seen = {n for _, n, _, _ in stats[0].exact}
    if len(seen) != num_layers + 1:
        raise ContractError(
            f"the forward of {type(model).__name__} ran {len(seen) - 1} of {num_layers} layers "
            f"found; pass layers_path=",
            field="layers_path",
        )
    matches = tuple(_verdict(j, st, rtol, num_layers) for j, st in enumerate(stats))
    return SegmentIdentification(matches, num_layers, h, rtol, rtol_source, tuple(notes))


def choose_rtol(rtol: float | None, captured: Tensor, model: nn.Module) -> tuple[float, str]:
    if rtol is not None:
        if not 0 < rtol < 1:
            raise ContractError(f"rtol must be in (0, 1), got {rtol!r}", field="rtol")
        return float(rtol), "given"
    dtypes = [captured.dtype]
    param = next(iter(model.parameters()), None)
    if param is not None and param.is_floating_point():
        dtypes.append(param.dtype)
    loosest = max(dtypes, key=lambda d: DEFAULT_RTOL.get(d, 3e-2))
    return DEFAULT_RTOL.get(loosest, 3e-2), f"default for {loosest}"


def _matches(rel: float, runner_rel: float, rtol: float) -> bool:
    """Strict rule at any precision; the margin rule only at half precision (see module)."""
    if rel <= rtol and runner_rel > AMBIGUITY_FACTOR * rtol:
        return True
    if rtol < HALF_PRECISION_RTOL:
        return False
    loose = min(MARGIN_MAX_REL, 10 * rtol)
    return rel <= loose and runner_rel > rtol and runner_rel >= MARGIN_FACTOR * rel


def _verdict(position: int, st: _Stats, rtol: float, num_layers: int) -> SegmentMatch:
    best = st.best_two()
    rel, closest, cos, mx = best[0]
    runner_up, runner_rel = (best[1][1], best[1][0]) if len(best) > 1 else (None, float("inf"))
    near: tuple[float, NearMiss | None, int | None] = min(
        st.near, default=(float("inf"), None, None)
    )
    near_rel, near_miss, near_layer = near

    def match(
        kind: MatchKind,
        label: str,
        layer_id: int | None = None,
        miss: NearMiss | None = None,
        miss_layer: int | None = None,
    ) -> SegmentMatch:
        return SegmentMatch(
            position=position,
            layer_id=layer_id,
            label=label,
            near_miss=miss,
            near_miss_layer=miss_layer,
            closest=closest,
            rel_error=rel,
            similarity=cos,
            max_abs_error=mx,
            runner_up=runner_up,
            runner_up_rel_error=runner_rel,
            kind=kind,
        )

    if _matches(rel, runner_rel, rtol) and (rel <= rtol or near_rel > rel):
        kind = MatchKind.EMBEDDING if closest == EMBEDDING else MatchKind.LAYER
        return match(kind, describe(closest, num_layers), layer_id=closest)
    if rel <= rtol:
        other = "?" if runner_up is None else describe(runner_up, num_layers)
        return match(
            MatchKind.AMBIGUOUS,
            f"ambiguous: equals {describe(closest, num_layers)} and {other} within rtol "
            f"{rtol:g}; these states are too similar to tell apart at this precision",
        )
    if near_rel <= rtol and near_miss is not None:
        what = describe(near_layer, num_layers) if near_layer is not None else "?"
        kind = MatchKind.POST_NORM if near_miss is NearMiss.FINAL_NORM else MatchKind.NEAR_MISS
        return match(kind, f"no layer: {near_miss.value} of {what}", None, near_miss, near_layer)
    return match(
        MatchKind.NOTHING,
        f"no layer: closest is {describe(closest, num_layers)} "
        f"(rel error {rel:.3g} > rtol {rtol:g})",
    )
