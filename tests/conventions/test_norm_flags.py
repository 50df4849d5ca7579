"""Norm flags per release, read from each release's drafter file (``llama_eagle3.py``): a flag
the drafter was trained with that the serving release never reads is a finding."""

from __future__ import annotations

import textwrap

import pytest

from eagle3_contracts.config.check import check_drafter
from eagle3_contracts.conventions.releases import load_table
from eagle3_contracts.differences import FindingKind
from eagle3_contracts.probe.frameworks import SGLANG
from eagle3_contracts.probe.tables import read_drafter_flags

LLAMA = {"architectures": ["LlamaForCausalLM"], "num_hidden_layers": 32, "hidden_size": 32}


def draft(**flags: bool) -> dict:
    ids = {"eagle_aux_hidden_state_layer_ids": [1, 15, 28]}
    return {"hidden_size": 32, **flags, "eagle_config": ids}


def test_the_probe_reads_which_flags_a_drafter_file_names(tmp_path):
    path = tmp_path / SGLANG.model_dir / "llama_eagle3.py"
    path.parent.mkdir(parents=True)
    path.write_text(
        textwrap.dedent(
            """
            class LlamaModel:
                def __init__(self, config):
                    use_fc_norm = getattr(config, "fc_norm", None)
                    self.norm_output = config.norm_output
            """
        )
    )
    flags = read_drafter_flags(tmp_path, SGLANG.model_dir + "llama_eagle3.py")
    assert flags is not None
    assert flags["reads"]["fc_norm"] == 4
    assert flags["reads"]["norm_output"] == 5
    assert flags["reads"]["norm_before_fc"] is None
    assert read_drafter_flags(tmp_path, "absent.py") is None


@pytest.mark.parametrize(
    ("release", "ignored"),
    [
        ("sglang==0.5.5", {"norm_before_fc", "fc_norm", "norm_output", "norm_before_residual"}),
        ("sglang==0.5.14", {"norm_before_fc", "norm_before_residual"}),
        ("sglang==0.5.23", {"norm_before_residual"}),
        ("vllm==0.21.0", {"fc_norm", "norm_output"}),
        ("vllm==0.33.0", set()),
    ],
)
def test_each_release_table_says_which_speculators_flags_it_ignores(release, ignored):
    """Read in the wheels: sglang 0.5.14 llama_eagle3.py:162 (fc_norm), 183 (norm_output);
    0.5.17+ also norm_before_fc; vllm 0.21.0 lines 72 and 153 only; 0.22.0+ all four."""
    table = load_table(*release.split("=="))
    speculators = {"norm_before_residual", "norm_before_fc", "fc_norm", "norm_output"}
    assert {f for f in speculators if table.drafter_flags[f] is None} == ignored


def test_a_flag_the_serving_release_ignores_is_a_finding():
    """A gpt-oss style drafter (norm_before_fc) served by sglang 0.5.14, whose llama_eagle3.py
    never reads the flag (sglang#32334), read ok before."""
    report = check_drafter(
        draft(norm_before_fc=True),
        target=LLAMA,
        trained_with="specforge==0.2.0",
        serve_with=["sglang==0.5.14", "sglang==0.5.23"],
    )
    old, new = report.rows
    assert not old.ok
    (finding,) = old.findings
    assert finding.kind is FindingKind.FLAG_IGNORED
    assert "norm_before_fc" in finding.message and "llama_eagle3.py" in finding.message
    assert new.ok


def test_the_training_capture_carries_no_serving_flag_notes():
    report = check_drafter(
        draft(norm_before_fc=True), target=LLAMA, trained_with="specforge==0.2.0",
        serve_with=["sglang==0.5.23"],
    )  # fmt: skip
    assert not any("never reads" in n for n in report.readings[0][1].notes)


def test_a_false_or_absent_flag_is_no_finding():
    for flags in ({}, {"norm_before_fc": False}):
        report = check_drafter(
            draft(**flags), target=LLAMA, trained_with="specforge==0.2.0",
            serve_with=["sglang==0.5.14"],
        )  # fmt: skip
        assert report.rows[0].ok


def test_modelopt_flags_no_release_names_are_no_finding():
    """vLLM and SGLang drafters build their first-layer input norm and final norm
    unconditionally: ModelOpt's use_last_layernorm = true is honoured without being read."""
    flags = {"use_last_layernorm": True, "use_input_layernorm_in_first_layer": True}
    report = check_drafter(
        draft(**flags), target=LLAMA, trained_with="specforge==0.2.0",
        serve_with=["sglang==0.5.23", "vllm==0.33.0"],
    )  # fmt: skip
    assert all(row.ok for row in report.rows)


def test_two_ignored_flags_are_one_finding_naming_both():
    """sglang 0.5.14 reads neither norm_before_fc nor norm_before_residual: one finding, each
    flag's note joined with '; '."""
    report = check_drafter(
        draft(norm_before_fc=True, norm_before_residual=True),
        target=LLAMA,
        trained_with="specforge==0.2.0",
        serve_with=["sglang==0.5.14"],
    )
    (row,) = report.rows
    (finding,) = row.findings
    assert finding.kind is FindingKind.FLAG_IGNORED
    notes = [n for n in row.plan.notes if n.startswith("the draft config sets")]
    assert len(notes) == 2 and finding.message == "; ".join(notes)
