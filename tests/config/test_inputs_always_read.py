"""Every input a user passes is read and checked: a refused trained side still opens
``--weights``, a target section of the wrong type is refused, and a drafter whose hidden size
differs from the target's is a crash on the serving row itself."""

from __future__ import annotations

import pickle
import struct

import pytest

from eagle3_contracts.config.check import check_drafter
from eagle3_contracts.config.readers import read_target_config
from eagle3_contracts.conventions.predict import predict_feed
from eagle3_contracts.errors import ConfigError

LLAMA = {"architectures": ["LlamaForCausalLM"], "num_hidden_layers": 32, "hidden_size": 32}
FOUR_IDS = {"hidden_size": 32, "eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, 2, 3, 4]}}


def _pickle(path):
    path.write_bytes(pickle.dumps({"fc.weight": [0.0] * 8}))
    return path


def _truncated(path):
    path.write_bytes(struct.pack("<Q", 4096) + b'{"fc.weight": ')
    return path


@pytest.mark.parametrize("make", [_pickle, _truncated], ids=["pickle", "truncated-header"])
def test_weights_are_read_when_the_trained_side_is_refused(tmp_path, make):
    """specforge==0.2.0 refuses four ids; the weights passed alongside were never opened, so a
    pickle or a truncated safetensors header went unreported."""
    weights = make(tmp_path / "model.safetensors")
    with pytest.raises(ConfigError) as err:
        check_drafter(
            FOUR_IDS,
            target=LLAMA,
            trained_with="specforge==0.2.0",
            serve_with=["sglang==0.5.23"],
            weights=weights,
        )
    assert str(weights) in str(err.value) or "safetensors" in str(err.value)


def test_a_refused_trained_side_still_gets_its_drafter_checks():
    report = check_drafter(
        FOUR_IDS, target=LLAMA, trained_with="specforge==0.2.0", serve_with=["sglang==0.5.23"]
    )
    assert report.readings[0][1].refused
    fc = next(c for c in report.drafter if c.name == "fc-width")
    assert "4 x 32" in fc.message


@pytest.mark.parametrize("section", ["text_config", "llm_config"])
@pytest.mark.parametrize("value", [[1], "qwen", 3])
def test_a_text_section_of_the_wrong_type_is_refused_also_beside_a_top_level_depth(section, value):
    with pytest.raises(ConfigError) as err:
        read_target_config({**LLAMA, section: value})
    assert err.value.field == section


@pytest.mark.parametrize("release", ["sglang==0.5.14", "sglang==0.5.23", "vllm==0.33.0:v1"])
@pytest.mark.parametrize(
    ("draft_width", "field"),
    [
        ({"hidden_size": 64}, "hidden_size"),
        ({"hidden_size": 32, "target_hidden_size": 48}, "target_hidden_size"),
    ],
)
def test_a_drafter_sized_for_another_width_crashes_on_the_serving_row(release, draft_width, field):
    """vLLM 0.33.0 llama_eagle3.py:218-221 and SGLang 0.5.23 llama_eagle3.py:151-163 size fc
    from the draft config's target_hidden_size, else hidden_size: a drafter of another width
    gets an fc of k x its width while the target sends k x 32."""
    draft = {**draft_width, "eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, 15, 28]}}
    feed = predict_feed(release, draft, LLAMA)
    assert (feed.kind, feed.crash) == ("crash", "fc-width-mismatch")
    assert f"draft config's {field}" in feed.notes[-1]
    report = check_drafter(
        draft, target=LLAMA, trained_with="specforge==0.2.0", serve_with=[release]
    )
    assert not report.rows[0].ok
    assert "fc-width-mismatch" in report.rows[0].findings[0].message


def test_a_drafter_of_the_target_width_is_fed_as_before():
    draft = {"hidden_size": 64, "target_hidden_size": 32}
    draft["eagle_config"] = {"eagle_aux_hidden_state_layer_ids": [1, 15, 28]}
    feed = predict_feed("sglang==0.5.23", draft, LLAMA)
    assert (feed.kind, feed.canonical) == ("segments", (1, 15, 28))
