"""The shipped release tables: one copy (package data), the transitions, and registry answers
backed by probe results (offline: reads the package data only)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eagle3_contracts.conventions.releases import (
    CHANGES_FILE,
    COVERAGE_FILE,
    SHARED_DIR,
    Placement,
    ReleaseTable,
    SelectionRule,
    known_releases,
    load_table,
    read_json,
    shipped_releases,
)
from eagle3_contracts.probe import render
from eagle3_contracts.probe.__main__ import HEADER, PACKAGE_DATA
from eagle3_contracts.probe.frameworks import KNOWN_RELEASES
from eagle3_contracts.probe.selection import GRID_LAYERS, grid_ids
from eagle3_contracts.probe.tables import PROBE_FORMAT, compact, dumps, dumps_shared

ROOT = Path(__file__).resolve().parents[2]
RELEASES = [(fw, v) for fw, vs in KNOWN_RELEASES.items() for v in vs]


def _rule(framework: str, version: str, key: str) -> SelectionRule | None:
    return load_table(framework, version).classes[key].selection.rule


SHIPPED = [(fw, v) for fw, vs in shipped_releases().items() for v in vs]


def test_the_tables_live_once_as_package_data():
    shipped = sorted(p.name for p in PACKAGE_DATA.glob("*-*.json"))
    assert shipped == sorted(f"{fw}-{v}.json" for fw, v in SHIPPED)
    assert set(RELEASES) <= set(SHIPPED)  # the README table's releases are shipped ones
    others = {p.name for p in PACKAGE_DATA.iterdir()} - set(shipped)
    assert others == {CHANGES_FILE, COVERAGE_FILE, SHARED_DIR, "trainers"}
    assert not (ROOT / "goldens" / "registry").exists()  # no second copy to drift apart
    for fw, v in SHIPPED:  # every shipped table reads through the typed model
        assert load_table(fw, v).path == f"eagle3_contracts/conventions/data/{fw}-{v}.json"


def test_known_releases_are_the_shipped_ones_with_an_empty_user_cache():
    assert known_releases() == shipped_releases()
    assert {fw: len(vs) for fw, vs in known_releases().items()} == {"sglang": 42, "vllm": 39}


def test_the_package_data_stays_under_6_mb():
    size = sum(p.stat().st_size for p in PACKAGE_DATA.rglob("*") if p.is_file())
    assert size < 6_000_000, f"package data {size} bytes"


@pytest.mark.parametrize(("framework", "version"), SHIPPED)
def test_tables_are_stable_dumps_of_their_release(framework, version):
    text = (PACKAGE_DATA / f"{framework}-{version}.json").read_text()
    assert dumps(json.loads(text)) == text  # stable key order and layout: a diff is behaviour
    table = read_json(framework, version)  # shared entries expanded
    assert (table["framework"], table["version"]) == (framework, version)
    assert table["probe_format"] == PROBE_FORMAT
    assert table["wheel"]["name"].startswith(f"{framework}-{version}-")
    assert table["grid"]["layers"] == list(GRID_LAYERS)
    assert table["sources"]  # the read files' hashes, for ==installed


@pytest.mark.parametrize("framework", sorted(shipped_releases()))
def test_shared_entries_are_stored_once_and_all_used(framework):
    """Compact storage: the pool holds only entries two or more releases reference, and
    re-compacting the expanded tables gives the files back byte for byte."""
    versions = shipped_releases()[framework]
    expanded = [read_json(framework, v) for v in versions]
    small, pool = compact(expanded)
    assert dumps_shared(pool) == (PACKAGE_DATA / SHARED_DIR / f"{framework}.json").read_text()
    for version, table in zip(versions, small, strict=True):
        assert dumps(table) == (PACKAGE_DATA / f"{framework}-{version}.json").read_text()
    refs = [
        v
        for t in small
        for section in t.values()
        for v in (section.values() if isinstance(section, dict) else [section])
        if isinstance(v, str) and v.startswith("@")
    ]
    assert {r[1:] for r in refs} == {d for rows in pool.values() for d in rows}


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
    dflash = "dflash_config.target_layer_ids"  # 0.21.0 reads it as is when no top-level ids
    assert load_table("vllm", "0.21.0").precedence == (top, dflash)
    assert load_table("vllm", "0.22.0").precedence == (top, nested)
    assert load_table("vllm", "0.33.0").precedence == (top, nested)
    raw = read_json("vllm", "0.21.0")
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
def test_every_release_answer_is_backed_by_the_probe_grid(framework, version):
    """What an engine name collects (check's simulation, ``conventions.predict``, whatever the
    drafter's fc then makes of it) is what the probe's own grid and placement say, for every
    entry class a target can pick."""
    from eagle3_contracts import conventions

    table = load_table(framework, version)
    runner = ":v1" if table.runner is not None and "v1" in table.runner.available else ""
    first: dict[str, str] = {}
    for arch, key in sorted(table.architectures.items()):
        first.setdefault(key, arch)
    backed = 0
    for key, arch in sorted(first.items()):
        placement = render.placement_of(table, key)
        if placement is None or placement.boundary_minus_element is None:
            continue  # the probe's grid names no boundaries there: nothing to back it with
        reading = conventions.get(f"{framework}=={version}{runner}", architectures=[arch])
        backed += 1
        for n in GRID_LAYERS:
            for case, ids in grid_ids(n).items():
                if not ids:
                    continue
                feed = reading.feed(ids, n)
                fed = feed.canonical  # an fc crash still collects these
                got = frozenset(fed) if fed and len(fed) == len(set(ids)) else None
                probed = _fed_by_probe(table, key, ids, case, n)
                where = (framework, version, key, case, n)
                if got is None and probed is not None:
                    # the simulation knows what the grid cannot see (a setter that arms no
                    # capture): a crash or unknown with its reason, never a quiet translation
                    assert feed.kind in ("crash", "unknown") and feed.notes, where
                else:
                    assert got == probed, where
    assert backed >= 5


def test_readme_table_is_generated_from_the_tables():
    text = (ROOT / "docs" / "readme" / "registry.md").read_text()
    tables = [load_table(fw, v) for fw, v in RELEASES]
    assert HEADER + render.readme_table(tables) in text


def test_vllm_v2_reader_precedence_covers_every_field_it_reads():
    """Model runner V2 (eagle3_utils.py get_eagle3_aux_layers_from_config): top-level ids, the
    DFlash, DSpark and target_layer_ids forms with their + 1, then the layer_ids forms; never
    the nested eagle_config ids."""
    for version in ("0.32.0", "0.33.0"):
        (reader,) = load_table("vllm", version).evaluated_readers("eagle3_utils.py")
        assert reader.precedence == (
            "eagle_aux_hidden_state_layer_ids",
            "dflash_config.target_layer_ids + 1",
            "dspark_target_layer_ids + 1",
            "target_layer_ids + 1",
            "dflash_config.layer_ids",
            "eagle_config.layer_ids",
        )
        raw = read_json("vllm", version)
        (row,) = [r for r in raw["id_source"]["readers"] if r["file"].endswith("eagle3_utils.py")]
        assert row["answers"]["nested_only"] == "absent"


def test_probe_release_names_are_read_by_the_one_parser() -> None:
    import argparse

    from eagle3_contracts.probe.__main__ import _releases

    args = argparse.Namespace(release=["SGLang == 0.5.24", "specforge==0.3.0"], new=False)
    assert _releases(args) == [("sglang", "0.5.24"), ("specforge", "0.3.0")]
    for bad, says in (("sglang", "framework==version"), ("tgi==1.0", "unknown system name")):
        with pytest.raises(SystemExit, match=says):
            _releases(argparse.Namespace(release=[bad], new=False))
