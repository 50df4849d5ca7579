"""One target reader: ``diagnose`` (``capture.targets.load_target``) reads a target's
``config.json`` through ``config.readers`` exactly as ``check`` does, so the two cannot read one
file differently (a nested ``llm_config`` / ``thinker_config.text_config``, a ``text_config``
that relies on transformers' class defaults)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eagle3_contracts.capture.targets import load_target
from eagle3_contracts.config.readers import read_target_config
from eagle3_contracts.errors import ConfigError

GEMMA3 = {
    "model_type": "gemma3",
    "architectures": ["Gemma3ForConditionalGeneration"],
    # no num_hidden_layers: transformers' Gemma3TextConfig default (26) applies
    "text_config": {
        "model_type": "gemma3_text",
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_attention_heads": 2,
        "num_key_value_heads": 1,
        "head_dim": 16,
        "vocab_size": 128,
    },
    "vision_config": {
        "model_type": "siglip_vision_model",
        "hidden_size": 16,
        "intermediate_size": 32,
        "num_hidden_layers": 1,
        "num_attention_heads": 2,
        "image_size": 16,
        "patch_size": 8,
    },
    "mm_tokens_per_image": 4,
}


def _write(folder: Path, config: dict) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


def test_a_text_config_relying_on_transformers_defaults_is_read_as_check_reads_it(
    tmp_path: Path,
) -> None:
    path = _write(tmp_path, GEMMA3)
    read = read_target_config(path)  # what check reads
    assert (read.num_layers, read.hidden_size, read.section) == (26, 32, "text_config.")
    target = load_target(path)  # what diagnose builds (before: text_config.num_hidden_layers
    assert (target.num_layers, target.hidden_size) == (26, 32)  # "must be a positive integer")
    assert target.architectures == ("Gemma3ForConditionalGeneration",)


@pytest.mark.parametrize("section", ["llm_config", "thinker_config.text_config"])
def test_a_nested_language_model_is_checked_at_the_field_check_reads(
    tmp_path: Path, section: str
) -> None:
    sizes = {"num_hidden_layers": 2000, "hidden_size": 32, "vocab_size": 64}
    config: dict = {"model_type": "internvl_chat", "architectures": ["InternVLChatModel"]}
    node = config
    *heads, last = section.split(".")
    for head in heads:
        node = node.setdefault(head, {})
    node[last] = sizes
    _write(tmp_path, config)
    (tmp_path / "model.safetensors").write_bytes(b"")
    assert read_target_config(tmp_path).num_layers == 2000  # check reads the nested section
    with pytest.raises(ConfigError) as err:  # diagnose refuses that depth, naming that field
        load_target(tmp_path)
    assert err.value.field == f"{section}.num_hidden_layers"
    assert "num_hidden_layers = 2000 is over the limit of 1024" in str(err.value)


def test_a_target_without_a_vocabulary_is_refused_naming_it(tmp_path: Path) -> None:
    config = {"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 32}
    with pytest.raises(ConfigError) as err:
        load_target(_write(tmp_path, config))
    assert err.value.field == "vocab_size"
