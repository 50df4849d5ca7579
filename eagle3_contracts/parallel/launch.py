"""Real multi-process ``torch.distributed`` runs on CPU: a reusable pool of gloo ranks.

``ProcessGroupPool(world_size)`` starts ``world_size`` processes once (forked from a
``multiprocessing`` fork server that has imported torch, so only the first pool of a session
pays for the import; ``spawn`` where there is no fork server), joins them in one gloo process
group on ``127.0.0.1`` (the parent hosts the rendezvous store on a free port, so no port is
guessed), and then runs any number of jobs on them::

    with ProcessGroupPool(4) as pool:
        results = pool.run(my_job, layout=...)   # one result per rank, rank 0 first

A job is a top-level function ``fn(ctx: RankContext, **kwargs)`` importable by module path (the
ranks are separate processes and import it by name). Scripts that start a pool need the
``if __name__ == "__main__":`` guard, as with any ``multiprocessing`` start method but fork. Many layouts can run on one pool: a job that
needs fewer ranks lets the others return ``None`` at once, and ``ctx.group(k)`` gives the
sub-group of ranks ``0..k-1`` (created once at start-up) for collectives over fewer ranks.

Only our own processes exchange data here: jobs and results travel over ``multiprocessing``
queues between the parent and the ranks it spawned; nothing is read from files.
"""

from __future__ import annotations

import contextlib
import datetime
import importlib
import os
import queue
import socket
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from eagle3_contracts.errors import ContractError

PRELOAD = (
    "torch",
    "torch.distributed",
    "eagle3_contracts.parallel.pipeline",
    "eagle3_contracts.parallel._warmup",
)
"""Modules the fork server imports once, so that starting ranks costs a fork, not an import."""

DEFAULT_TIMEOUT_S = 60.0
"""Seconds a collective may block (gloo timeout) and a job may take before the pool gives up."""


@dataclass
class RankContext:
    """What a job sees on its rank."""

    rank: int
    world_size: int
    _groups: dict[int, Any] = field(default_factory=dict, repr=False)

    def group(self, size: int) -> Any:
        """Process group of ranks ``0..size-1`` (``None`` = the whole world when ``size`` is it)."""
        if size == self.world_size:
            return None
        if size not in self._groups:
            raise ContractError(
                f"no process group of {size} ranks in a {self.world_size}-rank pool; "
                f"sizes 1..{self.world_size} exist",
                field="size",
            )
        return self._groups[size]


def _job_path(fn: Callable[..., Any] | str) -> str:
    if isinstance(fn, str):
        return fn
    module, qualname = getattr(fn, "__module__", None), getattr(fn, "__qualname__", "")
    if not module or "<" in qualname or module == "__main__":
        raise ContractError(
            f"job {fn!r} must be a top-level function of an importable module (the ranks are "
            f"separate processes and import it by name)",
            field="fn",
        )
    return f"{module}:{qualname}"


def _resolve(path: str) -> Callable[..., Any]:
    module, _, qualname = path.partition(":")
    obj: Any = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    resolved: Callable[..., Any] = obj
    return resolved


def _loopback_interface() -> str | None:
    try:
        names = [name for _, name in socket.if_nameindex()]
    except OSError:  # pragma: no cover - platform without if_nameindex
        return None
    return next((n for n in names if n == "lo" or n.startswith("lo")), None)


def _worker(
    rank: int, world_size: int, port: int, timeout_s: float, jobs: Any, results: Any
) -> None:  # pragma: no cover - runs in the ranks
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    try:
        store = dist.TCPStore(
            "127.0.0.1", port, is_master=False, timeout=datetime.timedelta(seconds=timeout_s)
        )
        dist.init_process_group(
            "gloo",
            store=store,
            rank=rank,
            world_size=world_size,
            timeout=datetime.timedelta(seconds=timeout_s),
        )
        groups = {k: dist.new_group(list(range(k))) for k in range(1, world_size)}
        ctx = RankContext(rank, world_size, groups)
        results.put(("ready", rank, True, None))
    except Exception:
        results.put(("ready", rank, False, traceback.format_exc()))
        return
    while True:
        job = jobs.get()
        if job is None:
            break
        job_id, path, kwargs = job
        try:
            value = _resolve(path)(ctx, **kwargs)
            results.put((job_id, rank, True, value))
        except BaseException:
            results.put((job_id, rank, False, traceback.format_exc()))
    dist.destroy_process_group()
    # flush our answers, then leave without the interpreter's slow teardown of torch's state
    results.close()
    results.join_thread()
    os._exit(0)


class PoolError(RuntimeError):
    """A rank failed or timed out; the message carries the rank's traceback."""


class ProcessGroupPool:
    """``world_size`` CPU processes in one gloo group, reused for many jobs."""

    def __init__(self, world_size: int, *, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        if isinstance(world_size, bool) or not isinstance(world_size, int) or world_size < 1:
            raise ContractError(
                f"world_size must be a positive integer, got {world_size!r}", field="world_size"
            )
        self.world_size = world_size
        self.timeout_s = timeout_s
        self._procs: list[Any] = []
        self._jobs: list[Any] = []
        self._results: Any = None
        self._store: Any = None
        self._next_job = 0

    # -- lifecycle ----------------------------------------------------------------------
    def start(self) -> ProcessGroupPool:
        import torch.distributed as dist
        import torch.multiprocessing as mp

        if self._procs:
            return self
        iface = _loopback_interface()
        if iface and "GLOO_SOCKET_IFNAME" not in os.environ:
            os.environ["GLOO_SOCKET_IFNAME"] = iface  # inherited by the ranks
        self._store = dist.TCPStore(
            "127.0.0.1",
            0,
            is_master=True,
            wait_for_workers=False,
            timeout=datetime.timedelta(seconds=self.timeout_s),
        )
        ctx: Any  # a forkserver or a spawn context
        if "forkserver" in mp.get_all_start_methods():
            # one server process imports torch once; each rank is a cheap fork of it
            ctx = mp.get_context("forkserver")
            ctx.set_forkserver_preload(list(PRELOAD))
        else:  # pragma: no cover - Windows
            ctx = mp.get_context("spawn")
        self._results = ctx.Queue()
        self._jobs = [ctx.Queue() for _ in range(self.world_size)]
        for rank in range(self.world_size):
            proc = ctx.Process(
                target=_worker,
                args=(
                    rank,
                    self.world_size,
                    self._store.port,
                    self.timeout_s,
                    self._jobs[rank],
                    self._results,
                ),
                daemon=True,
                name=f"eagle3-contracts-rank{rank}",
            )
            proc.start()
            self._procs.append(proc)
        self._collect("ready", startup=True)
        return self

    def close(self) -> None:
        """Stop the ranks (politely, then by pid if they do not exit)."""
        for q in self._jobs:
            with contextlib.suppress(OSError, ValueError):  # queue already closed
                q.put(None)
        for proc in self._procs:
            proc.join(timeout=10)
            if proc.is_alive():  # pragma: no cover - a rank stuck in a collective
                proc.terminate()
                proc.join(timeout=5)
        self._procs, self._jobs, self._store = [], [], None

    def __enter__(self) -> ProcessGroupPool:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- jobs ---------------------------------------------------------------------------
    def run(self, fn: Callable[..., Any] | str, /, **kwargs: Any) -> list[Any]:
        """Run ``fn(ctx, **kwargs)`` on every rank; return the results, rank 0 first."""
        self.start()  # (re)starts the ranks if none are running, e.g. after a failure
        path = _job_path(fn)
        job_id = self._next_job
        self._next_job += 1
        for q in self._jobs:
            q.put((job_id, path, kwargs))
        return self._collect(job_id)

    def _collect(self, job_id: object, *, startup: bool = False) -> list[Any]:
        import time

        values: dict[int, Any] = {}
        errors: dict[int, str] = {}
        deadline = time.monotonic() + self.timeout_s
        while len(values) + len(errors) < self.world_size:
            try:
                got_id, rank, ok, value = self._results.get(timeout=0.2)
            except queue.Empty:
                waiting = sorted(set(range(self.world_size)) - set(values) - set(errors))
                dead = [
                    f"rank {r} (exit code {self._procs[r].exitcode})"
                    for r in waiting
                    if not self._procs[r].is_alive()
                ]
                if dead:
                    self._fail(f"{', '.join(dead)} exited without answering")
                if time.monotonic() > deadline:
                    self._fail(f"no answer from rank(s) {waiting} within {self.timeout_s:.0f}s")
                continue
            if got_id != job_id:  # pragma: no cover - a late answer to an abandoned job
                continue
            (values if ok else errors)[rank] = value
        if errors:
            rank = min(errors)
            message = f"rank {rank} of {self.world_size} failed:\n{errors[rank]}"
            if startup or len(errors) < self.world_size:
                # peers may be blocked in a collective with the failed rank: start afresh next time
                self._fail(message)
            raise PoolError(message)
        return [values[r] for r in range(self.world_size)]

    def _fail(self, message: str) -> None:
        for proc in self._procs:
            if proc.is_alive():
                proc.terminate()
        for proc in self._procs:
            proc.join(timeout=5)
        self._procs, self._jobs, self._store = [], [], None
        raise PoolError(message)


def ping(ctx: RankContext) -> dict[str, int]:
    """Health-check job: an all-reduce over the world; every rank returns the same sum."""
    import torch
    import torch.distributed as dist

    value = torch.tensor([ctx.rank + 1], dtype=torch.int64)
    dist.all_reduce(value)
    return {"rank": ctx.rank, "world_size": ctx.world_size, "sum": int(value.item())}
