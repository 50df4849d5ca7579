"""Explain an observed accept rate: which wiring's predicted acceptance fits the figures a user
sees in a server's log or metrics.

Observed figures come from ``--observed RATE`` (accepted / drafted tokens, vLLM's
"acceptance rate"), ``--observed-per-position R0,R1,..`` (the share of drafts whose first
``j+1`` tokens were accepted, vLLM's ``num_accepted_tokens_per_pos / num_drafts``) or an engine's
own output (``read_engine_metrics``): vLLM's Prometheus counters (``vllm:spec_decode_num_drafts``,
``..._num_draft_tokens``, ``..._num_accepted_tokens``, ``..._num_accepted_tokens_per_pos``;
vLLM 0.32.0 ``vllm/v1/spec_decode/metrics.py``) or SGLang's decode log lines
(``accept len: 1.12``, the mean tokens per verify step with the bonus token;
``srt/managers/scheduler_metrics_mixin.py``).

Candidates (``candidates``): the trained wiring, what each named release feeds, and the known
error family around the trained ids. Each is measured on the serving walk (the anchors an engine
visits, ``Acceptance.served``) and scored by how far its prediction lies from each observed
figure in units of the combined standard error; a wiring is consistent when every figure lies
within its 95% interval.
"""

from __future__ import annotations

import itertools
import math
import re
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from eagle3_contracts.acceptance.measure import Z95, Acceptance, paired_gap
from eagle3_contracts.acceptance.target import FINAL, ZERO
from eagle3_contracts.acceptance.wiring import Wiring, describe
from eagle3_contracts.errors import ConfigError

MAX_METRICS_BYTES = 16 << 20
"""Largest metrics file or page read (16 MiB)."""
URL_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Observed:
    """Figures a user observed, and the standard error each carries (0: given as exact)."""

    rate: float | None  # accepted / drafted tokens
    per_position: tuple[float, ...]  # empty: not observed
    source: str  # where the figures came from
    rate_se: float = 0.0
    per_position_se: tuple[float, ...] = ()
    accept_length: float | None = None  # SGLang's figure, as logged

    def figures(self) -> list[tuple[str, float, float]]:
        """(name, value, standard error) of each observed figure."""
        out = []
        if self.rate is not None:
            out.append(("accept rate", self.rate, self.rate_se))
        ses = self.per_position_se or tuple(0.0 for _ in self.per_position)
        out += [
            (f"position {j}", r, s)
            for j, (r, s) in enumerate(zip(self.per_position, ses, strict=True))
        ]
        return out


def _rate(value: float, option: str) -> float:
    if not (math.isfinite(value) and 0.0 <= value <= 1.0):
        raise ConfigError(
            f"{option} {value!r} is not a rate: give a share of drafted tokens in [0, 1]",
            field=option,
        )
    return value


def parse_rates(text: str, option: str) -> tuple[float, ...]:
    """``"0.31,0.12,0.05"`` -> rates in [0, 1] (``ConfigError`` naming ``option``)."""
    out = []
    for i, part in enumerate(p.strip() for p in text.split(",")):
        try:
            value = float(part)
        except ValueError:
            raise ConfigError(
                f"{option} item {i} ({part!r}) is not a number; give rates like 0.31,0.12",
                field=option,
            ) from None
        out.append(_rate(value, option))
    return tuple(out)


def observed_from_options(rate: str | None, per_position: str | None, k: int) -> Observed | None:
    """The figures of ``--observed`` / ``--observed-per-position`` (``None`` when neither)."""
    if rate is None and per_position is None:
        return None
    r = parse_rates(rate, "--observed")[0] if rate is not None else None
    if rate is not None and "," in rate:
        raise ConfigError(
            "--observed takes one accept rate; per-position rates go to --observed-per-position",
            field="--observed",
        )
    per = parse_rates(per_position, "--observed-per-position") if per_position else ()
    _check_positions(per, k, "--observed-per-position")
    return Observed(r, per, "given on the command line")


def _check_positions(per: Sequence[float], k: int, option: str) -> None:
    if per and len(per) != k:
        raise ConfigError(
            f"{option} holds {len(per)} draft positions, --num-drafts is {k}: pass "
            f"--num-drafts {len(per)} (the drafts per step the server ran)",
            field=option,
        )
    if any(b > a + 1e-9 for a, b in itertools.pairwise(per)):
        raise ConfigError(
            f"{option} rises with the position ({', '.join(f'{x:g}' for x in per)}): a draft "
            "is accepted only after every earlier one, so the rates never rise",
            field=option,
        )


# -- engine output ---------------------------------------------------------------------------
_PROM = re.compile(r"^(vllm:spec_decode_[a-z_]+?)(?:_total)?(\{[^}]*\})?\s+([-+0-9.eEnaNif]+)\s*$")
_POSITION = re.compile(r'position="(\d+)"')
_SGLANG = re.compile(r"accept len: ([0-9.]+)")
_SGLANG_RATE = re.compile(r"accept rate: ([0-9.]+)")


def _read_source(where: str) -> str:
    if re.match(r"^[a-z]+://", where):
        if not where.startswith(("http://", "https://")):
            raise ConfigError(
                f"{where}: only http(s) URLs and files are read", field="--engine-metrics"
            )
        try:
            with urllib.request.urlopen(where, timeout=URL_TIMEOUT_S) as response:
                data: bytes = response.read(MAX_METRICS_BYTES + 1)
        except (urllib.error.URLError, OSError, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            raise ConfigError(
                f"cannot read {where}: {' '.join(str(reason).split())[:120]} (is the server up, "
                "and is this its /metrics address?)",
                field="--engine-metrics",
            ) from None
    else:
        from eagle3_contracts._io import regular_file

        path = Path(where)
        regular_file(path, what="engine metrics file")
        with path.open("rb") as fh:
            data = fh.read(MAX_METRICS_BYTES + 1)
    if len(data) > MAX_METRICS_BYTES:
        raise ConfigError(
            f"{where} is over {MAX_METRICS_BYTES >> 20} MiB: give the metrics page or the "
            "server's log lines only",
            field="--engine-metrics",
        )
    return data.decode("utf-8", errors="replace")


def read_engine_metrics(where: str, k: int) -> Observed:
    """vLLM's spec-decode counters or SGLang's accept-length log lines from a file or URL."""
    text = _read_source(where)
    totals: dict[str, float] = {}
    per_pos: dict[int, float] = {}
    for line in text.splitlines():
        m = _PROM.match(line.strip())
        if not m:
            continue
        name, labels, value = m.group(1), m.group(2) or "", float(m.group(3))
        if name == "vllm:spec_decode_num_accepted_tokens_per_pos":
            pos = _POSITION.search(labels)
            if pos:
                per_pos[int(pos.group(1))] = per_pos.get(int(pos.group(1)), 0.0) + value
        else:
            totals[name] = totals.get(name, 0.0) + value
    drafts = totals.get("vllm:spec_decode_num_drafts", 0.0)
    drafted = totals.get("vllm:spec_decode_num_draft_tokens", 0.0)
    accepted = totals.get("vllm:spec_decode_num_accepted_tokens")
    if drafts > 0 and drafted > 0 and accepted is not None:
        rate = accepted / drafted
        per: tuple[float, ...] = ()
        per_se: tuple[float, ...] = ()
        if per_pos:
            positions = sorted(per_pos)
            if positions != list(range(len(positions))):
                raise ConfigError(
                    f"{where}: vllm:spec_decode_num_accepted_tokens_per_pos has positions "
                    f"{positions}, not 0..n-1",
                    field="--engine-metrics",
                )
            per = tuple(min(per_pos[j] / drafts, 1.0) for j in positions)
            per_se = tuple(math.sqrt(p * (1 - p) / drafts) for p in per)
            _check_positions(per, k, "--engine-metrics")
        elif round(drafted / drafts) != k:
            raise ConfigError(
                f"{where}: the server drafted {drafted / drafts:.2f} tokens per step, "
                f"--num-drafts is {k}: pass the drafts per step it ran",
                field="--engine-metrics",
            )
        return Observed(
            rate,
            per,
            f"vLLM counters from {where} ({drafts:.0f} drafts, {drafted:.0f} drafted tokens)",
            rate_se=math.sqrt(rate * (1 - rate) / drafted),
            per_position_se=per_se,
        )
    lengths = [float(x) for x in _SGLANG.findall(text)]
    rates = [float(x) for x in _SGLANG_RATE.findall(text)]
    if lengths:
        length = sum(lengths) / len(lengths)
        rate = sum(rates) / len(rates) if rates else (length - 1.0) / k
        if not 0.0 <= rate <= 1.0:
            raise ConfigError(
                f"{where}: SGLang's mean accept len {length:.2f} does not fit --num-drafts {k} "
                f"(it is 1 to {k + 1} tokens per step): pass the drafts per step it ran",
                field="--engine-metrics",
            )
        return Observed(
            rate,
            (),
            f"SGLang log lines from {where} (mean accept len {length:.2f} over "
            f"{len(lengths)} lines)",
            accept_length=length,
        )
    raise ConfigError(
        f"{where} holds no spec-decode figures: neither vLLM's vllm:spec_decode_num_drafts / "
        "num_draft_tokens / num_accepted_tokens counters nor SGLang's 'accept len:' log lines",
        field="--engine-metrics",
    )


# -- candidates ------------------------------------------------------------------------------
def candidates(
    trained: Wiring, num_layers: int, named: Sequence[tuple[str, Wiring]]
) -> list[tuple[str, Wiring]]:
    """The trained wiring, each named release's, then the error family around the trained ids:
    embedding inserted, one layer early or late, the post-norm last state, two segments
    swapped, a segment missing (zeros in its place). Duplicates keep their first label."""
    ints = [i for i in trained if isinstance(i, int)]
    out: list[tuple[str, Wiring]] = [("trained", trained), *named]
    if len(ints) == len(trained):

        def shift(d: int) -> Wiring | None:
            moved = tuple(i + d for i in ints)
            return moved if all(-1 <= i < num_layers for i in moved) else None

        out.append(("embedding inserted", (-1, *ints[:-1])))
        early = shift(-1)
        if early is not None:
            out.append(("embedding inserted, the rest one layer early", (-1, *early[:-1])))
            out.append(("one layer early", early))
        late = shift(1)
        if late is not None:
            out.append(("one layer late", late))
        out.append(("post-norm last state", (*ints[:-1], FINAL)))
    n = len(trained)
    for a in range(n):
        for b in range(a + 1, n):
            swapped = list(trained)
            swapped[a], swapped[b] = swapped[b], swapped[a]
            out.append((f"segments {a} and {b} swapped", tuple(swapped)))
    for a in range(n):
        out.append((f"segment {a} missing", (*trained[:a], ZERO, *trained[a + 1 :])))
    seen: dict[Wiring, str] = {}
    for label, wiring in out:
        seen.setdefault(wiring, label)
    return [(label, w) for w, label in seen.items()]


# -- explaining ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Fit:
    """How one candidate's predicted acceptance fits the observed figures."""

    label: str
    wiring: Wiring
    predicted: tuple[tuple[str, float, float], ...]  # (figure, value, 95% half-width)
    z: tuple[float, ...]  # |observed - predicted| / combined standard error, per figure
    consistent: bool  # every figure within its 95% interval

    @property
    def score(self) -> float:
        """Root mean square of the z values (lower fits better)."""
        return math.sqrt(sum(z * z for z in self.z) / len(self.z))


def _predicted(acc: Acceptance, observed: Observed) -> list[tuple[str, float, float]]:
    out = []
    if observed.rate is not None:
        r = acc.chain_rate(served=True)
        out.append(("accept rate", r.value, r.half_width))
    for j, r in enumerate(acc.per_position(served=True)[: len(observed.per_position)]):
        out.append((f"position {j}", r.value, r.half_width))
    return out


def fit(label: str, acc: Acceptance, observed: Observed) -> Fit:
    pred = _predicted(acc, observed)
    zs = []
    for (_, obs, obs_se), (_, value, hw) in zip(observed.figures(), pred, strict=True):
        se = math.sqrt((hw / Z95) ** 2 + obs_se**2) if math.isfinite(hw) else 0.0
        gap = abs(obs - value)
        zs.append(gap / se if se > 0 else (0.0 if gap < 1e-9 else math.inf))
    return Fit(label, acc.wiring, tuple(pred), tuple(zs), all(z <= Z95 for z in zs))


@dataclass(frozen=True)
class Explanation:
    """The candidates ranked by fit, the verdict line and what the per-position shape says."""

    observed: Observed
    fits: tuple[Fit, ...]  # best first
    verdict: str  # TRAINED, WRONG, NOT_SEPARABLE, NONE
    result: str  # the sentence after "result: "
    shape: str = ""  # what the per-position shape suggests ("" without per-position figures)
    notes: tuple[str, ...] = field(default=())

    @property
    def exit_code(self) -> int:
        return 0 if self.verdict == TRAINED else 1

    def render_lines(self) -> list[str]:
        obs = ", ".join(f"{name} {value:.3f}" for name, value, _ in self.observed.figures())
        lines = [f"observed ({self.observed.source}): {obs}", "candidates, best fit first:"]
        for f in self.fits:
            pred = ", ".join(f"{v:.3f} ± {hw:.3f}" for _, v, hw in f.predicted)
            mark = "consistent" if f.consistent else "not consistent"
            lines.append(
                f"  {f.label} {describe(f.wiring)}: predicted {pred}; "
                f"z {', '.join(f'{z:.1f}' for z in f.z)}: {mark}"
            )
        if self.shape:
            lines.append(f"per-position shape: {self.shape}")
        lines += [f"note: {n}" for n in self.notes]
        return lines

    def to_dict(self) -> dict[str, object]:
        def num(x: float) -> float | None:
            return round(x, 4) if math.isfinite(x) else None

        return {
            "observed": {
                "source": self.observed.source,
                "figures": [
                    {"figure": n, "value": num(v), "se": num(s)}
                    for n, v, s in self.observed.figures()
                ],
            },
            "candidates": [
                {
                    "label": f.label,
                    "wiring": list(f.wiring),
                    "predicted": [
                        {"figure": n, "value": num(v), "ci95": num(h)} for n, v, h in f.predicted
                    ],
                    "z": [num(z) for z in f.z],
                    "consistent": f.consistent,
                }
                for f in self.fits
            ],
            "verdict": self.verdict,
            "result": self.result,
            "shape": self.shape or None,
            "notes": list(self.notes),
        }


TRAINED, WRONG, NOT_SEPARABLE, NONE = "trained", "wrong wiring", "not separable", "none"


def _shape(observed: Observed, trained: Acceptance) -> str:
    """A position-0 collapse points at the wiring; a normal first position with a fast decay
    points elsewhere (the drafter's norm flags, its vocabulary map)."""
    per = observed.per_position
    if len(per) < 2:
        return ""
    pred = trained.per_position(served=True)
    se0 = math.sqrt((pred[0].half_width / Z95) ** 2 + (observed.per_position_se or (0.0,))[0] ** 2)
    if per[0] < pred[0].value - Z95 * se0:
        return (
            f"position 0 collapses ({per[0]:.3f} vs {pred[0].value:.3f} trained): the first draft "
            "already misses, which points at the fed states (the wiring)"
        )
    ratio_obs = per[-1] / per[0] if per[0] > 0 else 0.0
    ratio_trained = pred[-1].value / pred[0].value if pred[0].value > 0 else 0.0
    if ratio_obs < 0.5 * ratio_trained:
        return (
            f"position 0 as trained ({per[0]:.3f}), then a fast decay (last/first "
            f"{ratio_obs:.2f} vs {ratio_trained:.2f} trained): the fed states look right; look "
            "elsewhere: the drafter's norm flags (norm_before_residual, norm_output), its "
            "vocabulary map (d2t), or sampling"
        )
    return f"as trained: position 0 {per[0]:.3f}, decaying like the trained drafter's"


def explain(
    observed: Observed, measured: Sequence[tuple[str, Acceptance]], prompts: int
) -> Explanation:
    """Rank ``measured`` (label, acceptance; the trained wiring first) by fit to ``observed``."""
    fits = sorted(
        (fit(label, acc, observed) for label, acc in measured), key=lambda f: (f.score, f.label)
    )
    trained = next(f for f in fits if f.label == "trained")
    trained_acc = measured[0][1]
    by_wiring = {acc.wiring: acc for _, acc in measured}

    def differs(f: Fit) -> bool:  # its acceptance differs from the trained one's beyond noise
        gap = paired_gap(trained_acc, by_wiring[f.wiring], position=None)
        return abs(gap.value) > gap.half_width

    wrong = [f for f in fits if f.label != "trained" and f.wiring != trained.wiring]
    consistent_wrong = [f for f in wrong if f.consistent and differs(f)]
    alike = [f for f in wrong if f.consistent and not differs(f)]
    noise = max((hw for _, _, hw in trained.predicted), default=0.0)
    size = f"{prompts} prompts give intervals of ± {noise:.3f}; more prompts narrow them"
    verdict, result = _verdict(trained, consistent_wrong, size)
    notes: tuple[str, ...] = ()
    if alike and verdict == TRAINED:
        names = ", ".join(f"{f.label} {describe(f.wiring)}" for f in alike[:4])
        notes += (f"also consistent, and no different from the trained wiring here: {names}",)
    if all(s == 0.0 for _, _, s in observed.figures()):
        notes += ("the observed figures carry no counts: treated as exact, the intervals are the "
                 "oracle's alone",)  # fmt: skip
    return Explanation(observed, tuple(fits), verdict, result, _shape(observed, trained_acc), notes)


def _verdict(trained: Fit, consistent_wrong: Sequence[Fit], size: str) -> tuple[str, str]:
    """The verdict and its line: which wirings fit the observed figures beyond noise."""
    if trained.consistent and not consistent_wrong:
        return TRAINED, f"consistent with the trained wiring {describe(trained.wiring)}"
    if trained.consistent:
        names = ", ".join(f"{f.label} {describe(f.wiring)}" for f in consistent_wrong[:3])
        return NOT_SEPARABLE, (
            f"not separable at this size: the trained wiring and {names} all fit the observed "
            f"figures ({size})"
        )
    if consistent_wrong:
        best = consistent_wrong[0]
        return WRONG, (
            f"consistent with {best.label} {describe(best.wiring)} and not with the trained "
            f"wiring {describe(trained.wiring)}"
        )
    return NONE, (
        "consistent with no candidate wiring: the figures point elsewhere (the drafter's "
        "norm flags, its vocabulary map, sampling, or a target other than this one)"
    )
