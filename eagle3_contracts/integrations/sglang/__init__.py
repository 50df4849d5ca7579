"""SGLang: dump and guard what a live server feeds an EAGLE-3 drafter, through ``--forward-hooks``.

The extension point is SGLang's own: ``ServerArgs.forward_hooks`` (``--forward-hooks JSON``),
present in every wheel we run (0.5.12 ``server_args.py:848``, 0.5.13 ``:885``, 0.5.14
``:2444``, 0.5.17 ``:3421``, 0.5.23 ``arg_groups/fields/observability.py:231``). Each model
runner (every scheduler process, every TP rank) calls
``model_executor/hook_manager.py`` ``register_forward_hooks(model, specs)``: for each spec it
imports ``hook_factory``, calls it with ``config`` and registers the returned hook on every
module whose name matches ``target_modules`` (fnmatch).

``eagle3-contracts sglang-launch -- <sglang args>`` adds the specs below and runs
``python -m sglang.launch_server``; or pass ``forward_hooks_json()`` yourself. The hooks do
nothing unless the environment asks, with the variables of the vLLM plugin:

* ``EAGLE3_CONTRACTS_DUMP=DIR``: at the first prefill that collects aux states, write a dump
  (``eagle3_contracts.dumps.format``) of exactly what the target hands the drafter (the
  ``aux_hidden_states`` argument of the target's ``logits_processor``, concatenated), with the
  token ids and metadata (release, model file, the model's ``layers_to_capture``).
* ``EAGLE3_CONTRACTS_GUARD=warn|strict``: in that same forward, the target's residual stream
  after every decoder layer (and the embedding) is recorded by hooks on ``model.layers.<i>``
  and ``model.embed_tokens``, and each segment of the drafter input is identified against it.
  One log line, ``OK`` / ``MISMATCH`` (with the ids that fix it for this release) /
  ``UNJUDGED``; ``strict`` raises ``WiringMismatch`` in the scheduler, which stops the server.

The claim comes from the drafter's stamp (``config.json`` of the draft model path the launcher
saw), else ``EAGLE3_CONTRACTS_TRAINED_WITH``. Anything that goes wrong is one warning line and
serving continues, unless the guard is ``strict``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from eagle3_contracts._io import read_json_file
from eagle3_contracts.errors import ConfigError, ContractError

HOOK_FACTORY = "eagle3_contracts.integrations.sglang.hooks:hook_factory"
PREFIXES = ("", "language_model.")
"""Where the decoder sits: ``model.`` in a causal LM, ``language_model.model.`` in a wrapper
(0.5.23 ``kimi_k25.py:693`` ``self.language_model = DeepseekV3ForCausalLM(...)``)."""
LAYER_PATTERNS = tuple(
    f"{prefix}model.layers.{digits}"
    for prefix in PREFIXES
    for digits in ("[0-9]", "[0-9][0-9]", "[0-9][0-9][0-9]")
)
"""Decoder layers only (``*`` in fnmatch would also match their submodules)."""


def forward_hooks(draft_path: str | None = None) -> list[dict[str, Any]]:
    """The ``--forward-hooks`` specs: embedding, decoder layers, the target's logits processor."""
    config = {"draft_path": draft_path}
    roles = (
        ("embedding", [f"{p}model.embed_tokens" for p in PREFIXES]),
        ("layers", list(LAYER_PATTERNS)),
        ("logits", [f"{p}logits_processor" for p in PREFIXES]),
    )
    return [
        {
            "name": f"eagle3-contracts-{role}",
            "target_modules": patterns,
            "hook_factory": HOOK_FACTORY,
            "config": {**config, "role": role},
        }
        for role, patterns in roles
    ]


def forward_hooks_json(draft_path: str | None = None) -> str:
    return json.dumps(forward_hooks(draft_path))


def draft_problem(draft_path: str | None, *, refuse_unreadable: bool = False) -> str | None:
    """Why the drafter at ``draft_path`` is not an EAGLE-3 drafter (``None``: it is, or it has
    no ``config.json``). Its ``config.json`` is read bounded (``_io.read_json_file``: a FIFO or
    ``/dev/zero`` is refused, never read); one that cannot be read is the problem, or with
    ``refuse_unreadable`` its ``ConfigError`` (the launcher's bad input)."""
    if not draft_path:
        return None
    path = Path(draft_path) / "config.json"
    if not os.path.lexists(path):
        return None
    try:
        config = read_json_file(path, what="draft config")
    except ConfigError as exc:
        if refuse_unreadable:
            raise
        return str(exc)
    archs = (config.get("architectures") if isinstance(config, dict) else None) or []
    if any("eagle3" in str(a).lower() for a in archs) or _other_method(config):
        return None
    return f"the drafter in {draft_path} is {archs or 'of no architecture'}, not an EAGLE-3 drafter"


def _other_method(config: Any) -> bool:
    """A drafter of another method that taps the target's hidden states (DFlash, DSpark, a
    Nemotron draft, P-EAGLE, ...: ``conventions.methods.detect``), which the guard judges."""
    from eagle3_contracts.conventions import methods

    if not isinstance(config, dict):
        return False
    try:
        return methods.detect(config) is not methods.EAGLE3
    except ContractError:
        return False


__all__ = ["HOOK_FACTORY", "draft_problem", "forward_hooks", "forward_hooks_json"]
