"""The vLLM guard's judgement, offline: identification against recorded states, the verdict
line, the settings parsing, and the plugin entry point without an engine."""

from __future__ import annotations

import logging
import sys

import pytest
import torch

from eagle3_contracts.errors import ContractError
from eagle3_contracts.integrations import vllm as plugin
from eagle3_contracts.integrations._guard.settings import read_settings
from eagle3_contracts.integrations._guard.verdict import (
    Recorded,
    identify_recorded,
    judge,
    proven_fix_for,
)

L, H, T = 6, 16, 5


LLAMA = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "num_hidden_layers": L,
         "hidden_size": H}  # fmt: skip


def _recorded(seed: int = 0) -> Recorded:
    g = torch.Generator().manual_seed(seed)
    states = {}
    stream = torch.randn(T, H, generator=g)
    states[-1] = stream.clone()
    for n in range(L):
        stream = stream + torch.randn(T, H, generator=g)  # a residual stream: adds each layer
        states[n] = stream.clone()
    norm = stream / stream.pow(2).mean(-1, keepdim=True).sqrt()
    return Recorded(states, L, norm)


def _fed(rec: Recorded, ids: list[int]) -> torch.Tensor:
    return torch.cat([rec.states[n] for n in ids], dim=-1)


def test_identifies_each_segment_in_order() -> None:
    rec = _recorded()
    found = identify_recorded(_fed(rec, [4, -1, 2]), rec, H)
    assert found.layer_ids == (4, -1, 2)


def test_names_the_final_norm_and_a_one_token_shift() -> None:
    rec = _recorded()
    assert rec.final_norm is not None
    shifted = torch.cat([rec.states[1][:1], rec.states[1][:-1]])  # segment[t] = state[t - 1]
    found = identify_recorded(torch.cat([rec.final_norm, shifted], -1), rec, H)
    assert found.layer_ids == (None, None)
    assert "final-norm" in found.segments[0].label
    assert "shifted by one token" in found.segments[1].label


def test_ok_line_when_fed_what_was_trained() -> None:
    rec = _recorded()
    found = identify_recorded(_fed(rec, [1, 3, 5]), rec, H)
    v = judge(found, expected=(1, 3, 5), claim="stamp", fc_states=3, where="vllm==0.32.0:v1, x")
    assert v.status == "ok" and v.ok
    assert "OK" in v.line and "[1, 3, 5]" in v.line


def test_mismatch_line_names_the_segment_and_the_fix() -> None:
    rec = _recorded()
    found = identify_recorded(_fed(rec, [-1, 2, 4]), rec, H)
    draft = {"eagle_config": {"eagle_aux_hidden_state_layer_ids": [0, 2, 4]}}
    fix = proven_fix_for("vllm==0.32.0:v1", draft, LLAMA)
    v = judge(found, expected=(1, 3, 5), claim="stamp", fc_states=3, where="w", fix=fix)
    assert v.status == "mismatch"
    assert (
        "(stamp): the embedding (canonical -1) is fed; the drafter was not trained on it; "
        "not fed: layer 1, layer 3, layer 5 (last, pre-norm); fed but not trained on: layer 2, "
        "layer 4; fix:"
    ) in v.line
    assert v.line.endswith("fix: eagle_aux_hidden_state_layer_ids = [2, 4, 6]")
    unnamed = judge(found, expected=(1, 3, 5), claim="stamp", fc_states=3, where="w")
    assert unnamed.line.endswith("--serve-with RELEASE` for the proven ids")


@pytest.mark.parametrize(
    ("fed", "sentence"),
    [
        ([0, 2, 4], "shifted by -1: every state is 1 layer early ([0, 2, 4] instead of [1, 3, 5])"),
        (
            [3, 1, 5],
            "same layers, different concatenation order: trained [1, 3, 5], served [3, 1, 5]",
        ),
        ([1, 3, 4], "not fed: layer 5 (last, pre-norm); fed but not trained on: layer 4"),
    ],
)
def test_the_guard_says_a_difference_in_checks_words(fed: list[int], sentence: str) -> None:
    rec = _recorded()
    found = identify_recorded(_fed(rec, fed), rec, H)
    v = judge(found, expected=(1, 3, 5), claim="stamp", fc_states=3, where="w")
    assert v.status == "mismatch"
    assert f"(stamp): {sentence}; fix:" in v.line


def test_width_mismatch_is_a_predicted_crash() -> None:
    rec = _recorded()
    found = identify_recorded(_fed(rec, [1, 3]), rec, H)
    v = judge(found, expected=(1, 3), claim="stamp", fc_states=3, where="w")
    assert v.status == "mismatch"
    assert "fc is built for 3 states" in v.line and "crashes" in v.line


def test_without_a_claim_the_line_says_unjudged_and_how_to_stamp() -> None:
    rec = _recorded()
    found = identify_recorded(_fed(rec, [1, 3, 5]), rec, H)
    v = judge(found, expected=None, claim="no stamp", fc_states=3, where="w")
    assert v.status == "unjudged" and not v.ok
    assert "eagle3-contracts stamp" in v.line


@pytest.mark.parametrize("release", ["vllm==0.32.0:v1", "vllm==0.33.0:v2", "sglang==0.5.23"])
def test_both_guards_print_the_one_proven_fix(release: str) -> None:
    """The guards' fix is ``config.plan.release_fix``: an unsorted trained order has none, a
    list is printed only when predicting again feeds the trained layers, never the ids the
    config already holds."""
    draft = {"eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, 3, 5]}}
    fix = proven_fix_for(release, draft, LLAMA)
    assert fix((5, 1, 3), L).startswith("no native ids can express it")
    assert "ascending order" in fix((5, 1, 3), L)
    from eagle3_contracts.config.plan import release_fix

    for want in ((1, 3, 5), (0, 2, 4), (1, 2, 3)):
        found = release_fix(want, release, draft, LLAMA)
        if found.native_ids is None:
            assert fix(want, L) == found.why
            continue
        assert fix(want, L) == found.label
        nested = found.path == "eagle_config.eagle_aux_hidden_state_layer_ids"
        held = (1, 3, 5) if nested else None  # the draft holds ids only in eagle_config
        assert found.native_ids != held  # the ids already at the field are never a fix
        ids = list(found.native_ids)
        again = {"eagle_config": {"eagle_aux_hidden_state_layer_ids": ids}} if nested else {
            **draft, "eagle_aux_hidden_state_layer_ids": ids}  # fmt: skip
        assert release_fix(want, release, again, LLAMA).why.startswith("no id list changes it")


def test_incomplete_recording_is_a_contract_error() -> None:
    rec = _recorded()
    partial = Recorded({k: v for k, v in rec.states.items() if k != 3}, L, None)
    with pytest.raises(ContractError, match=r"missing \[3\]"):
        identify_recorded(_fed(rec, [1]), partial, H)


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, None),
        ({"EAGLE3_CONTRACTS_GUARD": "  "}, None),
        ({"EAGLE3_CONTRACTS_GUARD": "Strict"}, ("strict", None, 32)),
        ({"EAGLE3_CONTRACTS_DUMP": "/d"}, (None, "/d", 32)),
        (
            {"EAGLE3_CONTRACTS_GUARD": "warn", "EAGLE3_CONTRACTS_GUARD_TOKENS": "8"},
            ("warn", None, 8),
        ),
    ],
)
def test_settings(env: dict[str, str], expected: tuple[object, ...] | None) -> None:
    s = read_settings(env)
    if expected is None:
        assert s is None
    else:
        assert s is not None
        assert (s.guard, s.dump_dir, s.guard_tokens) == expected


def test_bad_settings_are_problems_not_exceptions() -> None:
    s = read_settings({"EAGLE3_CONTRACTS_GUARD": "strikt", "EAGLE3_CONTRACTS_GUARD_TOKENS": "-3"})
    assert s is not None and s.guard is None and s.guard_tokens == 32
    assert len(s.problems) == 2 and "strikt" in s.problems[0]


@pytest.mark.parametrize(
    "tokens", ["\u00b2", "\u0663", "\uff18", "0", "65537", "1e3", "9" * 40, " ", "4 2"]
)
def test_a_bad_token_count_never_turns_a_strict_guard_off(tokens: str) -> None:
    """``"²"`` passes ``str.isdigit`` and fails ``int``; other digits ``int`` reads are not
    ASCII; each is a problem and the default, the guard staying strict."""
    s = read_settings({"EAGLE3_CONTRACTS_GUARD": "strict", "EAGLE3_CONTRACTS_GUARD_TOKENS": tokens})
    assert s is not None and s.guard == "strict" and s.guard_tokens == 32
    if tokens.strip():
        (problem,) = s.problems
        assert "is not a whole number from 1 to 65536; using 32" in problem
        assert len(problem) < 200
    else:
        assert s.problems == ()


def test_register_is_a_no_op_without_the_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("EAGLE3_CONTRACTS_DUMP", "EAGLE3_CONTRACTS_GUARD"):
        monkeypatch.delenv(key, raising=False)
    before = list(sys.meta_path)
    plugin.register()
    assert list(sys.meta_path) == before


def test_register_never_raises(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def boom(settings: object) -> None:
        raise RuntimeError("broken install")

    monkeypatch.setenv("EAGLE3_CONTRACTS_GUARD", "warn")
    monkeypatch.setattr(plugin, "_install", boom)
    with caplog.at_level(logging.WARNING, logger="vllm.eagle3_contracts"):
        plugin.register()
    assert "plugin not installed (RuntimeError: broken install); vLLM untouched" in caplog.text


def test_the_plugin_dump_convention_resolves_for_diagnose() -> None:
    """Dumps say ``vllm==<version>:<runner>``; the release's rule reads them (boundaries)."""
    from eagle3_contracts import conventions

    rule = conventions.get("vllm==0.32.0:v1", architectures=("LlamaForCausalLM",))
    assert rule.to_canonical([0, 1, 4, 5], 6) == (-1, 0, 3, 4)
