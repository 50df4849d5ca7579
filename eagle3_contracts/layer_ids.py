"""Canonical layer-id semantics and conversions to the other index systems.

Canonical id ``N >= 0`` is the **output of decoder layer N**: the residual stream after layer
``N`` has run, before the model's final norm (``hidden + residual`` in engines whose layers
return them separately). Canonical ``-1`` is the **residual stream entering layer 0** (the
embedding output exactly as layer 0 sees it).

Two other index systems appear in the wild:

* the *boundary* index ``b = N + 1`` (``0`` = embedding, ``L`` = last layer's output, pre-norm),
  used by vLLM, speculators, the original EAGLE and SGLang's loop indices;
* the Hugging Face ``hidden_states`` index: ``hidden_states[N + 1]`` for ``N < L - 1``; its last
  entry ``hidden_states[L]`` is the **final norm applied** to the last layer's output, so no HF
  index holds canonical ``L - 1`` and no canonical id is ``hidden_states[L]``.
"""

from __future__ import annotations

from collections.abc import Sequence

from eagle3_contracts.errors import ContractError

EMBEDDING = -1
"""Canonical id of the residual stream entering layer 0."""

MAX_NUM_LAYERS = 100_000
"""Deepest target accepted (released decoders have at most a few hundred layers): a typo such
as ``10**12`` is refused here instead of looping over every layer."""

MAX_LAYER_IDS = 1024
"""Most layer ids one drafter may read (EAGLE-3 drafters read 3 or 4)."""


def check_num_layers(num_layers: object, *, field: str = "num_layers") -> int:
    """Return ``num_layers`` if it is a positive int, else raise ``ContractError``."""
    if isinstance(num_layers, bool) or not isinstance(num_layers, int):
        raise ContractError(
            f"{field} must be a positive integer (the target's decoder depth), got {num_layers!r}",
            field=field,
        )
    if num_layers < 1:
        raise ContractError(
            f"{field} must be >= 1 (the target's decoder depth), got {num_layers}", field=field
        )
    if num_layers > MAX_NUM_LAYERS:
        raise ContractError(
            f"{field} = {num_layers} is over the limit of {MAX_NUM_LAYERS} layers (the "
            f"target's decoder depth; released models have a few hundred at most)",
            field=field,
        )
    return num_layers


def check_id_count(count: int, *, field: str = "layer_ids") -> int:
    """Return ``count`` (how many layer ids are listed) if at most ``MAX_LAYER_IDS``."""
    if count > MAX_LAYER_IDS:
        raise ContractError(
            f"{field} lists {count} layer ids, over the limit of {MAX_LAYER_IDS}; an EAGLE-3 "
            f"drafter reads a handful (3 or 4)",
            field=field,
        )
    return count


def check_layer_id(layer_id: object, num_layers: int, *, field: str = "layer_id") -> int:
    """Return ``layer_id`` if it is a canonical id valid for a ``num_layers``-deep target."""
    if isinstance(layer_id, bool) or not isinstance(layer_id, int):
        raise ContractError(
            f"{field} must be an integer layer id, got {type(layer_id).__name__} {layer_id!r}; "
            f"use -1 for the embedding or 0..{num_layers - 1} for a layer's output",
            field=field,
        )
    if not EMBEDDING <= layer_id <= num_layers - 1:
        raise ContractError(
            f"{field} = {layer_id} is outside [-1, {num_layers - 1}] for a {num_layers}-layer "
            f"target: canonical ids are -1 (embedding) and 0..{num_layers - 1} (output of that "
            f"layer); negative indexing from the end is not allowed",
            field=field,
        )
    return layer_id


def to_boundary(layer_id: int, num_layers: int) -> int:
    """Canonical id -> boundary index ``b = N + 1`` (0 = embedding, L = last output)."""
    return check_layer_id(layer_id, check_num_layers(num_layers)) + 1


def from_boundary(boundary: int, num_layers: int, *, field: str = "boundary") -> int:
    """Boundary index ``b`` in ``[0, L]`` -> canonical id ``b - 1``."""
    num_layers = check_num_layers(num_layers)
    if isinstance(boundary, bool) or not isinstance(boundary, int):
        raise ContractError(f"{field} must be an integer, got {boundary!r}", field=field)
    if not 0 <= boundary <= num_layers:
        raise ContractError(
            f"{field} = {boundary} is outside [0, {num_layers}] for a {num_layers}-layer target "
            f"(boundary 0 is the embedding, {num_layers} the last layer's output)",
            field=field,
        )
    return boundary - 1


def to_hf_index(layer_id: int, num_layers: int) -> int:
    """Canonical id -> Hugging Face ``hidden_states`` index ``N + 1``.

    Canonical ``L - 1`` raises: HF's last entry ``hidden_states[L]`` is post-norm.
    """
    num_layers = check_num_layers(num_layers)
    layer_id = check_layer_id(layer_id, num_layers)
    if layer_id == num_layers - 1:
        raise ContractError(
            f"canonical layer {layer_id} (output of the last layer, pre-norm) has no Hugging Face "
            f"hidden_states index: hidden_states[{num_layers}] is the final norm applied to it, "
            f"not the raw output; capture it with a forward hook on the last decoder layer instead",
            field="layer_id",
        )
    return layer_id + 1


def from_hf_index(index: int, num_layers: int, *, field: str = "hf_index") -> int:
    """Hugging Face ``hidden_states`` index -> canonical id.

    ``hidden_states[L]`` (post-norm) raises: it is no canonical layer output.
    """
    num_layers = check_num_layers(num_layers)
    if isinstance(index, bool) or not isinstance(index, int):
        raise ContractError(f"{field} must be an integer, got {index!r}", field=field)
    if index == num_layers:
        raise ContractError(
            f"{field} = {num_layers} is hidden_states[-1], the final norm applied to the last "
            f"layer's output; it has no canonical id (canonical {num_layers - 1} is the pre-norm "
            f"output). Use a forward hook on the last layer for the pre-norm state",
            field=field,
        )
    if not 0 <= index < num_layers:
        raise ContractError(
            f"{field} = {index} is outside [0, {num_layers}] for a {num_layers}-layer target",
            field=field,
        )
    return index - 1


def uniform_shift(want: Sequence[int], got: Sequence[int]) -> int | None:
    """``k`` when every ``got[i] == want[i] + k`` (same non-zero length), else ``None``."""
    if not want or len(want) != len(got):
        return None
    shifts = {g - w for w, g in zip(want, got, strict=True)}
    return shifts.pop() if len(shifts) == 1 else None


def describe(layer_id: int, num_layers: int) -> str:
    """A short human label: ``"embedding (-1)"``, ``"layer 30"``, ``"layer 60 (last, pre-norm)"``."""
    if layer_id == EMBEDDING:
        return "embedding (-1)"
    if layer_id == num_layers - 1:
        return f"layer {layer_id} (last, pre-norm)"
    return f"layer {layer_id}"
