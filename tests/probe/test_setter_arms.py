"""Setter-to-loop consistency: the state the EAGLE-3 setter writes must be the state the capture
site reads (sglang 0.5.14 ``qwen3_5.py``: the loop reads ``_is_layer_to_capture``, which only the
DFlash setter sets), through inheritance and delegation."""

from __future__ import annotations

import textwrap
from pathlib import Path

from eagle3_contracts.probe.frameworks import SGLANG, VLLM
from eagle3_contracts.probe.tables import build_table

FLAG_LOOP = """
class Qwen3_5ForCausalLM:
    def set_dflash_layers_to_capture(self, layers_to_capture):
        self.layers_to_capture = layers_to_capture
        for layer_id in self.layers_to_capture:
            setattr(self.layers[layer_id], "_is_layer_to_capture", True)
    {inner_setter}
    def forward(self, input_ids, positions):
        hidden_states = self.embed_tokens(input_ids)
        residual = None
        aux_hidden_states = []
        for layer_idx in range(self.start_layer, self.end_layer):
            layer = self.layers[layer_idx]
            {set_guard}
            hidden_states, residual = layer(
                positions=positions,
                hidden_states=hidden_states,
                residual=residual,
                captured_last_layer_outputs=(
                    aux_hidden_states
                    if getattr(layer, "_is_layer_to_capture", False)
                    else None
                ),
            )
        if len(aux_hidden_states) == 0:
            return hidden_states
        return hidden_states, aux_hidden_states


class Qwen3_5ForConditionalGeneration:
    def __init__(self, config):
        self.model = Qwen3_5ForCausalLM(config)

    def set_eagle3_layers_to_capture(self, layer_ids=None):
        self.capture_aux_hidden_states = True
        if layer_ids is None:
            num_layers = self.config.num_hidden_layers
            self.model.layers_to_capture = [2, num_layers // 2, num_layers - 3]
        else:
            self.model.layers_to_capture = [val + 1 for val in layer_ids]
        {delegate}


EntryClass = [Qwen3_5ForConditionalGeneration]
"""

INNER_SETTER = """
    def set_eagle3_layers_to_capture(self, layers_to_capture):
        self.layers_to_capture = layers_to_capture
        for layer_id in self.layers_to_capture:
            setattr(self.layers[layer_id], "_is_layer_to_capture", True)
"""

SET_GUARD = """if layer_idx in self.layers_to_capture:
                aux_hidden_states.append(hidden_states + residual)"""

KEY = "m.py:Qwen3_5ForConditionalGeneration"


def _release(tmp_path: Path, **parts: str) -> dict:
    text = FLAG_LOOP.format(
        inner_setter=parts.get("inner_setter", ""),
        set_guard=parts.get("set_guard", ""),
        delegate=parts.get("delegate", ""),
    )
    path = tmp_path / SGLANG.model_dir / "m.py"
    path.parent.mkdir(parents=True)
    path.write_text(textwrap.dedent(text))
    return build_table(SGLANG, "0.0.1", tmp_path)


def _line(needle: str, **parts: str) -> int:
    """The line of ``needle`` in the model file ``_release`` writes."""
    text = FLAG_LOOP.format(
        inner_setter=parts.get("inner_setter", ""),
        set_guard=parts.get("set_guard", ""),
        delegate=parts.get("delegate", ""),
    )
    lines = textwrap.dedent(text).split("\n")
    return next(i + 1 for i, line in enumerate(lines) if needle in line)


def test_a_loop_reading_a_flag_only_another_setter_sets_is_not_armed(tmp_path):
    arms = _release(tmp_path)["classes"][KEY]["setter_arms"]
    assert arms["verdict"] == "not armed"
    assert arms["writes"] == ["layers_to_capture"]
    flag = _line("if getattr(layer") - 1  # the guarded expression starts a line above
    assert arms["unarmed"] == [{"line": flag, "reads": "flag _is_layer_to_capture"}]
    setter = _line("def set_eagle3_layers_to_capture")
    assert arms["setters"] == [
        f"m.py:Qwen3_5ForConditionalGeneration.set_eagle3_layers_to_capture (line {setter})"
    ]


def test_a_delegated_inner_setter_that_sets_the_flag_arms_the_loop(tmp_path):
    table = _release(
        tmp_path,
        inner_setter=textwrap.indent(textwrap.dedent(INNER_SETTER), "    ").strip(),
        delegate="self.model.set_eagle3_layers_to_capture(self.model.layers_to_capture)",
    )
    arms = table["classes"][KEY]["setter_arms"]
    assert arms["verdict"] == "armed"
    assert "flag _is_layer_to_capture" in arms["writes"]
    assert len(arms["setters"]) == 2


def test_a_loop_with_a_set_guard_and_a_flag_guard_is_partly_armed_at_the_set_sites(tmp_path):
    table = _release(tmp_path, set_guard=SET_GUARD)
    arms = table["classes"][KEY]["setter_arms"]
    assert arms["verdict"] == "partly armed"
    assert [u["reads"] for u in arms["unarmed"]] == ["flag _is_layer_to_capture"]
    assert arms["armed_placement"]["elements"] == ["0..L-1"]
    assert arms["armed_placement"]["embedding"].startswith("raises")


VLLM_DELEGATE = """
class EagleModelMixin:
    def _set_aux_hidden_state_layers(self, layers):
        self.aux_hidden_state_layers = tuple(sorted(set(layers)))


class Plamo3Decoder(EagleModelMixin):
    def forward(self, hidden_states, residual):
        aux_hidden_states = []
        for idx, layer in enumerate(self.layers):
            if idx in self.aux_hidden_state_layers:
                aux_hidden_states.append(hidden_states + residual)
            hidden_states, residual = layer(hidden_states, residual)
        return hidden_states, aux_hidden_states


class Plamo3Model:
    def __init__(self, config):
        self.layers = Plamo3Decoder(config)

    def _set_aux_hidden_state_layers(self, layers):
        self.layers._set_aux_hidden_state_layers(layers)
{tail}
"""


def test_a_vllm_setter_handing_on_to_another_object_is_followed(tmp_path):
    """vllm 0.33.0 ``plamo3.py``: ``Plamo3Model._set_aux_hidden_state_layers`` calls
    ``self.layers._set_aux_hidden_state_layers``; the state is written there."""
    from eagle3_contracts.probe.tables import _Release, setter_arms

    for tail, verdict in (("", "armed"), ("\n    def unused(self): pass", "armed")):
        root = tmp_path / verdict / str(len(tail))
        path = root / VLLM.model_dir / "plamo3.py"
        path.parent.mkdir(parents=True)
        path.write_text(VLLM_DELEGATE.format(tail=tail))
        rel = _Release(VLLM, root)
        placements = {"plamo3.py": {"Plamo3Decoder.forward": {"sites": [
            {"line": 11, "reads": "aux_hidden_state_layers", "where": "before layer",
             "index": "i", "value": "hidden+residual"}]}}}  # fmt: skip
        arms = setter_arms(
            rel,
            ["plamo3.py:Plamo3Model._set_aux_hidden_state_layers"],
            {"file": "plamo3.py", "forward": "Plamo3Decoder.forward"},
            placements,
        )
        assert arms is not None
        assert arms["verdict"] == verdict
        assert arms["writes"] == ["aux_hidden_state_layers"]
        assert arms["setters"][-1].startswith(
            "plamo3.py:EagleModelMixin._set_aux_hidden_state_layers"
        )


def test_an_unresolvable_hand_on_leaves_the_row_unknown(tmp_path):
    from eagle3_contracts.probe.tables import _Release, setter_arms

    text = VLLM_DELEGATE.format(tail="").replace(
        "self.layers = Plamo3Decoder(config)", "self.layers = build(config)"
    )
    path = tmp_path / VLLM.model_dir / "plamo3.py"
    path.parent.mkdir(parents=True)
    path.write_text(text)
    placements = {"plamo3.py": {"Plamo3Decoder.forward": {"sites": [
        {"line": 11, "reads": "aux_hidden_state_layers", "where": "before layer",
         "index": "i", "value": "hidden+residual"}]}}}  # fmt: skip
    arms = setter_arms(
        _Release(VLLM, tmp_path),
        ["plamo3.py:Plamo3Model._set_aux_hidden_state_layers"],
        {"file": "plamo3.py", "forward": "Plamo3Decoder.forward"},
        placements,
    )
    assert arms is not None
    assert arms["verdict"] == "unknown"
    assert arms["unread"] == ["self.layers._set_aux_hidden_state_layers"]
