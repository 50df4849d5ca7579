"""``conventions.releases``: the one typed model of the probed release tables. Which
releases are shipped and in what order (the newest is what an unversioned name means),
refusals naming the field and the accepted values, the rule vocabulary the probe and the
predictor share, and a table's JSON read tolerantly (keys a newer probe adds are ignored; a
rule or default the model does not know reads as None with its name kept).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from eagle3_contracts.conventions import releases as RT
from eagle3_contracts.conventions.releases import newest_release
from eagle3_contracts.errors import ContractError
from eagle3_contracts.probe import selection


# -- the shipped tables ----------------------------------------------------------------------------
def test_known_releases_are_ordered_by_version_number_not_text() -> None:
    known = RT.known_releases()
    assert list(known) == ["sglang", "vllm"]  # trainers/ is not a framework
    sglang = known["sglang"]
    assert sglang.index("0.5.5") < sglang.index("0.5.12") < sglang.index("0.5.13")  # by number
    assert sglang.index("0.5.5") < sglang.index("0.5.5.post1") < sglang.index("0.5.6")
    assert known["sglang"][-1] == "0.5.23" and known["vllm"][-1] == "0.33.0"
    assert {"0.21.0", "0.32.0"} <= set(known["vllm"])


class _Listing:
    """A data folder whose entries are listed in reverse name order (no order is promised)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def iterdir(self):
        return iter(sorted(self.path.iterdir(), reverse=True))

    def is_file(self) -> bool:
        return self.path.is_file()

    def joinpath(self, *parts: str):
        sub = self.path.joinpath(*parts)
        return _Listing(sub) if sub.is_dir() else sub


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    RT.load_table.cache_clear()
    RT.load_trainer_table.cache_clear()
    monkeypatch.setattr(RT, "_data_dir", lambda: _Listing(tmp_path))
    RT._shared_entries.cache_clear()
    (tmp_path / "trainers").mkdir()
    yield tmp_path
    RT._shared_entries.cache_clear()
    RT.load_table.cache_clear()
    RT.load_trainer_table.cache_clear()


def _write(folder: Path, name: str, table: dict | None = None) -> None:
    (folder / name).write_text(json.dumps(table or {"name": name}), encoding="utf-8")


def test_post_and_pre_releases_order_around_their_release(data_dir: Path) -> None:
    for name in (
        "vllm-0.9.0.json",
        "sglang-0.5.10.post1.json",
        "sglang-0.5.9.json",
        "sglang-0.5.10.json",
        "sglang-0.5.11rc1.json",  # "11rc1" is no number: orders as 0.5
        "sglang-0.5.10post2.json",
        "aaa-1.0-beta.json",  # split at the first "-" only
        "notes.json",  # no "-": not a release table
        "sglang-0.6.0.txt",  # not a table
    ):
        _write(data_dir, name)
    assert RT.known_releases() == {
        "aaa": ("1.0-beta",),
        "sglang": ("0.5.11rc1", "0.5.9", "0.5.10", "0.5.10.post1", "0.5.10post2"),
        "vllm": ("0.9.0",),
    }
    assert list(RT.known_releases()) == ["aaa", "sglang", "vllm"]
    assert newest_release("sglang") == "0.5.10post2"  # what unversioned 'sglang' would mean
    assert RT.read_json("sglang", "0.5.10.post1") == {"name": "sglang-0.5.10.post1.json"}


def test_an_unknown_framework_is_refused_naming_the_known_ones() -> None:
    with pytest.raises(ContractError) as err:
        RT.load_table("tgi", "3.0")
    assert err.value.field == "convention"
    assert str(err.value) == (
        "no release tables for framework 'tgi'; known frameworks: sglang, vllm "
        "(e.g. 'sglang==0.5.23')"
    )


def test_an_unprobed_release_is_refused_naming_every_probed_one() -> None:
    with pytest.raises(ContractError) as err:
        RT.load_table("vllm", "0.4.0")
    assert err.value.field == "convention"
    known = ", ".join(RT.known_releases()["vllm"])
    assert str(err.value) == (
        f"vllm==0.4.0 has not been probed; known vllm releases: {known}. "
        "Probe it with `python -m eagle3_contracts.probe refresh --release vllm==0.4.0` "
        "(needs the package index; writes to the user cache)"
    )


def test_a_probed_table_is_that_releases_table() -> None:
    table = RT.load_table("sglang", "0.5.12")
    assert (table.framework, table.version, table.release) == (
        RT.Framework.SGLANG,
        "0.5.12",
        "sglang==0.5.12",
    )
    assert table.path == "eagle3_contracts/conventions/data/sglang-0.5.12.json"
    trainer = RT.load_trainer_table("specforge", "0.2.0")
    assert (trainer.release, trainer.engine, trainer.backend) == (
        "specforge==0.2.0",
        "sglang==0.5.14",
        "sglang",
    )
    assert trainer.refuses == {"two", "four", "negative"}
    assert trainer.default is RT.DefaultSelection.ONE_MIDM1_LM4


def test_an_unprobed_trainer_release_is_refused_naming_the_probed_ones() -> None:
    with pytest.raises(ContractError) as err:
        RT.load_trainer_table("specforge", "0.3.0")
    assert err.value.field == "trained_with"
    assert str(err.value) == (
        "specforge==0.3.0 has not been probed; probed trainer releases: specforge==0.2.0 (probe "
        "it with `python -m eagle3_contracts.probe refresh --release specforge==0.3.0`, which "
        "needs the package index)"
    )


def test_the_trainer_list_names_each_table_once_as_a_release(data_dir: Path) -> None:
    trainers = data_dir / "trainers"
    _write(trainers, "specforge-0.2.0.json", {"resolver": "ok"})
    _write(trainers, "eagle-1.0-rc1.json")
    (trainers / "readme.txt").write_text("x", encoding="utf-8")
    (trainers / "specforge-0.4.0.json").mkdir()  # a folder is no table
    assert RT.read_trainer_json("specforge", "0.2.0") == {"resolver": "ok"}
    for version in ("0.3.0", "0.4.0"):
        with pytest.raises(ContractError) as err:
            RT.load_trainer_table("specforge", version)
        assert err.value.field == "trained_with"
        assert (
            "probed trainer releases: eagle==1.0-rc1, specforge==0.2.0, specforge==0.4.0 (probe"
            in str(err.value)
        )


# -- the vocabulary -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("rule", "ids", "n", "elements"),
    [
        (RT.SelectionRule.IDENTITY, [3, 1, 1], 8, [3, 1, 1]),
        (RT.SelectionRule.PLUS_ONE, [3, 1, 1], 8, [4, 2, 2]),
        (RT.SelectionRule.PLUS_ONE_IF_FIRST_IS_ONE, [1, 4, 6], 8, [2, 5, 7]),
        (RT.SelectionRule.PLUS_ONE_IF_FIRST_IS_ONE, [2, 4, 6], 8, [2, 4, 6]),
        (RT.SelectionRule.PLUS_ONE_IF_FIRST_IS_ONE, [], 8, []),
        (RT.SelectionRule.IDENTITY_IF_MAX_IS_L_ELSE_PLUS_ONE, [2, 4, 8], 8, [2, 4, 8]),
        (RT.SelectionRule.IDENTITY_IF_MAX_IS_L_ELSE_PLUS_ONE, [2, 4, 7], 8, [3, 5, 8]),
        (RT.SelectionRule.IDENTITY_IF_MAX_IS_L_ELSE_PLUS_ONE, [], 8, []),
        (RT.SelectionRule.SORTED_SET, [6, 2, 6, 4], 8, [2, 4, 6]),
    ],
)
def test_each_selection_rule_maps_ids_to_elements(
    rule: RT.SelectionRule, ids: list[int], n: int, elements: list[int]
) -> None:
    assert rule.elements(list(ids), n) == elements


@pytest.mark.parametrize(
    ("default", "n", "elements"),
    [
        (RT.DefaultSelection.TWO_MID_LM3, 61, [2, 30, 58]),
        (RT.DefaultSelection.ONE_MIDM1_LM4, 32, [1, 15, 28]),
        (RT.DefaultSelection.THREE_MIDP1_LM2, 32, [3, 17, 30]),
    ],
)
def test_each_default_selection_names_its_elements(
    default: RT.DefaultSelection, n: int, elements: list[int]
) -> None:
    assert default.elements(n) == elements


def test_the_probe_classifies_with_the_models_vocabulary() -> None:
    assert list(selection.SET_RULES) == [r.value for r in RT.SelectionRule]
    assert list(selection.DEFAULT_RULES) == [d.value for d in RT.DefaultSelection]
    for rule in RT.SelectionRule:
        assert selection.SET_RULES[rule.value]([1, 5, 5], 5) == rule.elements([1, 5, 5], 5)
    for default in RT.DefaultSelection:
        assert selection.DEFAULT_RULES[default.value](61) == default.elements(61)


def test_frameworks_are_labelled() -> None:
    assert RT.Framework.VLLM.label == "vLLM" and RT.Framework.SGLANG.label == "SGLang"


@pytest.mark.parametrize(
    ("text", "n", "value"), [("0", 61, 0), ("L", 61, 61), ("L-1", 61, 60), ("L-4", 32, 28)]
)
def test_placement_bounds_read_the_depth(text: str, n: int, value: int) -> None:
    assert RT.bound(text, n) == value


# -- reading a table -------------------------------------------------------------------------------
SG23_JSON = RT.read_json("sglang", "0.5.23")
LLAMA = "llama.py:LlamaForCausalLM"


def test_an_entry_class_reads_its_selection_and_placement() -> None:
    table = RT.load_table("sglang", "0.5.23")
    row = table.classes["deepseek_v2.py:DeepseekV3ForCausalLM"]
    assert row.selection.rule is RT.SelectionRule.PLUS_ONE_IF_FIRST_IS_ONE
    assert row.selection.default is RT.DefaultSelection.TWO_MID_LM3
    assert row.selection.last_rank_only is True
    assert row.placement is not None and row.placement.boundary_exact
    assert row.placement.count_checked_line == 3175
    assert row.placement.reaches(0, 61) and not row.placement.reaches(61, 61)
    assert row.placement_problem == ""
    assert (row.class_name, row.model_file) == ("DeepseekV3ForCausalLM", "deepseek_v2.py")
    assert table.precedence == ("eagle_config.eagle_aux_hidden_state_layer_ids",)
    assert table.runner is None


def test_a_vllm_table_reads_its_runner_and_readers() -> None:
    table = RT.load_table("vllm", "0.33.0")
    assert table.runner is not None and table.runner.default is RT.RunnerDefault.V2
    assert table.runner.available == ("v1", "v2")
    v2 = table.evaluated_readers("eagle3_utils.py")
    assert [r.function for r in v2] == ["get_eagle3_aux_layers_from_config"]
    assert v2[0].where == (
        "vllm/v1/worker/gpu/spec_decode/eagle/eagle3_utils.py:113 get_eagle3_aux_layers_from_config"
    )
    llama = table.classes[LLAMA]
    assert table.grid(llama, "duplicate", 32) == [1, 28]
    assert table.grid(llama, "none", 32) == "raises TypeError"


def test_keys_a_newer_probe_adds_are_ignored() -> None:
    data = copy.deepcopy(SG23_JSON)
    data["new_section"] = {"anything": 1}
    data["classes"][LLAMA]["new_fact"] = True
    data["classes"][LLAMA]["selection"]["new_flag"] = "x"
    data["id_source"]["readers"][0]["new_key"] = []
    assert RT.ReleaseTable.from_json(data) == RT.load_table("sglang", "0.5.23")


def test_an_unknown_rule_or_default_reads_as_none_with_its_name_kept() -> None:
    data = copy.deepcopy(SG23_JSON)
    data["classes"][LLAMA]["selection"].update(rule="reversed", default="4,L//3,L-1")
    row = RT.ReleaseTable.from_json(data).classes[LLAMA]
    assert (row.selection.rule, row.selection.rule_name) == (None, "reversed")
    assert (row.selection.default, row.selection.default_name) == (None, "4,L//3,L-1")


@pytest.mark.parametrize("drop", ["framework", "classes", "id_source", "model_files"])
def test_a_malformed_table_is_refused_naming_the_field(drop: str) -> None:
    data = copy.deepcopy(SG23_JSON)
    del data[drop]
    with pytest.raises(
        ContractError, match=rf"release table is malformed \(KeyError: '{drop}'\)"
    ) as err:
        RT.ReleaseTable.from_json(data)
    assert err.value.field == "release_table"


def test_a_table_of_an_unprobed_engine_is_refused() -> None:
    data = {**SG23_JSON, "framework": "tgi"}
    with pytest.raises(ContractError, match=r"'tgi' is not a valid Framework"):
        RT.ReleaseTable.from_json(data)


def test_a_malformed_trainer_table_is_refused() -> None:
    data = RT.read_trainer_json("specforge", "0.2.0")
    with pytest.raises(ContractError, match=r"trainer table is malformed") as err:
        RT.TrainerTable.from_json({k: v for k, v in data.items() if k != "resolver"})
    assert err.value.field == "release_table"


def test_a_placement_digest_keeps_the_facts_users_feel_and_no_empty_strings() -> None:
    """``Placement.digest`` compares releases without line numbers (the registry page): a
    placement that records no embedding says None, never an empty string."""
    table = RT.load_table("sglang", "0.5.23")
    captured = table.classes["apertus.py:ApertusForCausalLM"].placement
    unrecorded = table.classes["gemma4_causal.py:Gemma4ForCausalLM"].placement
    assert captured is not None and unrecorded is not None
    assert captured.digest() == {
        "elements": ["0..L-1"],
        "embedding": "captured",
        "last_output": False,
        "stores": ["hidden+residual (hidden when residual is None)"],
    }
    assert unrecorded.embedding == "" and unrecorded.digest()["embedding"] is None


def test_table_readers_take_absent_lists_as_empty_and_read_what_is_there() -> None:
    """A table written before a field existed reads as empty; a field present is read."""
    arms = RT.SetterArms.from_json({"verdict": RT.ArmsVerdict.UNKNOWN.value})
    assert (arms.writes, arms.setters, arms.unarmed, arms.unread) == ((), (), (), ())
    full = RT.SetterArms.from_json(
        {
            "verdict": RT.ArmsVerdict.UNKNOWN.value,
            "writes": ["layers_to_capture"],
            "unread": ["a hand-on through self.model"],
        }
    )
    assert full.writes == ("layers_to_capture",) and full.unread == (
        "a hand-on through self.model",
    )
    bare = RT.Placement.from_json("llama.py", "LlamaModel.forward", {})
    assert bare.sites == () and bare.elements == ()


def test_a_trainer_table_reads_its_offline_checks() -> None:
    table = RT.load_trainer_table("specforge", "0.2.0")
    assert table.offline_checks and set(table.offline_checks) >= {"distinct"}
