"""The hidden-state dump format: captured states + input ids + what they claim to be.

A dump is one safetensors file (never a pickle) holding

* the captured states, in one of three layouts (``Dump.layout``):

  - ``"concatenated"``: one tensor ``hidden_states`` of shape ``[B, T, k*H]`` or ``[T, k*H]``
    (what the drafter's ``fc`` receives);
  - ``"segments"``: ``hidden_states.0`` ... ``hidden_states.{k-1}``, each ``[B, T, H]`` or
    ``[T, H]`` (a debug print per segment);
  - ``"per_layer"``: one tensor per layer named after it, e.g. ``layer3``, ``layer31``,
    ``layer59`` (training data files before their ``standardize``-style concatenation);

* ``input_ids`` (``[B, T]`` or ``[T]``, any integer dtype): the tokens the states came from;
* string metadata (``METADATA_KEYS``): the claimed layer ids in concatenation order, the
  convention they are written in, the system that captured them, dtype, hidden size, and the
  segment tensor names in concatenation order.

``write_dump`` writes one from any capture and refuses to write an inconsistent one;
``read_dump`` validates everything and raises ``DumpError`` with one clear sentence.
"""

from __future__ import annotations

import json
import os
import re
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from eagle3_contracts._io import load_json, regular_file
from eagle3_contracts.conventions import parse_convention
from eagle3_contracts.errors import ContractError, DumpError, one_line
from eagle3_contracts.layer_ids import MAX_LAYER_IDS

if TYPE_CHECKING:
    import torch


FORMAT = "eagle3-contracts.dump/1"
"""Value of the ``format`` metadata key; bumped on incompatible changes."""

Layout = Literal["concatenated", "segments", "per_layer"]
_LAYOUTS: tuple[Layout, ...] = ("concatenated", "segments", "per_layer")

CONCATENATED_NAME = "hidden_states"
INPUT_IDS_NAME = "input_ids"

# Required metadata keys and what each holds (all values are strings in safetensors).
METADATA_KEYS: dict[str, str] = {
    "format": f"the dump format, {FORMAT!r}",
    "layer_ids": "JSON list of the claimed layer ids, one per segment, in concatenation order",
    "convention": "the convention of those ids: canonical or a system name (e.g. 'sglang==0.5.23')",
    "system": "what captured the states (e.g. 'training: SpecForge HF backend')",
    "dtype": "dtype of the captured states (float32, float16, bfloat16)",
    "hidden_size": "width H of one captured state",
    "layout": "concatenated, segments or per_layer",
    "segments": "JSON list of the state tensors' names in concatenation order",
}

FLOAT_DTYPES: tuple[str, ...] = ("float32", "float16", "bfloat16", "float64")
PICKLE_SUFFIXES = (".pt", ".ckpt", ".gz")
"""Other tools' pickle-based dumps (ModelOpt / TensorRT-LLM ``.pt``, SpecForge ``.ckpt``/
``.ckpt.gz``): ``read_any_dump`` hands them to ``dumps.foreign``'s restricted loader."""
_REFUSED_SUFFIXES = (".pt", ".pth", ".bin", ".pkl", ".pickle", ".ckpt", ".npy", ".npz", ".joblib")
_PER_LAYER_NAME = re.compile(r"^layer[_.]?(\d+)$")
_MAX_HEADER = 100 * 1024 * 1024  # safetensors' own header limit


@dataclass(frozen=True)
class Dump:
    """A validated dump. States are batched (``[B, T, H]``) even if written unbatched."""

    source: str  # the file it was read from ("<memory>" when built in-process)
    # -- the states ----------------------------------------------------------------------
    segments: tuple[torch.Tensor, ...]  # one [B, T, H] tensor per segment, concat order
    names: tuple[str, ...]  # tensor name each segment came from (layer3, hidden_states.0...)
    input_ids: torch.Tensor  # [B, T], int64
    # -- the claim -----------------------------------------------------------------------
    layer_ids: tuple[int, ...]  # claimed ids of the segments, concat order, in `convention`
    convention: str  # convention of `layer_ids` ("canonical", "sglang==0.5.23", ...)
    system: str  # free text: who captured it
    # -- shape facts ---------------------------------------------------------------------
    hidden_size: int
    dtype: str  # "bfloat16", ...
    layout: Layout
    batched: bool  # False when the file held [T, ...] tensors
    metadata: Mapping[str, str] = field(default_factory=dict)  # every key, as stored

    @property
    def captured(self) -> torch.Tensor:
        """The concatenation ``[B, T, k*H]`` the drafter's ``fc`` would receive."""
        import torch

        return torch.cat(self.segments, dim=-1)

    @property
    def num_segments(self) -> int:
        return len(self.segments)

    @property
    def num_tokens(self) -> int:
        return int(self.input_ids.shape[-1])

    def describe(self) -> str:
        """``"3 x [1, 6, 16] bfloat16 (per_layer), claims [2, 30, 58] (canonical)"``."""
        shape = list(self.segments[0].shape)
        return (
            f"{self.num_segments} x {shape} {self.dtype} ({self.layout}), claims "
            f"{list(self.layer_ids)} ({self.convention}), system: {self.system}"
        )


# -- writing ---------------------------------------------------------------------------------


def write_dump(
    path: str | os.PathLike[str],
    captured: torch.Tensor | Sequence[torch.Tensor] | Mapping[str, torch.Tensor],
    input_ids: torch.Tensor,
    *,
    layer_ids: Sequence[int],
    convention: str,
    system: str,
    hidden_size: int | None = None,
    extra_metadata: Mapping[str, str] | None = None,
) -> Path:
    """Write a dump; return its path. Validates exactly as ``read_dump`` does.

    ``captured`` is the concatenated tensor (``[B, T, k*H]`` / ``[T, k*H]``; ``hidden_size``
    defaults to its width / ``len(layer_ids)``), a sequence of per-segment tensors, or a
    mapping ``{"layer3": t3, ...}`` (a training dump; the mapping's order is the
    concatenation order). ``layer_ids`` are the claimed ids, one per segment in
    concatenation order, written in ``convention``; ``system`` says who captured them.
    """
    import torch
    from safetensors.torch import save_file

    path = Path(path)
    source = str(path)
    ids = _check_write_claim(path, layer_ids, convention, system)
    layout, tensors, hidden_size = _layout_tensors(captured, ids, hidden_size, source)
    _check_captured_tensors(tensors, source)
    if layout != "concatenated" and hidden_size is None and tensors:
        hidden_size = int(next(iter(tensors.values())).shape[-1])
    if not isinstance(input_ids, torch.Tensor):
        raise DumpError(
            f"input_ids must be a torch.Tensor, got {type(input_ids).__name__}", source=source
        )
    dtypes = {_dtype_name(t) for t in tensors.values()}
    if len(dtypes) > 1:
        raise DumpError(
            f"captured tensors mix dtypes {sorted(dtypes)}; convert them to one dtype",
            source=source,
        )
    names = list(tensors)
    metadata = {
        "format": FORMAT,
        "layer_ids": json.dumps(list(ids)),
        "convention": convention,
        "system": system,
        "dtype": _dtype_name(next(iter(tensors.values()))) if tensors else "?",
        "hidden_size": str(hidden_size),
        "layout": layout,
        "segments": json.dumps(names),
    }
    _add_extra_metadata(metadata, extra_metadata or {}, source)
    stored = {name: t.detach().to("cpu").contiguous() for name, t in tensors.items()}
    stored[INPUT_IDS_NAME] = input_ids.detach().to("cpu").contiguous()
    build_dump(stored, metadata, source)  # refuse to write what read_dump would refuse
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file(stored, str(path), metadata=metadata)
    return path


def _dtype_name(tensor: torch.Tensor) -> str:
    """``torch.bfloat16`` -> ``"bfloat16"``."""
    return str(tensor.dtype).removeprefix("torch.")


def _check_write_claim(
    path: Path, layer_ids: Sequence[int], convention: str, system: str
) -> tuple[int, ...]:
    """The file name and the claim (ids, convention, system) of a dump about to be written."""
    source = str(path)
    if path.suffix.lower() in _REFUSED_SUFFIXES:
        raise DumpError(
            f"dumps are safetensors files; {path.suffix!r} is a pickle-based extension: "
            f"name it {path.stem}.safetensors",
            source=source,
        )
    ids = _check_claim(layer_ids, source)
    if not isinstance(convention, str) or not convention:
        raise DumpError("convention must be a non-empty string, e.g. 'canonical'", source=source)
    _check_convention(convention, source, "convention")
    if not isinstance(system, str) or not system:
        raise DumpError(
            "system must be a non-empty string saying who captured the states", source=source
        )
    return ids


def _layout_tensors(
    captured: torch.Tensor | Sequence[torch.Tensor] | Mapping[str, torch.Tensor],
    ids: tuple[int, ...],
    hidden_size: int | None,
    source: str,
) -> tuple[Layout, dict[str, torch.Tensor], int | None]:
    """The layout ``captured`` is written in, its tensors by name, and the hidden size if known."""
    import torch

    if isinstance(captured, torch.Tensor):
        if captured.dim() < 1:
            raise DumpError("captured must be a [B, T, k*H] or [T, k*H] tensor", source=source)
        if hidden_size is None:
            width = int(captured.shape[-1])
            if width % len(ids):
                raise DumpError(
                    f"captured width {width} is not a multiple of the {len(ids)} claimed "
                    f"layer ids; pass hidden_size",
                    source=source,
                )
            hidden_size = width // len(ids)
        return "concatenated", {CONCATENATED_NAME: captured}, hidden_size
    if isinstance(captured, Mapping):
        tensors = dict(captured)
        for name in tensors:
            if not isinstance(name, str) or not _PER_LAYER_NAME.match(name):
                raise DumpError(
                    f"per-layer tensor name {name!r} must look like 'layer3' (layer + number)",
                    source=source,
                )
        return "per_layer", tensors, hidden_size
    return (
        "segments",
        {f"{CONCATENATED_NAME}.{i}": t for i, t in enumerate(captured)},
        hidden_size,
    )


def _check_captured_tensors(tensors: Mapping[str, Any], source: str) -> None:
    """Every captured state is a floating-point ``torch.Tensor``."""
    import torch

    for name, tensor in tensors.items():
        if not isinstance(tensor, torch.Tensor):
            raise DumpError(
                f"captured tensor {name!r} is a {type(tensor).__name__}, not a torch.Tensor",
                source=source,
            )
        if not tensor.dtype.is_floating_point:
            raise DumpError(
                f"captured tensor {name!r} has dtype {_dtype_name(tensor)}; "
                f"hidden states must be one of ({', '.join(FLOAT_DTYPES)})",
                source=source,
            )


def _add_extra_metadata(metadata: dict[str, str], extra: Mapping[str, str], source: str) -> None:
    for key, value in extra.items():
        if key in metadata:
            raise DumpError(f"extra_metadata may not override {key!r}", source=source)
        if not isinstance(key, str) or not isinstance(value, str):
            raise DumpError(
                f"extra_metadata must map str to str, got {key!r}: {value!r}", source=source
            )
        metadata[key] = value


# -- reading ---------------------------------------------------------------------------------


def read_dump(path: str | os.PathLike[str]) -> Dump:
    """Read and validate a dump; raise ``DumpError`` (one sentence, names the file) if bad.

    Never unpickles: pickle-based files (``.pt``, ``.bin``, ``torch.save`` zips) are refused.
    Only regular files are read (a FIFO or ``/dev/zero`` is refused before it is opened). The
    tensors are memory-mapped (copy-on-write), never read whole: validating a dump costs a
    bounded amount of memory whatever its size (``VALUE_CHUNK`` elements at a time).
    """
    path = Path(path)
    source = str(path)
    if path.suffix.lower() in _REFUSED_SUFFIXES:
        raise DumpError(
            f"refusing to load a {path.suffix} file: it is pickle-based and loading it could "
            f"run code; in the process that made it, save the states with "
            f"eagle3_contracts.dumps.format.write_dump (safetensors)",
            source=source,
        )
    if path.is_dir():
        raise DumpError("is a directory; pass the dump's .safetensors file", source=source)
    if not path.exists():
        raise DumpError("no such file", source=source)
    tensors, metadata = read_safetensors(path)
    return build_dump(tensors, metadata, source)


@dataclass(frozen=True)
class ForeignClaim:
    """The ids a foreign file was captured with (it records none itself)."""

    ids: tuple[int, ...]
    convention: str


def read_any_dump(
    path: str | os.PathLike[str], claim: ForeignClaim | None = None, *, record: int = 0
) -> Dump:
    """Our dump, or another tool's file mapped onto ``Dump`` by ``dumps.foreign`` (``claim``
    required for those: ``DumpError`` naming the format and what to pass when missing).
    ``record`` picks one record of a TensorRT-LLM list. Our own dumps never go through the
    foreign readers."""
    path = Path(path)
    name = path.name.lower()
    if name.endswith(PICKLE_SUFFIXES):
        from eagle3_contracts.dumps.foreign import read_pickled

        return read_pickled(path, claim, record)
    if not name.endswith(".safetensors") or not path.is_file():
        return read_dump(path)  # its refusals: pickle suffixes, directories, missing files
    tensors, metadata = read_safetensors(path)
    if metadata.get("format") == FORMAT or not {"hidden_states", "token_ids"} <= set(tensors):
        return build_dump(tensors, metadata, str(path))
    from eagle3_contracts.dumps.foreign import speculators_dump

    return speculators_dump(tensors, claim, str(path))


def read_safetensors(
    path: str | os.PathLike[str],
) -> tuple[dict[str, torch.Tensor], dict[str, str]]:
    """The tensors (memory-mapped, copy-on-write) and string metadata of a safetensors file,
    its header checked first (truncation, overlaps, sizes); ``DumpError`` naming the file."""
    path = Path(path)
    source = str(path)
    size = regular_file(path, what="dump", error=DumpError).st_size
    data_start, entries, metadata = _read_header(path, size, source)
    return _map_tensors(path, size, data_start, entries, source), metadata


@dataclass(frozen=True)
class _Entry:
    """One tensor of a safetensors header, checked: dtype, shape, byte range in the data."""

    name: str
    dtype: str  # safetensors code: F32, BF16, I64, ...
    shape: tuple[int, ...]
    begin: int
    end: int


# safetensors dtype codes -> (torch dtype name, bytes per element)
_ST_DTYPES: dict[str, tuple[str, int]] = {
    "F64": ("float64", 8),
    "F32": ("float32", 4),
    "F16": ("float16", 2),
    "BF16": ("bfloat16", 2),
    "F8_E4M3": ("float8_e4m3fn", 1),
    "F8_E5M2": ("float8_e5m2", 1),
    "I64": ("int64", 8),
    "I32": ("int32", 4),
    "I16": ("int16", 2),
    "I8": ("int8", 1),
    "U64": ("uint64", 8),
    "U32": ("uint32", 4),
    "U16": ("uint16", 2),
    "U8": ("uint8", 1),
    "BOOL": ("bool", 1),
}
_MAX_TENSORS = 100_000  # a per-layer dump of the deepest target, with room to spare
_MAX_DIMS = 8


def _read_header(path: Path, size: int, source: str) -> tuple[int, list[_Entry], dict[str, str]]:
    """Parse and check the safetensors header, telling truncation from non-safetensors.

    Returns where the data starts, the tensor entries, and the string metadata.
    """
    with path.open("rb") as f:
        head = f.read(8)
        if len(head) < 8:
            raise DumpError(
                f"only {size} bytes: not a safetensors file (empty or truncated)", source=source
            )
        (n,) = struct.unpack("<Q", head)
        if n == 0 or n > _MAX_HEADER:
            raise DumpError(_not_safetensors(head, size), source=source)
        if 8 + n > size:
            first = f.read(1)
            if first == b"{":
                raise DumpError(
                    f"truncated: the header alone needs {8 + n} bytes, the file has {size} "
                    f"(interrupted copy?)",
                    source=source,
                )
            raise DumpError(_not_safetensors(head, size), source=source)
        raw = f.read(n)
    if not raw.lstrip()[:1] == b"{":
        raise DumpError(_not_safetensors(head, size), source=source)
    header = load_json(raw, what="safetensors header", source=source, error=DumpError)
    if not isinstance(header, dict):
        raise DumpError(_not_safetensors(head, size), source=source)
    metadata = _header_metadata(header.pop("__metadata__", None), source)
    if len(header) > _MAX_TENSORS:
        raise DumpError(
            f"the header lists {len(header)} tensors, over the limit of {_MAX_TENSORS}",
            source=source,
        )
    entries = [_header_entry(name, info, source) for name, info in header.items()]
    end = max((e.end for e in entries), default=0)
    if 8 + n + end > size:
        raise DumpError(
            f"truncated: tensor data ends at byte {8 + n + end}, the file has {size} bytes "
            f"(interrupted copy?)",
            source=source,
        )
    previous: _Entry | None = None
    for entry in sorted(entries, key=lambda e: (e.begin, e.end)):
        if previous is not None and entry.begin < previous.end:
            raise DumpError(
                f"safetensors header: tensors {previous.name!r} and {entry.name!r} overlap "
                f"(data_offsets {[previous.begin, previous.end]} and "
                f"{[entry.begin, entry.end]}); the file is corrupt",
                source=source,
            )
        previous = entry
    return 8 + n, entries, metadata


def _header_metadata(value: Any, source: str) -> dict[str, str]:
    """The ``__metadata__`` object: string keys to string values (absent = empty)."""
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise DumpError(
            "safetensors header: __metadata__ must map strings to strings; the file is corrupt "
            "or was not written by safetensors",
            source=source,
        )
    return value


def _header_entry(name: str, info: Any, source: str) -> _Entry:
    """One header entry, checked: known dtype, a shape of sizes, offsets matching the shape."""
    where = f"safetensors header entry {name!r}"
    if not isinstance(info, dict):
        raise DumpError(f"malformed {where}: not a JSON object", source=source)
    dtype, shape, offsets = info.get("dtype"), info.get("shape"), info.get("data_offsets")
    if not isinstance(dtype, str) or dtype not in _ST_DTYPES:
        raise DumpError(
            f"malformed {where}: dtype {_short(dtype)} is not a safetensors dtype "
            f"({', '.join(_ST_DTYPES)})",
            source=source,
        )
    if not (
        isinstance(shape, list) and len(shape) <= _MAX_DIMS and all(_is_count(d) for d in shape)
    ):
        raise DumpError(
            f"malformed {where}: shape {_short(shape)} must be a list of at most {_MAX_DIMS} "
            f"non-negative integers",
            source=source,
        )
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(map(_is_count, offsets))):
        raise DumpError(
            f"malformed {where}: data_offsets {_short(offsets)} must be [begin, end], two "
            f"non-negative integers",
            source=source,
        )
    begin, end = offsets
    numel = 1
    for d in shape:
        numel *= d
    nbytes = numel * _ST_DTYPES[dtype][1]
    if end - begin != nbytes:
        raise DumpError(
            f"malformed {where}: data_offsets {offsets} span {end - begin} bytes but shape "
            f"{shape} of {dtype} needs {nbytes}; the file is corrupt",
            source=source,
        )
    return _Entry(name, dtype, tuple(shape), begin, end)


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _map_tensors(
    path: Path, size: int, data_start: int, entries: list[_Entry], source: str
) -> dict[str, torch.Tensor]:
    """The header's tensors as views of one copy-on-write memory map of the file.

    Nothing is read here; pages are read as the checks touch them (and can be dropped again).
    A tensor whose offset is not a multiple of its element size is copied out.
    """
    import torch

    try:
        whole = torch.from_file(str(path), shared=False, size=size, dtype=torch.uint8)
    except (RuntimeError, OSError) as exc:
        raise DumpError(f"cannot map the dump: {one_line(exc)}", source=source) from None
    tensors = {}
    for e in entries:
        name, itemsize = _ST_DTYPES[e.dtype]
        raw = whole[data_start + e.begin : data_start + e.end]
        if (data_start + e.begin) % itemsize:
            raw = raw.clone()
        tensors[e.name] = raw.view(getattr(torch, name)).reshape(e.shape)
    return tensors


def _not_safetensors(head: bytes, size: int) -> str:
    if head.startswith(b"PK\x03\x04"):
        kind = "a zip archive (torch.save output, pickle-based)"
    elif head[:1] == b"\x80" and head[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):
        kind = "a pickle"
    elif head.startswith(b"\x93NUMPY"):
        kind = "a numpy .npy file"
    else:
        kind = "not a safetensors file"
    return (
        f"{kind}, not a safetensors dump ({size} bytes); loading pickles could run code, so "
        f"re-save the states with eagle3_contracts.dumps.format.write_dump"
    )


def build_dump(
    tensors: Mapping[str, torch.Tensor], metadata: Mapping[str, str], source: str
) -> Dump:
    """Validate tensors + metadata (``METADATA_KEYS``) and assemble a ``Dump``: the one check
    every dump passes, ours or another tool's mapped onto this layout (``dumps.foreign``)."""
    import torch

    meta = dict(metadata)
    layer_ids, names, layout, hidden_size = _check_metadata(meta, source)
    ids = _check_input_ids(tensors, source)
    states = _named_states(tensors, names, meta["dtype"], source)
    if layout == "concatenated":
        names, states = _split_concatenated(names, states, hidden_size, layer_ids, source)
    else:
        _check_segment_widths(names, states, hidden_size, layer_ids, source)
    for name, t in zip(names, states, strict=True):
        _check_state_values(name, t, ids, source)
    batched = ids.dim() == 2
    if not batched:
        ids = ids.unsqueeze(0)
        states = [t.unsqueeze(0) for t in states]
    return Dump(
        source=source,
        segments=tuple(states),
        names=tuple(names),
        input_ids=ids.to(torch.long),
        layer_ids=layer_ids,
        convention=meta["convention"],
        system=meta["system"],
        hidden_size=hidden_size,
        dtype=meta["dtype"],
        layout=layout,
        batched=batched,
        metadata=meta,
    )


def _check_metadata(
    meta: Mapping[str, str], source: str
) -> tuple[tuple[int, ...], list[str], Layout, int]:
    """The metadata keys: return the claimed ids, segment names, layout and hidden size."""
    missing = [key for key in METADATA_KEYS if key not in meta]
    if missing:
        wanted = "; ".join(f"{key}: {METADATA_KEYS[key]}" for key in missing)
        raise DumpError(
            f"missing metadata {', '.join(missing)} ({wanted}); write dumps with "
            f"eagle3_contracts.dumps.format.write_dump",
            source=source,
        )
    if meta["format"] != FORMAT:
        raise DumpError(
            f"metadata format is {meta['format']!r}, this version reads {FORMAT!r}", source=source
        )
    layer_ids = _check_claim(_json(meta, "layer_ids", source), source)
    names = _json(meta, "segments", source)
    if not (isinstance(names, list) and names and all(isinstance(n, str) for n in names)):
        raise DumpError(
            f"metadata segments must be a non-empty JSON list of tensor names, got {names!r}",
            source=source,
        )
    layout = _check_layout(meta["layout"], source)
    try:
        hidden_size = int(meta["hidden_size"])
    except ValueError:
        hidden_size = 0
    if hidden_size < 1:
        raise DumpError(
            f"metadata hidden_size {meta['hidden_size']!r} is not a positive integer",
            source=source,
        )
    if meta["dtype"] not in FLOAT_DTYPES:
        raise DumpError(
            f"metadata dtype {meta['dtype']!r} is not one of {', '.join(FLOAT_DTYPES)}: "
            f"convert the states to bfloat16 or float32 before dumping",
            source=source,
        )
    for key in ("convention", "system"):
        if not meta[key].strip():
            raise DumpError(f"metadata {key} is empty ({METADATA_KEYS[key]})", source=source)
    _check_convention(meta["convention"], source, "metadata convention")
    return layer_ids, names, layout, hidden_size


def _check_convention(convention: str, source: str, what: str) -> None:
    """A dump's convention is ``canonical`` or a system name (``conventions.parse_system``)."""
    try:
        parse_convention(convention, field="convention")
    except ContractError as exc:
        raise DumpError(f"{what} {exc} (or 'canonical')", source=source) from None


def _check_layout(layout: str, source: str) -> Layout:
    for known in _LAYOUTS:
        if layout == known:
            return known
    raise DumpError(
        f"metadata layout {layout!r} is not concatenated, segments or per_layer",
        source=source,
    )


def _check_input_ids(tensors: Mapping[str, torch.Tensor], source: str) -> torch.Tensor:
    """The ``input_ids`` tensor: present, integer, ``[T]`` or ``[B, T]``, non-negative."""
    import torch

    if INPUT_IDS_NAME not in tensors:
        raise DumpError(
            f"no {INPUT_IDS_NAME!r} tensor: the target must be re-run on the same tokens",
            source=source,
        )
    ids = tensors[INPUT_IDS_NAME]
    if ids.dtype.is_floating_point or ids.dtype.is_complex or ids.dtype == torch.bool:
        raise DumpError(
            f"input_ids has dtype {_dtype_name(ids)}; token ids must be integers (int64)",
            source=source,
        )
    if ids.dim() not in (1, 2) or ids.numel() == 0:
        raise DumpError(
            f"input_ids must be [T] or [B, T] with T >= 1, got shape {list(ids.shape)}",
            source=source,
        )
    if ids.dtype == torch.uint64:  # above 2**63 - 1 reads as negative: no vocabulary is that big
        ids = ids.view(torch.int64)
    elif not ids.is_signed():
        ids = ids.to(torch.int64)  # uint8/16/32: min() is not implemented for all of them
    low = int(ids.min())
    if low < 0:
        raise DumpError(f"input_ids has a negative token id {low}", source=source)
    return ids


def _named_states(
    tensors: Mapping[str, torch.Tensor], names: list[str], dtype: str, source: str
) -> list[torch.Tensor]:
    """The state tensors metadata lists, in its order: all there, no strays, all ``dtype``."""
    missing = [n for n in names if n not in tensors]
    if missing:
        raise DumpError(
            f"metadata lists segment tensor(s) {missing} the file does not hold "
            f"(it holds {sorted(tensors)})",
            source=source,
        )
    extra = sorted(set(tensors) - set(names) - {INPUT_IDS_NAME})
    if extra:
        raise DumpError(
            f"tensor(s) {extra} are neither input_ids nor listed in metadata segments {names}",
            source=source,
        )
    states = [tensors[n] for n in names]
    for name, t in zip(names, states, strict=True):
        found = _dtype_name(t)
        if found not in FLOAT_DTYPES:
            raise DumpError(
                f"tensor {name!r} has dtype {found}; hidden states must be one of "
                f"({', '.join(FLOAT_DTYPES)})",
                source=source,
            )
        if found != dtype:
            raise DumpError(
                f"tensor {name!r} is {found} but metadata dtype says {dtype}; "
                f"rewrite the dump so they agree",
                source=source,
            )
    return states


def _split_concatenated(
    names: list[str],
    states: list[torch.Tensor],
    hidden_size: int,
    layer_ids: tuple[int, ...],
    source: str,
) -> tuple[list[str], list[torch.Tensor]]:
    """Split the one ``hidden_states`` tensor into its segments, named by their columns."""
    if names != [CONCATENATED_NAME]:
        raise DumpError(
            f"a concatenated dump holds one tensor {CONCATENATED_NAME!r}, metadata lists {names}",
            source=source,
        )
    whole = states[0]
    width = int(whole.shape[-1]) if whole.dim() else 0
    if width % hidden_size:
        raise DumpError(
            f"hidden_states width {width} is not a multiple of hidden_size {hidden_size} "
            f"({width / hidden_size:.2f} segments): wrong hidden_size or a corrupted capture",
            source=source,
        )
    if width // hidden_size != len(layer_ids):
        raise DumpError(
            f"hidden_states holds {width // hidden_size} segments of {hidden_size} but "
            f"{len(layer_ids)} layer ids are claimed {list(layer_ids)}",
            source=source,
        )
    parts = list(whole.split(hidden_size, dim=-1))
    columns = [
        f"{CONCATENATED_NAME}[{i * hidden_size}:{(i + 1) * hidden_size}]" for i in range(len(parts))
    ]
    return columns, parts


def _check_segment_widths(
    names: list[str],
    states: list[torch.Tensor],
    hidden_size: int,
    layer_ids: tuple[int, ...],
    source: str,
) -> None:
    """One segment tensor per claimed id, each ``hidden_size`` wide."""
    if len(states) != len(layer_ids):
        raise DumpError(
            f"{len(states)} segment tensors but {len(layer_ids)} layer ids claimed "
            f"{list(layer_ids)}",
            source=source,
        )
    for name, t in zip(names, states, strict=True):
        if t.dim() == 0 or int(t.shape[-1]) != hidden_size:
            raise DumpError(
                f"segment {name!r} has shape {list(t.shape)}, width must be hidden_size "
                f"{hidden_size}",
                source=source,
            )


def _check_state_values(name: str, t: torch.Tensor, ids: torch.Tensor, source: str) -> None:
    """A segment covers every input token and holds only finite values."""

    if tuple(t.shape[:-1]) != tuple(ids.shape):
        tokens = ids.shape[-1]
        raise DumpError(
            f"token count mismatch: segment {name!r} has leading shape {list(t.shape[:-1])} "
            f"but input_ids is {list(ids.shape)} ({tokens} tokens); dump the states of "
            f"every input token (e.g. CaptureHiddenMode.FULL), not only sampled positions",
            source=source,
        )
    bad, kinds = _non_finite(t)
    if bad:
        raise DumpError(
            f"segment {name!r} holds {bad} non-finite value(s) ({'/'.join(sorted(kinds))}): "
            f"the capture overflowed or read uninitialised memory",
            source=source,
        )


VALUE_CHUNK = 1 << 22
"""Elements checked at a time for NaN/inf (16 MiB of float32), so the check's memory does not
grow with the dump."""


def _non_finite(t: torch.Tensor) -> tuple[int, set[str]]:
    """How many values of ``t`` are NaN or inf, and which of the two occur, in chunks."""
    import torch

    rows = t.reshape(-1, t.shape[-1]) if t.dim() else t.reshape(1, 1)  # a view: segments of
    step = max(1, VALUE_CHUNK // max(1, rows.shape[-1]))  # a concatenated dump are strided
    bad, kinds = 0, set()
    for start in range(0, rows.shape[0], step):
        chunk = rows[start : start + step]
        finite = torch.isfinite(chunk)
        if bool(finite.all()):
            continue
        bad += int((~finite).sum())
        kinds |= {
            k
            for k, m in (("NaN", torch.isnan(chunk)), ("inf", torch.isinf(chunk)))
            if bool(m.any())
        }
    return bad, kinds


def _check_claim(layer_ids: Any, source: str) -> tuple[int, ...]:
    if isinstance(layer_ids, (str, bytes)) or not isinstance(layer_ids, Sequence):
        raise DumpError(
            f"layer_ids must be a list of integer layer ids, got {_short(layer_ids)}",
            source=source,
        )
    if len(layer_ids) > MAX_LAYER_IDS:
        raise DumpError(
            f"layer_ids lists {len(layer_ids)} ids, over the limit of {MAX_LAYER_IDS}",
            source=source,
        )
    if not layer_ids or not all(isinstance(i, int) and not isinstance(i, bool) for i in layer_ids):
        raise DumpError(
            f"layer_ids must be a non-empty list of integers, got {_short(list(layer_ids))}",
            source=source,
        )
    return tuple(layer_ids)


def _json(meta: Mapping[str, str], key: str, source: str) -> Any:
    try:
        return json.loads(meta[key])
    except ValueError:
        raise DumpError(
            f"metadata {key} is not valid JSON: {meta[key][:60]!r}", source=source
        ) from None
    except RecursionError:
        raise DumpError(
            f"metadata {key} nests JSON too deep; it holds a flat list", source=source
        ) from None


__all__ = [
    "FORMAT",
    "METADATA_KEYS",
    "PICKLE_SUFFIXES",
    "Dump",
    "ForeignClaim",
    "build_dump",
    "read_any_dump",
    "read_dump",
    "read_safetensors",
    "write_dump",
]
