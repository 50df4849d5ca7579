"""``CaptureContract``: which target layers a drafter reads, in which order, how wide.

One declaration validates (``CaptureContract(...)`` raises ``ContractError`` on bad fields,
``contract.validate(tensor)`` checks a captured tensor's width), draws hypothesis data
(``CaptureContract.contracts()``, a strategy of contracts) and lists the contracts of published
drafters (``CaptureContract.published()``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence, Set
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, get_args

from eagle3_contracts.errors import ContractError
from eagle3_contracts.layer_ids import check_id_count, check_layer_id, check_num_layers, describe

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy

Order = Literal["ascending", "as_listed"]
ORDERS: tuple[Order, ...] = get_args(Order)


@dataclass(frozen=True)
class Segment:
    """One H-wide slice of the concatenated capture."""

    position: int  # index of this segment in the concatenation (0-based)
    layer_id: int  # canonical id the segment must hold
    start: int  # first column in the concatenated last dimension
    stop: int  # one past the last column

    @property
    def slice(self) -> slice:
        return slice(self.start, self.stop)


@dataclass(frozen=True)
class CaptureContract:
    """The hidden states a drafter is fed, in canonical ids (see ``layer_ids``).

    ``order`` says how segments are concatenated: ``"ascending"`` (every engine: SGLang, vLLM,
    TensorRT-LLM) or ``"as_listed"`` (trainers that follow the config list, e.g. SpecForge's
    HF backend).
    """

    # -- what is captured ---------------------------------------------------------------
    layer_ids: tuple[int, ...]  # canonical ids: -1 = embedding, N = output of layer N
    # -- the target ---------------------------------------------------------------------
    num_layers: int  # decoder depth L of the target
    hidden_size: int  # H: width of one captured state
    # -- how segments are laid out --------------------------------------------------------
    order: Order = "ascending"
    _segments: tuple[Segment, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        ids = self.layer_ids
        if isinstance(ids, (str, bytes)) or not isinstance(ids, Iterable):
            raise ContractError(
                f"layer_ids must be a list of integer layer ids, got {ids!r}", field="layer_ids"
            )
        if isinstance(ids, (Set, Mapping)):
            raise ContractError(
                f"layer_ids must be a list or tuple, got a {type(ids).__name__}: it has no "
                f"order, and the order is what a contract fixes; e.g. (2, 30, 58)",
                field="layer_ids",
            )
        if not isinstance(ids, Sequence):
            raise ContractError(
                f"layer_ids must be a list or tuple, got a one-shot {type(ids).__name__}; pass "
                f"tuple(...) of it",
                field="layer_ids",
            )
        check_id_count(len(ids))
        ids = tuple(ids)
        object.__setattr__(self, "layer_ids", ids)
        num_layers = check_num_layers(self.num_layers)
        if isinstance(self.hidden_size, bool) or not isinstance(self.hidden_size, int):
            raise ContractError(
                f"hidden_size must be a positive integer, got {self.hidden_size!r}",
                field="hidden_size",
            )
        if self.hidden_size < 1:
            raise ContractError(
                f"hidden_size must be >= 1, got {self.hidden_size}", field="hidden_size"
            )
        if self.order not in ORDERS:
            raise ContractError(
                f"order must be one of {', '.join(ORDERS)}, got {self.order!r}", field="order"
            )
        if not ids:
            raise ContractError(
                "layer_ids is empty: list the canonical ids the drafter reads, e.g. [2, 30, 58]",
                field="layer_ids",
            )
        seen: dict[int, int] = {}
        for i, layer_id in enumerate(ids):
            check_layer_id(layer_id, num_layers, field=f"layer_ids[{i}]")
            if layer_id in seen:
                raise ContractError(
                    f"layer_ids[{i}] = {layer_id} repeats layer_ids[{seen[layer_id]}]: each "
                    f"layer may be captured once; remove the duplicate",
                    field=f"layer_ids[{i}]",
                )
            seen[layer_id] = i
        h = self.hidden_size
        segments = tuple(
            Segment(position=p, layer_id=n, start=p * h, stop=(p + 1) * h)
            for p, n in enumerate(self.concat_ids)
        )
        object.__setattr__(self, "_segments", segments)

    # -- derived ------------------------------------------------------------------------
    @property
    def concat_ids(self) -> tuple[int, ...]:
        """Canonical ids in concatenation order."""
        return tuple(sorted(self.layer_ids)) if self.order == "ascending" else self.layer_ids

    @property
    def width(self) -> int:
        """Width of the concatenated capture: ``len(layer_ids) * hidden_size``."""
        return len(self.layer_ids) * self.hidden_size

    @property
    def segments(self) -> tuple[Segment, ...]:
        """One ``Segment`` per captured state, in concatenation order."""
        return self._segments

    def segment_of(self, layer_id: int) -> Segment:
        """The segment holding canonical ``layer_id``."""
        for segment in self._segments:
            if segment.layer_id == layer_id:
                return segment
        raise ContractError(
            f"layer {layer_id} is not in this contract's layer_ids {list(self.layer_ids)}",
            field="layer_id",
        )

    def describe(self) -> str:
        """``"[layer 2, layer 30, layer 58] of 61 x 7168 (ascending, width 21504)"``."""
        names = ", ".join(describe(n, self.num_layers) for n in self.concat_ids)
        return (
            f"[{names}] of {self.num_layers} x {self.hidden_size} "
            f"({self.order}, width {self.width})"
        )

    # -- validation of data -------------------------------------------------------------
    def validate(self, captured: Any) -> Any:
        """Check a captured tensor (``[..., width]``) against this contract; return it.

        Checks shape only; ``eagle3_contracts.verify_capture`` checks which layer each
        segment really is.
        """
        shape = tuple(getattr(captured, "shape", ()))
        if not shape:
            raise ContractError(
                f"captured must be a tensor of shape [..., {self.width}], got {type(captured).__name__}",
                field="captured",
            )
        if shape[-1] != self.width:
            k, rem = divmod(shape[-1], self.hidden_size)
            hint = (
                f"it holds {k} segments of {self.hidden_size}, the contract {len(self.layer_ids)}"
                if rem == 0
                else f"{shape[-1]} is not a multiple of hidden_size {self.hidden_size}"
            )
            raise ContractError(
                f"captured width {shape[-1]} != contract width {self.width} "
                f"({len(self.layer_ids)} x {self.hidden_size}): {hint}",
                field="captured",
            )
        return captured

    # -- hypothesis and examples --------------------------------------------------------
    @classmethod
    def contracts(cls, **kwargs: Any) -> SearchStrategy[CaptureContract]:
        """A hypothesis strategy drawing contracts (not captures); see
        ``eagle3_contracts.testing.strategies.contracts``."""
        from eagle3_contracts.testing.strategies import contracts

        return contracts(**kwargs)

    @classmethod
    def examples(cls) -> tuple[CaptureContract, ...]:
        """Deprecated name of ``published()`` (it returns fixed contracts, not examples drawn
        for a test)."""
        import warnings

        warnings.warn(
            "CaptureContract.examples() is renamed CaptureContract.published()",
            DeprecationWarning,
            stacklevel=2,
        )
        return cls.published()

    @classmethod
    def published(cls) -> tuple[CaptureContract, ...]:
        """The contracts of published drafters (public facts): Kimi-K2.5, Llama-3.1-8B,
        Qwen3-235B, gpt-oss-120b. Fixed values; ``contracts()`` draws contracts."""
        return (
            cls((2, 30, 58), num_layers=61, hidden_size=7168),  # Kimi-K2.5 drafter
            cls((1, 15, 28), num_layers=32, hidden_size=4096),  # Llama-3.1-8B, EAGLE default
            cls((1, 46, 90), num_layers=94, hidden_size=4096),  # Qwen3-235B-A22B (SpecForge)
            cls((23, 29, 35), num_layers=36, hidden_size=2880),  # gpt-oss-120b, boundaries 24/30/36
        )

    # -- serialization ------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "layer_ids": list(self.layer_ids),
            "num_layers": self.num_layers,
            "hidden_size": self.hidden_size,
            "order": self.order,
        }

    def to_json(self, **dumps_kwargs: Any) -> str:
        return json.dumps(self.to_dict(), **dumps_kwargs)

    @classmethod
    def from_dict(cls, data: Any) -> CaptureContract:
        """Build from ``to_dict`` output; every field is required (no silent defaults)."""
        if not isinstance(data, dict):
            raise ContractError(
                f"a contract must be a JSON object, got {type(data).__name__}", field="contract"
            )
        expected = ("layer_ids", "num_layers", "hidden_size", "order")
        missing = [k for k in expected if k not in data]
        if missing:
            raise ContractError(
                f"contract is missing {', '.join(missing)}; a contract states all of "
                f"{', '.join(expected)}",
                field=missing[0],
            )
        unknown = sorted(set(data) - set(expected))
        if unknown:
            raise ContractError(
                f"contract has unknown field(s) {', '.join(unknown)}; allowed: {', '.join(expected)}",
                field=unknown[0],
            )
        ids = data["layer_ids"]
        if not isinstance(ids, list):
            raise ContractError(f"layer_ids must be a JSON list, got {ids!r}", field="layer_ids")
        return cls(tuple(ids), data["num_layers"], data["hidden_size"], data["order"])

    @classmethod
    def from_json(cls, text: str | bytes) -> CaptureContract:
        if not isinstance(text, (str, bytes, bytearray)):
            raise ContractError(
                f"from_json takes the JSON text (str or bytes), got {type(text).__name__}; "
                f"use from_dict for parsed data",
                field="contract",
            )
        try:
            data = json.loads(text)
        except (ValueError, UnicodeDecodeError) as exc:
            raise ContractError(f"contract is not valid JSON: {exc}", field="contract") from None
        except RecursionError:
            raise ContractError(
                "contract nests JSON too deep; a contract is one flat object", field="contract"
            ) from None
        return cls.from_dict(data)
