"""Setters guarded by a pipeline-rank lookup call are evaluated, not left "needs reading": the
lookup is answered by the grid's stubs (``selection.RANK_CALLS``). Fixtures are cut-down copies
of the released setters they cite."""

from __future__ import annotations

import ast
import textwrap

import pytest

from eagle3_contracts.probe.selection import find_functions, probe_function, rank_calls

SETTER = """
    from sglang.srt.{module} import {name}

    class ExaoneMoEForCausalLM:
        def set_eagle3_layers_to_capture(self, layer_ids=None):
            if not {guard}.is_last_rank:
                return

            self.capture_aux_hidden_states = True
            if layer_ids is None:
                num_layers = self.config.num_hidden_layers
                self.model.layers_to_capture = [2, num_layers // 2, num_layers - 3]
            else:
                self.model.layers_to_capture = [val + 1 for val in layer_ids]
"""

GUARDS = {
    # sglang 0.5.12 models/exaone_moe.py:872
    "get_pp_group": ("distributed", "get_pp_group()"),
    # sglang 0.5.21 models/exaone_moe.py:852
    "get_parallel": ("runtime_context", "get_parallel().pp_group"),
}


def _row(name: str, module: str | None = None) -> dict:
    default_module, guard = GUARDS[name]
    text = SETTER.format(module=module or default_module, name=name, guard=guard)
    tree = ast.parse(textwrap.dedent(text))
    (found,) = find_functions(tree, ("set_eagle3_layers_to_capture",))
    return probe_function(found, "exaone_moe.py", rank_calls(tree))


@pytest.mark.parametrize("name", sorted(GUARDS))
def test_a_rank_guard_call_is_read_past(name):
    row = _row(name)
    assert "needs_reading" not in row
    assert row["rule"] == "plus_one" and row["default"] == "2,L//2,L-3"
    assert row["last_rank_only"] is True  # off the last rank it stores nothing
    assert row["grid"]["32"]["outputs_1_mid-1_L-4"] == [2, 16, 29]


def test_a_same_named_call_from_another_module_still_needs_reading():
    row = _row("get_pp_group", module="somewhere_else")
    assert row["needs_reading"] == "exaone_moe.py:6: call of 'get_pp_group'"
