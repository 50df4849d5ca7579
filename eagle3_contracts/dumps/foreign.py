"""Other tools' hidden-state files, read as they are and mapped onto ``format.Dump``.

Each format's layout comes from the tool's released code (cited per entry of ``FORMATS``).
None of these files records the layer ids it was captured with, so the claim (``--ids`` in a
convention, or a contract / stamp giving canonical ids) is supplied by the caller; everything
else (validation, identification, verdicts) is the same as for our own dumps, through
``format.build_dump``.

Pickle-based files (``.pt``, SpecForge's ``.ckpt``/``.ckpt.gz``) are opened only with
``torch.load(weights_only=True)`` (tensors and plain containers; any other object is refused by
torch's restricted unpickler) in a child process under an address-space limit
(``RLIMIT_AS``) and a wall-clock limit (forked, so it starts with torch already imported); the
child hands the tensors back as a safetensors file.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eagle3_contracts._io import regular_file
from eagle3_contracts.dumps.format import FORMAT, Dump, ForeignClaim, build_dump, read_safetensors
from eagle3_contracts.errors import DumpError

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class ForeignFormat:
    """One tool's hidden-state file: where it comes from and what its tensors mean."""

    name: str  # "speculators", "specforge", "modelopt", "trtllm"
    system: str  # who writes it (the dump's ``system``)
    convention: str  # the registry convention its capture ids are written in
    fed: str  # the tensor the drafter's fc is fed from
    source: str  # the tool's code that fixes the layout, file:line


FORMATS: dict[str, ForeignFormat] = {
    f.name: f
    for f in (
        ForeignFormat(
            "speculators",
            "speculators 0.9.0 offline data (vLLM hidden-state extraction, hs_<i>.safetensors)",
            "speculators",
            "hidden_states[:, :-1] ([T, n, H]: the aux layers, then the verifier's last layer)",
            "speculators 0.9.0 cli/generate_offline_data.py:139 (hs_{idx}.safetensors), "
            "data_generation/offline.py:10-33 (token_ids, hidden_states [T, ...]), "
            "train/data.py:324-331 (fc input hidden_states[:, :-1].flatten(1), verifier "
            "hidden_states[:, -1])",
        ),
        ForeignFormat(
            "specforge",
            "SpecForge 0.2.0 offline features (.ckpt / .ckpt.gz)",
            "specforge",
            "aux_hidden_state ([1, T, k*H])",
            "specforge 0.2.0 runtime/data_plane/offline_reader.py:46 (input_ids, loss_mask, "
            "hidden_state, aux_hidden_state), runtime/data_plane/feature_store.py:236-241 "
            "(torch.load; gzip for .gz), algorithms/eagle3/data.py:15-16 (aux_hidden_state feeds "
            "the drafter, hidden_state is the target)",
        ),
        ForeignFormat(
            "modelopt",
            "ModelOpt 0.47.0 offline EAGLE dump (.pt)",
            "modelopt",
            "aux_hidden_states ([T, k*H])",
            "nvidia-modelopt 0.47.0 torch/speculative/eagle/utils.py:127 (torch.load "
            "weights_only=True), :153-156 (input_ids, hidden_states = base model's, "
            "aux_hidden_states)",
        ),
        ForeignFormat(
            "trtllm",
            "TensorRT-LLM SaveHiddenStates (.pt, a list of records)",
            "trtllm",
            "hidden_state_features ([T, k*H]; the last captured layer is hidden_state)",
            "TensorRT-LLM tensorrt_llm/_torch/speculative/save_hidden_state.py:32-70 (commit "
            "17c59c3: records {id, input_ids, hidden_state, hidden_state_features}, "
            "torch.save of the list)",
        ),
    )
}

"""Files opened through ``torch.load(weights_only=True)`` in a limited child."""

LOAD_TIMEOUT_S = 120.0
LOAD_MEMORY_FACTOR = 3  # the child may map the file's size this many times, plus headroom
LOAD_HEADROOM = 1 << 30


def read_pickled(path: Path, claim: ForeignClaim | None, record: int = 0) -> Dump:
    """A pickle-based file (``PICKLE_SUFFIXES``) loaded with ``weights_only=True`` in a limited
    child, mapped onto ``Dump`` (``claim`` required); ``record`` picks one record of a
    TensorRT-LLM list."""
    source = str(path)
    if not path.exists():
        raise DumpError("no such file", source=source)
    regular_file(path, what="dump", error=DumpError)
    raw = _load_restricted(path, record)
    return _from_pickled(raw, claim, source, record)


def speculators_dump(
    tensors: Mapping[str, torch.Tensor], claim: ForeignClaim | None, source: str
) -> Dump:
    """A speculators ``hs_<i>.safetensors`` file's tensors mapped onto ``Dump`` (``claim``
    required: the file records no ids)."""
    return _speculators(tensors, _need(claim, "speculators", source), source)


def _need(claim: ForeignClaim | None, fmt: str, source: str) -> ForeignClaim:
    if claim is None:
        f = FORMATS[fmt]
        raise DumpError(
            f"a {f.system} file records no layer ids: pass the ids it was captured with, "
            f"--ids A,B,C --convention {f.convention} (or --contract / --draft with a stamp)",
            source=source,
        )
    return claim


def _metadata(
    fmt: ForeignFormat, claim: ForeignClaim, dtype: str, hidden: int, layout: str, names: list[str]
) -> dict[str, str]:
    return {
        "format": FORMAT,
        "layer_ids": json.dumps(list(claim.ids)),
        "convention": claim.convention,
        "system": f"{fmt.system}; fc input {fmt.fed}",
        "dtype": dtype,
        "hidden_size": str(hidden),
        "layout": layout,
        "segments": json.dumps(names),
        "foreign_format": fmt.name,
        "foreign_layout_source": fmt.source,
    }


def _dtype(t: torch.Tensor) -> str:
    return str(t.dtype).removeprefix("torch.")


def _speculators(tensors: Mapping[str, torch.Tensor], claim: ForeignClaim, source: str) -> Dump:
    fmt = FORMATS["speculators"]
    hs = tensors["hidden_states"]
    if hs.dim() != 3:
        raise DumpError(
            f"speculators hidden_states must be [T, n, H] (n = aux layers + the verifier's "
            f"last), got shape {list(hs.shape)}",
            source=source,
        )
    n = int(hs.shape[1])
    k = len(claim.ids)
    if k not in (n - 1, n):
        raise DumpError(
            f"hidden_states holds {n} layers (the drafter's {n - 1} and the verifier's last), "
            f"but {k} ids are claimed {list(claim.ids)}: give the {n - 1} ids of the drafter's "
            f"layers (or all {n} as passed to vLLM)",
            source=source,
        )
    names = [f"hidden_states[:, {i}]" for i in range(k)]
    out: dict[str, Any] = {name: hs[:, i] for i, name in enumerate(names)}
    out["input_ids"] = tensors["token_ids"]
    meta = _metadata(fmt, claim, _dtype(hs), int(hs.shape[-1]), "segments", names)
    return build_dump(out, meta, source)


def _from_pickled(
    raw: Mapping[str, Any], claim: ForeignClaim | None, source: str, record: int
) -> Dump:
    """SpecForge, ModelOpt or TensorRT-LLM, told apart by their keys."""
    keys = set(raw["keys"])
    tensors: dict[str, torch.Tensor] = raw["tensors"]
    count = raw.get("records")
    if "aux_hidden_state" in keys:
        fmt, fed = FORMATS["specforge"], "aux_hidden_state"
    elif "aux_hidden_states" in keys:
        fmt, fed = FORMATS["modelopt"], "aux_hidden_states"
    elif "hidden_state_features" in keys or count is not None:
        fmt, fed = FORMATS["trtllm"], "hidden_state_features"
        if fed not in keys:
            raise DumpError(
                f"record {record} has no hidden_state_features (TensorRT-LLM writes them only "
                f"when more than one layer is captured); keys: {sorted(keys)}",
                source=source,
            )
    else:
        known = ", ".join(f"{f.name} ({f.fed.split(' ')[0]})" for f in FORMATS.values())
        raise DumpError(
            f"not a hidden-state file this tool reads: keys {sorted(keys)[:8]}; known: {known}",
            source=source,
        )
    claim = _need(claim, fmt.name, source)
    if "input_ids" not in tensors or fed not in tensors:
        raise DumpError(f"a {fmt.name} file needs input_ids and {fed} tensors", source=source)
    fed_t = tensors[fed]
    if fmt.name == "specforge" and fed_t.dim() == 3:
        fed_t = fed_t.squeeze(0)  # [1, T, k*H] as prepare_hidden_states writes it
    width = int(fed_t.shape[-1]) if fed_t.dim() else 0
    k = len(claim.ids)
    if fed_t.dim() != 2 or width % k:
        raise DumpError(
            f"{fed} has shape {list(tensors[fed].shape)}: not [T, k*H] for the {k} claimed ids "
            f"{list(claim.ids)}",
            source=source,
        )
    ids = tensors["input_ids"].reshape(-1)
    meta = _metadata(fmt, claim, _dtype(fed_t), width // k, "concatenated", ["hidden_states"])
    if count is not None:
        meta["foreign_record"] = f"{record} of {count}"
    return build_dump({"hidden_states": fed_t, "input_ids": ids}, meta, source)


# -- the restricted load, in a limited child -------------------------------------------------------
def _child_load(src: str, out: str, budget: int, record: int) -> dict[str, Any]:
    """In the forked child: cap the address space, ``torch.load(weights_only=True)``, save the
    tensors of the dict (or of one record of a list) as safetensors; the answer as JSON."""
    import gzip
    import io
    import resource

    import torch
    from safetensors.torch import save_file

    with open("/proc/self/status") as fh:
        mapped = next(int(line.split()[1]) * 1024 for line in fh if line.startswith("VmSize:"))
    resource.setrlimit(resource.RLIMIT_AS, (mapped + budget, mapped + budget))
    try:
        if src.endswith(".gz"):
            with gzip.open(src, "rb") as fh:
                data = fh.read(budget + 1)
            if len(data) > budget:
                raise MemoryError("the decompressed file is larger than the limit")
            obj = torch.load(io.BytesIO(data), weights_only=True, map_location="cpu")
        else:
            obj = torch.load(src, weights_only=True, map_location="cpu")
    except MemoryError as exc:
        return {"error": f"over the memory limit while loading ({str(exc)[:120]})"}
    except Exception as exc:  # torch's refusals (an unsafe global, a corrupt zip) as one line
        return {"error": f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}"}
    records = None
    if isinstance(obj, list):
        records = len(obj)
        if not 0 <= record < len(obj) or not isinstance(obj[record], dict):
            return {"error": f"record {record} of a list of {len(obj)} is not a dict"}
        obj = obj[record]
    if not isinstance(obj, dict):
        return {"error": f"holds a {type(obj).__name__}, not a dict of tensors"}
    tensors: dict[str, torch.Tensor] = {}
    storages: set[int] = set()
    for key, value in obj.items():
        if not isinstance(value, torch.Tensor):
            continue
        if value.layout != torch.strided:  # safetensors stores dense tensors only
            return {
                "error": f"tensor {str(key)[:80]!r} is {value.layout}, not a dense tensor; save "
                f"hidden states dense (tensor.to_dense())"
            }
        storage = value.untyped_storage()
        whole = storage.nbytes() == value.numel() * value.element_size()
        if storage.data_ptr() in storages or not whole or not value.is_contiguous():
            value = value.clone(memory_format=torch.contiguous_format)  # a view: its own copy
        storages.add(storage.data_ptr())
        tensors[str(key)] = value
    try:
        save_file(tensors, out)
    except MemoryError as exc:
        return {"error": f"over the memory limit while copying ({str(exc)[:120]})"}
    except Exception as exc:
        return {"error": f"its tensors cannot be copied out: {' '.join(str(exc).split())[:300]}"}
    return {"keys": [str(k) for k in obj], "records": records}


def _load_restricted(path: Path, record: int = 0) -> dict[str, Any]:
    """``torch.load(path, weights_only=True)`` in a forked child with ``RLIMIT_AS`` and a
    timeout; the tensors come back through a safetensors file, never a pickle."""
    import time

    import torch  # before the fork: the child starts warm

    del torch
    budget = path.stat().st_size * LOAD_MEMORY_FACTOR * (8 if path.suffix == ".gz" else 1)
    budget += LOAD_HEADROOM
    with tempfile.TemporaryDirectory(prefix="eagle3-load-") as tmp:
        out = Path(tmp) / "tensors.safetensors"
        answer_file = Path(tmp) / "answer.json"
        pid = os.fork()
        if pid == 0:  # the child: never returns
            code = 0
            try:
                answer = _child_load(str(path), str(out), budget, record)
                answer_file.write_text(json.dumps(answer))
            except BaseException as exc:  # still say why, unless there is no memory to
                code = 70
                with contextlib.suppress(BaseException):
                    why = f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}"
                    answer_file.write_text(json.dumps({"error": why}))
            finally:
                os._exit(code)
        deadline = time.monotonic() + LOAD_TIMEOUT_S
        status = None
        while status is None:
            done, raw = os.waitpid(pid, os.WNOHANG)
            if done:
                status = raw
            elif time.monotonic() > deadline:
                os.kill(pid, 9)
                os.waitpid(pid, 0)
                raise DumpError(
                    f"loading took over {LOAD_TIMEOUT_S:g} s (torch.load weights_only=True in a "
                    f"limited child); is this a hidden-state file?",
                    source=str(path),
                )
            else:
                time.sleep(0.005)
        try:
            answer = json.loads(answer_file.read_text())
        except (OSError, json.JSONDecodeError):
            answer = {}
        if "error" in answer:
            raise DumpError(
                f"torch.load(weights_only=True) refused it: {answer['error']}", source=str(path)
            )
        if "keys" not in answer:
            signal = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
            how = (
                f"killed by signal {signal}: past its memory limit?"
                if signal is not None
                else f"exit status {os.waitstatus_to_exitcode(status)}"
            )
            raise DumpError(f"the loading child ended without an answer ({how})", source=str(path))
        tensors, _ = read_safetensors(out)
        tensors = {k: v.clone() for k, v in tensors.items()}  # off the temporary file
    return {"keys": answer["keys"], "records": answer["records"], "tensors": tensors}


def claim_from(ids: Sequence[int] | None, convention: str | None) -> ForeignClaim | None:
    """The caller's claim (``--ids``/``--convention``), when given."""
    if ids is None or not convention:
        return None
    return ForeignClaim(tuple(int(i) for i in ids), convention)


__all__ = [
    "FORMATS",
    "ForeignClaim",
    "ForeignFormat",
    "claim_from",
    "read_pickled",
    "speculators_dump",
]
