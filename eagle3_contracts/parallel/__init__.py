"""Capture contracts under pipeline and tensor parallelism, on real multi-process runs.

* ``partition`` (torch-free): ``LayerPartition`` (the engines' split rules, explicit
  partitions), ``stage_ownership``, ``pipeline_risks``.
* ``launch``: ``ProcessGroupPool``, S CPU processes in one gloo group, reused for many
  jobs.
* ``pipeline``: ``verify_pipeline_capture`` / ``pipeline_capture`` / ``run_pipeline`` and the
  ``REFERENCE`` system; ``faults``: the real bugs as systems (``PIPELINE_FAULTS``).
* ``tensor``: ``verify_tensor_parallel_capture`` / ``run_tensor_parallel`` (column/row-sharded
  blocks with all-reduce) and the ``BEFORE_ALL_REDUCE`` capture point.

The torch-using names are imported lazily.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from eagle3_contracts.parallel.partition import (
    EXPLICIT,
    SPLIT_RULES,
    LayerPartition,
    PipelineRisks,
    SplitRule,
    pipeline_risks,
    stage_ownership,
)

_LAZY: dict[str, str] = {
    "ProcessGroupPool": "eagle3_contracts.parallel.launch",
    "RankContext": "eagle3_contracts.parallel.launch",
    "PoolError": "eagle3_contracts.parallel.launch",
    "REFERENCE": "eagle3_contracts.parallel.pipeline",
    "PipelineSystem": "eagle3_contracts.parallel.pipeline",
    "StageContext": "eagle3_contracts.parallel.pipeline",
    "Aux": "eagle3_contracts.parallel.pipeline",
    "PipelineRun": "eagle3_contracts.parallel.pipeline",
    "PipelineReport": "eagle3_contracts.parallel.pipeline",
    "capture_stage": "eagle3_contracts.parallel.pipeline",
    "run_pipeline": "eagle3_contracts.parallel.pipeline",
    "pipeline_capture": "eagle3_contracts.parallel.pipeline",
    "verify_pipeline_capture": "eagle3_contracts.parallel.pipeline",
    "PIPELINE_FAULTS": "eagle3_contracts.parallel.faults",
    "PipelineFault": "eagle3_contracts.parallel.faults",
    "AFTER_ALL_REDUCE": "eagle3_contracts.parallel.tensor",
    "BEFORE_ALL_REDUCE": "eagle3_contracts.parallel.tensor",
    "TensorParallelRun": "eagle3_contracts.parallel.tensor",
    "run_tensor_parallel": "eagle3_contracts.parallel.tensor",
    "verify_tensor_parallel_capture": "eagle3_contracts.parallel.tensor",
}

__all__ = [
    "AFTER_ALL_REDUCE",
    "BEFORE_ALL_REDUCE",
    "EXPLICIT",
    "PIPELINE_FAULTS",
    "REFERENCE",
    "SPLIT_RULES",
    "Aux",
    "LayerPartition",
    "PipelineFault",
    "PipelineReport",
    "PipelineRisks",
    "PipelineRun",
    "PipelineSystem",
    "PoolError",
    "ProcessGroupPool",
    "RankContext",
    "SplitRule",
    "StageContext",
    "TensorParallelRun",
    "capture_stage",
    "pipeline_capture",
    "pipeline_risks",
    "run_pipeline",
    "run_tensor_parallel",
    "stage_ownership",
    "verify_pipeline_capture",
    "verify_tensor_parallel_capture",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'eagle3_contracts.parallel' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)


if TYPE_CHECKING:  # pragma: no cover
    from eagle3_contracts.parallel.faults import PIPELINE_FAULTS, PipelineFault
    from eagle3_contracts.parallel.launch import PoolError, ProcessGroupPool, RankContext
    from eagle3_contracts.parallel.pipeline import (
        REFERENCE,
        Aux,
        PipelineReport,
        PipelineRun,
        PipelineSystem,
        StageContext,
        capture_stage,
        pipeline_capture,
        run_pipeline,
        verify_pipeline_capture,
    )
    from eagle3_contracts.parallel.tensor import (
        AFTER_ALL_REDUCE,
        BEFORE_ALL_REDUCE,
        TensorParallelRun,
        run_tensor_parallel,
        verify_tensor_parallel_capture,
    )
