"""The shipped release tables: one copy (package data), the transitions, and registry answers
backed by probe results (offline: reads the package data only)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eagle3_contracts.conventions.releases import (
    Placement,
    ReleaseTable,
    SelectionRule,
    convention_from_table,
    known_releases,
    load_table,
)
from eagle3_contracts.errors import ContractError
from eagle3_contracts.probe import render
from eagle3_contracts.probe.__main__ import HEADER, PACKAGE_DATA
from eagle3_contracts.probe.frameworks import KNOWN_RELEASES
from eagle3_contracts.probe.selection import GRID_LAYERS, grid_ids
from eagle3_contracts.probe.tables import PROBE_FORMAT, dumps

ROOT = Path(__file__).resolve().parents[2]
RELEASES = [(fw, v) for fw, vs in KNOWN_RELEASES.items() for v in vs]


def _rule(framework: str, version: str, key: str) -> SelectionRule | None:
    return load_table(framework, version).classes[key].selection.rule


def test_the_tables_live_once_as_package_data():
    shipped = sorted(p.name for p in PACKAGE_DATA.glob("*.json"))
    assert shipped == sorted(f"{fw}-{v}.json" for fw, v in RELEASES)
    assert not (ROOT / "goldens" / "registry").exists()  # no second copy to drift apart
    for fw, v in RELEASES:  # every shipped table reads through the typed model
        assert load_table(fw, v).path == f"eagle3_contracts/conventions/data/{fw}-{v}.json"


def test_known_releases_match_the_probe_list():
    assert known_releases() == {fw: tuple(vs) for fw, vs in KNOWN_RELEASES.items()}


@pytest.mark.parametrize(("framework", "version"), RELEASES)
def test_tables_are_stable_dumps_of_their_release(framework, version):
    text = (PACKAGE_DATA / f"{framework}-{version}.json").read_text()
    table = json.loads(text)
    assert dumps(table) == text  # stable key order and layout: a refresh diff is behaviour only
    assert (table["framework"], table["version"]) == (framework, version)
    assert table["probe_format"] == PROBE_FORMAT
    assert table["wheel"]["name"].startswith(f"{framework}-{version}-")
    assert table["grid"]["layers"] == list(GRID_LAYERS)


def test_sglang_0_5_13_switches_deepseek_v2_and_glm4_moe_lite_only():
    for key in ("deepseek_v2.py:DeepseekV3ForCausalLM", "glm4_moe_lite.py:Glm4MoeLiteForCausalLM"):
        assert _rule("sglang", "0.5.12", key) is SelectionRule.PLUS_ONE
        assert _rule("sglang", "0.5.13", key) is SelectionRule.PLUS_ONE_IF_FIRST_IS_ONE
    for key in (
        "llama.py:LlamaForCausalLM",
        "qwen3.py:Qwen3ForCausalLM",
        "gpt_oss.py:GptOssForCausalLM",
    ):
        assert _rule("sglang", "0.5.12", key) is SelectionRule.PLUS_ONE
        assert _rule("sglang", "0.5.13", key) is SelectionRule.PLUS_ONE
    kimi = load_table("sglang", "0.5.23").classes["kimi_k25.py:KimiK25ForConditionalGeneration"]
    assert kimi.file == "deepseek_v2.py"  # the wrapper delegates to its DeepSeek-V3 model
    assert kimi.selection.rule is SelectionRule.PLUS_ONE_IF_FIRST_IS_ONE


def test_sglang_0_5_17_switches_gpt_oss_and_reaches_the_last_output():
    key = "gpt_oss.py:GptOssForCausalLM"
    assert _rule("sglang", "0.5.16", key) is SelectionRule.PLUS_ONE
    assert _rule("sglang", "0.5.17", key) is SelectionRule.IDENTITY_IF_MAX_IS_L_ELSE_PLUS_ONE
    new = render.placement_of(load_table("sglang", "0.5.17"), key)
    old = render.placement_of(load_table("sglang", "0.5.16"), key)
    assert new is not None and new.last_output is True
    assert old is not None and old.last_output is False


def test_vllm_top_level_only_until_0_21_then_nested_fallback():
    nested = "eagle_config.eagle_aux_hidden_state_layer_ids"
    top = "eagle_aux_hidden_state_layer_ids"
    assert load_table("vllm", "0.21.0").precedence == (top,)
    assert load_table("vllm", "0.22.0").precedence == (top, nested)
    assert load_table("vllm", "0.33.0").precedence == (top, nested)
    raw = json.loads((PACKAGE_DATA / "vllm-0.21.0.json").read_text())
    answers = raw["id_source"]["readers"][0]["answers"]  # the probe's evidence, as written
    assert answers["nested_only"] == "absent"  # nested-only drafts silently get the default


def test_vllm_0_33_sorts_and_dedups_except_in_deepseek_v2():
    table = load_table("vllm", "0.33.0")
    assert table.classes["llama.py:LlamaForCausalLM"].selection.rule is SelectionRule.SORTED_SET
    deepseek = table.classes["deepseek_v2.py:DeepseekV3ForCausalLM"]
    assert deepseek.selection.rule is SelectionRule.IDENTITY


def _fed_by_probe(
    table: ReleaseTable, key: str, ids: list[int], case: str, n: int
) -> frozenset | None:
    """Canonical ids fed, read off the probe's own grid and placement (None: error/crash)."""
    elements = table.grid(table.classes[key], case, n)
    placement: Placement | None = render.placement_of(table, key)
    if not isinstance(elements, list) or placement is None:
        return None
    offset = placement.boundary_minus_element
    assert offset is not None
    out = set()
    for e in elements:
        b = e + offset
        if not placement.reaches(b, n):
            return None
        if b == 0 and placement.embedding != "captured":
            return None
        out.add(b - 1)
    return frozenset(out)


@pytest.mark.parametrize(("framework", "version"), RELEASES)
def test_every_registry_answer_is_backed_by_the_probe_grid(framework, version):
    table = load_table(framework, version)
    backed = 0
    for key in table.classes:
        try:
            convention = convention_from_table(table, key)
        except ContractError:
            continue  # needs reading: the registry refuses to answer for it
        backed += 1
        for n in GRID_LAYERS:
            for case, ids in grid_ids(n).items():
                if not ids:
                    continue
                try:
                    got = frozenset(convention.to_canonical(ids, n))
                except ContractError:
                    got = None
                assert got == _fed_by_probe(table, key, ids, case, n), (
                    framework,
                    version,
                    key,
                    case,
                    n,
                )
    assert backed >= 5


def test_readme_table_is_generated_from_the_tables():
    text = (ROOT / "docs" / "readme" / "registry.md").read_text()
    tables = [load_table(fw, v) for fw, v in RELEASES]
    assert HEADER + render.readme_table(tables) in text


def test_probe_release_names_are_read_by_the_one_parser() -> None:
    import argparse

    from eagle3_contracts.probe.__main__ import _releases

    args = argparse.Namespace(release=["SGLang == 0.5.24", "specforge==0.3.0"], new=False)
    assert _releases(args) == [("sglang", "0.5.24"), ("specforge", "0.3.0")]
    for bad, says in (("sglang", "framework==version"), ("tgi==1.0", "unknown system name")):
        with pytest.raises(SystemExit, match=says):
            _releases(argparse.Namespace(release=[bad], new=False))
