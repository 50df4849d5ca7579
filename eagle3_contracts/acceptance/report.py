"""The ``accept`` report: acceptance of the trained wiring and of each served one, with costs.

A row's cost is the paired gap in first-draft agreement (trained minus served, the same prompts
and anchors) and its share of the trained figure. A row ``COSTS`` when the gap's 95% interval
lies above zero; a served wiring equal to the trained one costs nothing by construction; a gap
whose interval includes zero is ``within noise``. Exit 1 when any row costs or cannot run.
With observed figures (``observed``) the exit code is the explanation's: 0 only when they are
consistent with the trained wiring alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from eagle3_contracts.acceptance.measure import Acceptance, Rate, finite, paired_gap
from eagle3_contracts.acceptance.observed import Explanation
from eagle3_contracts.acceptance.wiring import ServedRow, Trained, describe

COSTS, SAME, NOISE, NOT_RUN = "COSTS", "ok", "within noise", "NOT RUN"


@dataclass(frozen=True)
class Row:
    """One serving system (or an explicit wiring): what it feeds and what that costs."""

    label: str
    served: ServedRow | None  # None: an explicit --wiring row
    acceptance: Acceptance | None
    gap: Rate | None  # trained minus this row, first-draft agreement (paired)
    verdict: str

    @property
    def relative_cost(self) -> float | None:
        if self.gap is None or not self.base:
            return None
        return self.gap.value / self.base

    base: float | None = None  # the trained first-draft agreement


def judge(label: str, served: ServedRow | None, acc: Acceptance | None, trained: Acceptance) -> Row:
    if acc is None:
        return Row(label, served, None, None, NOT_RUN)
    if acc.wiring == trained.wiring:
        return Row(label, served, acc, Rate(0.0, 0.0), SAME, trained.first.value)
    gap = paired_gap(trained, acc)
    verdict = COSTS if gap.value - gap.half_width > 0 else NOISE
    return Row(label, served, acc, gap, verdict, trained.first.value)


def _figures(acc: Acceptance) -> str:
    per = " ".join(f"{r.value:.2f}" for r in acc.per_position())
    return (
        f"first {acc.first}  chain {acc.chain_rate().value:.3f}  accept length "
        f"{acc.accept_length().value:.2f}  per position [{per}]"
    )


@dataclass(frozen=True)
class AcceptReport:
    """Everything ``accept`` prints (``to_dict`` is its ``--json`` form)."""

    drafter: str
    target: str
    trained: Trained
    trained_acceptance: Acceptance
    rows: tuple[Row, ...]
    prompts: str  # where the prompts came from
    k: int
    new_tokens: int
    device: str
    seconds: float
    notes: tuple[str, ...] = field(default=())
    explanation: Explanation | None = None  # with observed figures: the candidates ranked

    @property
    def exit_code(self) -> int:
        if self.explanation is not None:
            return self.explanation.exit_code
        return 1 if any(r.verdict in (COSTS, NOT_RUN) for r in self.rows) else 0

    @property
    def result(self) -> str:
        """The last line's verdict."""
        if self.explanation is not None:
            return self.explanation.result
        costs = [r.label for r in self.rows if r.verdict == COSTS]
        not_run = [r.label for r in self.rows if r.verdict == NOT_RUN]
        if not costs and not not_run:
            return "ok: no row costs measurable acceptance"
        parts = [f"{', '.join(costs)} cost acceptance"] if costs else []
        parts += [f"{', '.join(not_run)} not run (not ok)"] if not_run else []
        return "COSTS: " + "; ".join(parts) if costs else "NOT RUN: " + "; ".join(parts)

    def render_text(self) -> str:
        t = self.trained_acceptance
        lines = [
            f"drafter: {self.drafter}",
            f"target: {self.target}",
            f"trained on {describe(self.trained.wiring)} ({self.trained.source})",
            f"prompts: {self.prompts}; {t.prompts} prompts, {t.anchors} anchors, k={self.k} "
            f"drafts, greedy continuations of {self.new_tokens} tokens; {self.device}, "
            f"{self.seconds:.1f} s",
            "",
            f"trained {describe(t.wiring)}: {_figures(t)}",
        ]
        for r in self.rows:
            head = f"{r.label}"
            if r.served is not None:
                head = f"{r.served.key or r.served.serve}"
            if r.acceptance is None:
                why = r.served.why_not if r.served else ""
                lines.append(f"{head}: {NOT_RUN}: {why}")
                continue
            lines.append(f"{head} feeds {describe(r.acceptance.wiring)}: {_figures(r.acceptance)}")
            if r.verdict == SAME:
                lines.append("    = the trained layers: ok")
            else:
                assert r.gap is not None
                rate, base_rate = r.acceptance.chain_rate().value, t.chain_rate().value
                share = "" if r.relative_cost is None else f" ({-r.relative_cost:+.0%})"
                change = f" ({rate / base_rate - 1:+.0%})" if base_rate else ""
                lines.append(
                    f"    cost: first-draft agreement {-r.gap.value:+.3f} ± {r.gap.half_width:.3f}"
                    f"{share}, accept rate {base_rate:.3f} -> {rate:.3f}{change}, accept length "
                    f"{t.accept_length().value:.2f} -> {r.acceptance.accept_length().value:.2f}: "
                    f"{r.verdict}"
                )
            for a in r.served.assumptions if r.served else ():
                lines.append(f"    assumed: {a}")
        lines += [f"note: {n}" for n in self.notes]
        if self.explanation is not None:
            lines += ["", *self.explanation.render_lines()]
        lines += ["", f"result: {self.result} (exit {self.exit_code})"]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        def row(r: Row) -> dict[str, Any]:
            return {
                "label": r.label,
                "system": r.served.key if r.served else None,
                "not_run": r.served.why_not if r.served and r.acceptance is None else None,
                "verdict": r.verdict,
                "acceptance": r.acceptance.to_dict() if r.acceptance else None,
                "gap_first": None
                if r.gap is None
                else {"value": finite(r.gap.value), "ci95": finite(r.gap.half_width)},
                "relative_cost": None if r.relative_cost is None else finite(r.relative_cost),
            }

        return {
            "schema_version": 1,
            "drafter": self.drafter,
            "target": self.target,
            "trained": {"wiring": list(self.trained.wiring), "source": self.trained.source},
            "trained_acceptance": self.trained_acceptance.to_dict(),
            "rows": [row(r) for r in self.rows],
            "prompts": self.prompts,
            "k": self.k,
            "new_tokens": self.new_tokens,
            "device": self.device,
            "seconds": round(self.seconds, 2),
            "notes": list(self.notes),
            "explanation": self.explanation.to_dict() if self.explanation else None,
            "result": self.result,
            "exit_code": self.exit_code,
        }
