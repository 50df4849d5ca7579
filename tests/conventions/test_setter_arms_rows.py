"""Released rows whose EAGLE-3 setter arms no capture site (``probe.tables.setter_arms``): the
row is the crash the target's forward raises, never ``ok``."""

from __future__ import annotations

import pytest

from eagle3_contracts.conventions.predict import predict_feed

QWEN3_5 = {
    "architectures": ["Qwen3_5MoeForConditionalGeneration"],
    "model_type": "qwen3_5_moe",
    "text_config": {"model_type": "qwen3_5_moe_text", "num_hidden_layers": 40, "hidden_size": 32},
}
MINIMAX_M3 = {
    "architectures": ["MiniMaxM3SparseForCausalLM"],
    "model_type": "minimax_m3",
    "num_hidden_layers": 40,
    "hidden_size": 32,
}
DRAFT = {"hidden_size": 32, "eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, 19, 35]}}


@pytest.mark.parametrize(
    ("release", "target", "line"),
    [
        ("sglang==0.5.12", QWEN3_5, 1113),
        ("sglang==0.5.14", QWEN3_5, 1255),
        ("sglang==0.5.17", QWEN3_5, 1442),
        ("sglang==0.5.16", MINIMAX_M3, 1397),
        ("sglang==0.5.17", MINIMAX_M3, 1400),
    ],
)
def test_released_rows_whose_setter_arms_nothing_crash_with_no_aux_states(release, target, line):
    """These rows read ``ok`` before the rule: the EAGLE-3 setter writes ``layers_to_capture``,
    the loop reads the DFlash flag, the model returns a bare tensor and the wrapper unpacks it
    (sglang 0.5.14 ``qwen3_vl.py:1285``, 0.5.16 ``minimax_m3.py:1524``)."""
    feed = predict_feed(release, DRAFT, target)
    assert (feed.kind, feed.crash, feed.canonical) == ("crash", "no-aux-states", ())
    assert f"capture at line {line} reads flag _is_layer_to_capture" in feed.notes[0]


def test_the_release_whose_inner_setter_sets_the_flag_still_feeds_the_ids():
    """sglang 0.5.23 ``qwen3_5.py`` ``Qwen3_5ForCausalLM.set_eagle3_layers_to_capture`` sets
    the flag the loop reads: the row is answered, not a crash."""
    feed = predict_feed("sglang==0.5.23", DRAFT, QWEN3_5)
    assert (feed.kind, feed.canonical) == ("segments", (1, 19, 35))


def test_a_specforge_answer_says_only_offline_capture_runs_on_a_stock_install():
    """SpecForge 0.2.0 launch_plan.py:492-495 starts SGLang with --enable-spec-capture, a flag
    sglang 0.5.14 server_args.py does not define: no 'patched server' is assumed."""
    from eagle3_contracts.conventions.predict import predict_system

    llama = {"architectures": ["LlamaForCausalLM"], "num_hidden_layers": 40, "hidden_size": 32}
    feed = predict_system("specforge==0.2.0", DRAFT, llama)
    said = " ".join(feed.assumptions)
    assert "Only offline capture runs on a stock install" in said
    assert "--enable-spec-capture --spec-capture-aux-layer-ids" in said
    assert "patched" not in said


def test_fc_norm_is_described_as_speculators_per_segment_norm_before_fc():
    from eagle3_contracts.config.readers import KNOWN_NORM_FLAGS as NORM_FLAGS

    assert "before concatenation and fc" in NORM_FLAGS["fc_norm"]
    assert "exclusive with norm_before_fc" in NORM_FLAGS["fc_norm"]


def test_the_readme_table_shows_a_row_whose_setter_arms_nothing_as_a_crash():
    from eagle3_contracts.conventions.releases import load_table
    from eagle3_contracts.probe.render import canonical_fed

    old, new = load_table("sglang", "0.5.14"), load_table("sglang", "0.5.23")
    key = "qwen3_5.py:Qwen3_5ForConditionalGeneration"
    assert canonical_fed(old, key, "boundaries_2_mid_L-3", 61) == "crash(no aux)"
    assert canonical_fed(new, key, "boundaries_2_mid_L-3", 61) == "2, 30, 58"


def test_a_setter_whose_arming_was_not_read_makes_the_row_unknown(monkeypatch):
    """A row whose setter-to-loop hand-on the probe could not read statically is unknown, and
    the note names the setter and what was not read (never ok, never a guessed crash)."""
    import dataclasses

    from eagle3_contracts.conventions import releases

    real = releases.load_table
    setter = "llama.py:LlamaForCausalLM.set_eagle3_layers_to_capture (line 1)"

    def with_unread_arms(framework, version):
        table = real(framework, version)
        key = "llama.py:LlamaForCausalLM"
        row = dataclasses.replace(
            table.classes[key],
            setter_arms=releases.SetterArms(
                verdict=releases.ArmsVerdict.UNKNOWN,
                writes=("layers_to_capture",),
                setters=(setter,),
                unarmed=(),
                unread=("self.model.layers_to_capture via a helper",),
            ),
        )
        return dataclasses.replace(table, classes={**table.classes, key: row})

    monkeypatch.setattr(releases, "load_table", with_unread_arms)
    llama = {"architectures": ["LlamaForCausalLM"], "num_hidden_layers": 40, "hidden_size": 32}
    feed = predict_feed("sglang==0.5.23", DRAFT, llama)
    assert feed.kind == "unknown"
    assert (
        f"whether the EAGLE-3 setter ({setter}) arms the capture is not read statically "
        "(self.model.layers_to_capture via a helper)"
    ) in " ".join((*feed.notes, feed.source))
