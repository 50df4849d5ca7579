"""Reading drafter and target configs in every schema seen in the wild.

Drafter schemas: nested ``eagle_config`` (SpecForge, SGLang, ModelOpt), top-level ids
(vLLM-native), speculators (``speculators_model_type``, ``transformer_layer_config``), and none
(the original EAGLE). Targets: a Hugging Face ``config.json``, including multimodal
``text_config`` nesting. Paths or dicts are accepted; anything malformed raises ``ConfigError``
naming the file and the JSON field.

Where they come from: a local file or directory, or a Hugging Face Hub id
(``org/name[@revision]``), resolved by ``resolve_model``/``resolve_weights`` below.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from eagle3_contracts._io import read_bounded, read_json_file
from eagle3_contracts.conventions.hf import NESTED as NESTED_PATH
from eagle3_contracts.conventions.hf import TOP_LEVEL as IDS_FIELD
from eagle3_contracts.errors import ConfigError
from eagle3_contracts.layer_ids import MAX_LAYER_IDS, MAX_NUM_LAYERS

KNOWN_NORM_FLAGS: Mapping[str, str] = MappingProxyType(
    {
        "norm_before_residual": "speculators / vLLM: norm the embedding before the residual",
        "norm_before_fc": "gpt-oss drafters (sglang#32334): norm the aux states before fc",
        "fc_norm": "speculators 0.9.0: a per-segment RMSNorm on each aux state before "
        "concatenation and fc (models/eagle3/core.py:238-242), exclusive with norm_before_fc "
        "(models/eagle3/config.py:91-95)",
        "norm_output": "speculators: norm the drafter output",
        "use_input_layernorm_in_first_layer": "ModelOpt: input layernorm in the first layer",
        "use_last_layernorm": "ModelOpt: final layernorm",
        "use_mtp_layernorm": "ModelOpt: MTP-style layernorms",
    }
)
"""Drafter norm flags some system reads (unknown ``*norm*`` booleans are reported)."""

_NUM_LAYERS_KEYS = ("num_hidden_layers", "n_layer", "num_layers")
_HIDDEN_KEYS = ("hidden_size", "n_embd", "d_model")


@dataclass(frozen=True)
class DraftConfig:
    """What a drafter config says about capture, fc width, vocab and norms."""

    # -- where it came from ---------------------------------------------------------------
    source: str  # file path or "<dict>"
    schema: str  # "eagle_config", "top-level", "speculators" or "none"
    # -- capture ids as written (None = field absent) --------------------------------------
    nested_ids: tuple[int, ...] | None
    top_level_ids: tuple[int, ...] | None
    # -- sizes ----------------------------------------------------------------------------
    hidden_size: int | None  # the drafter's own width
    target_hidden_size: int | None  # explicit target width for fc (None: equals hidden_size)
    vocab_size: int | None
    draft_vocab_size: int | None
    # -- norms and identity -----------------------------------------------------------------
    norm_flags: Mapping[str, bool] = field(default_factory=dict)
    unknown_norm_flags: Mapping[str, Any] = field(default_factory=dict)
    architectures: tuple[str, ...] = ()
    model_type: str | None = None
    verifier: str | None = None
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def ids_at(self, path: str) -> tuple[int, ...] | None:
        """Ids at a registry JSON path (``eagle_config.eagle_aux_hidden_state_layer_ids``)."""
        if path == NESTED_PATH:
            return self.nested_ids
        if path == IDS_FIELD:
            return self.top_level_ids
        raise ConfigError(f"no reader for JSON path {path!r}", source=self.source, field=path)

    @property
    def ids(self) -> tuple[int, ...] | None:
        """The ids as written (nested first); ``None`` when the config has none."""
        return self.nested_ids if self.nested_ids is not None else self.top_level_ids

    @property
    def fc_hidden_size(self) -> int | None:
        """Target width the drafter's fc expects per segment."""
        return self.target_hidden_size if self.target_hidden_size is not None else self.hidden_size


@dataclass(frozen=True)
class TargetConfig:
    """The target model facts capture depends on."""

    source: str
    num_layers: int
    hidden_size: int
    vocab_size: int | None = None
    model_type: str | None = None
    architectures: tuple[str, ...] = ()
    text_model_type: str | None = None  # model_type of a nested text_config (multimodal)
    is_moe: bool = False  # routed experts (vLLM 0.22.0 picks its runner by it)
    quantized: bool = False  # a quantization_config is present
    section: str = ""  # where depth and width were read ("", "text_config.", "llm_config.", ...)
    filled: tuple[str, ...] = ()  # fields taken from the transformers config class defaults
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_sizes(cls, num_layers: object, hidden_size: object) -> TargetConfig:
        """A target given by depth and width only (``--num-layers/--hidden-size``)."""
        src = "<command line>"
        data = {"num_hidden_layers": num_layers, "hidden_size": hidden_size}
        depth = _pos_int(data, "num_hidden_layers", src, required=True)
        width = _pos_int(data, "hidden_size", src, required=True)
        assert depth is not None and width is not None  # required=True raises instead
        return cls(
            source=src,
            num_layers=depth,
            hidden_size=width,
            raw=MappingProxyType(dict(data)),
        )


# -- public readers ------------------------------------------------------------------------------
def read_draft_config(path_or_dict: str | os.PathLike[str] | Mapping[str, Any]) -> DraftConfig:
    """Parse a drafter ``config.json`` (path or dict) into a ``DraftConfig``."""
    data, src = load_config_json(path_or_dict, "draft config")
    nested = _object(data, "eagle_config", src)
    nested_ids = _ids(nested, IDS_FIELD, src, prefix="eagle_config.") if nested else None
    top_ids = _ids(data, IDS_FIELD, src)
    layer_cfg = _object(data, "transformer_layer_config", src)
    speculators = "speculators_model_type" in data
    if speculators:
        kind = data["speculators_model_type"]
        if not isinstance(kind, str):
            raise ConfigError(
                f"speculators_model_type must be a string, got {_tname(kind)}",
                source=src,
                field="speculators_model_type",
            )
    sizes = layer_cfg if (speculators and layer_cfg) else data
    prefix = "transformer_layer_config." if sizes is not data else ""
    schema = (
        "speculators"
        if speculators
        else "eagle_config"
        if nested_ids is not None
        else "top-level"
        if top_ids is not None
        else "none"
    )
    norm_flags, unknown = _norm_flags(data, nested or {}, src)
    verifier = None
    spec_cfg = _object(data, "speculators_config", src)
    if spec_cfg is not None:
        ver = spec_cfg.get("verifier")
        if isinstance(ver, Mapping):
            verifier = _str(ver, "name_or_path", src, prefix="speculators_config.verifier.")
    return DraftConfig(
        source=src,
        schema=schema,
        nested_ids=nested_ids,
        top_level_ids=top_ids,
        hidden_size=_pos_int(sizes, "hidden_size", src, prefix=prefix),
        target_hidden_size=_pos_int(data, "target_hidden_size", src),
        vocab_size=_pos_int(sizes, "vocab_size", src, prefix=prefix),
        draft_vocab_size=_pos_int(data, "draft_vocab_size", src),
        norm_flags=MappingProxyType(norm_flags),
        unknown_norm_flags=MappingProxyType(unknown),
        architectures=_str_list(data, "architectures", src),
        model_type=_str(data, "model_type", src),
        verifier=verifier,
        raw=MappingProxyType(dict(data)),
    )


TEXT_SECTIONS: tuple[str, ...] = ("text_config", "thinker_config.text_config", "llm_config")
"""Where multimodal targets keep their language model's config (Llava/Qwen-VL ``text_config``,
Qwen3-Omni ``thinker_config.text_config``, InternVL ``llm_config``), tried in this order."""


def read_target_config(
    path_or_dict: str | os.PathLike[str] | Mapping[str, Any], *, source: str = "<dict>"
) -> TargetConfig:
    """Parse a target Hugging Face ``config.json``.

    Depth and width come from the top level, else the first of ``TEXT_SECTIONS`` present. A
    section that leaves default-valued fields out (llava-hf publishes such ``text_config``s) is
    completed from the defaults of its ``model_type``'s transformers config class, read from the
    installed transformers source without importing it (``filled`` says which); without
    transformers the missing field is a ``ConfigError`` naming it.
    """
    data, src = load_config_json(path_or_dict, "target config", source=source)
    sizes: Mapping[str, Any] = data
    prefix = ""
    # every section present is type-checked, also when the top level holds the depth: a
    # ``text_config: [1]`` is refused, never skipped
    sections = [(path, _section(data, path, src)) for path in TEXT_SECTIONS]
    if not any(k in data for k in _NUM_LAYERS_KEYS):
        for path, section in sections:
            if section is not None:
                sizes, prefix = section, path + "."
                break
    filled: list[str] = []
    if sizes is not data:
        sizes = _with_defaults(sizes, prefix, src, filled)
    num_layers = _first_int(sizes, _NUM_LAYERS_KEYS, src, prefix)
    if num_layers > MAX_NUM_LAYERS:  # a typo like 10**12 would loop over every layer
        key = next(k for k in _NUM_LAYERS_KEYS if sizes.get(k) is not None)  # the key written
        raise ConfigError(
            f"{prefix}{key} = {num_layers} is over the limit of {MAX_NUM_LAYERS} "
            f"layers (released models have a few hundred at most)",
            source=src,
            field=prefix + key,
        )
    hidden = _first_int(sizes, _HIDDEN_KEYS, src, prefix)
    vocab = _pos_int(sizes, "vocab_size", src, prefix=prefix)
    if vocab is None and sizes is not data:
        vocab = _pos_int(data, "vocab_size", src)
    text_type = _str(sizes, "model_type", src, prefix=prefix) if sizes is not data else None
    archs = _str_list(data, "architectures", src)
    if sizes is not data and not archs and isinstance(sizes.get("architectures"), list):
        archs = _str_list(sizes, "architectures", src, prefix=prefix)
    return TargetConfig(
        source=src,
        num_layers=num_layers,
        hidden_size=hidden,
        vocab_size=vocab,
        model_type=_str(data, "model_type", src),
        architectures=archs,
        text_model_type=text_type,
        is_moe=any(_experts(s) for s in (data, sizes)),
        quantized=any(s.get("quantization_config") is not None for s in (data, sizes)),
        section=prefix,
        filled=tuple(filled),
        raw=MappingProxyType(dict(data)),
    )


def _section(data: Mapping[str, Any], path: str, src: str) -> Mapping[str, Any] | None:
    node: Mapping[str, Any] | None = data
    parts = path.split(".")
    for i, part in enumerate(parts):
        prefix = "".join(f"{p}." for p in parts[:i])
        node = _object(node, part, src, prefix=prefix) if node is not None else None
    return node


def _with_defaults(
    section: Mapping[str, Any], prefix: str, src: str, filled: list[str]
) -> Mapping[str, Any]:
    """``section`` completed with its transformers config class's defaults for depth, width
    and vocab, when it leaves them out; unchanged if nothing is missing."""
    missing = [
        keys[0] for keys in (_NUM_LAYERS_KEYS, _HIDDEN_KEYS) if not any(k in section for k in keys)
    ]
    if not missing:
        return section
    model_type = _str(section, "model_type", src, prefix=prefix)
    defaults = transformers_defaults(model_type) if model_type else None
    if defaults is None:
        raise ConfigError(
            f"{prefix}{missing[0]} is missing and "
            + (
                f"no installed transformers config class for model_type {model_type!r} gives "
                "its default"
                if model_type
                else f"{prefix}model_type is absent, so no transformers default applies"
            )
            + f": add {prefix}{missing[0]} to the target config",
            source=src,
            field=prefix + missing[0],
        )
    out = dict(section)
    for key in (*missing, "vocab_size"):
        if key not in out and key in defaults:
            out[key] = defaults[key]
            filled.append(f"{prefix}{key} = {defaults[key]} ({defaults['__class__']} default)")
    return out


def transformers_defaults(model_type: str) -> dict[str, Any] | None:
    """Class-level defaults of ``num_hidden_layers``, ``hidden_size`` and ``vocab_size`` of
    the transformers config class for ``model_type``, read from the installed transformers
    source with ``ast`` (importing transformers would import torch); ``None`` when transformers
    is not installed or has no such class."""
    spec = importlib.util.find_spec("transformers")
    if spec is None or not spec.submodule_search_locations:
        return None
    name = model_type.replace("-", "_")
    models = Path(spec.submodule_search_locations[0]) / "models"
    # a text sub-config ("gemma3_text", Gemma3TextConfig) lives in its model's folder ("gemma3")
    folder = name if (models / name).is_dir() else name.removesuffix("_text")
    path = models / folder / f"configuration_{folder}.py"
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return None
    wanted = {"num_hidden_layers", "hidden_size", "vocab_size"}
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
        consts = _class_constants(cls)
        if consts.get("model_type") != model_type:
            continue
        out: dict[str, Any] = {k: v for k, v in consts.items() if k in wanted}
        init = next(
            (n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None
        )
        if init is not None:  # transformers 4: defaults are __init__ keyword defaults
            # defaults cover the last positional parameters, positional-only ones included
            positional = [*init.args.posonlyargs, *init.args.args]
            args = positional[len(positional) - len(init.args.defaults) :]
            for arg, default in zip(args, init.args.defaults, strict=True):
                if arg.arg in wanted and isinstance(default, ast.Constant):
                    out.setdefault(arg.arg, default.value)
        out["__class__"] = f"transformers {cls.name}"
        return out
    return None


def _class_constants(cls: ast.ClassDef) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for node in cls.body:
        target = value = None
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            target, value = node.target.id, node.value
        elif (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
        ):
            target, value = node.targets[0].id, node.value
        if target and isinstance(value, ast.Constant):
            out[target] = value.value
    return out


# -- helpers -------------------------------------------------------------------------------------
_EXPERT_KEYS = ("n_routed_experts", "num_experts", "num_local_experts", "moe_num_experts")


def _experts(section: Mapping[str, Any]) -> bool:
    """Whether a config section declares routed experts (a MoE model)."""
    return any(
        isinstance(section.get(k), int) and not isinstance(section.get(k), bool) and section[k] > 1
        for k in _EXPERT_KEYS
    )


def load_config_json(
    obj: object, what: str, *, source: str = "<dict>"
) -> tuple[Mapping[str, Any], str]:
    """A config as a mapping and where it came from: a dict as it is (named ``source``), or a
    JSON file (a directory: its ``config.json``), bounded and refused unless an object."""
    if isinstance(obj, Mapping):
        return obj, source
    if not isinstance(obj, (str, os.PathLike)):
        raise ConfigError(
            f"a {what} is a path to a JSON file or a dict, got {_tname(obj)}", source=None
        )
    path = Path(obj)
    src = str(path)
    if path.is_dir():
        path = path / "config.json"
        src = str(path)
    # regular files only, size- and depth-bounded (a FIFO, /dev/zero, deep JSON)
    data = read_json_file(path, what=what)
    if not isinstance(data, dict):
        raise ConfigError(
            f"{what} must be a JSON object, got {_tname(data)}", source=src, field="<root>"
        )
    return data, src


def _tname(value: object) -> str:
    names = {dict: "object", list: "list", str: "string", bool: "boolean", type(None): "null"}
    for t, name in names.items():
        if isinstance(value, t):
            return f"{name} {_short(value)}" if t is not type(None) else name
    if isinstance(value, (int, float)):
        return f"number {value!r}"
    return type(value).__name__


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _ids(
    data: Mapping[str, Any] | None, key: str, src: str, *, prefix: str = ""
) -> tuple[int, ...] | None:
    if not data or key not in data:
        return None
    value = data[key]
    where = prefix + key
    if value is None:
        return None
    if not isinstance(value, list):
        raise ConfigError(
            f"{where} must be a list of integer layer ids, got {_tname(value)}",
            source=src,
            field=where,
        )
    if len(value) > MAX_LAYER_IDS:  # a million ids would take seconds per system
        raise ConfigError(
            f"{where} lists {len(value)} layer ids, over the limit of {MAX_LAYER_IDS}; an "
            f"EAGLE-3 drafter reads a handful (3 or 4)",
            source=src,
            field=where,
        )
    if not value:
        raise ConfigError(
            f"{where} is empty: list the layer ids, or remove the field to use a system's "
            f"default (engines disagree on what an empty list means)",
            source=src,
            field=where,
        )
    for i, n in enumerate(value):
        if isinstance(n, bool) or not isinstance(n, int):
            raise ConfigError(
                f"{where}[{i}] must be an integer layer id, got {_tname(n)}",
                source=src,
                field=f"{where}[{i}]",
            )
    return tuple(value)


def _pos_int(
    data: Mapping[str, Any], key: str, src: str, *, prefix: str = "", required: bool = False
) -> int | None:
    if key not in data or data[key] is None:
        if required:
            raise ConfigError(f"{prefix}{key} is missing", source=src, field=prefix + key)
        return None
    value = data[key]
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(
            f"{prefix}{key} must be a positive integer, got {_tname(value)}",
            source=src,
            field=prefix + key,
        )
    return value


def _first_int(data: Mapping[str, Any], keys: tuple[str, ...], src: str, prefix: str) -> int:
    for key in keys:
        if key in data and data[key] is not None:
            value = _pos_int(data, key, src, prefix=prefix)
            assert value is not None
            return value
    raise ConfigError(
        f"no {prefix}{keys[0]} (or {', '.join(keys[1:])}): the target's depth and width are "
        f"needed; pass a Hugging Face config.json or --num-layers/--hidden-size",
        source=src,
        field=prefix + keys[0],
    )


def _object(
    data: Mapping[str, Any], key: str, src: str, *, prefix: str = ""
) -> Mapping[str, Any] | None:
    """``data[key]`` if it is a JSON object, ``None`` if absent or null."""
    value = data.get(key)
    if value is not None and not isinstance(value, Mapping):
        raise ConfigError(
            f"{prefix}{key} must be a JSON object, got {_tname(value)}",
            source=src,
            field=prefix + key,
        )
    return value


def _str(data: Mapping[str, Any], key: str, src: str, *, prefix: str = "") -> str | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ConfigError(
            f"{prefix}{key} must be a string, got {_tname(value)}", source=src, field=prefix + key
        )
    return value


def _str_list(data: Mapping[str, Any], key: str, src: str, *, prefix: str = "") -> tuple[str, ...]:
    value = data.get(key)
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(
            f"{prefix}{key} must be a list of strings, got {_tname(value)}",
            source=src,
            field=prefix + key,
        )
    return tuple(value)


def _norm_flags(
    data: Mapping[str, Any], nested: Mapping[str, Any], src: str
) -> tuple[dict[str, bool], dict[str, Any]]:
    known: dict[str, bool] = {}
    unknown: dict[str, Any] = {}
    for prefix, section in (("", data), ("eagle_config.", nested)):
        for key, value in section.items():
            if "norm" not in key.lower():
                continue
            where = prefix + key
            if key in KNOWN_NORM_FLAGS:
                if not isinstance(value, bool):
                    raise ConfigError(
                        f"{where} must be true or false, got {_tname(value)}",
                        source=src,
                        field=where,
                    )
                known[where] = value
            elif isinstance(value, bool):
                unknown[where] = value
    return known, unknown


# -- Hub ids as local paths ----------------------------------------------------------------------
# Hugging Face Hub ids (``org/name[@revision]``) wherever a drafter or target path is taken.
#
# Offline first: the local HF cache is read directly, in the layout ``huggingface_hub`` writes
# (``models--org--name/refs/<revision>`` holds a commit, ``snapshots/<commit>/<file>`` the file,
# ``.no_exist/<commit>/<file>`` a file known to be absent; huggingface_hub 2.4.0
# ``file_download.py:1584-1620``, ``try_to_load_from_cache``), so a cached id costs a few ``stat``
# calls and no import of ``huggingface_hub`` (measured ~0.13-0.23 s to import its download
# module, most of ``check``'s budget). Only on a cache miss, and never with ``HF_HUB_OFFLINE=1``,
# is the library imported to download ``config.json`` (``hf_hub_download``) or to read the
# safetensors headers of the weights (``HfApi.get_safetensors_metadata``: a few KB per file, never
# the weights). Every miss is one ``ConfigError`` naming the id and whether the cache, the network
# or both were tried.

_HUB_ID = re.compile(
    r"^(?P<repo>[A-Za-z0-9][A-Za-z0-9_.-]{0,95}/[A-Za-z0-9][A-Za-z0-9_.-]{0,95})"
    r"(?:@(?P<revision>[A-Za-z0-9_./-]{1,200}))?$"
)
_FILE_SUFFIXES = (".json", ".safetensors", ".pt", ".bin", ".ckpt", ".gz")
_TRUE = frozenset({"1", "ON", "YES", "TRUE"})  # huggingface_hub constants.py _is_true
CONFIG = "config.json"
HUB_TIMEOUT = 10.0
"""Seconds the one request to the Hugging Face Hub may take on a cache miss."""
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


_PATH_LIKE = ("/", "./", "../", "~", "\\")


def parse_hub_id(text: object) -> HubId | None:
    """``text`` as a Hub id, or ``None`` when it is a local path: it exists, it reads as one
    (``./x``, ``/x``, ``~/x``, a file suffix: ``.json``, ``.safetensors`` ..., a first part
    that is a local folder) or it is not a valid ``org/name[@revision]`` (huggingface_hub
    ``utils/_validators.py`` ``validate_repo_id``: no ``--`` or ``..``, no ``-``/``.`` at either
    end). A revision with an empty, ``.`` or ``..`` part is refused (``ConfigError``): it could
    name a folder outside the HF cache."""
    if not isinstance(text, str) or os.path.exists(text) or text.startswith(_PATH_LIKE):
        return None
    match = _HUB_ID.match(text)
    if match is None or match["repo"].lower().endswith(_FILE_SUFFIXES):
        return None
    org, name = match["repo"].split("/")
    if os.path.isdir(org) or any(
        "--" in part or ".." in part or part[-1] in "-." for part in (org, name)
    ):
        return None
    revision = match["revision"]
    if revision is not None and any(part in ("", ".", "..") for part in revision.split("/")):
        raise ConfigError(
            f"{text}: the revision {revision!r} has an empty, '.' or '..' part; a revision is a "
            f"branch, tag or commit hash (org/name@main, org/name@v1.0, org/name@<40 hex>)",
            field="revision",
        )
    return HubId(match["repo"], revision)


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
_COMMIT = re.compile(r"[0-9a-f]{40}")


def _commit(hub: HubId, repo: Path) -> str:
    """The commit ``hub.revision`` names in the cache: ``refs/<revision>`` (which must hold a
    commit hash: huggingface_hub writes one there, ``file_download.py`` ``_cache_commit_hash_for_specific_revision``),
    else the revision itself (a commit hash)."""
    revision = hub.revision or "main"
    ref = repo / "refs" / revision
    if ref.is_file():
        raw = read_bounded(ref, what=f"HF cache ref of {hub}", limit=4096)
        commit = raw.decode("ascii", "replace").strip()
        if _COMMIT.fullmatch(commit) is None:
            raise ConfigError(
                f"holds {_short(commit)}, not a 40-hex commit hash; the HF cache is damaged: "
                f"delete this file (huggingface_hub downloads it again)",
                source=str(ref),
                field="revision",
            )
        return commit
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
        f"{what} {hub}: no such local path, and not in the HF cache ({cache_dir()}); {network}",
        source=None,
        field=what.replace(" ", "_"),
    )


def _network_error(exc: Exception) -> str:
    first = " ".join(str(exc).split())[:240]
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def _asking(hub: HubId, what: str) -> None:
    """The progress line before the one request to the Hub, on a terminal only (a person waits
    for it; a pipe or a log gets the one result line)."""
    if sys.stderr.isatty():
        print(
            f"{what} {hub}: not in the HF cache; asking the Hugging Face Hub (one try, "
            f"{HUB_TIMEOUT:g} s timeout) ...",
            file=sys.stderr,
            flush=True,
        )


def config_file(hub: HubId, *, what: str = "model") -> tuple[Path, str]:
    """The local ``config.json`` of ``hub`` and how it was found (``"HF cache"`` or
    ``"downloaded"``): the cache first; then, unless offline, ``hf_hub_download`` of that one
    file (into the same cache)."""
    cached = cached_file(hub, CONFIG)
    if cached is not None:
        return cached, "HF cache"
    if offline():
        raise _miss(hub, what, "HF_HUB_OFFLINE is set, so the network was not tried")
    _asking(hub, what)
    try:
        from huggingface_hub import get_hf_file_metadata, hf_hub_download, hf_hub_url

        # One request, no retries (hf_hub_download retries a failing HEAD five times with
        # backoff, huggingface_hub 2.4.0 file_download.py:1188 and utils/_http.py:469: ~47 s
        # and a warning a retry without a network); only a reachable file is downloaded.
        url = hf_hub_url(hub.repo_id, CONFIG, revision=hub.revision)
        get_hf_file_metadata(url, timeout=HUB_TIMEOUT)
        path = hf_hub_download(
            hub.repo_id,
            CONFIG,
            revision=hub.revision,
            cache_dir=str(cache_dir()),
            etag_timeout=HUB_TIMEOUT,
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
    _asking(hub, "weights")
    try:
        from huggingface_hub import HfApi

        meta: Any = HfApi().get_safetensors_metadata(
            hub.repo_id, revision=hub.revision, timeout=HUB_TIMEOUT
        )
    except Exception as exc:  # the library's network and not-a-safetensors-repo errors
        raise _miss(hub, "weights", f"the Hub was tried: {_network_error(exc)}") from None
    tensors = {
        name: RemoteTensor(f"{hub}:{filename}", str(info.dtype), tuple(int(d) for d in info.shape))
        for filename, file_meta in meta.files_metadata.items()
        for name, info in file_meta.tensors.items()
    }
    return tensors, f"weights {hub}: safetensors headers from the Hub (no weights downloaded)"
