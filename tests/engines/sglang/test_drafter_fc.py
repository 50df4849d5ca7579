"""The release's own EAGLE-3 drafter (``llama_eagle3.py``) fed k target states, fc built for 3.

The drafter's forward projects ``spec_info.hidden_states`` with ``fc`` only when its width
differs from the drafter's hidden size (0.5.12 ``llama_eagle3.py:218``, 0.5.13 ``:213``, 0.5.14
``:214``, 0.5.17 ``:229``, 0.5.23 ``:238``: ``if hidden_states.shape[-1] !=
embeds.shape[-1]``). So with target and drafter of one width, ONE collected state skips the fc
silently and the drafter reads a raw target state; any other wrong count is a shape error.
(registry-disagreements.md D4: the registry calls every wrong count an fc-width crash.)
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
import torch

from tests.engines.sglang import harness

pytestmark = pytest.mark.engine


def _drafter(num_ids: int) -> Any:
    from sglang.srt.models.llama_eagle3 import LlamaForCausalLMEagle3
    from transformers import LlamaConfig

    config = LlamaConfig(
        vocab_size=harness.VOCAB,
        hidden_size=harness.HIDDEN,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=8,
        max_position_embeddings=128,
    )
    config.draft_vocab_size = harness.VOCAB
    config.eagle_config = {"eagle_aux_hidden_state_layer_ids": list(range(1, num_ids + 1))}
    return LlamaForCausalLMEagle3(config).float().eval()


@pytest.mark.parametrize(("fed", "outcome"), [(3, "runs"), (1, "fc skipped"), (2, "crash")])
def test_drafter_with_fc_for_three_states(
    sglang_runtime: dict[str, Any], fed: int, outcome: str
) -> None:
    drafter = _drafter(3)
    assert drafter.model.fc.in_features == 3 * harness.HIDDEN
    ids = torch.randint(2, harness.VOCAB, (harness.SEQ_LEN,))
    batch = harness.forward_batch(ids, capture=False)
    batch.spec_info = SimpleNamespace(
        hidden_states=torch.randn(harness.SEQ_LEN, fed * harness.HIDDEN)
    )
    calls: list[int] = []
    drafter.model.fc.register_forward_hook(lambda m, a, o: calls.append(a[0].shape[-1]))
    if outcome == "crash":
        with pytest.raises(RuntimeError, match="cannot be multiplied"), torch.no_grad():
            drafter.model(ids, torch.arange(harness.SEQ_LEN), batch)
        return
    with torch.no_grad():
        drafter.model(ids, torch.arange(harness.SEQ_LEN), batch)
    assert calls == ([3 * harness.HIDDEN] if outcome == "runs" else [])
