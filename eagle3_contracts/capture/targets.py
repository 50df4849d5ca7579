"""Load the target model a dump is diagnosed against (no network, no remote code, no pickles).

``MODEL`` is either

* a local Hugging Face directory with ``config.json`` and ``*.safetensors`` weights, loaded with
  ``AutoModelForCausalLM.from_pretrained(..., local_files_only=True, use_safetensors=True)``;
* a ``config.json`` file (or a directory holding only one): a **random-init** model built with
  ``AutoModelForCausalLM.from_config`` after ``torch.manual_seed(seed)`` — every report says so,
  with the seed, because its states say nothing about a real checkpoint's numbers (only about
  which layer is which, for dumps made from the same random model).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eagle3_contracts._io import regular_file
from eagle3_contracts.config.readers import TargetConfig, load_config_json, read_target_config
from eagle3_contracts.errors import ConfigError, one_line

if TYPE_CHECKING:
    import torch
    from torch import nn

_PICKLE_WEIGHTS = ("*.bin", "*.pt", "*.pth", "*.ckpt")


@dataclass(frozen=True)
class Target:
    """A target model ready for reference forwards, with what a report must say about it."""

    model: nn.Module  # eval mode, no grad
    source: str  # the path (or "<model>") it came from
    random_init: bool  # True: weights drawn at random, not a checkpoint
    seed: int | None  # the seed of a random init
    # -- shape --------------------------------------------------------------------------
    num_layers: int  # decoder depth L (length of the decoder-layer list)
    hidden_size: int  # H
    vocab_size: int
    model_type: str  # "deepseek_v3", "llama", "synthetic", ...
    dtype: str  # dtype of the weights ("bfloat16", ...)
    architectures: tuple[str, ...] = ()  # config.architectures (SGLang picks rules by them)
    layers_path: str | None = None  # dotted path of the decoder layers, when not found alone

    def describe(self) -> str:
        """One line: what the target is and, loudly, whether its weights are random."""
        origin = (
            f"RANDOM INIT (seed {self.seed}) from {self.source}"
            if self.random_init
            else f"weights from {self.source}"
        )
        return (
            f"{self.model_type}, {self.num_layers} layers x {self.hidden_size}, {self.dtype}, "
            f"{origin}"
        )


def target_from_model(
    model: nn.Module,
    *,
    source: str = "<model>",
    random_init: bool,
    seed: int | None = None,
    layers_path: str | None = None,
) -> Target:
    """Wrap an in-process model (HF or synthetic) as a ``Target``."""
    from eagle3_contracts.capture.hooks import decoder_layers, text_config

    layers = decoder_layers(model, layers_path)
    config: Any = getattr(model, "config", None)
    text = text_config(model)
    hidden = getattr(text, "hidden_size", None)
    vocab = getattr(text, "vocab_size", None)
    if not isinstance(hidden, int) or not isinstance(vocab, int):
        raise ConfigError(
            f"{type(model).__name__} has no config.hidden_size / config.vocab_size",
            source=source,
            field="hidden_size",
        )
    model_type = getattr(config, "model_type", None) or type(model).__name__
    if type(model).__name__ == "SyntheticTarget":
        model_type = f"synthetic ({config.style})"
    dtype = str(next(model.parameters()).dtype).removeprefix("torch.")
    model.eval().requires_grad_(False)
    return Target(
        model=model,
        source=source,
        random_init=random_init,
        seed=seed,
        num_layers=len(layers),
        hidden_size=hidden,
        vocab_size=vocab,
        model_type=str(model_type),
        dtype=dtype,
        architectures=tuple(getattr(config, "architectures", None) or ()),
        layers_path=layers_path,
    )


MAX_TARGET_LAYERS = 1024
"""Deepest target built or loaded for a diagnosis (released decoders have a few hundred)."""


def default_max_bytes() -> int:
    """The default memory budget of a target: physical memory, or the address-space limit
    (``RLIMIT_AS``) when lower. ``load_target(max_bytes=...)`` / ``--max-target-gib`` raise it."""
    budget = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    except (ImportError, OSError, ValueError):  # pragma: no cover - not POSIX
        return budget
    return budget if soft == resource.RLIM_INFINITY else min(budget, soft)


def load_target(
    spec: str | os.PathLike[str],
    *,
    seed: int = 0,
    dtype: torch.dtype | None = None,
    max_bytes: int | None = None,
) -> Target:
    """Load ``spec`` (an HF directory with safetensors weights, or a ``config.json``).

    ``dtype`` overrides the checkpoint's dtype (default: as stored; float32 for random init).
    The target's size is estimated before anything is allocated (from the weight files, or
    from the config's sizes for a random init) and refused above ``max_bytes`` (default
    ``default_max_bytes()``); its sizes are checked first (``ConfigError`` naming the field).
    """
    path = Path(spec)
    source = str(path)
    budget = default_max_bytes() if max_bytes is None else max_bytes
    if not path.exists():
        raise ConfigError(
            "no such file or directory (pass a local model directory or a config.json; "
            "nothing is downloaded)",
            source=source,
        )
    if path.is_dir():
        config_path = path / "config.json"
        if not config_path.is_file():
            raise ConfigError(
                "model directory has no config.json", source=source, field="config.json"
            )
        weights = sorted(path.glob("*.safetensors"))
        if not weights:
            pickled = sorted(p.name for g in _PICKLE_WEIGHTS for p in path.glob(g))
            if pickled:
                raise ConfigError(
                    f"model directory holds only pickle-based weights ({', '.join(pickled[:3])}); "
                    f"they are never unpickled here: convert them to safetensors, or pass "
                    f"{config_path} for a random-init model",
                    source=source,
                )
            raise ConfigError(
                f"model directory has no *.safetensors weights; pass {config_path} to diagnose "
                f"against a random-init model instead (only meaningful for dumps made from the "
                f"same random model)",
                source=source,
            )
        _check_sizes(read_target_config(config_path))
        size = sum(regular_file(w, what="weights file").st_size for w in weights)
        _check_budget(size, budget, "its *.safetensors weights", source)
        return _from_pretrained(path, dtype)
    data, source = load_config_json(path, "target config")
    config = _hf_config(dict(data), source)  # names a missing or unknown model_type first
    params = _check_sizes(read_target_config(data, source=source))  # sizes as check reads them
    _check_budget(params * 4, budget, f"~{params:.3g} float32 parameters", source)
    return _from_config(path, config, seed=seed, dtype=dtype)


def _check_sizes(facts: TargetConfig) -> int:
    """Check the sizes a model is built from, read by ``config.readers`` exactly as ``check``
    reads them (top level, else ``text_config`` / ``thinker_config.text_config`` /
    ``llm_config``, with transformers' class defaults); return a lower bound of its parameter
    count."""
    source, prefix = facts.source, facts.section
    sizes: Any = facts.raw
    for part in prefix.split(".")[:-1]:
        sizes = sizes[part]

    def optional(*keys: str) -> int:
        value = next((sizes.get(k) for k in keys if sizes.get(k) is not None), None)
        if value is None:
            return 0
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(
                f"{prefix}{keys[0]} must be a positive integer, got {value!r}",
                source=source,
                field=prefix + keys[0],
            )
        return value

    layers, hidden, vocab = facts.num_layers, facts.hidden_size, facts.vocab_size
    if vocab is None:
        raise ConfigError(
            f"{prefix}vocab_size is missing: a model is built from its vocabulary size",
            source=source,
            field=prefix + "vocab_size",
        )
    heads = optional("num_attention_heads", "n_head")
    if layers > MAX_TARGET_LAYERS:
        raise ConfigError(
            f"{prefix}num_hidden_layers = {layers} is over the limit of {MAX_TARGET_LAYERS} "
            f"layers for a diagnosis target",
            source=source,
            field=prefix + "num_hidden_layers",
        )
    if heads and hidden % heads:
        raise ConfigError(
            f"{prefix}hidden_size = {hidden} is not a multiple of num_attention_heads = {heads}",
            source=source,
            field=prefix + "hidden_size",
        )
    inter = optional("intermediate_size", "n_inner")
    return vocab * hidden + layers * (4 * hidden * hidden + 3 * hidden * inter)


def _check_budget(nbytes: int, budget: int, what: str, source: str) -> None:
    if nbytes > budget:
        raise ConfigError(
            f"this target needs at least {nbytes / 2**30:.3g} GiB ({what}), over the "
            f"{budget / 2**30:.3g} GiB limit (physical memory or RLIMIT_AS); check its sizes, "
            f"or raise the limit with --max-target-gib / load_target(max_bytes=...)",
            source=source,
        )


def _hf_config(data: dict[str, Any], source: str) -> Any:
    from transformers import AutoConfig

    model_type = data.get("model_type")
    if not isinstance(model_type, str):
        raise ConfigError(
            "config has no model_type; a Hugging Face config.json names its architecture",
            source=source,
            field="model_type",
        )
    fields = {k: v for k, v in data.items() if k != "model_type"}
    try:
        return AutoConfig.for_model(model_type, **fields)
    except Exception as exc:  # ValueError, KeyError, transformers' strict field validation
        raise ConfigError(
            f"transformers cannot build model_type {model_type!r} ({one_line(exc)[:300]}); remote "
            f"code is never run",
            source=source,
            field="model_type",
        ) from None


def _from_config(path: Path, config: Any, *, seed: int, dtype: torch.dtype | None) -> Target:
    import torch
    from transformers import AutoModelForCausalLM

    source = str(path)
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            model = AutoModelForCausalLM.from_config(config, dtype=dtype or torch.float32)
    except Exception as exc:  # transformers validates configs with many error types
        raise ConfigError(
            f"cannot build a causal LM from this config: {type(exc).__name__}: {one_line(exc)[:300]}",
            source=source,
        ) from None
    return target_from_model(model, source=source, random_init=True, seed=seed)


def _from_pretrained(path: Path, dtype: torch.dtype | None) -> Target:
    from transformers import AutoModelForCausalLM
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    source = str(path)
    kwargs: dict[str, Any] = {"local_files_only": True, "use_safetensors": True}
    if dtype is not None:
        kwargs["dtype"] = dtype
    try:
        model = AutoModelForCausalLM.from_pretrained(str(path), **kwargs)
    except Exception as exc:  # a truncated file raises SafetensorError, among others
        raise ConfigError(
            f"cannot load the model: {type(exc).__name__}: {one_line(exc)[:300]}", source=source
        ) from None
    return target_from_model(model, source=source, random_init=False)


__all__ = ["Target", "load_target", "target_from_model"]
