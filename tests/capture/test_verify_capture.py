"""verify_capture: every known failure class is rejected with the right diagnosis.

The failure classes are a declarative table (``FAULTS``): each builds a faulty capture
function from a correct one; the tests are generated from the table.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import pytest
import torch

from eagle3_contracts import CaptureContract, ContractViolation, verify_capture
from eagle3_contracts.capture.hooks import (
    capture_hidden_states,
    capture_states,
    decoder_layers,
    final_norm,
)
from eagle3_contracts.capture.verify import VerifyReport
from eagle3_contracts.errors import ContractError

from ._targets import all_targets, target, tokens, vocab_of

CaptureFn = Callable[..., torch.Tensor]


def contract_for(model) -> CaptureContract:
    """Ids (1, L//2, L-1): includes the last layer, so post-norm faults are visible."""
    num_layers = len(decoder_layers(model))
    h = capture_states(model, tokens(vocab_of(model), 1, 3), (0,))[0].shape[-1]
    return CaptureContract((1, num_layers // 2, num_layers - 1), num_layers, h)


def correct(contract: CaptureContract) -> CaptureFn:
    def capture(model, input_ids, attention_mask=None):
        return capture_hidden_states(
            model,
            input_ids,
            contract.layer_ids,
            order=contract.order,
            attention_mask=attention_mask,
        )

    return capture


def _ids_fault(
    transform: Callable[[tuple[int, ...], CaptureContract], tuple[int, ...]], order="ascending"
):
    def make(contract: CaptureContract) -> CaptureFn:
        ids = transform(contract.concat_ids, contract)

        def capture(model, input_ids, attention_mask=None):
            return capture_hidden_states(
                model, input_ids, ids, order=order, attention_mask=attention_mask
            )

        return capture

    return make


def _post_norm_last(contract: CaptureContract) -> CaptureFn:
    def capture(model, input_ids, attention_mask=None):  # HF hidden_states[n + 1] style
        states = capture_states(
            model, input_ids, contract.concat_ids, attention_mask=attention_mask
        )
        last = contract.num_layers - 1
        states[last] = final_norm(model)(states[last])
        return torch.cat([states[n] for n in contract.concat_ids], -1)

    return capture


def _residual_dropped(contract: CaptureContract) -> CaptureFn:
    def capture(model, input_ids, attention_mask=None):  # the layer's own contribution only
        ids = tuple(sorted({n - 1 for n in contract.concat_ids} | set(contract.concat_ids)))
        states = capture_states(model, input_ids, ids, attention_mask=attention_mask)
        return torch.cat([states[n] - states[n - 1] for n in contract.concat_ids], -1)

    return capture


def _batch_dependent(contract: CaptureContract) -> CaptureFn:
    def capture(model, input_ids, attention_mask=None):  # a per-sequence indexing bug
        out = correct(contract)(model, input_ids, attention_mask)
        return out[:1].expand_as(out).clone()

    return capture


def _token_shift(contract: CaptureContract) -> CaptureFn:
    def capture(model, input_ids, attention_mask=None):  # states one position late
        out = correct(contract)(model, input_ids, attention_mask)
        return torch.cat([out[:, :1], out[:, :-1]], 1)

    return capture


@dataclass(frozen=True)
class Fault:
    """A known failure class, as a faulty capture, and what verify_capture must say."""

    # -- identity -----------------------------------------------------------------------
    name: str
    seen_in: str  # the public report it reproduces
    # -- the fault ------------------------------------------------------------------------
    make: Callable[[CaptureContract], CaptureFn]
    # -- the diagnosis --------------------------------------------------------------------
    failed_check: str  # the VerifyReport check that fails
    diagnosis: str  # regex the ContractViolation message must match


FAULTS: tuple[Fault, ...] = (
    Fault(
        "off by one",
        "sglang#25454, vllm#43671",
        _ids_fault(lambda ids, c: tuple(n - 1 for n in ids)),
        "segment identity",
        r"segment 0 is layer 0; the contract expects layer 1; .*one layer early.*\+1 offset",
    ),
    Fault(
        "embedding inserted",
        "EAGLE#239",
        _ids_fault(lambda ids, c: (-1, *ids[:-1])),
        "segment identity",
        r"segment 0 is the embedding \(-1\); the contract expects layer 1; .*"
        r"segments are shifted one position: an embedding was inserted",
    ),
    Fault(
        "post-norm last layer",
        "TorchSpec#87",
        _post_norm_last,
        "segment identity",
        r"segment 2 is the final-norm output of layer \d+ \(last, pre-norm\).*post-norm state was used",
    ),
    Fault(
        "residual dropped",
        "vllm#14464",
        _residual_dropped,
        "segment identity",
        r"delta of layer 1 without its residual.*the residual was dropped",
    ),
    Fault(
        "order swapped",
        "SpecForge HF backend vs engines",
        _ids_fault(lambda ids, c: (ids[-1], *ids[:-1]), order="as_listed"),
        "segment identity",
        r"the right layers in the wrong order: \[\d+, 1, \d+\] instead of \[1, \d+, \d+\]",
    ),
    Fault(
        "segment missing",
        "vllm#48124, sglang#32226",
        _ids_fault(lambda ids, c: ids[:-1]),
        "width",
        r"a segment is missing: the capture holds 2 of 3 states \(layer \d+ \(last, pre-norm\) absent\)",
    ),
    Fault(
        "batch-dependent states",
        "speculators#279",
        _batch_dependent,
        "batch invariance",
        r"sequence 1 alone differs from it inside .*states depend on the batch",
    ),
    Fault(
        "one-token shift",
        "token alignment",
        _token_shift,
        "segment identity",
        r"layer 1 shifted one token right.*token alignment: the segment lags the input",
    ),
)
FAULT_TARGETS = (
    "synthetic-residual",
    "synthetic-fused-positions-scaled",
    "hf-gpt2",
    "hf-deepseek_v3",
)


@pytest.mark.parametrize("name", all_targets())
def test_a_correct_capture_passes_for_every_target(name):
    model = target(name)
    contract = contract_for(model)
    report = verify_capture(correct(contract), model, contract)
    assert isinstance(report, VerifyReport) and report.ok
    assert [c.name for c in report.checks] == [
        "token alignment",
        "width",
        "determinism",
        "segment identity",
        "batch invariance",
    ]
    assert report.identification.layer_ids == contract.concat_ids
    assert any("seeded random tokens" in n for n in report.notes)  # the default is reported


@pytest.mark.parametrize("name", FAULT_TARGETS)
@pytest.mark.parametrize("fault", FAULTS, ids=lambda f: f.name)
def test_every_failure_class_is_rejected_with_its_diagnosis(fault, name):
    model = target(name)
    contract = contract_for(model)
    with pytest.raises(ContractViolation) as info:
        verify_capture(fault.make(contract), model, contract)
    message = str(info.value)
    assert re.search(fault.diagnosis, message), message
    assert fault.failed_check in message.split(":")[0], message
    assert info.value.findings
    assert isinstance(info.value, AssertionError)


def test_an_as_listed_contract_accepts_list_order_and_rejects_ascending():
    model = target("synthetic-residual")
    listed = CaptureContract((4, 1, 2), 5, 16, order="as_listed")
    assert verify_capture(correct(listed), model, listed).ok
    ascending = CaptureContract((4, 1, 2), 5, 16)
    with pytest.raises(ContractViolation, match=r"contract concatenates as_listed"):
        verify_capture(correct(ascending), model, listed)


def test_a_capture_without_attention_mask_is_checked_without_padding_and_says_so():
    model = target("synthetic-fused")
    contract = contract_for(model)

    def capture(model, input_ids):
        return capture_hidden_states(model, input_ids, contract.layer_ids)

    report = verify_capture(capture, model, contract)
    assert any("without padding" in n for n in report.notes)


def test_non_deterministic_captures_are_rejected():
    model = target("synthetic-residual")
    contract = contract_for(model)

    def capture(model, input_ids, attention_mask=None):
        out = correct(contract)(model, input_ids, attention_mask)
        return out + 0.05 * torch.randn_like(out)

    with pytest.raises(ContractViolation, match="not deterministic"):
        verify_capture(capture, model, contract)


@pytest.mark.parametrize(
    ("bad", "match"),
    [
        (lambda m, i: capture_hidden_states(m, i, [1])[..., :10], "not a multiple of hidden_size"),
        (lambda m, i: capture_hidden_states(m, i, [1, 2, 4])[:, :-1], "tokens for"),
        (lambda m, i: capture_hidden_states(m, i, [1, 2, 4]).tolist(), "must return a tensor"),
    ],
)
def test_malformed_captures_are_violations(bad, match):
    model = target("synthetic-residual")
    with pytest.raises(ContractViolation, match=match):
        verify_capture(bad, model, contract_for(model))


def test_a_contract_for_another_target_is_a_contract_error():
    model = target("synthetic-residual")
    with pytest.raises(ContractError, match="6 x 16 target; the model is 5 x 16"):
        verify_capture(correct(CaptureContract((1,), 6, 16)), model, CaptureContract((1,), 6, 16))
    with pytest.raises(ContractError, match="B >= 2"):
        verify_capture(correct(contract_for(model)), model, contract_for(model), tokens(64, 1, 9))


def test_the_report_renders_every_check():
    model = target("synthetic-residual")
    contract = contract_for(model)
    text = verify_capture(correct(contract), model, contract, tokens(64, 3, 10)).render_text()
    assert text.count("[ok]") == 5 and "FAIL" not in text


def test_the_plugin_fixture_verifies_the_tiny_target(eagle3_verify, eagle3_contract):
    report = eagle3_verify(correct(eagle3_contract))
    assert report.ok and report.identification.layer_ids == (1, 3, 5)
