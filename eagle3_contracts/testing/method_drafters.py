"""Tiny synthetic drafters of each method beyond EAGLE-3, for downstream tests (the pytest
plugin's, ``check``'s weight reading): a directory with ``config.json`` (a
``strategies.method_configs`` layout) and a ``model.safetensors`` whose ``fc.weight`` is sized as
the method's trainer builds it: one input per trained tap (``conventions.methods``)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import save_file

from eagle3_contracts.conventions import methods
from eagle3_contracts.errors import ContractError

__all__ = ["write_method_drafter"]


def write_method_drafter(
    directory: str | os.PathLike[str],
    config: dict[str, Any],
    *,
    num_target_layers: int,
    target_hidden_size: int,
    seed: int = 0,
) -> Path:
    """Write ``config`` and random weights (``fc.weight`` = [hidden, taps x target width],
    ``lm_head.weight``) into ``directory``; the taps are the method's trained ones
    (``methods.trained_taps``; EAGLE-3-family configs: their three ids). Returns the folder."""
    method = methods.detect(config)
    taps = methods.trained_taps(config, num_target_layers)
    if taps is not None:
        if taps.canonical is None:
            raise ContractError(taps.source, field="target_layer_ids")
        count = len(taps.canonical)
    else:
        eagle = config.get("eagle_config")
        ids = (eagle if isinstance(eagle, dict) else config).get(
            "eagle_aux_hidden_state_layer_ids", [0, 0, 0]
        )
        count = len(ids)
    layer = config.get("transformer_layer_config")
    sizes = layer if isinstance(layer, dict) else config
    hidden = int(sizes["hidden_size"])
    vocab = int(sizes.get("vocab_size", config.get("vocab_size", 32)))
    gen = torch.Generator().manual_seed(seed)
    tensors = {
        "fc.weight": torch.randn(hidden, count * target_hidden_size, generator=gen),
        "lm_head.weight": torch.randn(vocab, hidden, generator=gen),
    }
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    save_file(tensors, str(folder / "model.safetensors"), metadata={"method": method.name})
    return folder
