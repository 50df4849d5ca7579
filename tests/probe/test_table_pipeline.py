"""The table builder end to end on a tiny fake release tree (offline), and the drift diff."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from eagle3_contracts.conventions.releases import ReleaseTable, SelectionRule
from eagle3_contracts.probe import render
from eagle3_contracts.probe.frameworks import SGLANG
from eagle3_contracts.probe.tables import build_table, dumps

from ._fixtures import BEFORE_LAYER, CAUSAL_LM, RUNNER

MODEL = BEFORE_LAYER + CAUSAL_LM


def _tree(tmp_path: Path, model: str = MODEL) -> Path:
    files = {"sglang/srt/models/llama.py": model, SGLANG.reader_files[0]: RUNNER}
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(textwrap.dedent(text))
    return tmp_path


def test_fake_release_builds_a_table_the_simulation_reads(tmp_path):
    table = build_table(SGLANG, "0.0.1", _tree(tmp_path))
    row = table["classes"]["llama.py:LlamaForCausalLM"]
    assert row["selection"]["rule"] == "plus_one"
    assert row["placement"] == {"file": "llama.py", "forward": "LlamaModel.forward"}
    assert table["architectures"] == {"LlamaForCausalLM": "llama.py:LlamaForCausalLM"}
    assert table["id_source"]["precedence"] == ["eagle_config.eagle_aux_hidden_state_layer_ids"]
    row = ReleaseTable.from_json(table).classes["llama.py:LlamaForCausalLM"]
    assert row.selection.rule is SelectionRule.PLUS_ONE
    assert row.placement is not None and row.placement.embedding_raises  # hidden_states + None
    assert row.selection.rule.elements([1, 15, 28], 32) == [2, 16, 29]  # outputs 1, 15, 28
    assert json.loads(dumps(table)) == table


def test_a_changed_rule_shows_as_a_diff_naming_release_file_and_rule(tmp_path):
    old = build_table(SGLANG, "0.0.1", _tree(tmp_path / "old"))
    changed = MODEL.replace(
        "self.model.layers_to_capture = [val + 1 for val in layer_ids]",
        "self.model.layers_to_capture = list(layer_ids)",
    )
    new = build_table(SGLANG, "0.0.2", _tree(tmp_path / "new", changed))
    lines = render.diff(
        render.behaviour(ReleaseTable.from_json(old)),
        render.behaviour(ReleaseTable.from_json(new)),
        "sglang==0.0.2",
    )
    assert lines == ["sglang==0.0.2 llama.py:LlamaForCausalLM/rule: 'plus_one' -> 'identity'"]
