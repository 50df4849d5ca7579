"""How many intra-op threads torch work of ours uses on a shared machine.

torch starts one intra-op thread per core. When other processes already keep those cores busy,
the OpenMP pool's threads spin waiting for each other and a run collapses: on 2 cores at load
average ~15, ``demo`` took 63.6 s with torch's 2 default threads and 24.4 s with one, measured
side by side by ``benchmarks/cli_load_bench.py`` (167.2 s vs 101.6 s with two more busy
processes). So our own
torch work (``demo``, ``diagnose``, the engine guards' identification) uses at most the cores
nobody else is running on, never fewer than one, never more than torch would. A user's own
choice wins: with any of ``THREAD_VARIABLES`` set, nothing is changed.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

THREAD_VARIABLES = (
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
)
"""Environment variables by which a user sets the thread count; any of them turns this off."""

SAMPLES = 3  # readings of the run queue, SAMPLE_GAP_S apart; the median is used
SAMPLE_GAP_S = 0.005


@dataclass(frozen=True)
class ThreadChoice:
    """The intra-op thread count chosen for our torch work, and why."""

    threads: int
    reason: str


def user_thread_setting(environ: Mapping[str, str] | None = None) -> str | None:
    """``NAME=value`` of the first thread variable the user set, or ``None``."""
    env = os.environ if environ is None else environ
    for name in THREAD_VARIABLES:
        if env.get(name, "").strip():
            return f"{name}={env[name].strip()}"
    return None


def usable_cores() -> int:
    """Cores this process may run on (its affinity mask, else the CPU count)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def other_runnable(loadavg: str = "/proc/loadavg") -> int | None:
    """Runnable tasks other than this one right now (the 4th field of ``/proc/loadavg``,
    ``running/total``, median of a few readings); ``None`` where the file does not exist."""
    readings = []
    for i in range(SAMPLES):
        try:
            with open(loadavg) as fh:
                running = int(fh.read().split()[3].split("/")[0])
        except (OSError, ValueError, IndexError):
            return None
        readings.append(max(0, running - 1))  # this process is one of the running tasks
        if i + 1 < SAMPLES:
            time.sleep(SAMPLE_GAP_S)
    return sorted(readings)[len(readings) // 2]


def fair_threads(current: int, environ: Mapping[str, str] | None = None) -> ThreadChoice:
    """The thread count for our torch work: ``current`` when the user chose one, else the
    cores nobody else runs on (at least 1, at most ``current``)."""
    chosen = user_thread_setting(environ)
    if chosen is not None:
        return ThreadChoice(current, f"{chosen} (yours)")
    others = other_runnable()
    if others is None:
        return ThreadChoice(current, "torch's default (the run queue is unknown here)")
    cores = usable_cores()
    threads = max(1, min(current, cores - others))
    return ThreadChoice(
        threads,
        f"{cores} core(s), {others} other runnable task(s); set OMP_NUM_THREADS to choose",
    )


def share_cores(environ: Mapping[str, str] | None = None) -> ThreadChoice:
    """Set torch's intra-op threads for this process to ``fair_threads`` (the CLI's torch
    commands call it once, before any work)."""
    import torch

    choice = fair_threads(torch.get_num_threads(), environ)
    if choice.threads != torch.get_num_threads():
        torch.set_num_threads(choice.threads)
    return choice


@contextmanager
def fair_torch_threads(environ: Mapping[str, str] | None = None) -> Iterator[ThreadChoice]:
    """``fair_threads`` for the duration of the block, restored after (work done inside
    someone else's process, such as an engine guard)."""
    import torch

    before = torch.get_num_threads()
    choice = fair_threads(before, environ)
    if choice.threads != before:
        torch.set_num_threads(choice.threads)
    try:
        yield choice
    finally:
        if torch.get_num_threads() != before:
            torch.set_num_threads(before)


__all__ = [
    "THREAD_VARIABLES",
    "ThreadChoice",
    "fair_threads",
    "fair_torch_threads",
    "other_runnable",
    "share_cores",
    "usable_cores",
    "user_thread_setting",
]
