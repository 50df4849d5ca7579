"""Drafters beyond EAGLE-3 (``conventions.methods``): published configs answered on
sglang==0.5.23 and vllm==0.33.0, each expectation citing the released code it follows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from eagle3_contracts.config.check import check_drafter
from eagle3_contracts.config.fix import fix_drafter
from eagle3_contracts.conventions import methods
from eagle3_contracts.conventions.predict import predict_feed
from eagle3_contracts.errors import ContractError
from eagle3_contracts.testing.strategies import METHOD_NAMES, method_configs

DATA = Path(__file__).parent / "data" / "methods"
SG, VL = "sglang==0.5.23", "vllm==0.33.0"


def _load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((DATA / name).read_text())
    return data


QWEN3_8B = _load("targets/qwen3-8b.json")


def _target(arch: str, model_type: str, n: int, h: int = 4096) -> dict[str, Any]:
    return {
        "architectures": [arch],
        "model_type": model_type,
        "num_hidden_layers": n,
        "hidden_size": h,
    }


# -- detection -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("file", "method"),
    [
        ("specforge-qwen3-8b-dflash.json", methods.DFLASH),
        ("specforge-qwen3-8b-domino.json", methods.DOMINO),
        ("specforge-qwen3-8b-dspark.json", methods.DSPARK),
        ("specforge-qwen3.6-27b-dflash2.json", methods.DFLASH2),
        ("specforge-qwen3-8b-peagle.json", methods.PEAGLE),
        ("specforge-qwen3-30b-a3b-eagle3.1.json", methods.EAGLE31),
    ],
)
def test_published_configs_are_detected(file: str, method: methods.Method) -> None:
    assert methods.detect(_load(file)) is method


def test_plain_eagle3_is_eagle3_and_both_encodings_are_nemotron() -> None:
    eagle = {
        "architectures": ["LlamaForCausalLMEagle3"],
        "eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, 2, 3]},
    }
    assert methods.detect(eagle) is methods.EAGLE3
    both = {
        "dflash_config": {"target_layer_ids": [1, 5]},
        "eagle_aux_hidden_state_layer_ids": [2, 6],
    }
    assert methods.detect(both) is methods.NEMOTRON35
    assert methods.detect({"target_layer_ids": [3]}) is methods.DFLASH
    # an EAGLE-3 class with a stray top-level target_layer_ids stays EAGLE-3 (vLLM V2 reads it)
    stray = {"architectures": ["LlamaForCausalLMEagle3"], "target_layer_ids": [3]}
    assert methods.detect(stray) is methods.EAGLE3


def test_malformed_ids_are_a_typed_error_naming_the_field() -> None:
    with pytest.raises(ContractError, match=r"dflash_config\.target_layer_ids"):
        methods.block_ids_in({"dflash_config": {"target_layer_ids": ["1"]}})


# -- SGLang's fallback (sglang 0.5.23 speculative/dflash_utils.py:348-385) ------------------


def test_build_target_layer_ids_matches_published_ids() -> None:
    # SpecForge's qwen3-8b-domino.json / qwen3-8b-dspark.json were trained with the helper's
    # ids for Qwen3-8B (36 layers, 5 draft layers): [1, 9, 17, 25, 33]
    assert (
        methods.build_target_layer_ids(36, 5)
        == _load("specforge-qwen3-8b-domino.json")["dflash_config"]["target_layer_ids"]
    )
    assert methods.build_target_layer_ids(36, 1) == [18]
    assert methods.build_target_layer_ids(64, 5) == [1, 16, 31, 46, 61]
    with pytest.raises(ContractError, match="num_target_layers >= 4"):
        methods.build_target_layer_ids(3, 2)


@given(n=st.integers(4, 200), k=st.integers(2, 12))
def test_build_target_layer_ids_spans_1_to_L_minus_3(n: int, k: int) -> None:
    ids = methods.build_target_layer_ids(n, k)
    assert len(ids) == k and ids[0] == 1 and ids[-1] == n - 3
    assert ids == sorted(ids)


# -- published configs on the two releases ---------------------------------------------------


def test_dflash_without_ids_sglang_guesses_the_trained_default_vllm_crashes() -> None:
    draft = _load("specforge-qwen3-8b-dflash.json")
    sg = predict_feed(SG, draft, QWEN3_8B)
    # dflash_utils.py:568-571 guesses build_target_layer_ids(36, 5); qwen3.py:793-805 adds +1
    assert (sg.kind, sg.canonical, sg.width_states) == ("segments", (1, 9, 17, 25, 33), 5)
    assert any("build_target_layer_ids(L=36, draft layers=5)" in n for n in sg.notes)
    vl = predict_feed(VL, draft, QWEN3_8B)
    # eagle3_utils.py:113-150 finds no ids: default boundaries (2, 18, 33); qwen3_dflash.py:84-93
    # builds fc for num_hidden_layers = 5 states
    assert (vl.kind, vl.crash, vl.canonical, vl.width_states) == (
        "crash",
        "fc-width-mismatch",
        (1, 17, 32),
        5,
    )
    assert "qwen3_dflash.py" in " ".join(vl.notes)


def test_dflash_check_reports_the_vllm_crash_with_a_proven_fix() -> None:
    report = check_drafter(
        _load("specforge-qwen3-8b-dflash.json"), target=QWEN3_8B, serve_with=(SG, VL)
    )
    verdicts = {row.plan.release: row for row in report.rows}
    assert verdicts[SG].ok
    assert not verdicts[VL].ok
    assert verdicts[VL].fix_native_ids == (1, 9, 17, 25, 33)
    assert verdicts[VL].fix_field == "dflash_config.target_layer_ids"


@pytest.mark.parametrize(
    "file", ["specforge-qwen3-8b-domino.json", "specforge-qwen3-8b-dspark.json"]
)
def test_explicit_taps_served_as_trained_on_sglang(file: str) -> None:
    feed = predict_feed(SG, _load(file), QWEN3_8B)
    assert (feed.kind, feed.canonical, feed.width_states) == ("segments", (1, 9, 17, 25, 33), 5)
    assert feed.read_path == "dflash_config.target_layer_ids"


def test_dspark_on_vllm_reads_dflash_ids_plus_one() -> None:
    # eagle3_utils.py:121-124: dflash_config.target_layer_ids + 1 = boundaries = canonical ids
    feed = predict_feed(VL, _load("specforge-qwen3-8b-dspark.json"), QWEN3_8B)
    assert (feed.kind, feed.canonical, feed.width_states) == ("segments", (1, 9, 17, 25, 33), 5)


def test_domino_cannot_load_on_vllm() -> None:
    feed = predict_feed(VL, _load("specforge-qwen3-8b-domino.json"), QWEN3_8B)
    assert (feed.kind, feed.crash) == ("crash", "unloadable-drafter")
    assert "projector_type" in feed.source


def test_dflash2_on_a_64_layer_qwen3() -> None:
    target = _target("Qwen3ForCausalLM", "qwen3", 64, 5120)
    draft = _load("specforge-qwen3.6-27b-dflash2.json")
    for release in (SG, VL):
        feed = predict_feed(release, draft, target)
        assert (feed.kind, feed.canonical) == ("segments", (5, 19, 33, 47, 61)), release


def test_peagle_needs_the_speculators_format() -> None:
    draft = _load("specforge-qwen3-8b-peagle.json")
    sg = predict_feed(SG, draft, QWEN3_8B)
    assert (sg.kind, sg.crash) == ("crash", "unloadable-drafter")  # no EntryClass in srt/models
    vl = predict_feed(VL, draft, QWEN3_8B)
    # eagle.py:55-64 renames it Eagle3PEagleDraftModel, which registry.py does not list
    assert (vl.kind, vl.crash) == ("crash", "unloadable-drafter")
    speculators = {
        "speculators_model_type": "peagle",
        "architectures": ["PeagleLlamaForCausalLM"],
        "eagle_aux_hidden_state_layer_ids": [2, 18, 33],
        "transformer_layer_config": {"hidden_size": 4096, "num_hidden_layers": 4},
    }
    ok = predict_feed(VL, speculators, QWEN3_8B)
    assert (ok.kind, ok.canonical) == ("segments", (1, 17, 32))


def test_eagle31_is_answered_as_eagle3_with_its_norm_flags_read() -> None:
    draft = _load("specforge-qwen3-30b-a3b-eagle3.1.json")
    target = _load("targets/qwen3-30b-a3b.json")
    feed = predict_feed(VL, draft, target)
    assert any("EAGLE-3.1" in a for a in feed.assumptions)
    assert "fc_norm" not in feed.ignored_flags  # llama_eagle3.py:231-240 reads it


# -- the release's own checks and fallbacks --------------------------------------------------


def test_sglang_refuses_ids_outside_the_target() -> None:
    draft = {
        "architectures": ["DFlashDraftModel"],
        "num_hidden_layers": 2,
        "dflash_config": {"target_layer_ids": [1, 36]},
    }
    feed = predict_feed(SG, draft, QWEN3_8B)
    assert (feed.kind, feed.crash) == (
        "crash",
        "dflash-ids-out-of-range",
    )  # dflash_utils.py:579-585


def test_last_layer_output_is_unreachable_on_sglang() -> None:
    draft = {
        "architectures": ["DFlashDraftModel"],
        "num_hidden_layers": 5,
        "dflash_config": {"target_layer_ids": [0, 1, 2, 3, 35]},
    }
    sg = predict_feed(SG, draft, QWEN3_8B)
    # id 35 passes dflash_utils.py:579-585 (< L) but loop index 36 is never reached by
    # qwen3.py's forward: 4 states into an fc built for 5 (models/dflash.py:749-773, 832-840)
    assert (sg.kind, sg.crash, sg.canonical, sg.width_states) == (
        "crash",
        "fc-width-mismatch",
        (0, 1, 2, 3),
        5,
    )
    vl = predict_feed(VL, draft, QWEN3_8B)  # vLLM's boundary 36 = the last layer's output
    assert (vl.kind, vl.canonical) == ("segments", (0, 1, 2, 3, 35))


def test_sglang_fallback_differs_from_training_is_a_mismatch_naming_it() -> None:
    draft = _load("specforge-qwen3-8b-dflash.json") | {"num_target_layers": 40}
    report = check_drafter(draft, target=QWEN3_8B, serve_with=(SG,))
    row = report.rows[0]
    assert not row.ok
    assert report.readings[0][1].layer_ids == (1, 10, 19, 28, 37)  # trainer default on 40 layers
    assert row.plan.layer_ids == (1, 9, 17, 25, 33)  # SGLang's guess on the runtime 36 layers
    assert any("build_target_layer_ids(L=36" in n for n in row.plan.notes)


def test_dspark_without_markov_rank_is_refused_by_sglang() -> None:
    draft = _load("specforge-qwen3-8b-dspark.json")
    draft["dflash_config"] = {k: v for k, v in draft["dflash_config"].items() if k != "markov_rank"}
    feed = predict_feed(SG, draft, QWEN3_8B)
    assert (feed.kind, feed.crash) == (
        "crash",
        "dspark-markov-rank",
    )  # spec_aux_hidden_state.py:268-272


def test_nemotron_h_has_only_the_dflash_setter() -> None:
    target = _target("NemotronHForCausalLM", "nemotron_h", 52, 2688)
    draft = {
        "architectures": ["DFlashDraftModel"],
        "num_hidden_layers": 3,
        "dflash_config": {"target_layer_ids": [1, 25, 49]},
    }
    eagle = {
        "architectures": ["LlamaForCausalLMEagle3"],
        "eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, 25, 49]},
    }
    assert predict_feed(SG, eagle, target).kind == "unsupported"  # no set_eagle3_layers_to_capture
    feed = predict_feed(SG, draft, target)  # nemotron_h.py:1225-1234 set_dflash_layers_to_capture
    assert (feed.kind, feed.canonical) == ("segments", (1, 25, 49))


def test_target_without_the_dflash_setter_is_unsupported_on_sglang() -> None:
    target = _target("Qwen2ForCausalLM", "qwen2", 28, 3584)
    draft = {
        "architectures": ["DFlashDraftModel"],
        "num_hidden_layers": 2,
        "dflash_config": {"target_layer_ids": [1, 20]},
    }
    feed = predict_feed(SG, draft, target)
    assert feed.kind == "unsupported"
    assert "set_dflash_layers_to_capture" in feed.source


def test_nemotron35_encodings_that_disagree_split_the_engines() -> None:
    draft = {
        "architectures": ["DFlashDraftModel"],
        "num_hidden_layers": 2,
        "dflash_config": {"target_layer_ids": [4, 20]},
        "eagle_aux_hidden_state_layer_ids": [4, 20],  # should be [5, 21]
    }
    sg = predict_feed(SG, draft, QWEN3_8B)
    vl = predict_feed(VL, draft, QWEN3_8B)
    assert sg.canonical == (4, 20)
    assert vl.canonical == (3, 19)  # eagle3_utils.py:119: the eagle_aux ids win, as boundaries
    assert any("!= target_layer_ids + 1" in n for n in sg.notes)
    fine = draft | {"eagle_aux_hidden_state_layer_ids": [5, 21]}
    assert (
        predict_feed(SG, fine, QWEN3_8B).canonical
        == predict_feed(VL, fine, QWEN3_8B).canonical
        == (4, 20)
    )


def test_release_without_the_method_is_a_crash_naming_it() -> None:
    # sglang 0.5.14 srt/models/*.py: no EntryClass registers a DSpark drafter (models/dspark.py
    # first ships in 0.5.16), as its table's probed method rows record
    feed = predict_feed("sglang==0.5.14", _load("specforge-qwen3-8b-dspark.json"), QWEN3_8B)
    assert (feed.kind, feed.crash) == ("crash", "unloadable-drafter")
    assert "DSparkDraftModel" in feed.source


def test_method_code_the_probe_could_not_read_is_unknown_naming_it() -> None:
    # sglang 0.5.14 registers DFlashDraftModel but has no model_runner_components/
    # spec_aux_hidden_state.py, where 0.5.23 resolves the fallback: the row names what is missing
    feed = predict_feed("sglang==0.5.14", _load("specforge-qwen3-8b-dflash.json"), QWEN3_8B)
    assert feed.kind == "unknown"
    assert "spec_aux_hidden_state.py" in " ".join((feed.source, *feed.notes))


# -- generated configs of every method: check, then fix, then check -------------------------

SERVABLE = {
    "eagle3.1": (SG, VL),
    "p-eagle": (VL,),
    "dflash": (SG, VL),
    "dflash2": (SG, VL),
    "domino": (SG,),
    "dspark": (SG, VL),
    "nemotron-3.5": (SG, VL),
}


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    config=st.sampled_from(METHOD_NAMES).flatmap(
        lambda m: method_configs(m, num_target_layers=36, hidden_size=4096)
    )
)
def test_generated_configs_fix_then_check_ok(config: dict[str, Any], tmp_path: Path) -> None:
    method = methods.detect(config)
    releases = SERVABLE[method.name]
    # the last layer's output (id 35): SGLang's qwen3.py never reaches it, so no fix exists
    # (test_last_layer_output_is_unreachable_on_sglang); EAGLE-3 ids likewise
    eagle = config.get("eagle_config") or config
    ids = methods.block_ids_in(config) or eagle.get("eagle_aux_hidden_state_layer_ids") or [0]
    assume(max(ids) < 35)
    target = tmp_path / "target.json"
    target.write_text(json.dumps(QWEN3_8B))
    draft = tmp_path / "config.json"
    draft.write_text(json.dumps(config))
    trained = {"eagle3.1": "specforge", "p-eagle": "speculators"}.get(method.name)
    report = check_drafter(
        str(draft), target=str(target), serve_with=releases, trained_with=trained
    )
    for row in report.rows:  # the check's row is the release's prediction
        assert row.plan.layer_ids == predict_feed(row.plan.system, config, QWEN3_8B).canonical
    event(f"{method.name}: {'ok as written' if report.ok else 'fixed'}")
    if report.ok:
        return
    fixed = fix_drafter(draft, target=target, serve_with=releases, trained_with=trained)
    draft.write_text(fixed.text)
    again = check_drafter(str(draft), target=str(target), serve_with=releases, trained_with=trained)
    assert again.ok, again.render_text()


# -- the command line: fix --write, stamp, check --------------------------------------------


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    from eagle3_contracts.cli import main

    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_fix_write_then_check_ok(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    draft = tmp_path / "config.json"
    draft.write_text((DATA / "specforge-qwen3-8b-dflash.json").read_text())
    target = str(DATA / "targets" / "qwen3-8b.json")
    code, out, _ = _cli(capsys, "check", str(draft), "--target", target, "--serve-with", SG, VL)
    assert code == 1 and "crashes (fc-width-mismatch)" in out
    code, _, err = _cli(
        capsys,
        "fix",
        str(draft),
        "--target",
        target,
        "--serve-with",
        SG,
        VL,
        "--write",
    )  # no --trained-with: a DFlash drafter's ids are layer outputs whoever trained it
    assert code == 0, err
    assert json.loads(draft.read_text())["dflash_config"]["target_layer_ids"] == [1, 9, 17, 25, 33]
    code, out, _ = _cli(capsys, "check", str(draft), "--target", target, "--serve-with", SG, VL)
    assert code == 0, out


def test_cli_stamp_records_the_method_taps(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "config.json").write_text((DATA / "specforge-qwen3-8b-domino.json").read_text())
    target = str(DATA / "targets" / "qwen3-8b.json")
    code, out, err = _cli(
        capsys, "stamp", str(tmp_path), "--trained-with", "specforge", "--target", target
    )
    assert code == 0, err
    stamp = json.loads((tmp_path / "config.json").read_text())["eagle3_contract"]
    assert stamp["layer_ids"] == [1, 9, 17, 25, 33]
    code, out, _ = _cli(capsys, "check", str(tmp_path), "--target", target, "--serve-with", VL)
    assert code == 1 and "unloadable-drafter" in out  # vllm 0.33.0 has no Domino projector


def test_dspark_on_a_target_with_its_own_dspark_hook_is_unknown() -> None:
    # attention_backend_setup.py:63-64 routes DSpark to set_dspark_layers_to_capture first;
    # minimax_m3_vl.py:272-281 places it its own way, not read here
    target = _target("MiniMaxM3SparseForConditionalGeneration", "minimax_m3_vl", 48)
    feed = predict_feed(SG, _load("specforge-qwen3-8b-dspark.json"), target)
    assert feed.kind == "unknown"
    assert "set_dspark_layers_to_capture" in " ".join(feed.notes)
    # the same target with a DFlash drafter goes through set_dflash_layers_to_capture
    assert predict_feed(SG, _load("specforge-qwen3-8b-domino.json"), target).kind != "unsupported"


@given(
    drawn=st.sampled_from(METHOD_NAMES).flatmap(
        lambda m: st.tuples(st.just(m), method_configs(m, num_target_layers=st.integers(4, 64)))
    )
)
def test_method_configs_are_detected_as_drawn(drawn: tuple[str, dict[str, Any]]) -> None:
    name, config = drawn
    assert methods.detect(config).name == name
    ids = methods.block_ids_in(config)
    if ids is not None:  # sorted, distinct, inside the training target
        assert (
            list(ids) == sorted(set(ids)) and ids[0] >= 0 and ids[-1] < config["num_target_layers"]
        )


def test_method_configs_refuses_an_unknown_method() -> None:
    from hypothesis.errors import InvalidArgument

    with pytest.raises(InvalidArgument, match="method"):
        method_configs("medusa").example()


def test_nemotron_35_published_draft_on_nemotron_h() -> None:
    draft = _load("nvidia-nemotron-3-nano-nvfp4-dflash.json")
    target = _load("targets/nemotron-3-nano-30b-a3b.json")
    assert methods.detect(draft) is methods.NEMOTRON35
    for release in (SG, VL, f"{VL}:v1"):
        # SGLang: target_layer_ids through nemotron_h.py:1225-1234 (+1, end_layer reachable);
        # vLLM: the eagle_aux ids as boundaries (eagle3_utils.py:119) = target_layer_ids + 1
        feed = predict_feed(release, draft, target)
        assert (feed.kind, feed.canonical) == ("segments", (1, 5, 19, 29, 41, 51)), release


def test_longcat_flash_dflash_has_no_serving_release() -> None:
    draft = _load("specforge-longcat-flash-dflash.json")
    target = _load("targets/longcat-flash.json")
    sg = predict_feed(SG, draft, target)  # longcat_flash.py has only set_eagle3_layers_to_capture
    assert sg.kind == "unsupported" and "set_dflash_layers_to_capture" in sg.source
    assert predict_feed(VL, draft, target).kind == "unsupported"  # no SupportsEagle3


def test_dspark_prefixed_ids_against_a_dflash_sized_fc() -> None:
    # spec_aux_hidden_state.py:273-274 captures dspark_target_layer_ids; the DSpark drafter is a
    # DFlashDraftModel whose fc counts the DFlash ids (models/dspark.py:513-519, dflash.py:749-773)
    draft = _load("specforge-qwen3-8b-dspark.json") | {"dspark_target_layer_ids": [2, 20, 30]}
    feed = predict_feed(SG, draft, QWEN3_8B)
    assert (feed.kind, feed.crash, feed.canonical, feed.width_states) == (
        "crash",
        "fc-width-mismatch",
        (2, 20, 30),
        5,
    )


@settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    config=st.sampled_from(METHOD_NAMES).flatmap(
        lambda m: method_configs(m, num_target_layers=8, hidden_size=16, with_ids=True)
    )
)
def test_tiny_method_drafters_pass_the_weight_check(config: dict[str, Any], tmp_path: Path) -> None:
    from eagle3_contracts.testing.method_drafters import write_method_drafter

    config = {**config, "vocab_size": 32}
    if "transformer_layer_config" in config:
        config["transformer_layer_config"] = {
            **config["transformer_layer_config"],
            "vocab_size": 32,
        }
    folder = write_method_drafter(
        tmp_path / "drafter", config, num_target_layers=8, target_hidden_size=16
    )
    target = _target("Qwen3ForCausalLM", "qwen3", 8, 16) | {"vocab_size": 32}
    trained = {"eagle3.1": "specforge", "p-eagle": "speculators"}.get(methods.detect(config).name)
    report = check_drafter(str(folder), target=target, serve_with=(VL,), trained_with=trained)
    fc = next(c for c in report.drafter if c.name == "fc-width")
    assert fc.status == "ok" and "from the weights" in fc.message, fc


def test_vllm_v1_reads_the_dflash_ids_too() -> None:
    # gpu_model_runner.py:5207-5216: dflash_config.target_layer_ids + 1 when no top-level ids;
    # top-level target_layer_ids (read by V2 only) is not read by V1: its default then
    dspark = _load("specforge-qwen3-8b-dspark.json")
    v1 = predict_feed(f"{VL}:v1", dspark, QWEN3_8B)
    assert (v1.kind, v1.canonical) == ("segments", (1, 9, 17, 25, 33))
    top = {
        "architectures": ["DFlashDraftModel"],
        "num_hidden_layers": 2,
        "target_layer_ids": [4, 20],
    }
    assert predict_feed(f"{VL}:v2", top, QWEN3_8B).canonical == (4, 20)
    v1_top = predict_feed(f"{VL}:v1", top, QWEN3_8B)
    assert (v1_top.kind, v1_top.crash, v1_top.canonical) == (
        "crash",
        "fc-width-mismatch",
        (1, 17, 32),
    )


def test_fix_for_both_vllm_runners_writes_the_dflash_ids(tmp_path: Path) -> None:
    top = {
        "architectures": ["DFlashDraftModel"],
        "num_hidden_layers": 2,
        "hidden_size": 4096,
        "target_layer_ids": [4, 20],
    }
    draft = tmp_path / "config.json"
    draft.write_text(json.dumps(top))
    target = tmp_path / "target.json"
    target.write_text(json.dumps(QWEN3_8B))
    releases = (SG, f"{VL}:v1", f"{VL}:v2")
    fixed = fix_drafter(draft, target=target, serve_with=releases, trained_with=None)
    assert json.loads(fixed.text)["dflash_config"]["target_layer_ids"] == [4, 20]
    draft.write_text(fixed.text)
    assert check_drafter(str(draft), target=str(target), serve_with=releases).ok
