"""Every shipped release answered offline, its coverage measured, and the generated data and
docs equal to what the shipped tables say (``probe.report``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eagle3_contracts.conventions.predict import predict_feed
from eagle3_contracts.conventions.releases import (
    CHANGES_FILE,
    COVERAGE_FILE,
    read_json,
    rule_changes,
    shipped_releases,
)
from eagle3_contracts.probe import report
from eagle3_contracts.probe.__main__ import PACKAGE_DATA

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = json.loads((PACKAGE_DATA / COVERAGE_FILE).read_text())
RELEASES = [f"{fw}=={v}" for fw, vs in shipped_releases().items() for v in vs]
TARGETS = {  # the four targets of every release: dense, dense, MoE (MLA), multimodal
    "llama": ("LlamaForCausalLM", 32),
    "qwen3": ("Qwen3ForCausalLM", 36),
    "deepseek-v3": ("DeepseekV3ForCausalLM", 61),
    "multimodal": ("Qwen2_5_VLForConditionalGeneration", 28),
}


@pytest.fixture(scope="module")
def tables() -> dict[str, object]:
    return {t.release: t for t in report.shipped_tables()}


def test_the_committed_coverage_names_every_shipped_release() -> None:
    assert sorted(COMMITTED) == sorted(RELEASES)


@pytest.mark.parametrize("release", RELEASES)
def test_unknown_rows_do_not_grow(release: str, tables: dict) -> None:
    """A release's coverage, measured now, has no more unknown rows than committed (fewer is
    progress: regenerate with ``scripts/reprobe_releases.py --offline``)."""
    now = report.coverage_row(tables[release])
    was = COMMITTED[release]
    grown = sorted(set(now["unknown_architectures"]) - set(was["unknown_architectures"]))
    assert not grown, f"{release}: newly unknown {grown}"
    assert now["unknown"] <= was["unknown"]
    assert sum(now[k] for k in report.KINDS) == sum(was[k] for k in report.KINDS)


@pytest.mark.parametrize("release", RELEASES)
@pytest.mark.parametrize("target", sorted(TARGETS))
def test_every_release_answers_the_four_targets_without_a_probe(release: str, target: str) -> None:
    """Not unknown for want of a table: every shipped release has one (offline), for Llama,
    Qwen3, DeepSeek-V3 and a multimodal target."""
    arch, depth = TARGETS[target]
    config = {"architectures": [arch], "num_hidden_layers": depth, "hidden_size": 64}
    feed = predict_feed(release, report.COVERAGE_DRAFT, config)
    assert not feed.unprobed, feed.source
    framework, version = release.split("==")
    assert read_json(framework, version)["version"] == version  # a shipped table, expanded


def test_the_change_log_is_what_the_shipped_tables_say(tables: dict) -> None:
    assert rule_changes() == report.changes(tables.values())
    assert json.loads((PACKAGE_DATA / CHANGES_FILE).read_text()) == rule_changes()


def test_the_coverage_and_releases_pages_are_generated_from_the_data() -> None:
    docs = ROOT / "docs" / "readme"
    assert (docs / "coverage.md").read_text() == report.coverage_markdown(COMMITTED)
    releases_page = (docs / "releases.md").read_text()
    assert releases_page == report.releases_page(rule_changes())
    for release in RELEASES:  # every release is listed by version
        framework, version = release.split("==")
        assert version in releases_page.split(f"- {framework} (", 1)[1].split("\n", 1)[0]


def test_check_list_names_every_release_and_where_rules_changed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from eagle3_contracts.cli import main

    assert main(["check", "--list"]) == 0
    out = capsys.readouterr().out
    for framework, versions in shipped_releases().items():
        (line,) = [x for x in out.splitlines() if x.startswith(f"{framework} releases (")]
        assert line.endswith(": " + ", ".join(versions))  # every release, oldest first
        assert f"{framework} rule changes (first release with the new value):" in out
    # the SGLang switch of DeepSeek's setter, as probe bisect found it
    assert (
        "  0.5.13: deepseek_v2.py:DeepseekV3ForCausalLM/rule 'plus_one' -> "
        "'plus_one_if_first_is_one'" in out.splitlines()
    )
