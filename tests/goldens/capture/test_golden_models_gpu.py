"""GPU goldens (``-m gpu``, ``tox -e gpu``): every ``MODEL_CASES`` capture on CUDA in bfloat16
and float16, and — when ``EAGLE3_TARGET_MODEL`` and ``EAGLE3_DRAFT_CONFIG`` are set — a real
checkpoint's capture. Stored in ``goldens/capture/test_golden_models_gpu/``; stats compare
within the dtype's tolerance (``snapshot.DTYPE_RTOL``). Without CUDA the ``gpu`` tests skip with
the reason; the unmarked tests here run the same record-building code on the CPU."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import torch

from eagle3_contracts.stamp import trained_with_env
from eagle3_contracts.testing.golden_cases import (
    MODEL_CASES,
    ModelCase,
    assert_capture_golden,
    capture_record,
    dtype_name,
    identity_errors,
    model_case,
    real_model_record,
)
from eagle3_contracts.testing.goldens import DTYPE_RTOL, GoldenExtension, golden_dir

LOW_PRECISION = [pytest.param(d, id=dtype_name(d)) for d in (torch.bfloat16, torch.float16)]
CASES = [pytest.param(case, id=case.name) for case in MODEL_CASES]
NO_CUDA = "no CUDA device (torch.cuda.is_available() is False): GPU goldens run on a GPU host"


GPU_GOLDENS = golden_dir(Path(__file__))
NOT_RECORDED = (
    f"no GPU golden is recorded yet ({GPU_GOLDENS} is empty): on this CUDA host, record them "
    f"with scripts/gpu-goldens.sh (or tox -e gpu -- --snapshot-update), rerun without "
    f"--snapshot-update to prove them deterministic, and commit the directory"
)


@pytest.fixture
def cuda(request: pytest.FixtureRequest) -> str:
    """The CUDA device; skips with the reason (also when the eagle3_contracts plugin is off).

    On a CUDA host while no GPU golden exists, fails saying how to record them: a GPU run that
    compared nothing must not pass."""
    if not torch.cuda.is_available():
        pytest.skip(NO_CUDA)
    updating = bool(getattr(request.config.option, "update_snapshots", False))
    if not updating and not any(GPU_GOLDENS.glob("*.json")):
        pytest.fail(NOT_RECORDED)
    return "cuda"


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", LOW_PRECISION)
@pytest.mark.parametrize("case", CASES)
def test_model_golden_gpu(case: ModelCase, dtype: torch.dtype, cuda: str, golden: Any) -> None:
    assert_capture_golden(capture_record(case, device=cuda, dtype=dtype), golden)


@pytest.mark.gpu
def test_real_model_golden(cuda: str, golden: Any) -> None:
    model_dir = os.environ.get("EAGLE3_TARGET_MODEL")
    draft = os.environ.get("EAGLE3_DRAFT_CONFIG")
    trained_with = trained_with_env()  # EAGLE3_CONTRACTS_TRAINED_WITH, as every tool reads it
    if not model_dir or not draft:
        pytest.skip(
            "set EAGLE3_TARGET_MODEL (a local Hugging Face model directory, safetensors), "
            "EAGLE3_DRAFT_CONFIG (the drafter's config.json) and EAGLE3_CONTRACTS_TRAINED_WITH (how its "
            "ids were read, e.g. specforge==0.2.0) to lock a real model's capture"
        )
    if not trained_with:  # no default: a guessed trainer would lock a guessed meaning
        pytest.fail(
            "EAGLE3_CONTRACTS_TRAINED_WITH is unset: name how the drafter's ids were read (e.g. "
            "specforge==0.2.0, sglang==0.5.14, specforge-hf, canonical); no trainer is assumed"
        )
    record = real_model_record(model_dir, draft, trained_with=trained_with, device=cuda)
    assert_capture_golden(record, golden(name=Path(model_dir).name))


# -- the same golden-writing path, exercised on the CPU ------------------------------------
@pytest.mark.parametrize("dtype", LOW_PRECISION)
@pytest.mark.parametrize("name", ["synthetic-fused", "hf-llama"])
def test_low_precision_records_on_cpu_take_the_gpu_path(name: str, dtype: torch.dtype) -> None:
    """``capture_record`` in bf16/fp16 (what the GPU goldens store), run on CPU tensors."""
    record = capture_record(model_case(name), device="cpu", dtype=dtype)
    assert identity_errors(record) == []
    assert record["dtype"] == record["captured"]["dtype"] == dtype_name(dtype)
    assert {s["dtype"] for s in record["segments"]} == {dtype_name(dtype)}
    ext = GoldenExtension()
    text = ext.serialize(record)
    assert ext.matches(serialized_data=text, snapshot_data=text)
    rtol = DTYPE_RTOL[dtype_name(dtype)]
    for factor, ok in ((1 + rtol / 2, True), (1 + 3 * rtol, False)):
        moved = json.loads(text)
        moved["segments"][0]["stats"]["norm"] *= factor
        assert ext.matches(serialized_data=json.dumps(moved), snapshot_data=text) is ok


def test_real_model_record_on_cpu(tmp_path: Path) -> None:
    """The real-checkpoint path (safetensors dir + draft config) on a tiny saved model."""
    from eagle3_contracts.testing.hf_models import build_tiny_hf, tiny_hf_config

    model_dir = tmp_path / "tiny-llama"
    build_tiny_hf(tiny_hf_config("llama", num_layers=6)).save_pretrained(model_dir)
    draft = tmp_path / "draft.json"
    draft.write_text(json.dumps({"eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, 2, 5]}}))
    record = real_model_record(model_dir, draft, trained_with="specforge-hf", device="cpu")
    assert record["concat_order"] == [1, 2, 5]  # specforge reads output ids: canonical as-is
    assert record["model"]["family"] == "llama" and record["model"]["num_layers"] == 6
    assert identity_errors(record) == []
    again = real_model_record(model_dir, draft, trained_with="specforge-hf", device="cpu")
    assert GoldenExtension().drift(again, GoldenExtension().serialize(record)) == ()
