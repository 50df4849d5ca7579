"""``serve_counters`` reports an engine that cannot serve as a ``RuntimeError`` with the reason
(the demo prints it as a line), never a crash of the caller."""

from __future__ import annotations

import pytest

from eagle3_contracts.acceptance.fixture import DRAFTER, TARGET
from eagle3_contracts.acceptance.vllm_counters import serve_counters, vllm_installed


def test_a_timeout_is_a_runtime_error_naming_the_limit() -> None:
    with pytest.raises(RuntimeError, match="within 0 s"):
        serve_counters(TARGET, DRAFTER, prompts=1, new_tokens=8, k=2, timeout=0.01)


@pytest.mark.skipif(vllm_installed(), reason="needs an environment without vLLM")
def test_no_engine_is_a_runtime_error_with_the_childs_words() -> None:
    with pytest.raises(RuntimeError, match=r"vLLM did not serve .*vllm"):
        serve_counters(TARGET, DRAFTER, prompts=1, new_tokens=8, k=2, timeout=120)
