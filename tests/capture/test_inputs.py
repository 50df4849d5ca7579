"""Wrong arguments to the capture API are ``ContractError`` naming the argument,
never an ``AttributeError`` or a raw torch error; encoders are refused with the reason."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
import torch

from eagle3_contracts import (
    CaptureContract,
    capture_hidden_states,
    identify_segments,
    verify_capture,
)
from eagle3_contracts.errors import ContractError
from eagle3_contracts.testing.synthetic import SyntheticConfig, build_synthetic

MODEL = build_synthetic(SyntheticConfig(num_layers=4, hidden_size=8, vocab_size=16))
IDS = torch.randint(0, 16, (2, 8), generator=torch.Generator().manual_seed(0))
CONTRACT = CaptureContract((1, 2), 4, 8)


def _capture(model: Any, ids: Any) -> torch.Tensor:
    return capture_hidden_states(model, ids, (1, 2))


CASES: dict[str, tuple[Callable[[], object], str, str]] = {
    "capture-model-none": (lambda: _capture(None, IDS), "model", "got NoneType"),
    "capture-float-ids": (lambda: _capture(MODEL, IDS.float()), "input_ids", "dtype float32"),
    "capture-list-ids": (lambda: _capture(MODEL, [[1, 2]]), "input_ids", "got list"),
    "capture-1d-ids": (lambda: _capture(MODEL, IDS[0]), "input_ids", "[B, T]"),
    "capture-oov-ids": (lambda: _capture(MODEL, IDS + 100), "input_ids", "vocabulary [0, 16)"),
    "capture-negative-ids": (lambda: _capture(MODEL, IDS - 100), "input_ids", "vocabulary"),
    "identify-list": (lambda: identify_segments([1, 2], MODEL, IDS), "captured", "got list"),
    "identify-int-tensor": (
        lambda: identify_segments(IDS, MODEL, IDS),
        "captured",
        "int64 tensor",
    ),
    "verify-model-none": (lambda: verify_capture(_capture, None, CONTRACT), "model", "NoneType"),
    "verify-fn-not-callable": (lambda: verify_capture(3, MODEL, CONTRACT), "capture_fn", "int"),
    "verify-contract-dict": (
        lambda: verify_capture(_capture, MODEL, {"layer_ids": [1]}),
        "contract",
        "dict",
    ),
    "verify-float-ids": (
        lambda: verify_capture(_capture, MODEL, CONTRACT, IDS.float()),
        "input_ids",
        "float32",
    ),
    "from-json-none": (lambda: CaptureContract.from_json(None), "contract", "NoneType"),
    "from-json-deep": (
        lambda: CaptureContract.from_json("[" * 100_000 + "]" * 100_000),
        "contract",
        "too deep",
    ),
}


@pytest.mark.parametrize("name", CASES)
def test_wrong_arguments_are_typed_errors_naming_them(name: str) -> None:
    call, field, fragment = CASES[name]
    with pytest.raises(ContractError) as info:
        call()
    assert info.value.field == field and fragment in str(info.value), str(info.value)


@pytest.mark.hf
@pytest.mark.parametrize(
    ("arch", "why"), [("bert", "encoder-only model (bert)"), ("t5", "encoder-decoder model (t5)")]
)
def test_encoders_are_refused_with_the_reason(arch: str, why: str) -> None:
    """Once, verify_capture passed on BERT and called a post-norm layer "pre-norm"."""
    transformers = pytest.importorskip("transformers")
    config = transformers.AutoConfig.for_model(
        arch,
        vocab_size=32,
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=16,
        d_model=16,
        d_ff=16,
        num_layers=2,
        num_decoder_layers=1,
        num_heads=2,
        d_kv=8,
    )
    model = transformers.AutoModel.from_config(config)
    contract = CaptureContract((0, 1), 2, 16)
    with pytest.raises(ContractError, match=re.escape(why)) as info:
        verify_capture(lambda m, i: capture_hidden_states(m, i, (0, 1)), model, contract)
    assert info.value.field == "model"


def test_batch_invariance_without_padding_does_not_claim_a_padded_batch() -> None:
    """Once, the report said "[ok] ... inside a padded batch" and "checked without padding"."""
    report = verify_capture(_capture, MODEL, CONTRACT)
    text = report.render_text()
    assert "without padding" in text and "padded batch" not in text.replace("unpadded", "")
