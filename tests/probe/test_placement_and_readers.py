"""Static placement reading and draft-config readers, on tiny inline model files."""

from __future__ import annotations

import ast
import textwrap

from eagle3_contracts.probe.idsource import find_readers, probe_reader
from eagle3_contracts.probe.placement import capture_helpers, read_placement

from ._fixtures import BEFORE_LAYER


def _placement(source: str, helpers_source: str | None = None) -> dict:
    helpers = capture_helpers(ast.parse(textwrap.dedent(helpers_source))) if helpers_source else {}
    return read_placement(ast.parse(textwrap.dedent(source)), helpers)


def test_capture_before_layer_i_is_boundary_i_and_crashes_on_the_embedding():
    (summary,) = _placement(BEFORE_LAYER).values()
    assert summary["sites"] == [
        {
            "index": "i",
            "line": 8,
            "value": "hidden+residual",
            "where": "before layer",
            "reads": "layers_to_capture",
        }
    ]
    assert summary["boundary_minus_element"] == 0
    assert summary["elements"] == ["0..L-1"]
    assert summary["last_output"] is False
    assert summary["embedding"].startswith("raises")


def test_residual_none_guard_makes_the_embedding_reachable():
    source = BEFORE_LAYER.replace(
        "aux_hidden_states.append(hidden_states + residual)",
        "aux_hidden_states.append(hidden_states if residual is None else hidden_states + residual)",
    )
    (summary,) = _placement(source).values()
    assert summary["embedding"] == "captured"


MIXIN = """
class EagleModelMixin:
    def _maybe_add_hidden_state(self, aux_hidden_states, layer_idx, hidden_states, residual):
        if layer_idx in self.aux_hidden_state_layers:
            value = hidden_states + residual if residual is not None else hidden_states
            aux_hidden_states.append(value)
        return aux_hidden_states
"""

AFTER_LAYER = """
class LlamaModel:
    def forward(self, positions, hidden_states):
        residual = None
        aux_hidden_states = []
        self._maybe_add_hidden_state(aux_hidden_states, self.start_layer, hidden_states, residual)
        for idx, layer in enumerate(islice(self.layers, self.start_layer, self.end_layer)):
            hidden_states, residual = layer(positions, hidden_states, residual)
            self._maybe_add_hidden_state(aux_hidden_states, idx + 1, hidden_states, residual)
        return hidden_states
"""


def test_helper_one_call_deep_after_layer_reaches_the_last_output():
    (summary,) = _placement(AFTER_LAYER, MIXIN).values()
    assert [(s["where"], s["index"]) for s in summary["sites"]] == [
        ("before stack", "start"),
        ("after layer", "i+1"),
    ]
    assert summary["elements"] == ["0", "1..L"]
    assert summary["last_output"] is True
    assert summary["embedding"] == "captured"


def test_after_stack_end_layer_capture():
    source = BEFORE_LAYER.replace(
        "        return hidden_states, aux_hidden_states",
        "        if self.end_layer in self.layers_to_capture:\n"
        "            aux_hidden_states.append(hidden_states + residual)\n"
        "        return hidden_states, aux_hidden_states",
    )
    (summary,) = _placement(source).values()
    assert summary["elements"] == ["0..L-1", "L"]
    assert summary["last_output"] is True


def test_capture_handed_into_the_layer_is_followed_to_the_layer_entry():
    source = """
class DecoderLayer:
    def forward(self, positions, hidden_states, residual, captured_last_layer_outputs=None):
        hidden_states, residual = self.comm.prepare_attn_and_capture(
            hidden_states, residual, captured_last_layer_outputs=captured_last_layer_outputs
        )
        return self.self_attn(positions, hidden_states), residual

class Model:
    def forward(self, positions, hidden_states):
        residual = None
        aux = []
        for i in range(self.start_layer, self.end_layer):
            hidden_states, residual = self.layers[i](
                positions, hidden_states, residual,
                captured_last_layer_outputs=aux if i in self.layers_to_capture else None,
            )
        return hidden_states
"""
    placement = _placement(source)
    summary = placement["Model.forward"]
    (site,) = summary["sites"]
    assert site["where"] == "into layer"
    assert "layer entry" in site["via"]
    assert site["value"] == "read in prepare_attn_and_capture"  # no hand reading: not guessed
    assert summary["embedding"].startswith("stored value read outside")


def test_unknown_index_shape_is_reported_ambiguous_not_guessed():
    source = BEFORE_LAYER.replace(
        "if i in self.layers_to_capture", "if i - 1 in self.layers_to_capture"
    )
    (summary,) = _placement(source).values()
    assert "boundary_minus_element" not in summary
    assert summary["ambiguous"] == ["line 8: before layer tests 'i-1'"]


VLLM_READER = """
class GPUModelRunner:
    def _get_eagle3_aux_layers_from_config(self) -> tuple[int, ...] | None:
        if not (self.speculative_config and self.speculative_config.draft_model_config):
            return None
        hf_config = self.speculative_config.draft_model_config.hf_config
        layer_ids = getattr(hf_config, "eagle_aux_hidden_state_layer_ids", None)
        if not layer_ids:
            eagle_config = getattr(hf_config, "eagle_config", None)
            if eagle_config and isinstance(eagle_config, dict):
                layer_ids = eagle_config.get("eagle_aux_hidden_state_layer_ids")
        if layer_ids and isinstance(layer_ids, (list, tuple)):
            return tuple(layer_ids)
        return None
"""

SGLANG_READER = """
def resolve(server_args, spec_algorithm):
    draft_model_config = ModelConfig.from_server_args(server_args, is_draft_model=True)
    if spec_algorithm.is_eagle3():
        try:
            eagle_config = getattr(draft_model_config.hf_config, "eagle_config", None)
            eagle_aux_hidden_state_layer_ids = eagle_config["eagle_aux_hidden_state_layer_ids"]
        except:
            eagle_aux_hidden_state_layer_ids = None
        model.set_eagle3_layers_to_capture(eagle_aux_hidden_state_layer_ids)
"""


def _reader(source: str) -> dict:
    ((func, cls),) = find_readers(ast.parse(textwrap.dedent(source)))
    return probe_reader(func, cls, "runner.py")


def test_whole_pure_reader_gives_top_level_then_nested():
    row = _reader(VLLM_READER)
    assert row["evaluated"] == "whole function"
    assert row["precedence"] == [
        "eagle_aux_hidden_state_layer_ids",
        "eagle_config.eagle_aux_hidden_state_layer_ids",
    ]
    assert row["answers"]["both"] == "top-level"
    assert row["answers"]["top_empty_nested"] == "nested"


def test_try_block_snippet_reads_nested_only_and_falls_back_silently():
    row = _reader(SGLANG_READER)
    assert row["evaluated"].startswith("lines 5-9")
    assert row["precedence"] == ["eagle_config.eagle_aux_hidden_state_layer_ids"]
    assert row["answers"]["top_only"] == "absent"  # AttributeError on None, caught: default


def test_snippet_with_a_local_computed_earlier_needs_reading():
    source = """
def width(model_runner):
    eagle_config = model_runner.hf_config.eagle_config or {}
    get = eagle_config.get if isinstance(eagle_config, dict) else (lambda k, d=None: d)
    layer_ids = get("eagle_aux_hidden_state_layer_ids", None)
    return layer_ids
"""
    row = _reader(source)
    assert "answers" not in row
    assert row["needs_reading"] == "runner.py:5: uses get computed earlier in the function"


def test_a_value_returned_by_a_read_helper_on_the_pair_is_that_helpers_reading():
    """``aux.append(snapshot(hidden_states, residual))`` (sglang 0.5.21 qwen2.py:421) stores
    what the helper returns: resolved by its reading, so the embedding (residual None) is
    captured; a helper no reading covers leaves the row unread."""
    source = BEFORE_LAYER.replace(
        "aux_hidden_states.append(hidden_states + residual)",
        "aux_hidden_states.append(snapshot(hidden_states, residual))",
    )
    tree = ast.parse(textwrap.dedent(source))
    read = {"snapshot": ("hidden+residual (hidden when residual is None)", {"sha": "x"})}
    (summary,) = read_placement(tree, resolver=read.get).values()
    assert summary["sites"][0]["value"] == "hidden+residual (hidden when residual is None)"
    assert summary["sites"][0]["reading"] == {"sha": "x"}
    assert summary["embedding"] == "captured"
    (unread,) = read_placement(tree, resolver={}.get).values()
    assert unread["sites"][0]["value"] == "snapshot(hidden_states, residual)"
    assert unread["embedding"] == "needs reading"
