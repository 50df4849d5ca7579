"""Which drafters a release can load, read from its own registry code (``probe.registry``), and
the ``crashes (unloadable-drafter)`` verdict it gives (``conventions.predict``).

Fixtures are cut-down copies of the released code they cite."""

from __future__ import annotations

import ast
import dataclasses
import textwrap
from pathlib import Path

import pytest

from eagle3_contracts.conventions import predict, releases
from eagle3_contracts.conventions.releases import DrafterNameMap, DrafterRegistry, ReleaseTable
from eagle3_contracts.probe.registry import read_drafters

# sglang 0.5.23 models/llama_eagle3.py (LlamaForCausalLMEagle3 sets hot_token_id) and
# models/llama.py (the target class, which does not)
SGLANG_MODELS = {
    "llama_eagle3.py": """
        class LlamaForCausalLMEagle3(LlamaForCausalLM):
            def __init__(self, config):
                self.hot_token_id = None

        EntryClass = [LlamaForCausalLMEagle3]
    """,
    "kimi_k25_eagle3.py": """
        class _Base:
            def __init__(self):
                self.hot_token_id = None

        class Eagle3DeepseekV2ForCausalLM(_Base):
            pass

        EntryClass = Eagle3DeepseekV2ForCausalLM
    """,
    "llama.py": """
        class LlamaForCausalLM:
            def set_embed(self, embed):
                self.embed = embed

        EntryClass = [LlamaForCausalLM]
    """,
}
# sglang 0.5.23 speculative/eagle_worker_v2.py:366 reads it unguarded
SGLANG_WORKER = """
    class EagleDraftWorker:
        def init_lm_head(self):
            self.draft_runner.model.set_embed(embed)
            if self.draft_runner.model.hot_token_id is not None:
                pass
"""
# sglang 0.5.21 models/registry.py:90
SGLANG_REGISTRY = """
    def _normalize_archs(self, architectures):
        normalized_arch.append("TransformersForCausalLM")
"""

# vllm 0.28.0 model_executor/models/registry.py:645-653
VLLM_REGISTRY = """
    _SPECULATIVE_DECODING_MODELS = {
        "EagleLlamaForCausalLM": ("llama_eagle", "EagleLlamaForCausalLM"),
        "PEagleDraftModel": ("llama_eagle3", "Eagle3LlamaForCausalLM"),
        "Eagle3LlamaForCausalLM": ("llama_eagle3", "Eagle3LlamaForCausalLM"),
        "LlamaForCausalLMEagle3": ("llama_eagle3", "Eagle3LlamaForCausalLM"),
        "Eagle3Qwen3ForCausalLM": ("qwen3_eagle3", "Eagle3Qwen3ForCausalLM"),
    }
    _TEXT_GENERATION_MODELS = {"LlamaForCausalLM": ("llama", "LlamaForCausalLM")}
"""
# vllm 0.28.0 transformers_utils/configs/eagle.py:55-64
VLLM_EAGLE = """
    class EAGLEConfig:
        def __init__(self, model, method, **kwargs):
            if method == "eagle":
                kwargs["architectures"] = [f"Eagle{arch}" for arch in self.model.architectures]
            elif method == "eagle3":
                kwargs["architectures"] = [
                    {rename}
                    for arch in self.model.architectures
                ]
"""
MARKED = 'arch if arch.startswith("Eagle3") or arch.endswith("Eagle3") else f"Eagle3{arch}"'
# vllm 0.28.0 transformers_utils/configs/speculators/algos.py:15-48
VLLM_ALGOS = """
    SUPPORTED_SPECULATORS_TYPES = {}

    @register_speculator("eagle3")
    def update_eagle3(config_dict, pre_trained_config):
        eagle3_arch_map = {
            "qwen3": "Eagle3Qwen3ForCausalLM",
            "llama": "Eagle3LlamaForCausalLM",
        }
        model_type = pre_trained_config.get("model_type", "llama")
        if model_type not in eagle3_arch_map:
            raise ValueError(f"Unsupported model_type {model_type} for Eagle3 speculator")

    @register_speculator("peagle")
    def update_peagle(config_dict, pre_trained_config):
        pass
"""


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def _sglang(tmp_path: Path) -> dict:
    _write(tmp_path, {f"sglang/srt/models/{n}": t for n, t in SGLANG_MODELS.items()})
    _write(
        tmp_path,
        {
            "sglang/srt/speculative/eagle_worker_v2.py": SGLANG_WORKER,
            "sglang/srt/models/registry.py": SGLANG_REGISTRY,
        },
    )
    trees = {n: ast.parse(textwrap.dedent(t)) for n, t in SGLANG_MODELS.items()}
    return read_drafters("sglang", tmp_path, trees)


def _vllm(tmp_path: Path, rename: str = MARKED, speculators: bool = True) -> dict:
    files = {
        "vllm/model_executor/models/registry.py": VLLM_REGISTRY,
        "vllm/transformers_utils/configs/eagle.py": VLLM_EAGLE.replace("{rename}", rename),
    }
    if speculators:
        files["vllm/transformers_utils/configs/speculators/algos.py"] = VLLM_ALGOS
    _write(tmp_path, files)
    return read_drafters("vllm", tmp_path, {})


def _registry(section: dict) -> DrafterRegistry:
    found = ReleaseTable.from_json(
        {
            "framework": "sglang",
            "version": "0",
            "model_files": {},
            "classes": {},
            "id_source": {},
            "architectures": {},
            "drafters": section,
        }
    ).drafters
    assert found is not None
    return found


def test_sglang_drafters_are_the_entry_classes_that_set_hot_token_id(tmp_path):
    section = _sglang(tmp_path)
    assert section["registered"] == ["Eagle3DeepseekV2ForCausalLM", "LlamaForCausalLMEagle3"]
    assert section["name_map"] == "identity"
    assert section["source"] == "sglang/srt/speculative/eagle_worker_v2.py:5"
    assert section["fallback"] == "sglang/srt/models/registry.py:3 TransformersForCausalLM"
    assert section["speculators"] is None


def test_sglang_without_the_unguarded_read_gives_no_verdict(tmp_path):
    SGLANG = {"sglang/srt/speculative/eagle_worker_v2.py": "x = getattr(m, 'hot_token_id', None)"}
    _write(tmp_path, SGLANG)
    section = read_drafters("sglang", tmp_path, {})
    assert section["name_map"] is None
    assert _registry(section).refusal({"architectures": ["Anything"]}) is None


@pytest.mark.parametrize(
    ("architectures", "refused"),
    [
        (["LlamaForCausalLMEagle3"], False),
        (["Qwen3ForCausalLMEagle3"], True),  # not registered: Transformers fallback
        (["LlamaForCausalLM"], True),  # registered, but a target class: no hot_token_id
        (["Eagle3Speculator"], True),  # speculators format: SGLang reads none
    ],
)
def test_sglang_refuses_a_drafter_it_registers_no_eagle3_class_for(
    tmp_path, architectures, refused
):
    why = _registry(_sglang(tmp_path)).refusal({"architectures": architectures})
    assert (why is not None) == refused
    if why is not None:
        assert "it registers Eagle3DeepseekV2ForCausalLM, LlamaForCausalLMEagle3" in why
        assert "falls back to sglang/srt/models/registry.py:3 TransformersForCausalLM" in why


def test_vllm_rename_is_evaluated_from_the_release_code(tmp_path):
    section = _vllm(tmp_path)
    assert section["name_map"] == DrafterNameMap.PREFIX_UNLESS_MARKED.value
    assert section["registered"] == [
        "Eagle3LlamaForCausalLM", "Eagle3Qwen3ForCausalLM", "LlamaForCausalLMEagle3",
        "PEagleDraftModel",
    ]  # fmt: skip
    assert "eagle.py:7 renames it" in section["source"]
    assert section["speculators"]["types"] == ["eagle3", "peagle"]
    assert section["speculators"]["default_model_type"] == "llama"


@pytest.mark.parametrize(
    ("rename", "expected"),
    [
        ('f"Eagle3{arch}"', DrafterNameMap.PREFIX),
        ('arch if arch.startswith("Eagle3") else f"Eagle3{arch}"', DrafterNameMap.PREFIX_UNLESS_PREFIXED),
        ("arch", DrafterNameMap.IDENTITY),
        ("arch.lower()", None),  # a rename no named map explains: no verdict
    ],
)  # fmt: skip
def test_vllm_rename_forms_are_matched_to_one_named_map(tmp_path, rename, expected):
    section = _vllm(tmp_path, rename)
    assert section["name_map"] == (expected.value if expected else None)


@pytest.mark.parametrize(
    ("draft", "refused"),
    [
        ({"architectures": ["LlamaForCausalLM"]}, None),  # -> Eagle3LlamaForCausalLM
        ({"architectures": ["LlamaForCausalLMEagle3"]}, None),  # kept, registered
        ({"architectures": ["Qwen2ForCausalLM"]}, "looked up as Eagle3Qwen2ForCausalLM"),
        ({"architectures": ["PEagleDraftModel"]}, "looked up as Eagle3PEagleDraftModel"),
        (
            {"speculators_model_type": "eagle3", "transformer_layer_config": {"model_type": "qwen3"}},
            None,
        ),
        ({"speculators_model_type": "eagle3", "architectures": ["Eagle3Speculator"]}, None),
        (
            {"speculators_model_type": "eagle3", "transformer_layer_config": {"model_type": "qwen2"}},
            "maps transformer_layer_config.model_type llama, qwen3 only",
        ),
        ({"speculators_model_type": "medusa"}, "'medusa' is not a format it reads"),
    ],
)  # fmt: skip
def test_vllm_refusals(tmp_path, draft, refused):
    why = _registry(_vllm(tmp_path)).refusal(draft)
    if refused is None:
        assert why is None
    else:
        assert why is not None and refused in why


def test_vllm_without_a_speculators_reader_looks_the_given_name_up(tmp_path):
    registry = _registry(_vllm(tmp_path, speculators=False))
    why = registry.refusal(
        {"speculators_model_type": "eagle3", "architectures": ["Eagle3Speculator"]}
    )
    assert why is not None and "Eagle3Speculator name no EAGLE-3 drafter" in why


LLAMA_TARGET = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "num_hidden_layers": 32,
    "hidden_size": 4096,
}


def test_an_unloadable_drafter_is_a_crash_never_ok(tmp_path, monkeypatch):
    """A drafter whose architectures the release's registry cannot build is
    ``crash`` / ``unloadable-drafter`` naming what it registers; the same drafter renamed to a
    registered architecture is answered as before."""
    table = dataclasses.replace(
        releases.load_table("vllm", "0.33.0"), drafters=_registry(_vllm(tmp_path))
    )
    monkeypatch.setattr(predict.releases, "load_table", lambda fw, v: table)
    draft = {"architectures": ["Qwen2ForCausalLMEagle"], "eagle_config": {}}
    feed = predict.predict_feed("vllm==0.33.0", draft, LLAMA_TARGET)
    assert (feed.kind, feed.crash) == ("crash", "unloadable-drafter")
    assert "it registers Eagle3LlamaForCausalLM" in feed.notes[-1]
    ok = predict.predict_feed("vllm==0.33.0", {"architectures": ["LlamaForCausalLM"]}, LLAMA_TARGET)
    assert ok.kind == "segments"
    assert (
        ok.canonical
        == predict.predict_feed(
            "vllm==0.33.0", {"architectures": ["LlamaForCausalLMEagle3"]}, LLAMA_TARGET
        ).canonical
    )


# vllm 0.21.0 transformers_utils/configs/speculators/algos.py:15-45: one architecture always
VLLM_ALGOS_FIXED = """
    @register_speculator("eagle3")
    def update_eagle3(config_dict, pre_trained_config):
        pre_trained_config["architectures"] = ["Eagle3LlamaForCausalLM"]
"""


def test_vllm_speculators_updater_writing_one_architecture_loads_every_model_type(tmp_path):
    _vllm(tmp_path, speculators=False)
    _write(tmp_path, {"vllm/transformers_utils/configs/speculators/algos.py": VLLM_ALGOS_FIXED})
    section = read_drafters("vllm", tmp_path, {})
    assert section["speculators"]["fixed"] == "Eagle3LlamaForCausalLM"
    draft = {
        "speculators_model_type": "eagle3",
        "transformer_layer_config": {"model_type": "qwen2"},
    }
    assert _registry(section).refusal(draft) is None
