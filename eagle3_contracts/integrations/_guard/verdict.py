"""The guard's judgement, engine-free: identify the drafter input against recorded states.

The vLLM plugin records, during the first prefill, the target's own residual stream at every
boundary (canonical ``-1`` .. ``L-1``, first ``K`` tokens) and the final-norm output; this
module identifies each ``H``-wide segment of the drafter's ``fc`` input against those states
with the same rules as ``eagle3_contracts.capture.identify`` (same tolerances, same
ambiguity margin, same near misses) and turns the result into one log line. No engine import,
so the offline suite tests it on synthetic tensors.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from eagle3_contracts.capture.identify import NearMiss, SegmentIdentification, identify_segments
from eagle3_contracts.capture.threads import fair_torch_threads
from eagle3_contracts.differences import FindingKind, classify, say
from eagle3_contracts.errors import ContractError, ContractViolation
from eagle3_contracts.layer_ids import EMBEDDING, describe


class WiringMismatch(ContractViolation):
    """``EAGLE3_CONTRACTS_GUARD=strict``: the drafter is not fed what it was trained on."""


@dataclass(frozen=True)
class Recorded:
    """The target's residual stream recorded in the first prefill (first ``K`` tokens)."""

    states: Mapping[int, Tensor]  # canonical id (-1 .. L-1) -> [K, H]
    num_layers: int
    final_norm: Tensor | None = None  # [K, H] output of the final norm, for the near miss


class _ReplayLayer(nn.Module):
    """Outputs the recorded residual stream after its layer."""

    def __init__(self, state: Tensor) -> None:
        super().__init__()
        self.state = state

    def forward(self, hidden: Tensor) -> Tensor:
        return self.state


class _ReplayNorm(nn.Module):
    def __init__(self, state: Tensor) -> None:
        super().__init__()
        self.state = state

    def forward(self, hidden: Tensor) -> Tensor:
        return self.state


class _Replay(nn.Module):
    """A stand-in target whose forward replays the recorded states, so the public
    ``identify_segments`` judges the drafter input with its own rules (tolerances, ambiguity
    margin, near misses: shifted token, layer delta, final-norm output)."""

    def __init__(self, recorded: Recorded) -> None:
        super().__init__()
        self.entry = recorded.states[EMBEDDING].unsqueeze(0)
        self.layers = nn.ModuleList(
            _ReplayLayer(recorded.states[n].unsqueeze(0)) for n in range(recorded.num_layers)
        )
        if recorded.final_norm is not None:
            self.norm = _ReplayNorm(recorded.final_norm.unsqueeze(0))

    def forward(self, input_ids: Tensor) -> Tensor:
        hidden = self.entry
        for layer in self.layers:
            hidden = layer(hidden)
        norm = getattr(self, "norm", None)
        return norm(hidden) if norm is not None else hidden


def identify_recorded(
    captured: Tensor, recorded: Recorded, hidden_size: int, *, rtol: float | None = None
) -> SegmentIdentification:
    """Identify each ``hidden_size``-wide segment of ``captured`` ``[T, k*H]`` (its first
    ``K`` rows, the recorded tokens) with ``identify_segments`` on a replay of the recording."""
    wanted = set(range(EMBEDDING, recorded.num_layers))
    if set(recorded.states) != wanted:
        missing = sorted(wanted - set(recorded.states))
        raise ContractError(
            f"recorded states must cover canonical -1 .. {recorded.num_layers - 1}; missing "
            f"{missing} (the target's layers did not run as expected)",
            field="recorded",
        )
    if captured.dim() != 2:
        raise ContractError(
            f"captured must be [T, k*H], got shape {list(captured.shape)}", field="captured"
        )
    tokens = int(recorded.states[EMBEDDING].shape[0])
    if int(captured.shape[0]) < tokens:
        raise ContractError(
            f"captured has {captured.shape[0]} tokens, the recording {tokens}", field="captured"
        )
    replay = _Replay(recorded)
    ids = torch.zeros(1, tokens, dtype=torch.long)
    with fair_torch_threads():  # the engine's cores may be busy: our share only, restored after
        return identify_segments(
            captured[:tokens].unsqueeze(0),
            replay,
            ids,
            hidden_size=hidden_size,
            rtol=rtol,
            layers_path="layers",
        )


@dataclass(frozen=True)
class GuardVerdict:
    """What the guard concluded at the first prefill."""

    status: str  # "ok", "mismatch" or "unjudged"
    fed: tuple[int | None, ...]  # identified canonical id per segment (None: no layer)
    expected: tuple[int, ...] | None  # the trained contract, when one is known
    line: str  # the one log line

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def _label(match_id: int | None, label: str, num_layers: int) -> str:
    return describe(match_id, num_layers) if match_id is not None else label


def _differences(
    expected: tuple[int, ...], found: SegmentIdentification, *, crashes: bool
) -> list[str]:
    """How the fed segments differ from the trained ids, in check's words (``WORDING``): the
    per-segment detail only where no other finding explains it, as check words a row; the
    width only when the crash line (``crashes``) does not already say it."""
    n = found.num_layers
    post_norm = [s.position for s in found.segments if s.near_miss is NearMiss.FINAL_NORM]
    diffs = classify(expected, found.layer_ids, post_norm=post_norm)
    main = [
        d
        for d in diffs
        if d.kind is not FindingKind.SEGMENT
        and not (crashes and d.kind is FindingKind.WIDTH_DIFFERS)
    ]
    shown = main or [d for d in diffs if d.kind is FindingKind.SEGMENT]
    labels = [_label(s.layer_id, s.label, n) for s in found.segments]
    return [
        say(d, expected, found.layer_ids, n, got_labels=labels, hidden_size=found.hidden_size)
        for d in shown
    ]


def proven_fix_for(
    system: str, draft: Mapping[str, Any], target: Mapping[str, Any]
) -> Callable[[Sequence[int], int], str]:
    """The guards' fix, for vLLM and SGLang alike: the one proven-fix search
    (``config.plan.release_fix``) for ``system`` serving this drafter config on this target:
    the ids at the field that release reads, proven by predicting again, or why none exist."""

    def fix(expected: Sequence[int], num_layers: int) -> str:
        from eagle3_contracts.config.plan import release_fix

        found = release_fix(expected, system, draft, target)
        return found.label if found.native_ids is not None else found.why

    return fix


def no_release_fix(expected: Sequence[int], num_layers: int) -> str:
    """The fix line when no release was named to search for one."""
    return "run `eagle3-contracts fix DRAFT --target T --serve-with RELEASE` for the proven ids"


def judge(
    found: SegmentIdentification,
    *,
    expected: Sequence[int] | None,
    claim: str,
    fc_states: int | None,
    where: str,
    fix: Callable[[Sequence[int], int], str] = no_release_fix,
) -> GuardVerdict:
    """Turn an identification into the verdict line (``fix``: the engine's setting that feeds
    the trained ids, ``proven_fix_for`` the release; both engines pass it).

    ``expected``: the trained canonical ids (``None``: unknown, said in ``claim``);
    ``fc_states``: how many segments the drafter's fc was built for; ``where``:
    ``"vllm==0.32.0:v1, llama.py:LlamaForCausalLM"``.
    """
    n = found.num_layers
    fed = found.layer_ids
    shown = ", ".join(_label(s.layer_id, s.label, n) for s in found.segments)
    head = f"eagle3-contracts guard [{where}]"
    width_problem = ""
    if fc_states is not None and fc_states != len(fed):
        width_problem = (
            f"fc is built for {fc_states} states ({fc_states * found.hidden_size} wide) but "
            f"receives {len(fed)} ({len(fed) * found.hidden_size}): vLLM crashes at the first "
            f"speculative step"
        )
    if expected is None:
        extra = f"; {width_problem}" if width_problem else ""
        return GuardVerdict(
            "unjudged",
            fed,
            None,
            f"{head}: UNJUDGED: the drafter's fc receives [{shown}]; {claim}{extra}; stamp the "
            f"drafter with `eagle3-contracts stamp DRAFT --trained-with X --target T`",
        )
    expected = tuple(expected)
    problems = [width_problem] if width_problem else []
    problems += _differences(expected, found, crashes=bool(width_problem))
    if not problems:
        return GuardVerdict(
            "ok",
            fed,
            expected,
            f"{head}: OK: the drafter's fc receives [{shown}] = trained {list(expected)} ({claim})",
        )
    return GuardVerdict(
        "mismatch",
        fed,
        expected,
        f"{head}: MISMATCH: the drafter's fc receives [{shown}], trained on "
        f"{list(expected)} ({claim}): {'; '.join(problems)}; fix: {fix(expected, n)}",
    )
