"""How block-draft drafters (DFlash, Domino, DSpark, Nemotron-3.5) are trained: z-lab's DFlash
code (z-lab/dflash dflash/model.py) and SpecForge 0.2.0's DFlash-family recipes, answered as
``--trained-with`` claims on the published configs, each expectation citing the trainer code."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from eagle3_contracts.config.check import check_drafter
from eagle3_contracts.config.fix import fix_drafter
from eagle3_contracts.conventions import TrainerSpec, methods, parse_system
from eagle3_contracts.conventions.predict import predict_system
from eagle3_contracts.errors import ContractError
from eagle3_contracts.testing.strategies import method_configs

DATA = Path(__file__).parent / "data" / "methods"
TARGETS = DATA / "targets"
SG, VL = "sglang==0.5.23", "vllm==0.33.0"
ZL, SF = "zlab-dflash", "specforge"


def _load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((DATA / name).read_text())
    return data


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    from eagle3_contracts.cli import main

    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _qwen3(n: int) -> dict[str, Any]:
    return {
        "architectures": ["Qwen3ForCausalLM"],
        "model_type": "qwen3",
        "num_hidden_layers": n,
        "hidden_size": 1024,
    }


@pytest.mark.parametrize(
    "name", ["zlab-dflash", "z-lab-dflash", " Z-Lab-DFlash ", "zlab-dflash==0.1.0"]
)
def test_zlab_names_parse_to_one_trainer(name: str) -> None:
    spec = parse_system(name, field="trained_with")
    assert isinstance(spec, TrainerSpec)
    assert spec.release == "zlab-dflash==0.1.0"


@pytest.mark.parametrize(
    ("file", "target", "trainer", "taps"),
    [
        # dflash_config.target_layer_ids, read by both (model.py:312, model_providers.py:238)
        ("specforge-qwen3-8b-domino.json", "qwen3-8b.json", SF, [1, 9, 17, 25, 33]),
        ("specforge-qwen3-8b-dspark.json", "qwen3-8b.json", SF, [1, 9, 17, 25, 33]),
        # no ids: SpecForge's drafter default build_target_layer_ids(36, 5) (dflash.py:355-359)
        ("specforge-qwen3-8b-dflash.json", "qwen3-8b.json", SF, [1, 9, 17, 25, 33]),
    ],
)  # fmt: skip
def test_published_configs_give_the_trained_taps(
    file: str, target: str, trainer: str, taps: list[int]
) -> None:
    feed = predict_system(trainer, _load(file), _load(f"targets/{target}"))
    assert feed.kind == "segments", feed.notes
    assert list(feed.canonical) == taps
    assert feed.width_states == len(taps)  # fc built for len(ids) states (dflash.py:361-365)
    report = check_drafter(
        str(DATA / file), target=str(TARGETS / target), trained_with=trainer, serve_with=(SG,)
    )
    assert list(report.readings[0][1].layer_ids) == taps
    assert report.ok, report.render_text()


@pytest.mark.parametrize(
    ("trainer", "lines"), [(ZL, "model.py:313, 319"), (SF, "dflash.py:358, 370")]
)
def test_a_config_the_trainer_cannot_build_is_refused(trainer: str, lines: str) -> None:
    # NVIDIA's Nemotron-3.5 draft carries neither num_target_layers nor block_size: both
    # trainers' DFlashDraftModel reads them as attributes when it is built
    draft = _load("nvidia-nemotron-3-nano-nvfp4-dflash.json")
    target = _load("targets/nemotron-3-nano-30b-a3b.json")
    feed = predict_system(trainer, draft, target)
    assert (feed.kind, feed.crash) == ("crash", "trainer-refused")
    assert "num_target_layers / block_size" in feed.notes[-1] and lines in feed.notes[-1]
    feed = predict_system(trainer, {**draft, "num_target_layers": 52, "block_size": 16}, target)
    assert feed.kind == "segments", feed.notes
    assert list(feed.canonical) == [1, 5, 19, 29, 41, 51]  # dflash_config.target_layer_ids


def test_default_is_an_assumption_naming_the_trainer_code() -> None:
    feed = predict_system(
        SF, _load("specforge-qwen3-8b-dflash.json"), _load("targets/qwen3-8b.json")
    )
    said = " ".join(feed.assumptions)
    assert feed.native_ids is None and feed.ids_source == "default"
    assert "build_target_layer_ids(num_target_layers=36, draft layers=5)" in said
    assert "model_providers.py:230-241" in said  # its offline capture needs the ids


def test_zlab_needs_the_dflash_config_object() -> None:
    # z-lab model.py:312: self.config.dflash_config.get(...) fails on a config without one
    feed = predict_system(
        ZL, _load("specforge-qwen3-8b-dflash.json"), _load("targets/qwen3-8b.json")
    )
    assert (feed.kind, feed.crash) == ("crash", "trainer-refused")
    assert "dflash_config" in feed.notes[-1] and "model.py:312-314" in feed.notes[-1]


def test_specforge_refuses_a_target_its_engine_cannot_capture() -> None:
    # sglang 0.5.14 longcat_flash.py has no set_dflash_layers_to_capture (capture.py:107-112)
    draft = _load("specforge-longcat-flash-dflash.json")
    feed = predict_system(SF, draft, _load("targets/longcat-flash.json"))
    assert (feed.kind, feed.crash) == ("crash", "trainer-refused")
    assert "longcat_flash.py has no set_dflash_layers_to_capture" in feed.notes[-1]
    feed = predict_system(ZL, {**draft, "dflash_config": {}}, _load("targets/longcat-flash.json"))
    assert feed.kind == "segments"  # z-lab trains on the HF forward: no engine hook needed
    assert list(feed.canonical) == [1, 7, 13, 19, 25]  # build_target_layer_ids(28, 5)


@pytest.mark.parametrize(
    ("ids", "why"),
    [([1, 1, 20], "distinct"), ([-1, 4, 20], "non-negative"), ([1, 4, 36], "below")],
)
def test_specforge_offline_refusals_are_a_crash(ids: list[int], why: str) -> None:
    # specforge/application/composition.py:93-114
    draft = {**_load("specforge-qwen3-8b-dflash.json"), "dflash_config": {"target_layer_ids": ids}}
    feed = predict_system(SF, draft, _load("targets/qwen3-8b.json"))
    assert (feed.kind, feed.crash) == ("crash", "trainer-refused")
    assert why in feed.notes[-1] and feed.native_ids == tuple(ids)


def test_zlab_reads_the_embedding_but_refuses_ids_past_the_target() -> None:
    draft = {**_load("specforge-qwen3-8b-dflash.json"), "dflash_config": {"target_layer_ids": [-1]}}
    feed = predict_system(ZL, draft, _load("targets/qwen3-8b.json"))
    assert list(feed.canonical) == [-1]  # hidden_states[0]: the embedding (model.py:44)
    draft["dflash_config"] = {"target_layer_ids": [1, 36]}
    feed = predict_system(ZL, draft, _load("targets/qwen3-8b.json"))
    assert feed.crash == "trainer-refused" and "past the tuple" in feed.notes[-1]


@pytest.mark.parametrize(
    ("file", "trainer", "words"),
    [
        ("specforge-qwen3.6-27b-dflash2.json", SF, "this config is DFlash2"),
        ("specforge-qwen3-8b-dspark.json", ZL, "this config is DSpark"),
        ("specforge-qwen3-8b-peagle.json", ZL, "this config is P-EAGLE"),
    ],
)
def test_a_method_the_trainer_does_not_train_exits_2_in_one_line(
    file: str, trainer: str, words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    target = str(TARGETS / "qwen3-8b.json")
    code, out, err = _cli(capsys, "check", str(DATA / file), "--target", target,
                          "--trained-with", trainer, "--serve-with", SG)  # fmt: skip
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and words in err and "--trained-with" not in out
    with pytest.raises(ContractError) as exc:
        predict_system(trainer, _load(file), _load("targets/qwen3-8b.json"))
    assert exc.value.field == "trained_with"


def _top_level_only(n: int) -> dict[str, Any]:
    """A DFlash config naming its taps only at top-level target_layer_ids, which SGLang reads
    (dflash_utils.py:656-660) and neither trainer does (model.py:312, model_providers.py:238)."""
    return {
        "architectures": ["DFlashDraftModel"],
        "num_hidden_layers": 5,
        "num_target_layers": n,
        "hidden_size": 4096,
        "block_size": 16,
        "dflash_config": {"mask_token_id": 5},
        "target_layer_ids": [2, 10, 18, 26, 34],
    }


@pytest.mark.parametrize("trainer", [ZL, SF])
def test_unread_top_level_ids_are_a_mismatch_fix_write_then_check_ok(
    trainer: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    draft = tmp_path / "config.json"
    draft.write_text(json.dumps(_top_level_only(36), indent=2))
    target = str(TARGETS / "qwen3-8b.json")
    base = ("--target", target, "--trained-with", trainer, "--serve-with", SG, VL)
    code, out, _ = _cli(capsys, "check", str(draft), *base)
    assert code == 1 and "mismatch" in out.lower(), out
    assert "target_layer_ids = [2, 10, 18, 26, 34] is not read by" in out
    code, _, err = _cli(capsys, "fix", str(draft), *base, "--write")
    assert code == 0, err
    written = json.loads(draft.read_text())
    assert written["target_layer_ids"] == [1, 9, 17, 25, 33]  # the trained default, for SGLang
    code, out, _ = _cli(capsys, "check", str(draft), *base)
    assert code == 0, out


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(min_value=8, max_value=64),
    data=st.data(),
    trainer=st.sampled_from([ZL, SF]),
)
def test_explicit_ids_are_layer_outputs_for_both_trainers(
    n: int, data: st.DataObject, trainer: str
) -> None:
    ids = data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=6, unique=True))
    draft = {
        "architectures": ["DFlashDraftModel"],
        "num_hidden_layers": len(ids),
        "num_target_layers": n,
        "block_size": 16,
        "hidden_size": 1024,
        "dflash_config": {"target_layer_ids": ids},
    }
    feed = predict_system(trainer, draft, _qwen3(n))
    assert list(feed.canonical) == ids and feed.native_ids == tuple(ids)
    assert feed.read_path == "dflash_config.target_layer_ids"


TRAINED_BY = {
    SF: ("dflash", "domino", "dspark", "nemotron-3.5"),  # specforge/algorithms/builtin.py:16
    ZL: ("dflash", "nemotron-3.5"),  # z-lab dflash/model.py:302 DFlashDraftModel
}
SERVABLE = {  # releases that load each method (tests/conventions/test_methods.py SERVABLE)
    "dflash": (SG, VL),
    "domino": (SG,),
    "dspark": (SG, VL),
    "nemotron-3.5": (SG, VL),
}


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    pair=st.sampled_from(sorted(TRAINED_BY)).flatmap(
        lambda t: st.tuples(
            st.just(t),
            st.sampled_from(TRAINED_BY[t]).flatmap(
                lambda m: method_configs(m, num_target_layers=36, hidden_size=4096)
            ),
        )
    )
)
def test_generated_configs_with_a_trainer_fix_write_then_check_ok(
    pair: tuple[str, dict[str, Any]], tmp_path: Path
) -> None:
    trainer, config = pair
    ids = methods.block_ids_in(config) or [0]
    assume(max(ids) < 35)  # the last output: SGLang's qwen3.py never reaches it (no fix exists)
    releases = SERVABLE[methods.detect(config).name]
    target = tmp_path / "target.json"
    target.write_text(json.dumps(_load("targets/qwen3-8b.json")))
    draft = tmp_path / "config.json"
    draft.write_text(json.dumps(config))
    report = check_drafter(
        str(draft), target=str(target), serve_with=releases, trained_with=trainer
    )
    trained = report.readings[0][1]
    if trained.feed.kind == "crash":  # z-lab without a dflash_config object: nothing to fix
        assert trainer == ZL and "dflash_config" not in config
        return
    event(f"{trainer} {methods.detect(config).name}: {'ok' if report.ok else 'fixed'}")
    if report.ok:
        return
    fixed = fix_drafter(draft, target=target, serve_with=releases, trained_with=trainer)
    draft.write_text(fixed.text)
    again = check_drafter(str(draft), target=str(target), serve_with=releases, trained_with=trainer)
    assert again.ok, again.render_text()
    assert again.readings[0][1].layer_ids == trained.layer_ids  # the claim did not move


def test_the_probe_refuses_a_trainer_without_a_wheel_in_one_line() -> None:
    from eagle3_contracts.probe.__main__ import main

    with pytest.raises(SystemExit) as exc:  # refused before anything is fetched
        main(["refresh", "--release", "zlab-dflash==0.1.0"])
    assert str(exc.value) == "--release zlab-dflash==0.1.0: zlab-dflash has no wheel to probe"
