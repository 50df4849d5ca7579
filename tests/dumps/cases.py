"""The table of bad dump files (OpInfo style): each entry makes one file and names its error.

Used by the library tests (``read_dump`` raises ``DumpError``) and the CLI tests (exit 2, one
line on stderr).
"""

from __future__ import annotations

import json
import pickle
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors.torch import save_file

from eagle3_contracts.dumps.format import FORMAT, write_dump

H = 8  # hidden size of every case
T = 4  # tokens


def good_metadata(**overrides: str) -> dict[str, str]:
    meta = {
        "format": FORMAT,
        "layer_ids": json.dumps([2, 30, 58]),
        "convention": "canonical",
        "system": "test",
        "dtype": "float32",
        "hidden_size": str(H),
        "layout": "concatenated",
        "segments": json.dumps(["hidden_states"]),
    }
    meta.update(overrides)
    return meta


def _raw(
    states: torch.Tensor | None = None,
    ids: torch.Tensor | None = None,
    name: str = "bad.safetensors",
    **meta: str,
) -> Callable[[Path], Path]:
    """A safetensors file written directly (bypassing write_dump's checks)."""

    def make(tmp: Path) -> Path:
        tensors = {
            "hidden_states": torch.randn(1, T, 3 * H) if states is None else states,
            "input_ids": torch.arange(T).unsqueeze(0) if ids is None else ids,
        }
        path = tmp / name
        save_file(tensors, str(path), metadata=good_metadata(**meta))
        return path

    return make


def _good(tmp: Path) -> Path:
    return write_dump(
        tmp / "good.safetensors",
        torch.randn(1, T, 3 * H),
        torch.arange(T).unsqueeze(0),
        layer_ids=[2, 30, 58],
        convention="canonical",
        system="test",
    )


def _bytes(
    data: bytes | Callable[[], bytes], name: str = "bad.safetensors"
) -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        path = tmp / name
        path.write_bytes(data() if callable(data) else data)
        return path

    return make


def _torch_save(name: str) -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        path = tmp / name
        torch.save({"hidden_states": torch.zeros(2, 3)}, path)
        return path

    return make


def _truncated(keep: Callable[[int], int]) -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        data = _good(tmp).read_bytes()
        path = tmp / "cut.safetensors"
        path.write_bytes(data[: keep(len(data))])
        return path

    return make


def _directory(tmp: Path) -> Path:
    path = tmp / "dumpdir.safetensors"
    path.mkdir()
    return path


def _nan_at(value: float) -> torch.Tensor:
    x = torch.randn(1, T, 3 * H)
    x[0, 1, H + 2] = value
    return x


@dataclass(frozen=True)
class BadDump:
    name: str  # test id
    make: Callable[[Path], Path]  # writes the file under a tmp dir, returns its path
    expect: str  # fragment of the one-line DumpError message
    cli_expect: str | None = None  # the CLI's, when diagnose reads other tools' files too


BAD_DUMPS: tuple[BadDump, ...] = (
    # -- not a safetensors file / unsafe ---------------------------------------------------
    BadDump(
        "pt-suffix",
        _torch_save("capture.pt"),
        "refusing to load a .pt file",
        cli_expect="not a hidden-state file this tool reads: keys ['hidden_states']",
    ),
    BadDump("bin-suffix", _bytes(b"whatever", "states.bin"), "pickle-based"),
    BadDump("torch-save-renamed", _torch_save("capture.safetensors"), "torch.save output"),
    BadDump("pickle-renamed", _bytes(pickle.dumps({"a": 1}, protocol=4)), "a pickle"),
    BadDump("text-file", _bytes(b"hello, these are not hidden states\n" * 4), "not a safetensors"),
    BadDump("empty-file", _bytes(b""), "only 0 bytes"),
    BadDump("missing-file", lambda tmp: tmp / "absent.safetensors", "no such file"),
    BadDump("directory", _directory, "is a directory"),
    # -- truncated -------------------------------------------------------------------------
    BadDump("truncated-data", _truncated(lambda n: n - 17), "truncated: tensor data ends"),
    BadDump("truncated-header", _truncated(lambda n: 40), "truncated: the header alone"),
    BadDump("truncated-length", _truncated(lambda n: 5), "only 5 bytes"),
    # -- metadata --------------------------------------------------------------------------
    BadDump("no-metadata", lambda tmp: _no_metadata(tmp), "missing metadata format, layer_ids"),
    BadDump("other-format", _raw(format="something/2"), "this version reads"),
    BadDump("layer-ids-not-json", _raw(layer_ids="[2, 30,"), "not valid JSON"),
    BadDump("layer-ids-strings", _raw(layer_ids='["2", "30", "58"]'), "list of integers"),
    BadDump("hidden-size-text", _raw(hidden_size="wide"), "not a positive integer"),
    BadDump("bad-layout", _raw(layout="stacked"), "is not concatenated"),
    BadDump("empty-system", _raw(system=" "), "metadata system is empty"),
    BadDump("unlisted-tensor", _raw(segments='["hidden_states", "extra"]'), "does not hold"),
    # -- dtype -----------------------------------------------------------------------------
    BadDump(
        "int-states",
        _raw(states=torch.ones(1, T, 3 * H, dtype=torch.int32)),
        "hidden states must be one of",
    ),
    BadDump(
        "fp8-states",
        _raw(states=torch.randn(1, T, 3 * H).to(torch.float8_e4m3fn)),
        "float8_e4m3fn; hidden states must be one of",
    ),
    BadDump("meta-dtype-int", _raw(dtype="int8"), "metadata dtype 'int8'"),
    BadDump(
        "dtype-disagrees",
        _raw(states=torch.randn(1, T, 3 * H).half()),
        "metadata dtype says float32",
    ),
    BadDump("float-input-ids", _raw(ids=torch.zeros(1, T)), "token ids must be integers"),
    BadDump("negative-input-ids", _raw(ids=torch.tensor([[0, -3, 1, 2]])), "negative token id"),
    BadDump("no-input-ids", lambda tmp: _no_ids(tmp), "no 'input_ids' tensor"),
    # -- width -----------------------------------------------------------------------------
    BadDump(
        "width-not-multiple",
        _raw(states=torch.randn(1, T, 3 * H + 3)),
        "not a multiple of hidden_size 8",
    ),
    BadDump(
        "width-wrong-k",
        _raw(states=torch.randn(1, T, 2 * H)),
        "holds 2 segments of 8 but 3 layer ids",
    ),
    # -- tokens ----------------------------------------------------------------------------
    BadDump("token-count", _raw(states=torch.randn(1, T - 1, 3 * H)), "token count mismatch"),
    BadDump("batch-mismatch", _raw(states=torch.randn(2, T, 3 * H)), "token count mismatch"),
    # -- values ----------------------------------------------------------------------------
    BadDump("nan", _raw(states=_nan_at(float("nan"))), "non-finite value(s) (NaN)"),
    BadDump("inf", _raw(states=_nan_at(float("-inf"))), "non-finite value(s) (inf)"),
)


def _no_ids(tmp: Path) -> Path:
    path = tmp / "noids.safetensors"
    save_file({"hidden_states": torch.randn(1, T, 3 * H)}, str(path), metadata=good_metadata())
    return path


def _no_metadata(tmp: Path) -> Path:
    path = tmp / "nometa.safetensors"
    tensors = {"hidden_states": torch.randn(1, T, 3 * H), "input_ids": torch.arange(T)[None]}
    save_file(tensors, str(path))
    return path
