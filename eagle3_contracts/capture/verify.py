"""``verify_capture``: prove a capture implementation feeds the layers its contract promises.

Any ``capture_fn(model, input_ids) -> Tensor[B, T, k*H]`` (ours, a trainer's, an engine's
wrapped in a function) is run on a real model and checked for: width, token alignment,
determinism, the identity of each segment in contract order (``identify_segments``) and batch
invariance (a sequence alone equals the same sequence inside a padded batch). A failure raises
``ContractViolation`` whose message names what is wrong and the likely cause.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch import Tensor, nn

from eagle3_contracts.capture.hooks import (
    check_capture_fn,
    check_input_ids,
    check_model,
    decoder_layers,
    hidden_size,
    known_vocab_size,
    seeded_input_ids,
    vocab_size,
)
from eagle3_contracts.capture.identify import (
    NearMiss,
    SegmentIdentification,
    SegmentMatch,
    choose_rtol,
    identify_segments,
    rel_error,
)
from eagle3_contracts.contract import CaptureContract
from eagle3_contracts.differences import Difference, FindingKind, classify
from eagle3_contracts.errors import ContractError, ContractViolation
from eagle3_contracts.layer_ids import EMBEDDING, describe

CaptureFn = Callable[..., Tensor]
PAD = 3  # tokens of padding in the batch-invariance check

# Near miss -> likely cause, in the user's terms.
NEAR_MISS_CAUSES: dict[NearMiss, str] = {
    NearMiss.FINAL_NORM: (
        "the post-norm state was used as the last layer (e.g. HF hidden_states[-1]); capture "
        "the last layer's output with a forward hook, before the final norm"
    ),
    NearMiss.DELTA: (
        "the residual was dropped: the segment is the layer's delta; fused engines must "
        "capture hidden + residual"
    ),
    NearMiss.SHIFTED_LEFT: "token alignment: the segment lags the input by one token (shifted right)",
    NearMiss.SHIFTED_RIGHT: "token alignment: the segment leads the input by one token (shifted left)",
    NearMiss.RAW_EMBED: (
        "the embedding was taken from embed_tokens before position embeddings/scaling; "
        "capture the input of layer 0 (a forward-pre-hook) instead"
    ),
}


# Near miss -> how a segment holding it is described.
NEAR_MISS_PHRASES: dict[NearMiss, str] = {
    NearMiss.FINAL_NORM: "the final-norm output of {layer}",
    NearMiss.DELTA: "the delta of {layer} without its residual",
    NearMiss.SHIFTED_LEFT: "{layer} shifted one token right",
    NearMiss.SHIFTED_RIGHT: "{layer} shifted one token left",
    NearMiss.RAW_EMBED: "the raw embed_tokens lookup (no position embeddings/scaling)",
}


@dataclass(frozen=True)
class Check:
    """One verification step."""

    name: str  # "width", "token alignment", "determinism", "segment identity", "batch invariance"
    ok: bool
    detail: str


@dataclass(frozen=True)
class VerifyReport:
    """What ``verify_capture`` checked and found (returned only when everything holds)."""

    contract: CaptureContract
    identification: SegmentIdentification
    checks: tuple[Check, ...]
    notes: tuple[str, ...] = field(default=())  # defaults that applied, checks narrowed

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    def render_text(self) -> str:
        lines = [f"capture verified against {self.contract.describe()}"]
        lines += [f"  [{'ok' if c.ok else 'FAIL'}] {c.name}: {c.detail}" for c in self.checks]
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)


# -- helpers ---------------------------------------------------------------------------
def default_input_ids(model: nn.Module, batch: int = 2, tokens: int = 12) -> Tensor:
    """Seeded random tokens (``batch x tokens``) on the model's device."""
    device = next(iter(model.parameters())).device
    return seeded_input_ids(vocab_size(model), batch, tokens, seed=1234).to(device)


def _accepts_mask(fn: CaptureFn) -> bool:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == "attention_mask" or p.kind is p.VAR_KEYWORD for p in params)


def _run(fn: CaptureFn, model: nn.Module, ids: Tensor, mask: Tensor | None = None) -> Tensor:
    out = fn(model, ids) if mask is None else fn(model, ids, attention_mask=mask)
    if not isinstance(out, Tensor):
        raise ContractViolation(
            f"capture_fn returned {type(out).__name__}; it must return a tensor [B, T, k*H]",
            findings=("capture_fn must return a tensor",),
        )
    return out


def _what(match: SegmentMatch, num_layers: int) -> str:
    if match.layer_id is not None:
        text = describe(match.layer_id, num_layers)
        return "the embedding (-1)" if match.layer_id == EMBEDDING else text
    if match.near_miss is not None and match.near_miss_layer is not None:
        layer = describe(match.near_miss_layer, num_layers)
        return NEAR_MISS_PHRASES[match.near_miss].format(layer=layer)
    return (
        f"no layer (closest {describe(match.closest, num_layers)}, rel error {match.rel_error:.3g})"
    )


def explain_mismatch(
    found: tuple[SegmentMatch, ...], contract: CaptureContract, *, batch_dependent: bool = False
) -> tuple[list[str], list[str]]:
    """(per-segment findings, likely causes) for an identification against a contract.

    ``classify`` says how the identified ids differ from the contract's; this renders it.
    ``batch_dependent``: states were found to depend on the batch, which explains unidentified
    segments better than a generic "different layers" cause.
    """
    num_layers = contract.num_layers
    differences = classify(contract.concat_ids, [m.layer_id for m in found])
    findings = [
        f"segment {d.position} is {_what(found[d.position], num_layers)}; the contract expects "
        f"{'nothing' if d.expected is None else describe(d.expected, num_layers)}"
        for d in differences
        if d.kind is FindingKind.SEGMENT and d.position is not None and d.position < len(found)
    ]
    causes = [
        cause for d in differences if (cause := _cause(d, differences, found, contract)) is not None
    ]
    by_miss: dict[NearMiss, list[str]] = {}
    for m in found:
        if m.near_miss is not None:
            by_miss.setdefault(m.near_miss, []).append(str(m.position))
    for miss, positions in by_miss.items():
        noun = "segment" if len(positions) == 1 else "segments"
        causes.append(f"{noun} {', '.join(positions)}: {NEAR_MISS_CAUSES[miss]}")
    if findings and not causes and not batch_dependent:
        causes.append("the capture reads different layers than the contract names")
    return findings, causes


def _cause(
    d: Difference,
    differences: tuple[Difference, ...],
    found: tuple[SegmentMatch, ...],
    contract: CaptureContract,
) -> str | None:
    """The likely cause ``d`` points at, in the capture author's terms (None: no headline)."""
    expected = contract.concat_ids
    if d.kind is FindingKind.WIDTH_DIFFERS and len(found) < len(expected):
        absent = [m.layers for m in differences if m.kind is FindingKind.LAYER_MISSING]
        names = [describe(n, contract.num_layers) for n in (absent[0] if absent else ())]
        return (
            f"a segment is missing: the capture holds {len(found)} of {len(expected)} states"
            + (f" ({', '.join(names)} absent)" if names else "")
            + "; likely the last layer is unreachable or the capture loop stops early"
        )
    if d.kind is FindingKind.WIDTH_DIFFERS:
        return f"the capture holds {len(found)} states, the contract {len(expected)}"
    if d.kind is FindingKind.ORDER_DIFFERS and not d.partial:
        how = (
            " (as every engine does: sort the ids)"
            if contract.order == "ascending"
            else " (in config-list order)"
        )
        return (
            f"the right layers in the wrong order: {list(d.layers)} instead of "
            f"{list(expected)}; the contract concatenates {contract.order}{how}"
        )
    if d.kind is FindingKind.EMBEDDING_INSERTED and d.displaced is not None:
        return "segments are shifted one position: an embedding was inserted"
    if d.kind is FindingKind.SHIFTED and d.shift == -1:
        return (
            "every segment is one layer early: ids were used as boundary (input-of-layer) "
            "indices where layer outputs were meant; the +1 offset is missing"
        )
    if d.kind is FindingKind.SHIFTED and d.shift == 1:
        return (
            "every segment is one layer late: a +1 offset was applied to ids that were "
            "already layer outputs"
        )
    return None


def _violation(headline: str, findings: list[str], causes: list[str]) -> ContractViolation:
    body = "; ".join([*findings, *causes])
    return ContractViolation(
        f"{headline}: {body}" if body else headline, findings=tuple(findings + causes)
    )


# -- the check -------------------------------------------------------------------------
def verify_capture(
    capture_fn: CaptureFn,
    model: nn.Module,
    contract: CaptureContract,
    input_ids: Tensor | None = None,
    *,
    rtol: float | None = None,
    layers_path: str | None = None,
) -> VerifyReport:
    """Run ``capture_fn(model, input_ids)`` and prove it matches ``contract``, or raise.

    ``input_ids`` defaults to 2 x 12 seeded random tokens (reported in ``notes``). When
    ``capture_fn`` accepts ``attention_mask=``, batch invariance uses a padded batch; otherwise
    a batch of equal-length sequences (also reported).
    """
    notes: list[str] = []
    check_capture_fn(capture_fn)
    check_model(model)
    hidden = _check_target(model, contract, layers_path)
    input_ids = _check_input_ids(model, input_ids, notes)
    alone_ids = input_ids[:1]
    alone = _run(capture_fn, model, alone_ids)
    checks = _check_shape(alone, alone_ids, hidden, contract)
    width_ok = checks[-1].ok

    # determinism
    again = _run(capture_fn, model, alone_ids)
    tol, _ = choose_rtol(rtol, alone, model)
    drift = rel_error(again, alone, None) if again.shape == alone.shape else float("inf")
    checks.append(Check("determinism", drift <= tol, f"rel difference {drift:.3g} (rtol {tol:g})"))

    batch_findings = _batch_invariance(capture_fn, model, input_ids, alone, tol, notes)

    # segment identity
    ident = identify_segments(
        alone, model, alone_ids, hidden_size=hidden, rtol=rtol, layers_path=layers_path
    )
    findings, causes = explain_mismatch(
        ident.segments, contract, batch_dependent=bool(batch_findings)
    )
    identity_ok = width_ok and not findings
    identity = ", ".join(m.label for m in ident.segments) if identity_ok else "; ".join(findings)
    checks.append(Check("segment identity", identity_ok, identity))
    checks.append(
        Check(
            "batch invariance",
            not batch_findings,
            "; ".join(batch_findings)
            or (
                "each sequence alone equals it inside a padded batch"
                if _accepts_mask(capture_fn)
                else "each sequence alone equals it inside an unpadded batch (capture_fn "
                "takes no attention_mask)"
            ),
        )
    )
    failed = [c for c in checks if not c.ok]
    if not failed:
        return VerifyReport(contract, ident, tuple(checks), tuple(notes))
    if batch_findings:
        causes.insert(
            0,
            "states depend on the batch (padding or other sequences change them): check the "
            "attention mask and per-sequence indexing",
        )
    if drift > tol:
        causes.insert(0, f"the capture is not deterministic (rel difference {drift:.3g})")
    raise _violation(
        f"capture does not match {contract.describe()} ({', '.join(c.name for c in failed)})",
        findings + batch_findings,
        causes,
    )


def _check_target(model: nn.Module, contract: CaptureContract, layers_path: str | None) -> int:
    """The contract is a ``CaptureContract`` for this model's shape; return the hidden size."""
    if not isinstance(contract, CaptureContract):
        raise ContractError(
            f"contract must be a CaptureContract, got {type(contract).__name__}", field="contract"
        )
    num_layers = len(decoder_layers(model, layers_path))
    hidden = hidden_size(model)
    if (num_layers, hidden) != (contract.num_layers, contract.hidden_size):
        raise ContractError(
            f"the contract is for a {contract.num_layers} x {contract.hidden_size} target; the "
            f"model is {num_layers} x {hidden}",
            field="contract",
        )
    return hidden


def _check_input_ids(model: nn.Module, input_ids: Tensor | None, notes: list[str]) -> Tensor:
    """The given ids (``[B >= 2, T >= PAD + 2]``), or seeded defaults (said in ``notes``)."""
    if input_ids is None:
        input_ids = default_input_ids(model)
        notes.append(f"input_ids not given: used {tuple(input_ids.shape)} seeded random tokens")
    check_input_ids(input_ids, vocab_size=known_vocab_size(model))
    if input_ids.dim() != 2 or input_ids.shape[0] < 2 or input_ids.shape[1] < PAD + 2:
        raise ContractError(
            f"input_ids must be [B >= 2, T >= {PAD + 2}] (batch invariance needs two "
            f"sequences), got {tuple(input_ids.shape)}",
            field="input_ids",
        )
    return input_ids


def _check_shape(
    alone: Tensor, alone_ids: Tensor, hidden: int, contract: CaptureContract
) -> list[Check]:
    """Token alignment and width of one sequence's capture (a violation when unreadable)."""
    b, t = alone_ids.shape
    if alone.dim() != 3 or alone.shape[0] != b:
        raise _violation(f"capture shape {tuple(alone.shape)} is not [B={b}, T={t}, k*H]", [], [])
    if alone.shape[1] != t:
        raise _violation(
            "token alignment",
            [f"the capture has {alone.shape[1]} tokens for {t} input tokens"],
            ["every token's state must be kept (not only the last/sampled positions)"],
        )
    k, rem = divmod(alone.shape[-1], hidden)
    if rem:
        raise _violation(
            "width",
            [f"capture width {alone.shape[-1]} is not a multiple of hidden_size {hidden}"],
            ["states were sized from another hidden size (e.g. the drafter's)"],
        )
    width_ok = alone.shape[-1] == contract.width
    return [
        Check("token alignment", True, f"{t} tokens in, {t} out"),
        Check("width", width_ok, f"{alone.shape[-1]} = {k} x {hidden} (contract {contract.width})"),
    ]


def _batch_invariance(
    capture_fn: CaptureFn,
    model: nn.Module,
    input_ids: Tensor,
    alone0: Tensor,
    tol: float,
    notes: list[str],
) -> list[str]:
    """Findings (empty = invariant) comparing sequences alone with them inside a batch."""
    b, t = input_ids.shape[0], input_ids.shape[1]
    if _accepts_mask(capture_fn):
        short = t - PAD
        ids = input_ids.clone()
        mask = torch.ones_like(input_ids)
        ids[1, short:] = 0
        mask[1, short:] = 0
        batch = _run(capture_fn, model, ids, mask)
        others = [(1, _run(capture_fn, model, input_ids[1:2, :short]), short)]
        how = f"sequence 1 right-padded by {PAD} tokens in a batch of {b}"
    else:
        batch = _run(capture_fn, model, input_ids)
        others = [(1, _run(capture_fn, model, input_ids[1:2]), t)]
        notes.append("capture_fn takes no attention_mask: batch invariance checked without padding")
        how = f"a batch of {b} equal-length sequences"
    if batch.shape[:2] != input_ids.shape or batch.shape[-1] != alone0.shape[-1]:
        return [f"the batched capture has shape {tuple(batch.shape)} ({how})"]
    findings = []
    for row, alone, n in [(0, alone0, t), *others]:
        err = rel_error(batch[row, :n], alone[0, :n], None)
        if err > tol:
            findings.append(
                f"sequence {row} alone differs from it inside {how} (rel error {err:.3g})"
            )
    return findings
