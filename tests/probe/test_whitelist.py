"""The AST whitelist: pure selections are evaluated on stubs; anything else is never executed."""

from __future__ import annotations

import ast
import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eagle3_contracts.probe.selection import (
    GRID_LAYERS,
    find_functions,
    grid_ids,
    probe_function,
    run_once,
)
from eagle3_contracts.probe.whitelist import check_pure, compile_pure

SGLANG_STYLE = """
class LlamaForCausalLM:
    def set_eagle3_layers_to_capture(self, layer_ids: Optional[List[int]] = None):
        if not self.pp_group.is_last_rank:
            return
        if layer_ids is None:
            self.capture_aux_hidden_states = True
            num_layers = self.config.num_hidden_layers
            self.model.layers_to_capture = [2, num_layers // 2, num_layers - 3]
        else:
            self.capture_aux_hidden_states = True
            if layer_ids and layer_ids[0] == 1:
                self.model.layers_to_capture = [val + 1 for val in layer_ids]
            else:
                self.model.layers_to_capture = list(layer_ids)
"""

VLLM_STYLE = """
class EagleModelMixin:
    def _set_aux_hidden_state_layers(self, layers: tuple[int, ...]) -> None:
        self.aux_hidden_state_layers = tuple(sorted(set(layers)))
        self._cache_aux_pp_layout()
"""


def _probe(source: str, name: str = "set_eagle3_layers_to_capture") -> dict:
    tree = ast.parse(textwrap.dedent(source))
    (found,) = find_functions(tree, [name])
    return probe_function(found, "fixture.py")


def test_pure_sglang_selection_is_evaluated_and_classified():
    row = _probe(SGLANG_STYLE)
    assert "needs_reading" not in row
    assert row["rule"] == "plus_one_if_first_is_one"
    assert row["default"] == "2,L//2,L-3"
    assert row["last_rank_only"] is True
    assert row["sinks"] == ["self.model.layers_to_capture"]
    assert row["grid"]["61"]["boundaries_2_mid_L-3"] == [2, 30, 58]
    assert row["grid"]["32"]["outputs_1_mid-1_L-4"] == [2, 16, 29]
    assert row["grid"]["61"]["none"] == [2, 30, 58]


def test_pure_vllm_mixin_sorts_and_dedups_and_records_stub_calls():
    row = _probe(VLLM_STYLE, "_set_aux_hidden_state_layers")
    assert row["rule"] == "sorted_set"
    assert row["grid"]["32"]["duplicate"] == [1, 28]
    assert row["grid"]["32"]["unsorted"] == [1, 15, 28]
    assert row["raises_on"] == ["none"]  # sorted(set(None)): the runner never passes None


@pytest.mark.parametrize(
    ("body", "construct"),
    [
        ("import os\n    os.system('touch /tmp/pwned')", "Import"),
        ("self.model.layers_to_capture = get_parallel().ids", "call of 'get_parallel'"),
        ("self.model.layers_to_capture = CONSTANT_IDS", "global name 'CONSTANT_IDS'"),
        ("self.model.layers_to_capture = self.__class__.ids", "dunder attribute"),
        ("self.model.layers_to_capture = [1].copy()", "method call .copy()"),
        ("self.model.layers_to_capture = (lambda: [1])()", "call of a computed callable"),
        ("while True:\n        pass", "While"),
        ("raise MyError('x')", "non-builtin exception"),
        ("self.model.layers_to_capture = getattr(self, '__dict__')", "getattr of '__dict__'"),
        ("self.model.layers_to_capture = open('/etc/passwd')", "call of 'open'"),
        (
            "text = '{0.__init__}'\n    self.model.layers_to_capture = text.format(self)",
            ".format()",
        ),
    ],
)
def test_non_pure_constructs_need_reading_with_file_and_line(body, construct):
    source = f"class M:\n  def set_eagle3_layers_to_capture(self, layer_ids=None):\n    {body}\n"
    row = _probe(source)
    assert "grid" not in row, "a rejected function must never be evaluated"
    assert row["needs_reading"].startswith("fixture.py:")
    assert construct in row["needs_reading"]
    func = ast.parse(source).body[0].body[0]
    with pytest.raises(ValueError, match="not a pure selection"):
        compile_pure(func, source_name="fixture.py")


def test_rejected_function_is_never_executed(tmp_path):
    marker = tmp_path / "executed"
    source = (
        "class M:\n  def set_eagle3_layers_to_capture(self, layer_ids=None):\n"
        f"    open({str(marker)!r}, 'w').write('ran')\n"
        "    self.model.layers_to_capture = [1]\n"
    )
    row = _probe(source)
    assert "fixture.py:3:" in row["needs_reading"]
    assert not marker.exists()


def test_annotations_naming_globals_are_not_evaluated():
    # Optional/List are module globals; annotations are stripped, not resolved
    assert check_pure(ast.parse(SGLANG_STYLE).body[0].body[0]) is None


def test_computed_dunder_getattr_is_refused_at_run_time():
    source = (
        "def pick(self, ids):\n"
        "    name = '__' + 'class' + '__'\n"
        "    self.layers_to_capture = getattr(self, name)\n"
    )
    func = compile_pure(ast.parse(source).body[0], source_name="fixture.py")
    out = run_once(func, 32, ([1, 2],))
    assert out.raises == "AttributeError"


def test_delegation_to_an_inner_model_is_recorded_as_the_sink():
    source = """
class Qwen2MoeForCausalLM:
    def set_eagle3_layers_to_capture(self, layer_ids=None):
        if layer_ids is None:
            n = self.config.num_hidden_layers
            self.model.set_eagle3_layers_to_capture([2, n // 2, n - 3])
        else:
            self.model.set_eagle3_layers_to_capture([val + 1 for val in layer_ids])
"""
    row = _probe(source)
    assert row["rule"] == "plus_one"
    assert row["sinks"] == ["self.model.set_eagle3_layers_to_capture()"]


def test_grid_covers_the_documented_drafters():
    assert grid_ids(61)["boundaries_2_mid_L-3"] == [2, 30, 58]
    assert grid_ids(32)["outputs_1_mid-1_L-4"] == [1, 15, 28]
    assert grid_ids(61)["embedding_first"] == [-1, 2, 30]
    assert all(max(grid_ids(n)["max_is_L"]) == n for n in GRID_LAYERS)


@settings(max_examples=25, deadline=None)
@given(
    ids=st.lists(st.integers(min_value=-1, max_value=94), min_size=1, max_size=5),
    num_layers=st.integers(min_value=4, max_value=94),
)
def test_evaluated_selection_matches_the_source_semantics(ids, num_layers):
    func = compile_pure(
        ast.parse(textwrap.dedent(SGLANG_STYLE)).body[0].body[0], source_name="fixture.py"
    )
    out = run_once(func, num_layers, (ids,))
    expected = [v + 1 for v in ids] if ids[0] == 1 else ids
    assert list(out.value) == expected
    assert run_once(func, num_layers, (ids,), last_rank=False).value is None
