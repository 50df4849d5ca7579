"""The contract that travels with a drafter: a stamp in its ``config.json`` (torch-free).

``eagle3-contracts stamp DRAFT --trained-with X --target T`` records what the drafter was
trained on, in canonical ids, as one block under the key ``eagle3_contract`` of the drafter's
own ``config.json``::

    "eagle3_contract": {
      "schema": "eagle3-contracts.stamp/1",
      "layer_ids": [2, 30, 58],            # canonical ids, in concatenation order
      "order": "as_listed",                 # the order above is the order trained on
      "num_layers": 61, "hidden_size": 7168, "width": 21504,
      "trained_with": "specforge",          # convention (or release) the ids were read with
      "native_ids": [2, 30, 58], "ids_source": "eagle_config.eagle_aux_hidden_state_layer_ids",
      "target": {"model_type": "deepseek_v3", "architectures": ["DeepseekV3ForCausalLM"]},
      "stamped_by": "eagle3-contracts 0.1.0"
    }

Why a block in ``config.json`` and not a sidecar file: the config is the one file every copy of
a drafter carries (hub uploads, ``snapshot_download`` filters, serving images), while a sidecar
is easily left behind, and then a drafter silently loses its contract. Hugging Face and vLLM
keep unknown keys: vLLM exposes the block as ``hf_config.eagle3_contract`` inside the engine,
so the vLLM guard reads the stamp from the config the engine already loaded, with no extra
file access in the engine process. The block is a plain JSON object under one namespaced key;
engines ignore it.

``read_stamp`` returns ``None`` for an unstamped drafter and raises ``ConfigError`` for a
malformed stamp (a stamp that cannot be trusted is never silently ignored).
``claim_source`` says which claim a tool uses: the stamp first, then ``--trained-with``, then
the ``EAGLE3_CONTRACTS_TRAINED_WITH`` environment variable.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from eagle3_contracts._io import read_json_file, read_text_file, write_text_file
from eagle3_contracts.contract import CaptureContract, Order
from eagle3_contracts.errors import ConfigError, ContractError

STAMP_KEY = "eagle3_contract"
SCHEMA = "eagle3-contracts.stamp/1"
ENV_TRAINED_WITH = "EAGLE3_CONTRACTS_TRAINED_WITH"
RETIRED_ENV_TRAINED_WITH = "EAGLE3_TRAINED_WITH"
"""A second name for the same idea, read by nothing: set, it is refused (``trained_with_env``)
rather than silently ignored."""
ORDERS = ("as_listed", "ascending")


@dataclass(frozen=True)
class Stamp:
    """The canonical contract a drafter was trained on, and where the claim came from."""

    # -- the contract (ids in the trained order: ``order="as_listed"``) ----------------------
    contract: CaptureContract
    # -- provenance ---------------------------------------------------------------------------
    trained_with: str = ""  # convention or release name the native ids were read with
    native_ids: tuple[int, ...] | None = None  # the ids as written (None: trainer default)
    ids_source: str = ""  # JSON path the native ids came from, or "default"
    target: Mapping[str, Any] = field(default_factory=dict)  # model_type, architectures
    stamped_by: str = ""

    def to_dict(self) -> dict[str, Any]:
        contract = self.contract
        return {
            "schema": SCHEMA,
            "layer_ids": list(contract.layer_ids),
            "order": contract.order,
            "num_layers": contract.num_layers,
            "hidden_size": contract.hidden_size,
            "width": contract.width,
            "trained_with": self.trained_with,
            "native_ids": None if self.native_ids is None else list(self.native_ids),
            "ids_source": self.ids_source,
            "target": dict(self.target),
            "stamped_by": self.stamped_by,
        }

    def check_target(self, num_layers: int, hidden_size: int, source: str) -> None:
        """A ``ConfigError`` (field ``eagle3_contract``) unless the stamp was made for a target
        of this depth and width: its ids mean nothing on another target."""
        trained = self.contract
        if (trained.num_layers, trained.hidden_size) != (num_layers, hidden_size):
            raise ConfigError(
                f"the drafter's stamp was made for a {trained.num_layers} x "
                f"{trained.hidden_size} target, this target is {num_layers} x {hidden_size}: "
                "check it against the target it was trained on, or re-stamp it",
                source=source,
                field="eagle3_contract",
            )

    def describe(self) -> str:
        """``"canonical [2, 30, 58] of L=61, H=7168 (trained with specforge)"``."""
        contract = self.contract
        return (
            f"canonical {list(contract.layer_ids)} of L={contract.num_layers}, "
            f"H={contract.hidden_size} (trained with {self.trained_with or 'an unnamed trainer'})"
        )


@dataclass(frozen=True)
class ClaimSource:
    """Which training claim a tool uses, and where it came from (said in every output)."""

    kind: str  # "stamp", "--trained-with", "env" or "none"
    detail: str  # the stamp's file, the convention name, or why there is none
    stamp: Stamp | None = None
    trained_with: str | None = None
    overridden: tuple[str, ...] = ()  # the lower claims that said otherwise, each in words

    def describe(self) -> str:
        return self._said() + "".join(f" ({o})" for o in self.overridden)

    def _said(self) -> str:
        if self.kind == "stamp":
            assert self.stamp is not None
            return f"stamp in {self.detail}: {self.stamp.describe()}"
        if self.kind == "--trained-with":
            return f"no stamp; --trained-with {self.detail}"
        if self.kind == "env":
            return f"no stamp; {ENV_TRAINED_WITH}={self.detail}"
        return f"no stamp, no --trained-with, no {ENV_TRAINED_WITH}: {self.detail}"


# -- reading ---------------------------------------------------------------------------------
def _config_path(draft: str | os.PathLike[str]) -> Path:
    path = Path(draft)
    return path / "config.json" if path.is_dir() else path


def _load_config(path: Path) -> dict[str, Any]:
    # a regular file, size- and depth-bounded: a FIFO, /dev/zero or deep JSON
    data = read_json_file(path, what="draft config")
    if not isinstance(data, dict):
        raise ConfigError(
            f"a drafter config is a JSON object, got {type(data).__name__}", source=str(path)
        )
    return data


def read_stamp(draft: str | os.PathLike[str] | Mapping[str, Any]) -> Stamp | None:
    """The stamp of a drafter (directory, ``config.json`` path or config dict), or ``None``."""
    if isinstance(draft, Mapping):
        return parse_stamp(draft.get(STAMP_KEY), source="<dict>")
    path = _config_path(draft)
    return parse_stamp(_load_config(path).get(STAMP_KEY), source=str(path))


def _bad(source: str) -> Callable[[str, str], ConfigError]:
    """The error for one member of a stamp block: what is wrong, and to re-stamp."""

    def bad(what: str, key: str) -> ConfigError:
        return ConfigError(
            f"{STAMP_KEY}.{key}: {what}; re-stamp with `eagle3-contracts stamp DRAFT "
            f"--trained-with X --target T --force`",
            source=source,
            field=f"{STAMP_KEY}.{key}",
        )

    return bad


def _int_list(value: object) -> bool:
    return isinstance(value, list) and all(
        isinstance(i, int) and not isinstance(i, bool) for i in value
    )


def parse_stamp(block: object, *, source: str = "<dict>") -> Stamp | None:
    """Validate one ``eagle3_contract`` block; ``None`` when absent."""
    if block is None:
        return None
    bad = _bad(source)
    if not isinstance(block, Mapping):
        raise bad(f"must be a JSON object, got {type(block).__name__}", "*")
    if block.get("schema") != SCHEMA:
        raise bad(f"schema is {block.get('schema')!r}, this version reads {SCHEMA!r}", "schema")
    ids = block.get("layer_ids")
    if not (_int_list(ids) and ids):
        raise bad(f"must be a non-empty list of canonical ids, got {ids!r}", "layer_ids")
    assert isinstance(ids, list)
    n, hidden = _sizes(block, bad)
    _check_contract_members(block, ids, n, hidden, bad)
    native = block.get("native_ids")
    if native is not None and not _int_list(native):
        raise bad(f"must be a list of integers or null, got {native!r}", "native_ids")
    target = block.get("target") or {}
    if not isinstance(target, Mapping):
        raise bad(f"must be a JSON object, got {type(target).__name__}", "target")
    texts = {}
    for key in ("trained_with", "ids_source", "stamped_by"):
        value = block.get(key, "")
        if not isinstance(value, str):
            raise bad(f"must be a string, got {value!r}", key)
        texts[key] = value
    order = cast(Order, block.get("order", "as_listed"))
    try:
        contract = CaptureContract(tuple(ids), n, hidden, order=order)
    except ContractError as exc:  # what the checks above leave: a repeated id
        raise bad(str(exc), exc.field or "layer_ids") from None
    return Stamp(
        contract,
        native_ids=None if native is None else tuple(native),
        target=dict(target),
        **texts,
    )


def _sizes(block: Mapping[str, Any], bad: Callable[[str, str], ConfigError]) -> tuple[int, int]:
    """``num_layers`` and ``hidden_size``: positive integers."""
    sizes = []
    for key in ("num_layers", "hidden_size"):
        value = block.get(key)
        if not (isinstance(value, int) and not isinstance(value, bool) and value > 0):
            raise bad(f"must be a positive integer, got {value!r}", key)
        sizes.append(value)
    return sizes[0], sizes[1]


def _check_contract_members(
    block: Mapping[str, Any],
    ids: list[int],
    n: int,
    hidden: int,
    bad: Callable[[str, str], ConfigError],
) -> None:
    """The ids are canonical ids of an ``n``-layer target, the order is known, and the width
    (when given) is the ids' count times ``hidden``."""
    out_of_range = [i for i in ids if not -1 <= i < n]
    if out_of_range:
        raise bad(
            f"ids {out_of_range} are not canonical ids of a {n}-layer target (-1 .. {n - 1})",
            "layer_ids",
        )
    order = block.get("order", "as_listed")
    if order not in ORDERS:
        raise bad(f"must be one of {ORDERS}, got {order!r}", "order")
    width = block.get("width")
    if width is not None and width != len(ids) * hidden:
        raise bad(f"{width!r} disagrees with {len(ids)} ids x hidden_size {hidden}", "width")


def claim_source(
    draft: str | os.PathLike[str] | Mapping[str, Any] | None,
    trained_with: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> ClaimSource:
    """The training claim to judge against: stamp, else ``--trained-with``, else the env var
    (``resolve_claim`` on the drafter's config, read once)."""
    if draft is None or isinstance(draft, Mapping):
        return resolve_claim(draft, "<dict>", trained_with, environ)
    path = _config_path(draft)
    return resolve_claim(_load_config(path), str(path), trained_with, environ)


def resolve_claim(
    config: Mapping[str, Any] | None,
    where: str,
    trained_with: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> ClaimSource:
    """The one order every tool reads a training claim in: the stamp in the drafter's
    ``config`` (read from ``where``), else ``trained_with``, else
    ``EAGLE3_CONTRACTS_TRAINED_WITH`` in ``environ`` (default ``os.environ``). A lower claim
    that names another trainer is said in ``overridden``, never silently dropped."""
    from_env = trained_with_env(os.environ if environ is None else environ)
    stamp = None if config is None else parse_stamp(config.get(STAMP_KEY), source=where)
    given = [
        (f"--trained-with {trained_with}", trained_with),
        (f"{ENV_TRAINED_WITH}={from_env}", from_env),
    ]
    if stamp is not None:
        chosen = ClaimSource("stamp", where, stamp=stamp, trained_with=stamp.trained_with)
        lower = given
    elif trained_with:
        chosen = ClaimSource("--trained-with", trained_with, trained_with=trained_with)
        lower = given[1:]
    elif from_env:
        chosen = ClaimSource("env", from_env, trained_with=from_env)
        lower = []
    else:
        return ClaimSource("none", "the training contract is unknown")
    read_first = "the stamp" if stamp is not None else "--trained-with"
    overridden = tuple(
        f"{said} ignored: {read_first} is read first"
        for said, name in lower
        if name and name != chosen.trained_with
    )
    return dataclasses.replace(chosen, overridden=overridden)


def trained_with_env(environ: Mapping[str, str] | None = None) -> str | None:
    """``EAGLE3_CONTRACTS_TRAINED_WITH`` (stripped; ``None`` when unset or empty). A
    ``ConfigError`` when only the retired ``EAGLE3_TRAINED_WITH`` is set: one variable per
    idea, and a claim the user set is never silently dropped."""
    env = os.environ if environ is None else environ
    value = env.get(ENV_TRAINED_WITH, "").strip()
    retired = env.get(RETIRED_ENV_TRAINED_WITH, "").strip()
    if retired and not value:
        raise ConfigError(
            f"{RETIRED_ENV_TRAINED_WITH}={retired} is not read: the training claim's variable "
            f"is {ENV_TRAINED_WITH}; rename it",
            field=RETIRED_ENV_TRAINED_WITH,
        )
    return value or None


# -- writing ---------------------------------------------------------------------------------
def write_stamp(draft: str | os.PathLike[str], stamp: Stamp) -> Path:
    """Add (or replace) the stamp block in the drafter's ``config.json``; return its path.

    A minimal textual edit: only the ``eagle3_contract`` member changes (or is added after the
    last one), every other byte (key order, indentation, compact arrays, encoding, line ends)
    is kept; the file is replaced safely (``_io.write_text_file``).
    """
    from eagle3_contracts._io import load_json
    from eagle3_contracts._json_edit import set_top_level_key

    path = _config_path(draft)
    file = read_text_file(path, what="draft config")
    data = load_json(file.text, what="draft config", source=str(path))
    if not isinstance(data, dict):
        raise ConfigError(
            f"a drafter config is a JSON object, got {type(data).__name__}", source=str(path)
        )
    parse_stamp(stamp.to_dict(), source=str(path))  # never write what read_stamp refuses
    text = set_top_level_key(file.text, STAMP_KEY, stamp.to_dict(), source=str(path))
    write_text_file(file, text if text.endswith("\n") else text + "\n", what="draft config")
    return path


__all__ = [
    "ENV_TRAINED_WITH",
    "RETIRED_ENV_TRAINED_WITH",
    "SCHEMA",
    "STAMP_KEY",
    "ClaimSource",
    "Stamp",
    "claim_source",
    "parse_stamp",
    "read_stamp",
    "resolve_claim",
    "trained_with_env",
    "write_stamp",
]
