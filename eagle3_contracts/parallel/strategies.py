"""Hypothesis strategies for pipeline layouts (arguments accept a value or a strategy).

``pipeline_layouts()`` draws a ``Layout``: an uneven ``LayerPartition`` of 1-4 stages and a
``CaptureContract`` on it whose ids can sit on every stage, on the stage boundaries (the last
layer of a stage, whose output crosses to the next) and on the embedding (-1). torch-free.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

from hypothesis import strategies as st
from hypothesis.strategies import SearchStrategy

from eagle3_contracts.contract import ORDERS, CaptureContract, Order
from eagle3_contracts.layer_ids import EMBEDDING
from eagle3_contracts.parallel.partition import LayerPartition
from eagle3_contracts.testing.strategies import as_strategy as _s

T = TypeVar("T")

STAGE_COUNTS = st.integers(1, 4)
STAGE_SIZES = st.integers(1, 3)
ANY_ORDER = st.sampled_from(ORDERS)
ANY_BOOL = st.booleans()


@dataclass(frozen=True)
class Layout:
    """A partition and a contract on the same target depth."""

    partition: LayerPartition
    contract: CaptureContract

    @property
    def boundaries(self) -> tuple[int, ...]:
        """Last layer of each non-final stage."""
        p = self.partition
        return tuple(p.stage_range(s)[-1] for s in range(p.pp_size - 1))

    def __repr__(self) -> str:  # short, for hypothesis falsifying examples
        c = self.contract
        return (
            f"Layout(sizes={self.partition.sizes}, ids={c.layer_ids}, order={c.order!r}, "
            f"hidden_size={c.hidden_size})"
        )


def partitions(
    *,
    pp_size: int | SearchStrategy[int] = STAGE_COUNTS,
    stage_size: int | SearchStrategy[int] = STAGE_SIZES,
) -> SearchStrategy[LayerPartition]:
    """Explicit partitions: ``pp_size`` stages of ``stage_size`` layers each (drawn per stage)."""

    @st.composite
    def draw(data: st.DrawFn) -> LayerPartition:
        s = data(_s(pp_size))
        return LayerPartition(tuple(data(_s(stage_size)) for _ in range(s)))

    return draw()


def pipeline_layouts(
    *,
    pp_size: int | SearchStrategy[int] = STAGE_COUNTS,
    stage_size: int | SearchStrategy[int] = STAGE_SIZES,
    hidden_size: int | SearchStrategy[int] = 16,
    order: Order | SearchStrategy[Order] = ANY_ORDER,
    every_stage: bool | SearchStrategy[bool] = ANY_BOOL,
) -> SearchStrategy[Layout]:
    """A partition and a contract: with ``every_stage`` one id per stage at least, plus any of
    the stage boundaries, the embedding and up to two more ids; else any non-empty id set."""

    @st.composite
    def draw(data: st.DrawFn) -> Layout:
        p = data(partitions(pp_size=pp_size, stage_size=stage_size))
        everywhere = list(range(EMBEDDING, p.num_layers))
        ids: set[int] = set()
        if data(_s(every_stage)):
            for s in range(p.pp_size):
                ids.add(data(st.sampled_from(list(p.stage_range(s))), label=f"id on stage {s}"))
            bounds = [p.stage_range(s)[-1] for s in range(p.pp_size - 1)]
            if bounds:
                ids |= data(st.sets(st.sampled_from(bounds)), label="boundary ids")
            if data(st.booleans(), label="embedding"):
                ids.add(EMBEDDING)
            ids |= data(st.sets(st.sampled_from(everywhere), max_size=2), label="more ids")
        else:
            ids = data(st.sets(st.sampled_from(everywhere), min_size=1, max_size=3), label="ids")
        listed = data(st.permutations(sorted(ids)), label="listed order")
        contract = CaptureContract(
            tuple(listed), p.num_layers, data(_s(hidden_size)), data(_s(order))
        )
        return Layout(p, contract)

    return draw()


__all__ = ["Layout", "partitions", "pipeline_layouts"]
