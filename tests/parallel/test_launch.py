"""The process pool: one gloo group on 127.0.0.1, reused across jobs; failures carry the rank's
traceback; bad jobs are refused before anything is sent."""

from __future__ import annotations

import pytest

from eagle3_contracts.errors import ContractError
from eagle3_contracts.parallel.launch import PoolError, ProcessGroupPool, ping
from eagle3_contracts.parallel.pipeline import pipeline_job

pytestmark = pytest.mark.distributed


def test_ranks_share_one_process_group(pool) -> None:
    first = pool.run(ping)
    assert first == [{"rank": r, "world_size": 4, "sum": 10} for r in range(4)]
    assert pool.run("eagle3_contracts.parallel.launch:ping") == first  # by name, same ranks


def test_a_failing_job_reports_the_rank_traceback_and_the_pool_survives(pool) -> None:
    with pytest.raises(PoolError, match=r"rank 0 of 4 failed:(.|\n)*AttributeError"):
        pool.run(
            pipeline_job,
            system="eagle3_contracts.parallel.pipeline:NO_SUCH_SYSTEM",
            model={},
            contract={},
            sizes=[1, 1, 1, 1],
            input_ids=None,
            attention_mask=None,
        )
    assert pool.run(ping)[0]["sum"] == 10  # every rank answered: the pool is still usable


def test_unreachable_jobs_are_refused(pool) -> None:
    def local_job(ctx):  # not importable by the ranks
        return ctx.rank

    with pytest.raises(ContractError) as info:
        pool.run(local_job)
    assert info.value.field == "fn"
    with pytest.raises(ContractError) as info:
        ProcessGroupPool(0)
    assert info.value.field == "world_size"


def test_group_sizes(pool) -> None:
    from eagle3_contracts.parallel.launch import RankContext

    ctx = RankContext(0, 4, {1: "g1", 2: "g2", 3: "g3"})
    assert ctx.group(4) is None and ctx.group(2) == "g2"
    with pytest.raises(ContractError, match="no process group of 5 ranks"):
        ctx.group(5)
