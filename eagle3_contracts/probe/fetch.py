"""Fetch a released wheel with pip, keep only the few source files the probe reads.

The wheel is downloaded (``pip download --no-deps --only-binary=:all:``) into a temporary
directory, opened as a zip, the wanted members are copied under ``<cache>/<framework>-<version>/``
and the wheel is deleted. Nothing is installed or imported. Needs the package index: used by the
``refresh``/``check``/``bisect`` commands and ``tox -e registry`` only, never by the tests.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from eagle3_contracts.probe.frameworks import FrameworkSpec, wanted

DEFAULT_CACHE = Path(".cache") / "registry-src"
"""Git-ignored cache of extracted sources (the repository's ``/.cache/`` entry)."""


class FetchError(RuntimeError):
    """The package index had no usable wheel (or could not be reached)."""


def release_dir(spec: FrameworkSpec, version: str, cache: Path = DEFAULT_CACHE) -> Path:
    return cache / f"{spec.name}-{version}"


def fetch(spec: FrameworkSpec, version: str, cache: Path = DEFAULT_CACHE) -> Path:
    """The extracted sources of ``spec.package==version`` (downloaded once, then cached)."""
    dest = release_dir(spec, version, cache)
    marker = dest / "wheel.json"
    if marker.exists():
        return dest
    with tempfile.TemporaryDirectory(prefix="eagle3-probe-") as tmp:
        cmd = [
            sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
            "--disable-pip-version-check", "-q", *spec.pip_args,
            f"{spec.package}=={version}", "-d", tmp,
        ]  # fmt: skip
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        wheels = sorted(Path(tmp).glob("*.whl"))
        if done.returncode != 0 or len(wheels) != 1:
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no wheel"]
            raise FetchError(f"{spec.package}=={version}: {tail[0]}")
        wheel = wheels[0]
        digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
        kept = []
        with zipfile.ZipFile(wheel) as zf:
            for member in zf.namelist():
                if wanted(spec, member):
                    target = dest / member
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(zf.read(member))
                    kept.append(member)
        dest.mkdir(parents=True, exist_ok=True)
        info = {"files": len(kept), "sha256": digest, "wheel": wheel.name}
        marker.write_text(json.dumps(info, indent=1, sort_keys=True) + "\n")
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
