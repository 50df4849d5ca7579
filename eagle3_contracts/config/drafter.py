"""Drafter coherence: fc width, vocab mapping (d2t/t2d) and norm flags.

Shapes come from the config or from a safetensors header, read without loading any tensor.
Only ``d2t``/``t2d`` values are loaded (``safetensors`` ``safe_open``, one tensor at a time;
torch is imported there and nowhere else). Never unpickles.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eagle3_contracts._io import load_json, regular_file
from eagle3_contracts.config.readers import KNOWN_NORM_FLAGS, DraftConfig, TargetConfig
from eagle3_contracts.errors import ConfigError

OK, WARNING, ERROR, SKIPPED = "ok", "warning", "error", "skipped"
_MAX_HEADER = 100 * 1024 * 1024  # safetensors' own limit on the JSON header


@dataclass(frozen=True)
class DrafterCheck:
    """One coherence check of the drafter against its target."""

    name: str  # "fc-width", "vocab", "vocab-mapping", "norm-flags"
    status: str  # "ok", "warning", "error" or "skipped"
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"name": self.name, "status": self.status, "message": self.message}


@dataclass(frozen=True)
class TensorInfo:
    """A tensor's entry in a safetensors header."""

    file: str
    dtype: str
    shape: tuple[int, ...]


def read_safetensors_header(path: str | os.PathLike[str]) -> dict[str, TensorInfo]:
    """Tensor names -> dtype and shape, from the header of one ``.safetensors`` file or every
    ``*.safetensors`` file of a directory. No tensor data is read."""
    path = Path(path)
    files = sorted(path.glob("*.safetensors")) if path.is_dir() else [path]
    if not files:
        raise ConfigError("no *.safetensors file in this directory", source=str(path))
    out: dict[str, TensorInfo] = {}
    for file in files:
        out.update(_one_header(file))
    return out


def _one_header(file: Path) -> dict[str, TensorInfo]:
    src = str(file)
    regular_file(file, what="weights file")  # a FIFO would block, /dev/zero never end
    try:
        with open(file, "rb") as fh:
            head = fh.read(8)
            if len(head) < 8:
                raise ConfigError("not a safetensors file (shorter than 8 bytes)", source=src)
            (size,) = struct.unpack("<Q", head)
            total = os.fstat(fh.fileno()).st_size
            if size > min(_MAX_HEADER, total - 8):
                raise ConfigError(
                    f"not a safetensors file: header length {size} exceeds the file", source=src
                )
            raw = fh.read(size)
    except OSError as exc:
        raise ConfigError(f"cannot read weights: {exc.strerror or exc}", source=src) from None
    header = load_json(raw, what="safetensors header", source=src)  # deep JSON refused
    if not isinstance(header, dict):
        raise ConfigError("safetensors header is not a JSON object", source=src)
    out = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        shape = entry.get("shape") if isinstance(entry, dict) else None
        dtype = entry.get("dtype") if isinstance(entry, dict) else None
        if (
            not isinstance(shape, list)
            or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape)
            or not isinstance(dtype, str)
        ):
            raise ConfigError(f"safetensors entry {name!r} has no valid dtype/shape", source=src)
        out[name] = TensorInfo(src, dtype, tuple(shape))
    return out


def _find(tensors: dict[str, TensorInfo], leaf: str) -> tuple[str, TensorInfo] | None:
    hits = sorted(n for n in tensors if n == leaf or n.endswith("." + leaf))
    return (hits[0], tensors[hits[0]]) if hits else None


def check_drafter_coherence(
    draft: DraftConfig,
    target: TargetConfig,
    num_ids: int,
    *,
    weights: str | os.PathLike[str] | Mapping[str, TensorInfo] | None = None,
) -> tuple[DrafterCheck, ...]:
    """fc width, vocab mapping and norm-flag checks (``num_ids``: ids the drafter was trained
    on). ``weights`` (a ``.safetensors`` file or directory, or headers already read: tensor name
    -> ``TensorInfo``) enables the tensor checks."""
    if weights is None or isinstance(weights, Mapping):
        tensors = None if weights is None else dict(weights)
    else:
        tensors = read_safetensors_header(weights)
    return (
        _fc_width(draft, target, num_ids, tensors),
        *_vocab(draft, target, tensors),
        *_norms(draft),
    )


def _fc_width(
    draft: DraftConfig, target: TargetConfig, k: int, tensors: dict[str, TensorInfo] | None
) -> DrafterCheck:
    h = target.hidden_size
    want = k * h
    if tensors is not None:
        found = _find(tensors, "fc.weight")
        if found is None:
            return DrafterCheck("fc-width", ERROR, "the weights have no fc.weight tensor")
        name, info = found
        if len(info.shape) != 2:
            return DrafterCheck("fc-width", ERROR, f"{name} has shape {list(info.shape)}, not 2-D")
        got = info.shape[1]
        if got != want:
            per, rem = divmod(got, h)
            hint = f"{per} x {h}" if rem == 0 else f"not a multiple of the target's {h}"
            return DrafterCheck(
                "fc-width",
                ERROR,
                f"{name} takes {got} inputs ({hint}) but {k} ids x target hidden {h} = {want}",
            )
        return DrafterCheck("fc-width", OK, f"{name} takes {got} = {k} x {h} (from the weights)")
    sized = draft.fc_hidden_size
    if sized is None:
        return DrafterCheck(
            "fc-width",
            SKIPPED,
            "the draft config gives neither target_hidden_size nor hidden_size; pass --weights "
            "to read fc.weight",
        )
    if sized != h:
        field = "target_hidden_size" if draft.target_hidden_size is not None else "hidden_size"
        return DrafterCheck(
            "fc-width",
            ERROR,
            f"fc is sized {k} x {sized} from the draft's {field} = {sized}, but the target's hidden "
            f"size is {h}: set target_hidden_size = {h} (sglang#24620)",
        )
    how = "target_hidden_size" if draft.target_hidden_size is not None else "hidden_size"
    return DrafterCheck("fc-width", OK, f"fc input {want} = {k} x {h} (from the config's {how})")


def _vocab(
    draft: DraftConfig, target: TargetConfig, tensors: dict[str, TensorInfo] | None
) -> list[DrafterCheck]:
    out = []
    vocab = draft.vocab_size or target.vocab_size
    if draft.vocab_size and target.vocab_size and draft.vocab_size != target.vocab_size:
        out.append(
            DrafterCheck(
                "vocab",
                ERROR,
                f"draft vocab_size {draft.vocab_size} != target vocab_size {target.vocab_size}",
            )
        )
    dv = draft.draft_vocab_size
    if dv is None or vocab is None or dv == vocab:
        return out
    if dv > vocab:
        out.append(
            DrafterCheck("vocab-mapping", ERROR, f"draft_vocab_size {dv} > vocab_size {vocab}")
        )
        return out
    if tensors is None:
        out.append(
            DrafterCheck(
                "vocab-mapping",
                WARNING,
                f"draft_vocab_size {dv} < vocab_size {vocab} needs d2t/t2d tensors; not checked "
                f"(pass --weights)",
            )
        )
        return out
    out.append(_mapping(tensors, dv, vocab))
    return out


def _mapping(tensors: dict[str, TensorInfo], dv: int, vocab: int) -> DrafterCheck:
    d2t, t2d = _find(tensors, "d2t"), _find(tensors, "t2d")
    missing = [n for n, f in (("d2t", d2t), ("t2d", t2d)) if f is None]
    if missing:
        return DrafterCheck(
            "vocab-mapping",
            ERROR,
            f"draft_vocab_size {dv} < vocab_size {vocab} but the weights lack "
            f"{' and '.join(missing)} (Automodel#2447)",
        )
    assert d2t is not None and t2d is not None
    if d2t[1].shape != (dv,) or t2d[1].shape != (vocab,):
        return DrafterCheck(
            "vocab-mapping",
            ERROR,
            f"d2t has shape {list(d2t[1].shape)} (want [{dv}]), t2d {list(t2d[1].shape)} "
            f"(want [{vocab}])",
        )
    if not all(Path(f[1].file).is_file() for f in (d2t, t2d)):  # headers from the Hub only
        return DrafterCheck(
            "vocab-mapping",
            WARNING,
            f"d2t {list(d2t[1].shape)} and t2d {list(t2d[1].shape)} have the right shapes; their "
            f"values were not read (only the safetensors headers were fetched)",
        )
    d2t_values = _load_tensor(d2t[1].file, d2t[0])
    t2d_values = _load_tensor(t2d[1].file, t2d[0])
    marked = int(t2d_values.bool().sum().item())
    if marked != dv:
        return DrafterCheck(
            "vocab-mapping", ERROR, f"t2d marks {marked} target tokens, draft_vocab_size is {dv}"
        )
    import torch

    mapped = torch.arange(dv, dtype=torch.int64) + d2t_values.to(torch.int64)
    bad = ((mapped < 0) | (mapped >= vocab)).nonzero().flatten()
    if bad.numel():
        i = int(bad[0])
        return DrafterCheck(
            "vocab-mapping",
            ERROR,
            f"{bad.numel()} draft tokens map outside [0, {vocab}): e.g. {i} + d2t[{i}] = "
            f"{int(mapped[i])}",
        )
    if not bool(t2d_values.bool()[mapped].all()):
        return DrafterCheck(
            "vocab-mapping", ERROR, "some i + d2t[i] are target tokens t2d does not mark"
        )
    return DrafterCheck(
        "vocab-mapping", OK, f"d2t/t2d map {dv} draft tokens into [0, {vocab}) consistently"
    )


def _load_tensor(file: str, name: str) -> Any:
    from safetensors import SafetensorError, safe_open

    try:
        with safe_open(file, framework="pt") as fh:
            return fh.get_tensor(name)
    except (SafetensorError, OSError) as exc:
        raise ConfigError(f"cannot read tensor {name}: {exc}", source=file) from None


def _norms(draft: DraftConfig) -> list[DrafterCheck]:
    out = []
    if draft.norm_flags:
        flags = ", ".join(f"{k}={str(v).lower()}" for k, v in draft.norm_flags.items())
        out.append(DrafterCheck("norm-flags", OK, f"known norm flags: {flags}"))
    for key, value in draft.unknown_norm_flags.items():
        out.append(
            DrafterCheck(
                "norm-flags",
                WARNING,
                f"unknown norm flag {key}={str(value).lower()}: no system in the registry is "
                f"known to read it; make sure your serving engine honours it "
                f"(known: {', '.join(KNOWN_NORM_FLAGS)})",
            )
        )
    return out
