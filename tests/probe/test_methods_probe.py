"""The drafter-method rows the probe reads from each release (``probe/methods.py``): the rows
read by hand from the sglang==0.5.23 and vllm==0.33.0 wheels are what the shipped tables hold,
and the probe's own reading decides presence, absence and what it could not find."""

from __future__ import annotations

import dataclasses
import textwrap
from pathlib import Path
from typing import Any

import pytest

from eagle3_contracts.conventions import methods
from eagle3_contracts.conventions.releases import load_table
from eagle3_contracts.probe.frameworks import FRAMEWORKS
from eagle3_contracts.probe.methods import Anchor, Sources, read_methods

_SG, _VL = "sglang==0.5.23", "vllm==0.33.0"
_SG_READ = (
    "dflash_config.target_layer_ids, else top-level target_layer_ids (srt/speculative/"
    "dflash_utils.py:657-675), then model set_dflash_layers_to_capture: loop index id + 1 "
    "(models/llama.py:943-953, qwen3.py:793-805, nemotron_h.py:1225-1234)"
)
_SG_ROW = {
    "loads": True,
    "reads": (_SG_READ,),
    "fallback": "build_target_layer_ids(L, draft num_hidden_layers) on the runtime target "
    "(dflash_utils.py:568-571, spec_aux_hidden_state.py:247-250): a guess, logged nowhere",
    "fc": "len(target_layer_ids), else draft num_hidden_layers, x hidden_size "
    "(models/dflash.py:750-774)",
    "setter": "set_dflash_layers_to_capture (attention_backend_setup.py:62-72)",
    "checks": (
        "ids must lie in [0, L) (dflash_utils.py:579-584 ValueError)",
        "num_target_layers != L only logs a warning (spec_aux_hidden_state.py:236-245)",
        "draft num_hidden_layers required (dflash_utils.py:545-551)",
    ),
    "only_format": None,
}
_VL_READ = (
    "V2 v1/worker/gpu/spec_decode/eagle/eagle3_utils.py:113-150: top-level "
    "eagle_aux_hidden_state_layer_ids, then dflash_config.target_layer_ids + 1, then "
    "dspark_target_layer_ids + 1, then target_layer_ids + 1 (boundaries)"
)
_VL_ROW = {
    "loads": True,
    "reads": (_VL_READ,),
    "fallback": "the EAGLE-3 default boundaries (2, L//2, L-3) of the target model file",
    "fc": "len(eagle3_utils ids), else draft num_hidden_layers, x (target_hidden_size or "
    "hidden_size) (model_executor/models/qwen3_dflash.py:84-93; a different feed raises "
    "ValueError at qwen3_dflash.py:839-845)",
    "setter": "SupportsEagle3 set_aux_hidden_state_layers",
    "checks": (),
    "only_format": None,
}
_REGISTRY = "model_executor/models/registry.py"


def _absent(drafter: str, **rest: Any) -> dict[str, Any]:
    empty = {"reads": (), "fallback": "", "fc": "", "setter": "", "checks": ()}
    return {"loads": False, "drafter": drafter, **empty, "only_format": None, **rest}


HAND_READ: dict[tuple[str, str], dict[str, Any]] = {
    (_SG, "dflash"): {
        **_SG_ROW,
        "drafter": "models/dflash.py:1317-1324 EntryClass DFlashDraftModel",
    },
    (_SG, "dflash2"): {
        **_SG_ROW,
        "drafter": "models/dflash.py:1264, 1317-1324 EntryClass DFlash2DraftModel",
    },
    (_SG, "domino"): {
        **_SG_ROW,
        "drafter": "models/dflash.py DFlashDraftModel with projector_type 'domino' "
        "(dflash_utils.py:542-543)",
        "checks": (
            *_SG_ROW["checks"],
            "Domino needs shift_label (bool), pure_draft_prefix_len == 1, gru_hidden_dim, "
            "emb_dim, block_size > 1 (dflash_utils.py:774-791)",
        ),
    },
    (_SG, "dspark"): {
        **_SG_ROW,
        "drafter": "models/dspark.py:995 EntryClass Qwen3DSparkModel, LingDSparkModel, "
        "DSparkDraftModel",
        "reads": (
            "dspark_target_layer_ids overrides the DFlash ids (spec_aux_hidden_state.py:260-277, "
            "speculative/dspark_components/dspark_config.py:221-237); " + _SG_READ,
        ),
        "setter": "set_dspark_layers_to_capture, else set_dflash_layers_to_capture "
        "(attention_backend_setup.py:62-72)",
        "checks": (
            *_SG_ROW["checks"],
            "markov_rank > 0 (spec_aux_hidden_state.py:268-272 ValueError)",
        ),
    },
    (_SG, "nemotron-3.5"): {
        **_SG_ROW,
        "drafter": "models/dflash.py DFlashDraftModel / models/dspark.py Qwen3DSparkModel, the "
        "Nemotron-3.5 layout told by is_nemotron_35_draft_config (dflash_utils.py:461-498)",
        "reads": (_SG_READ + "; eagle_aux_hidden_state_layer_ids is read only to tell the layout",),
        "checks": (
            *_SG_ROW["checks"],
            "the Nemotron-3.5 layout needs eagle_aux_hidden_state_layer_ids[i] == "
            "target_layer_ids[i] + 1 (dflash_utils.py:487-493), else it is built as a generic "
            "DFlash drafter",
        ),
    },
    (_SG, "p-eagle"): _absent(
        "no EntryClass registers PEagleDraftModel / PeagleLlamaForCausalLM (srt/models/*.py): "
        "the draft model cannot be built"
    ),
    (_VL, "dflash"): {**_VL_ROW, "drafter": f"{_REGISTRY}:664 DFlashDraftModel -> qwen3_dflash"},
    (_VL, "dflash2"): {**_VL_ROW, "drafter": f"{_REGISTRY}:666 DFlash2DraftModel -> qwen3_dflash2"},
    (_VL, "domino"): {
        **_VL_ROW,
        "loads": False,
        "drafter": "no vllm 0.33.0 file reads dflash_config.projector_type: a Domino drafter's "
        "projector (gru_hidden_dim, emb_dim) has no module to load into",
        "setter": "",
    },
    (_VL, "dspark"): {
        **_VL_ROW,
        "drafter": f"{_REGISTRY}:681 Qwen3DSparkModel -> qwen3_dspark (DFlash fc sizing, "
        "qwen3_dspark.py:233)",
    },
    (_VL, "nemotron-3.5"): {
        **_VL_ROW,
        "drafter": f"{_REGISTRY}:664 DFlashDraftModel -> qwen3_dflash",
        "reads": (_VL_READ + " (the eagle_aux ids win here)",),
    },
    (_VL, "p-eagle"): {
        **_VL_ROW,
        "drafter": "P-EAGLE loads from the speculators format only: speculators_model_type "
        "'peagle' -> method eagle3 with parallel drafting (transformers_utils/configs/"
        "speculators/base.py:133-134, algos.py:54-87 -> PeagleLlamaForCausalLM / "
        "PeagleQwen3ForCausalLM, registry.py:699, 706); any other config is wrapped by "
        "EAGLEConfig as 'Eagle3' + architecture (transformers_utils/configs/eagle.py:55-64, "
        "config/speculative.py:1514-1532), e.g. Eagle3PEagleDraftModel, which registry.py does "
        "not list: the engine refuses to start",
        "reads": ("as EAGLE-3",),
        "fallback": "as EAGLE-3",
        "fc": "as EAGLE-3 (llama_eagle3.py)",
        "only_format": ("speculators_model_type", "peagle"),
    },
}
"""Read by hand from the wheels (file:line as each release numbers them)."""


@pytest.mark.parametrize(("release", "method"), sorted(HAND_READ))
def test_shipped_rows_equal_the_hand_reading(release: str, method: str) -> None:
    framework, version = release.split("==")
    row = methods.engine_method(
        next(m for m in methods.METHODS if m.name == method), load_table(framework, version)
    )
    assert row is not None
    got = {f.name: getattr(row, f.name) for f in dataclasses.fields(row)}
    assert got.pop("release") == release
    assert got.pop("method") == method
    assert got.pop("unknown") == ()
    assert got == HAND_READ[(release, method)]


def test_every_shipped_table_has_method_rows() -> None:
    for framework, versions in (
        ("sglang", ("0.5.1", "0.5.19", "0.5.23")),
        ("vllm", ("0.10.0", "0.33.0")),
    ):
        for version in versions:
            rows = load_table(framework, version).methods["rows"]
            assert set(rows) == {
                m.name for m in methods.METHODS if m.name not in ("eagle3", "eagle3.1")
            }


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


def test_anchor_spans_are_the_statement_lines(tmp_path: Path) -> None:
    root = _write(
        tmp_path,
        {
            "sglang/srt/x.py": """\
            def f(cfg):
                # a comment line is no statement
                ids = cfg.get("target_layer_ids")
                if ids is None:
                    return None
                elif ids == []:
                    raise ValueError("empty")
                return ids
            """
        },
    )
    src = Sources(FRAMEWORKS["sglang"], root)
    assert src.locate(Anchor("srt/x.py", "def f", within="")) == "1-8"
    assert src.locate(Anchor("srt/x.py", "ids = cfg.get", through="return ids")) == "3-8"
    assert src.locate(Anchor("srt/x.py", "if ids is None", body_only=True)) == "4-5"
    assert src.locate(Anchor("srt/x.py", "raise ValueError")) == "7"
    assert src.locate(Anchor("srt/x.py", "not in the file")) is None
    assert src.locate(Anchor("srt/missing.py", "def f")) is None


def test_sglang_release_without_the_drafter_records_absence(tmp_path: Path) -> None:
    root = _write(
        tmp_path,
        {
            "sglang/srt/models/llama.py": """\
            class LlamaForCausalLM:
                def set_dflash_layers_to_capture(self, layer_ids):
                    self.model.layers_to_capture = [val + 1 for val in layer_ids]
            EntryClass = [LlamaForCausalLM]
            """
        },
    )
    read = read_methods(FRAMEWORKS["sglang"], "9.9", root)
    assert read["dflash_setters"] == ["llama.py"]
    assert read["dspark_setters"] == []
    for name, row in read["rows"].items():
        assert row["loads"] is False, name
        assert "no EntryClass registers" in row["drafter"], name


def test_sglang_drafter_without_the_read_code_is_unknown_naming_it(tmp_path: Path) -> None:
    root = _write(
        tmp_path,
        {
            "sglang/srt/models/dflash.py": """\
            class DFlashDraftModel:
                pass
            EntryClass = [DFlashDraftModel]
            """
        },
    )
    row = read_methods(FRAMEWORKS["sglang"], "9.9", root)["rows"]["dflash"]
    assert row["loads"] is True
    assert row["drafter"] == "models/dflash.py:3 EntryClass DFlashDraftModel"
    assert any("dflash_utils.py" in u and "build_target_layer_ids" not in u for u in row["unknown"])
    assert any("spec_aux_hidden_state.py" in u for u in row["unknown"])


def test_vllm_reader_in_another_order_is_unknown(tmp_path: Path) -> None:
    reader = """\
    def get_eagle3_aux_layers_from_config(spec_config):
        hf_config = spec_config.hf_config
        layer_ids = getattr(hf_config, "target_layer_ids", None)
        if not layer_ids:
            layer_ids = getattr(hf_config, "eagle_aux_hidden_state_layer_ids", None)
        if not layer_ids:
            layer_ids = getattr(hf_config, "dflash_config", None)
        if not layer_ids:
            layer_ids = getattr(hf_config, "dspark_target_layer_ids", None)
        return layer_ids
    """
    root = _write(
        tmp_path,
        {
            "vllm/model_executor/models/registry.py": """\
            _SPECULATIVE = {
                "DFlashDraftModel": ("qwen3_dflash", "DFlashQwen3ForCausalLM"),
            }
            """,
            "vllm/v1/worker/gpu/spec_decode/eagle/eagle3_utils.py": reader,
        },
    )
    read = read_methods(FRAMEWORKS["vllm"], "9.9", root)
    dflash = read["rows"]["dflash"]
    assert (
        dflash["drafter"] == "model_executor/models/registry.py:2 DFlashDraftModel -> qwen3_dflash"
    )
    assert any("in order" in u for u in dflash["unknown"])
    assert read["rows"]["dspark"]["loads"] is False
    assert read["rows"]["p-eagle"]["loads"] is False
    assert read["v1_reader"] == ""
