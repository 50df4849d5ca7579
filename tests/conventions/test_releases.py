"""``conventions.get("framework==version")`` and the public conversions answer an engine name by
simulating the release (``conventions.predict``), the one answer ``check`` gives."""

from __future__ import annotations

import pytest

from eagle3_contracts import conventions
from eagle3_contracts.config.readers import IDS_FIELD, read_target_config
from eagle3_contracts.conventions import EngineSpec, predict
from eagle3_contracts.conventions.release_ids import ReleaseReading
from eagle3_contracts.errors import ContractError


@pytest.mark.parametrize(
    ("name", "target", "ids", "canonical"),
    [
        # deepseek_v2.py after sglang#25454: +1 only when the first id is 1
        ("sglang==0.5.23", {"architectures": ["DeepseekV3ForCausalLM"]}, [2, 30, 58], (1, 29, 57)),
        ("sglang==0.5.23", {"architectures": ["DeepseekV3ForCausalLM"]}, [1, 30, 58], (1, 30, 58)),
        ("sglang==0.5.23", {"architectures": ["KimiK25ForConditionalGeneration"]}, [2, 30, 58],
         (1, 29, 57)),
        ("sglang==0.5.23", {"model_type": "kimi_k25"}, [2, 30, 58], (1, 29, 57)),
        ("sglang==0.5.12", {"architectures": ["DeepseekV3ForCausalLM"]}, [2, 30, 58], (2, 30, 58)),
        ("sglang==0.5.23", {"architectures": ["LlamaForCausalLM"]}, [2, 30, 58], (2, 30, 58)),
        # gpt_oss.py: loop indices when the largest id is L, else +1
        ("sglang==0.5.17", {"model_type": "gpt_oss"}, [2, 30, 61], (1, 29, 60)),
        ("sglang==0.5.17", {"model_type": "gpt_oss"}, [2, 30, 58], (2, 30, 58)),
        # vLLM: boundaries, concatenated ascending; to_canonical keeps the order given
        ("vllm==0.33.0", {"architectures": ["KimiK25ForConditionalGeneration"]}, [2, 30, 58],
         (1, 29, 57)),
        ("vllm==0.21.0", {"model_type": "qwen3"}, [58, 2, 30], (57, 1, 29)),
    ],
)  # fmt: skip
def test_to_canonical_is_what_the_release_feeds(name, target, ids, canonical) -> None:
    assert conventions.to_canonical(ids, name, 61, **target) == canonical
    config = read_target_config({**target, "num_hidden_layers": 61, "hidden_size": 16})
    draft = {"eagle_config": {IDS_FIELD: ids}, IDS_FIELD: ids}
    assert predict.predict_feed(name, draft, config).canonical == tuple(sorted(canonical))


def test_the_kimi_story_per_release() -> None:
    ids, n = [2, 30, 58], 61
    kimi = {"architectures": ["KimiK25ForConditionalGeneration"]}
    assert conventions.to_canonical(ids, "sglang==0.5.12", n, **kimi) == (2, 30, 58)
    assert conventions.to_canonical(ids, "sglang==0.5.23", n, **kimi) == (1, 29, 57)
    assert conventions.to_canonical(ids, "vllm==0.33.0", n, **kimi) == (1, 29, 57)
    # the proven fix: the ids that make each release feed the trained outputs 2, 30, 58
    assert conventions.from_canonical(ids, "sglang==0.5.12", n, **kimi) == (2, 30, 58)
    assert conventions.from_canonical(ids, "sglang==0.5.23", n, **kimi) == (3, 31, 59)
    assert conventions.from_canonical(ids, "vllm==0.33.0", n, **kimi) == (3, 31, 59)


def test_registry_get_answers_release_names_with_the_simulation() -> None:
    got = conventions.get("SGLang == 0.5.12", model_type="deepseek_v3", architectures=["X"])
    assert isinstance(got, ReleaseReading)
    assert got.spec == EngineSpec(conventions.Framework.SGLANG, "0.5.12", None, "SGLang == 0.5.12")
    assert (got.model_type, got.architectures) == ("deepseek_v3", ("X",))
    nested = conventions.get("vllm-nested", architectures=["LlamaForCausalLM"])
    assert isinstance(nested, ReleaseReading) and nested.name == "vllm==0.33.0:v1"
    assert nested.pp_split_rule == "vllm" and not nested.captures_before_layer


@pytest.mark.parametrize(
    ("name", "kwargs", "field", "says"),
    [
        ("sglang==0.5.99", {"model_type": "llama"}, "convention",
         "known sglang releases: 0.5.1, 0.5.1.post1"),
        ("tgi==3.0", {}, "convention", "unknown system name"),
        ("sglang==0.5.23", {"architectures": ["NoSuchForCausalLM"]}, "ids",
         "has no probed model file for NoSuchForCausalLM"),
        ("sglang==0.5.23", {}, "target", "depends on the target's model file"),
        ("sglang==0.5.23", {"architectures": ["MindSporeForCausalLM"]}, "ids",
         "delegates to self.model.set_eagle3_layers_to_capture (arch): not found"),
    ],
)  # fmt: skip
def test_errors_list_what_is_known_or_what_needs_reading(name, kwargs, field, says) -> None:
    with pytest.raises(ContractError) as info:
        conventions.to_canonical([2, 30, 58], name, 61, **kwargs)
    assert says in str(info.value) and info.value.field == field


def test_a_release_that_crashes_on_the_ids_says_so_never_translates() -> None:
    """Loop index 0 on deepseek_v2.py (sglang 0.5.13) is ``hidden_states + None``: the capture
    crashes, so the ids name no layers (check says the same crash)."""
    deepseek = {"architectures": ["DeepseekV3ForCausalLM"]}
    config = read_target_config({**deepseek, "num_hidden_layers": 61, "hidden_size": 16})
    draft = {"eagle_config": {IDS_FIELD: [0, 30, 58]}}
    feed = predict.predict_feed("sglang==0.5.13", draft, config)
    assert feed.kind == "crash"
    with pytest.raises(ContractError, match=rf"is crash \({feed.crash}\)"):
        conventions.to_canonical([0, 30, 58], "sglang==0.5.13", 61, **deepseek)
