"""Hugging Face Hub ids (``org/name[@revision]``) wherever a drafter or target path is taken.

Offline first: the local HF cache is read directly, in the layout ``huggingface_hub`` writes
(``models--org--name/refs/<revision>`` holds a commit, ``snapshots/<commit>/<file>`` the file,
``.no_exist/<commit>/<file>`` a file known to be absent; huggingface_hub 2.4.0
``file_download.py:1584-1620``, ``try_to_load_from_cache``), so a cached id costs a few ``stat``
calls and no import of ``huggingface_hub`` (measured ~0.13-0.23 s to import its download
module, most of ``check``'s budget). Only on a cache miss, and never with ``HF_HUB_OFFLINE=1``,
is the library imported to download ``config.json`` (``hf_hub_download``) or to read the
safetensors headers of the weights (``HfApi.get_safetensors_metadata``: a few KB per file, never
the weights). Every miss is one ``ConfigError`` naming the id and whether the cache, the network
or both were tried.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eagle3_contracts.errors import ConfigError

_HUB_ID = re.compile(
    r"^(?P<repo>[A-Za-z0-9][A-Za-z0-9_.-]{0,95}/[A-Za-z0-9][A-Za-z0-9_.-]{0,95})"
    r"(?:@(?P<revision>[A-Za-z0-9][A-Za-z0-9_./-]{0,199}))?$"
)
_FILE_SUFFIXES = (".json", ".safetensors", ".pt", ".bin", ".ckpt", ".gz")
_TRUE = frozenset({"1", "ON", "YES", "TRUE"})  # huggingface_hub constants.py _is_true
CONFIG = "config.json"
WEIGHTS_INDEX = "model.safetensors.index.json"


@dataclass(frozen=True)
class HubId:
    """``org/name`` and the revision asked for (``None``: the repo's ``main``)."""

    repo_id: str
    revision: str | None = None

    def __str__(self) -> str:
        return self.repo_id + (f"@{self.revision}" if self.revision else "")

    @property
    def folder(self) -> str:
        """The repo's cache folder name (huggingface_hub ``file_download.repo_folder_name``)."""
        return "--".join(("models", *self.repo_id.split("/")))


def parse_hub_id(text: object) -> HubId | None:
    """``text`` as a Hub id, or ``None`` when it is a local path (it exists, or it looks like a
    file: ``.json``, ``.safetensors`` ...) or not of the form ``org/name[@revision]``."""
    if not isinstance(text, str) or os.path.exists(text):
        return None
    match = _HUB_ID.match(text)
    if match is None or match["repo"].lower().endswith(_FILE_SUFFIXES):
        return None
    return HubId(match["repo"], match["revision"])


# -- the environment, as huggingface_hub reads it (constants.py:160-194) ---------------------
def cache_dir() -> Path:
    """``HF_HUB_CACHE``, else ``HUGGINGFACE_HUB_CACHE``, else ``$HF_HOME/hub``, else
    ``$XDG_CACHE_HOME/huggingface/hub`` (``~/.cache`` by default). Read at call time."""
    env = os.environ
    explicit = env.get("HF_HUB_CACHE") or env.get("HUGGINGFACE_HUB_CACHE")
    if explicit:
        return Path(os.path.expandvars(os.path.expanduser(explicit)))
    xdg = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    home = env.get("HF_HOME") or os.path.join(xdg, "huggingface")
    return Path(os.path.expandvars(os.path.expanduser(home))) / "hub"


def offline() -> bool:
    """``HF_HUB_OFFLINE`` (or ``TRANSFORMERS_OFFLINE``) is set to a true value."""
    value = os.environ.get("HF_HUB_OFFLINE") or os.environ.get("TRANSFORMERS_OFFLINE") or ""
    return value.upper() in _TRUE


# -- the cache -----------------------------------------------------------------------------------
def _commit(hub: HubId, repo: Path) -> str:
    """The commit ``hub.revision`` names in the cache: ``refs/<revision>``, else the revision
    itself (a commit hash)."""
    revision = hub.revision or "main"
    ref = repo / "refs" / revision
    if ref.is_file():
        return ref.read_text(encoding="utf-8").strip()
    return revision


def cached_snapshot(hub: HubId) -> Path | None:
    """The cached snapshot folder of ``hub`` at its revision, or ``None``."""
    repo = cache_dir() / hub.folder
    if not repo.is_dir():
        return None
    snapshot = repo / "snapshots" / _commit(hub, repo)
    return snapshot if snapshot.is_dir() else None


def cached_file(hub: HubId, filename: str) -> Path | None:
    """The cached ``filename`` of ``hub`` (a path in its snapshot), or ``None``."""
    snapshot = cached_snapshot(hub)
    if snapshot is None:
        return None
    path = snapshot / filename
    return path if path.is_file() else None


def cached_weights(hub: HubId) -> Path | None:
    """The snapshot folder when it holds every safetensors file of the weights (the shards the
    index names, or ``*.safetensors``), else ``None``."""
    snapshot = cached_snapshot(hub)
    if snapshot is None:
        return None
    index = snapshot / WEIGHTS_INDEX
    if index.is_file():
        from eagle3_contracts._io import read_json_file

        data = read_json_file(index, what="safetensors index")
        shards = set((data.get("weight_map") or {}).values()) if isinstance(data, dict) else set()
        if shards and all((snapshot / str(s)).is_file() for s in shards):
            return snapshot
        return None
    return snapshot if any(snapshot.glob("*.safetensors")) else None


# -- resolution ----------------------------------------------------------------------------------
def _miss(hub: HubId, what: str, network: str) -> ConfigError:
    return ConfigError(
        f"{what} {hub}: not in the HF cache ({cache_dir()}); {network}",
        source=None,
        field=what.replace(" ", "_"),
    )


def _network_error(exc: Exception) -> str:
    first = " ".join(str(exc).split())[:240]
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def config_file(hub: HubId, *, what: str = "model") -> tuple[Path, str]:
    """The local ``config.json`` of ``hub`` and how it was found (``"HF cache"`` or
    ``"downloaded"``): the cache first; then, unless offline, ``hf_hub_download`` of that one
    file (into the same cache)."""
    cached = cached_file(hub, CONFIG)
    if cached is not None:
        return cached, "HF cache"
    if offline():
        raise _miss(hub, what, "HF_HUB_OFFLINE is set, so the network was not tried")
    try:
        from huggingface_hub import hf_hub_download

        path = hf_hub_download(
            hub.repo_id, CONFIG, revision=hub.revision, cache_dir=str(cache_dir())
        )
    except Exception as exc:  # the library's network and not-found errors, as one line
        raise _miss(hub, what, f"the Hub was tried: {_network_error(exc)}") from None
    return Path(path), "downloaded"


def resolve_model(text: str, *, what: str = "model") -> tuple[str, str | None]:
    """A drafter/target argument as a local path: a Hub id becomes the snapshot folder holding
    its ``config.json`` (cache first, then the network); a local path is returned as given.
    The second value says how a Hub id was resolved (``None`` for a local path)."""
    hub = parse_hub_id(text)
    if hub is None:
        return text, None
    path, how = config_file(hub, what=what)
    return str(path.parent), f"{what} {hub}: {how} {path.parent}"


@dataclass(frozen=True)
class RemoteTensor:
    """A tensor's entry in a safetensors header read from the Hub (no local file)."""

    file: str  # "org/name@rev:model.safetensors"
    dtype: str
    shape: tuple[int, ...]


def resolve_weights(text: str) -> tuple[str | dict[str, RemoteTensor], str | None]:
    """A ``--weights`` argument: a local path as given; a Hub id as its cached snapshot folder
    when every safetensors file is cached, else (online) the headers from
    ``get_safetensors_metadata`` (``{tensor name: RemoteTensor}``). The second value says how."""
    hub = parse_hub_id(text)
    if hub is None:
        return text, None
    cached = cached_weights(hub)
    if cached is not None:
        return str(cached), f"weights {hub}: HF cache {cached}"
    if offline():
        raise _miss(hub, "weights", "HF_HUB_OFFLINE is set, so the network was not tried")
    try:
        from huggingface_hub import HfApi

        meta: Any = HfApi().get_safetensors_metadata(hub.repo_id, revision=hub.revision)
    except Exception as exc:  # the library's network and not-a-safetensors-repo errors
        raise _miss(hub, "weights", f"the Hub was tried: {_network_error(exc)}") from None
    tensors = {
        name: RemoteTensor(f"{hub}:{filename}", str(info.dtype), tuple(int(d) for d in info.shape))
        for filename, file_meta in meta.files_metadata.items()
        for name, info in file_meta.tensors.items()
    }
    return tensors, f"weights {hub}: safetensors headers from the Hub (no weights downloaded)"


__all__ = [
    "HubId",
    "RemoteTensor",
    "cache_dir",
    "cached_file",
    "cached_snapshot",
    "cached_weights",
    "config_file",
    "offline",
    "parse_hub_id",
    "resolve_model",
    "resolve_weights",
]
