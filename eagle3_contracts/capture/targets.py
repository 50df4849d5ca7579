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

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eagle3_contracts.errors import ConfigError

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
    from eagle3_contracts.capture.hooks import decoder_layers
    from eagle3_contracts.capture.introspect import text_config

    layers = decoder_layers(model, layers_path)
    config = getattr(model, "config", None)
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


def load_target(
    spec: str | os.PathLike[str], *, seed: int = 0, dtype: torch.dtype | None = None
) -> Target:
    """Load ``spec`` (an HF directory with safetensors weights, or a ``config.json``).

    ``dtype`` overrides the checkpoint's dtype (default: as stored; float32 for random init).
    """
    path = Path(spec)
    source = str(path)
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
        return _from_pretrained(path, dtype)
    return _from_config(path, seed=seed, dtype=dtype)


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
    except (ValueError, KeyError) as exc:
        raise ConfigError(
            f"transformers cannot build model_type {model_type!r} ({_one_line(exc)}); remote "
            f"code is never run",
            source=source,
            field="model_type",
        ) from None


def _from_config(path: Path, *, seed: int, dtype: torch.dtype | None) -> Target:
    import torch
    from transformers import AutoModelForCausalLM

    source = str(path)
    try:
        data = json.loads(path.read_text())
    except (ValueError, UnicodeDecodeError) as exc:
        raise ConfigError(f"not valid JSON: {_one_line(exc)}", source=source) from None
    if not isinstance(data, dict):
        raise ConfigError("config must be a JSON object", source=source)
    config = _hf_config(data, source)
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            model = AutoModelForCausalLM.from_config(config, dtype=dtype or torch.float32)
    except (ValueError, KeyError, TypeError) as exc:
        raise ConfigError(
            f"cannot build a causal LM from this config: {_one_line(exc)}", source=source
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
    except (OSError, ValueError, KeyError, RuntimeError) as exc:
        raise ConfigError(f"cannot load the model: {_one_line(exc)}", source=source) from None
    return target_from_model(model, source=source, random_init=False)


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:300] or type(exc).__name__


__all__ = ["Target", "load_target", "target_from_model"]
