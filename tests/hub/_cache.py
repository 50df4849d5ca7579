"""A local Hugging Face cache in the layout ``huggingface_hub`` writes (2.4.0
``file_download.py``): ``models--org--name/blobs/<sha256>`` holds each file once,
``snapshots/<commit>/<name>`` is a relative symlink to its blob, ``refs/<branch>`` holds the
commit. The tests check the layout against the library's own ``try_to_load_from_cache``."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path

TARGET = {
    "model_type": "llama",
    "architectures": ["LlamaForCausalLM"],
    "num_hidden_layers": 6,
    "hidden_size": 16,
    "vocab_size": 64,
}
DRAFT = {
    "architectures": ["LlamaForCausalLMEagle3"],
    "model_type": "llama",
    "hidden_size": 16,
    "target_hidden_size": 16,
    "num_hidden_layers": 1,
    "vocab_size": 64,
    "draft_vocab_size": 64,
    "eagle_config": {"eagle_aux_hidden_state_layer_ids": [0, 2, 4]},
}


def add_repo(
    cache: Path,
    repo_id: str,
    files: Mapping[str, bytes],
    *,
    commit: str | None = None,
    branch: str = "main",
) -> Path:
    """Put ``files`` into ``cache`` as ``repo_id`` at ``commit`` (``refs/<branch>``); return
    the snapshot folder."""
    commit = commit or hashlib.sha1(repo_id.encode() + b"".join(files.values())).hexdigest()
    repo = cache / ("models--" + repo_id.replace("/", "--"))
    snapshot = repo / "snapshots" / commit
    (repo / "blobs").mkdir(parents=True, exist_ok=True)
    (repo / "refs").mkdir(exist_ok=True)
    snapshot.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        blob = repo / "blobs" / hashlib.sha256(data).hexdigest()
        blob.write_bytes(data)
        link = snapshot / name
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(blob, link.parent))
    (repo / "refs" / branch).write_text(commit)  # no newline, as huggingface_hub writes it
    return snapshot


def config_bytes(data: Mapping[str, object]) -> bytes:
    return json.dumps(data, indent=2).encode()


def safetensors_bytes(tensors: Mapping[str, object]) -> bytes:
    from safetensors.torch import save

    return save(dict(tensors))  # type: ignore[arg-type]
