"""Explaining an observed rate: the oracle's own figures for a wiring rank that wiring first and
rule the other out (margins in z, never exact rates), and bad observed input is one typed error."""

from __future__ import annotations

from pathlib import Path

import pytest

from eagle3_contracts.acceptance.fixture import DRAFTER, SEED_ERROR, TARGET, TRAINED
from eagle3_contracts.acceptance.observed import (
    NOT_SEPARABLE,
    WRONG,
    Observed,
    candidates,
    observed_from_options,
    read_engine_metrics,
)
from eagle3_contracts.acceptance.observed import (
    TRAINED as TRAINED_VERDICT,
)
from eagle3_contracts.acceptance.target import FINAL, ZERO
from eagle3_contracts.errors import ConfigError

SIZE = {"num_prompts": 12, "new_tokens": 48, "k": 4}


@pytest.fixture(scope="module")
def own_figures() -> dict:
    """The oracle's serving-walk figures for the trained wiring and the seed's error."""
    import torch

    from eagle3_contracts.acceptance.oracle import accept

    torch.set_num_threads(1)
    report = accept(DRAFTER, TARGET, wirings=[SEED_ERROR], **SIZE)
    seed = report.rows[0].acceptance
    assert seed is not None
    return {TRAINED: report.trained_acceptance, SEED_ERROR: seed}


@pytest.mark.parametrize("wiring", [TRAINED, SEED_ERROR])
@pytest.mark.parametrize("per_position", [False, True])
def test_own_figures_rank_their_wiring_first_and_rule_out_the_other(
    own_figures: dict, wiring: tuple, per_position: bool
) -> None:
    from eagle3_contracts.acceptance.oracle import accept

    acc = own_figures[wiring]
    per = tuple(r.value for r in acc.per_position(served=True)) if per_position else ()
    observed = Observed(acc.chain_rate(served=True).value, per, "the oracle's own")
    report = accept(DRAFTER, TARGET, observed=observed, **SIZE)
    e = report.explanation
    assert e is not None
    assert e.fits[0].wiring == wiring and e.fits[0].consistent
    other = SEED_ERROR if wiring == TRAINED else TRAINED
    ruled_out = next(f for f in e.fits if f.wiring == other)
    assert not ruled_out.consistent and max(ruled_out.z) > 2.5, ruled_out
    if wiring == TRAINED:
        assert e.verdict in (TRAINED_VERDICT, NOT_SEPARABLE) and "trained" in e.result
    else:
        assert e.verdict == WRONG and report.exit_code == 1
        assert e.result.startswith("consistent with embedding inserted, the rest one layer")
    if per_position:
        wiring_shape = "points at the fed states" in e.shape
        assert wiring_shape == (wiring == SEED_ERROR), e.shape
    text = report.render_text()
    assert text.splitlines()[-1] == f"result: {e.result} (exit {report.exit_code})"


def test_the_error_family_around_the_trained_ids() -> None:
    got = dict((w, label) for label, w in candidates((2, 6, 9), 12, [("vllm", (1, 5, 8))]))
    assert got[(2, 6, 9)] == "trained"
    assert got[(1, 5, 8)] == "vllm"  # a named release keeps its name over "one layer early"
    assert got[(-1, 2, 6)] == "embedding inserted"
    assert got[(-1, 1, 5)] == "embedding inserted, the rest one layer early"
    assert got[(3, 7, 10)] == "one layer late"
    assert got[(2, 6, FINAL)] == "post-norm last state"
    assert got[(6, 2, 9)] == "segments 0 and 1 swapped"
    assert got[(2, ZERO, 9)] == "segment 1 missing"
    assert len(got) == 12  # one layer early is the named release
    edge = dict((w, label) for label, w in candidates((-1, 5, 11), 12, []))
    assert "one layer early" not in edge.values() and "one layer late" not in edge.values()


PROMETHEUS = """\
# HELP vllm:spec_decode_num_drafts_total Number of spec decoding drafts.
# TYPE vllm:spec_decode_num_drafts_total counter
vllm:spec_decode_num_drafts_total{engine="0",model_name="t"} 200.0
vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="t"} 800.0
vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="t"} 152.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="t",position="0"} 80.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="t",position="1"} 40.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="t",position="2"} 20.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="t",position="3"} 12.0
vllm:num_requests_running{engine="0",model_name="t"} 0.0
"""
SGLANG = """\
[2026-12-01 10:00:01] Decode batch. #running-req: 4, #token: 812, token usage: 0.01, accept len: 1.10, gen throughput (token/s): 210.5
[2026-12-01 10:00:02] Decode batch. #running-req: 4, #token: 900, token usage: 0.01, accept len: 1.14, gen throughput (token/s): 212.0
"""


def test_vllm_counters_and_sglang_lines_are_read(tmp_path: Path) -> None:
    (tmp_path / "m.txt").write_text(PROMETHEUS)
    got = read_engine_metrics(str(tmp_path / "m.txt"), 4)
    assert got.rate == pytest.approx(0.19)
    assert got.per_position == pytest.approx((0.4, 0.2, 0.1, 0.06))
    assert 0 < got.rate_se < 0.02 and len(got.per_position_se) == 4
    (tmp_path / "s.log").write_text(SGLANG)
    got = read_engine_metrics(str(tmp_path / "s.log"), 4)
    assert got.accept_length == pytest.approx(1.12) and got.rate == pytest.approx(0.03)


@pytest.mark.parametrize(
    ("kind", "fragment"),
    [
        ("negative", "--observed -0.2 is not a rate"),
        ("over-one", "--observed 1.5 is not a rate"),
        ("nan", "--observed nan is not a rate"),
        ("word", "--observed-per-position item 1 ('x') is not a number"),
        ("rising", "rises with the position"),
        ("too-few", "holds 3 draft positions, --num-drafts is 4"),
        ("no-counters", "holds no spec-decode figures"),
        ("wrong-k", "--engine-metrics holds 4 draft positions, --num-drafts is 3"),
        ("unreachable", "cannot read http://127.0.0.1:9/metrics"),
        ("no-file", "no such file"),
    ],
)
def test_bad_observed_input_is_a_config_error(tmp_path: Path, kind: str, fragment: str) -> None:
    (tmp_path / "m.txt").write_text("vllm:num_requests_running 0.0\nhello\n")
    (tmp_path / "p.txt").write_text(PROMETHEUS)
    calls = {
        "negative": lambda: observed_from_options("-0.2", None, 4),
        "over-one": lambda: observed_from_options("1.5", None, 4),
        "nan": lambda: observed_from_options("nan", None, 4),
        "word": lambda: observed_from_options(None, "0.3,x", 4),
        "rising": lambda: observed_from_options(None, "0.3,0.4,0.1,0.0", 4),
        "too-few": lambda: observed_from_options(None, "0.31,0.12,0.05", 4),
        "no-counters": lambda: read_engine_metrics(str(tmp_path / "m.txt"), 4),
        "wrong-k": lambda: read_engine_metrics(str(tmp_path / "p.txt"), 3),
        "unreachable": lambda: read_engine_metrics("http://127.0.0.1:9/metrics", 4),
        "no-file": lambda: read_engine_metrics(str(tmp_path / "absent.txt"), 4),
    }
    with pytest.raises(ConfigError) as err:
        calls[kind]()
    assert fragment in str(err.value), str(err.value)
