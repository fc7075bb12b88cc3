"""The package's one way to run independent tasks in parallel: results in task order, so they never
depend on the number of jobs, and a signal stops everything within a second.

BLAS is held to one thread while fits run: the optimisers work on 2-parameter problems, where
OpenBLAS worker threads only spin, and on a loaded 2-core machine that made every L-BFGS-B step
~20x slower (measured: 9.5 s against 0.75 s for 20 calibration replicates).

**Signals.** While tasks run, SIGINT and SIGTERM raise :class:`~ctwm_cli.runtime.interrupts.Interrupted`
in the calling process (workers ignore SIGINT and die on SIGTERM). On any exception, a signal or a
failing task, pending tasks are cancelled and every worker is terminated (killed if it has not gone
after a grace period) before the exception reaches the caller: no worker outlives the call.

**Backends.** ``backend`` names an entry of :data:`BACKENDS`: a function
``runner(fn, tasks, jobs, deliver, **backend_options)`` that calls ``deliver(i, fn(tasks[i]))`` once
per task, in any order, from the calling thread, and on any exception (``Interrupted`` included)
cancels what is pending and releases its workers before re-raising. ``backend_options`` carries
what only that backend understands (e.g. a scheduler address). ``"processes"`` (a local process pool) is the
default; another engine (e.g. a Dask cluster) is one more function and one more entry.

**Small work runs inline** (``inline_budget``, issue 48). A pool costs its workers' start-up: forking, and
each worker loading the numba kernels its parent had not called yet - about 0.3 s of CPU per worker, measured on
blackouts (a 211-point tail), where the 3,000 bootstrap replicates cost 0.46 s in one process and 1.06 s in two
workers. So a caller that passes ``inline_budget`` (seconds of CPU) gets its tasks run in the calling process, in
order, until ``INLINE_PROBE`` seconds of CPU have passed; then the rest are extrapolated from the CPU per unit of
``sizes`` so far, and they go to the pool only if the whole would take more than ``inline_budget``. Whatever is
chosen, each task's result is the same (a task carries its own seeds) and results come back in task order, so the
output never depends on it; only the CPU and the wall time do. Tasks that go to the pool also find every kernel
the inline ones loaded (a fork copies them). Only the local process pool does this: tasks for another backend (a
Dask cluster) all go to it.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from threadpoolctl import threadpool_limits

from ..common.checks import check_range
from ..common.errors import UsageError
from .interrupts import signals_deferred, signals_raise, worker_signals
from .progress import ProgressCallback

Deliver = Callable[[int, Any], None]
Runner = Callable[..., None]  # (fn, tasks, jobs, deliver, **backend_options)

DEFAULT_BACKEND = "processes"
#: Seconds a terminated worker gets before it is killed.
TERMINATE_GRACE = 0.5
#: Seconds between two looks for a recorded signal while the pool runs.
POLL = 0.1
#: Seconds of CPU of tasks run inline before ``inline_budget`` extrapolates the rest (see the module doc).
INLINE_PROBE = 0.25
#: The default ``inline_budget`` of the audit's bootstraps: on 2 jobs, work under 2 s of CPU would save at most
#: ~0.7 s of wall time for the pool's ~0.6 s of CPU; larger work loses at most INLINE_PROBE of wall time to the probe.
INLINE_BUDGET = 2.0


def single_blas_thread():
    """Context manager: one BLAS thread inside (process-level parallelism does the rest)."""
    return threadpool_limits(limits=1, user_api="blas")


def _init_worker() -> None:
    worker_signals()
    threadpool_limits(limits=1, user_api="blas")


def resolve_jobs(jobs: int | None) -> int:
    """``jobs`` workers (``None``: one per core); ``jobs < 1`` is a usage error."""
    if jobs is None:
        return max(1, os.cpu_count() or 1)
    check_range("jobs", jobs, lo=1)
    return int(jobs)


def run_tasks(
    fn: Callable[[Any], Any],
    tasks: Sequence[Any],
    *,
    jobs: int | None = None,
    sizes: Sequence[int] | None = None,
    progress: ProgressCallback | None = None,
    on_result: Deliver | None = None,
    backend: str | None = None,
    backend_options: dict[str, Any] | None = None,
    inline_budget: float | None = None,
) -> list[Any]:
    """``[fn(t) for t in tasks]``, spread over ``jobs`` workers of ``backend``.

    ``fn`` must be a module-level function (it is pickled); ``sizes`` weight the progress;
    ``on_result(i, result)`` is called as each task completes, so a caller that is interrupted
    still knows which tasks finished. ``inline_budget`` (seconds of CPU): work estimated below it runs in
    the calling process, without a pool (see the module doc).
    """
    name = backend or _ACTIVE.get() or DEFAULT_BACKEND
    if name not in BACKENDS:
        raise UsageError(f"unknown backend {name!r} (choose from: {', '.join(BACKENDS)})", params=("backend",))
    jobs = resolve_jobs(jobs)
    tasks = list(tasks)
    sizes = list(sizes) if sizes is not None else [1] * len(tasks)
    if len(sizes) != len(tasks):
        raise UsageError(f"sizes has {len(sizes)} entries for {len(tasks)} tasks", params=("sizes",))
    total, state = sum(sizes), {"done": 0}
    out: list[Any] = [None] * len(tasks)

    def deliver(i: int, result: Any) -> None:
        out[i] = result
        if on_result is not None:
            on_result(i, result)
        state["done"] += sizes[i]
        if progress is not None:
            progress(state["done"], total)

    with signals_raise():
        # the local pool only: work sent to a cluster (e.g. Dask) goes where its user pointed it
        head = jobs > 1 and inline_budget is not None and name == DEFAULT_BACKEND
        start = _run_head(fn, tasks, sizes, deliver, inline_budget) if head else 0
        if start < len(tasks):
            BACKENDS[name](fn, tasks[start:], jobs, lambda i, r: deliver(start + i, r), **(backend_options or {}))
    return out


def _run_head(fn: Callable[[Any], Any], tasks: Sequence[Any], sizes: Sequence[int], deliver: Deliver,
              budget: float) -> int:
    """Run tasks inline while the whole looks cheaper than ``budget`` seconds of CPU; the index of the first
    task not run (``len(tasks)``: all ran)."""
    total, done, t0 = sum(sizes), 0, time.process_time()
    with single_blas_thread():
        for i, t in enumerate(tasks):
            spent = time.process_time() - t0
            if spent >= INLINE_PROBE and done > 0 and spent * total / done > budget:
                return i
            deliver(i, fn(t))
            done += sizes[i]
    return len(tasks)


def _run_inline(fn: Callable[[Any], Any], tasks: Sequence[Any], deliver: Deliver) -> None:
    with single_blas_thread():
        for i, t in enumerate(tasks):
            deliver(i, fn(t))


def _run_processes(fn: Callable[[Any], Any], tasks: Sequence[Any], jobs: int, deliver: Deliver) -> None:
    """A local process pool (the platform's default start method: fork on Linux, no re-import)."""
    jobs = min(jobs, len(tasks))
    if jobs <= 1:
        _run_inline(fn, tasks, deliver)
        return
    # here, not at module level: a run on one job never pays for multiprocessing (~0.03 s, issue 29)
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    before = set(multiprocessing.active_children())
    pool = ProcessPoolExecutor(max_workers=jobs, initializer=_init_worker)
    # Signals are only recorded while the pool's internals run here and raised between them (every
    # POLL seconds at most): one raised inside submit() or wait() could leave their locks held.
    with signals_deferred() as check:
        try:
            index = {}
            for i, t in enumerate(tasks):
                index[pool.submit(fn, t)] = i
                check()
            pending = set(index)
            while pending:
                done, pending = wait(pending, timeout=POLL, return_when=FIRST_COMPLETED)
                check()
                for fut in sorted(done, key=index.__getitem__):
                    deliver(index[fut], fut.result())
        except BaseException:
            pool.shutdown(wait=False, cancel_futures=True)
            deadline = time.monotonic() + 20 * TERMINATE_GRACE
            # The pool's manager thread may still be reaping: end whatever is left, until none is.
            while (left := set(multiprocessing.active_children()) - before) and time.monotonic() < deadline:
                _end_workers(left)
            raise
        pool.shutdown(wait=True)


def _end_workers(procs: set) -> None:
    """Terminate the pool's worker processes; kill those still alive after the grace period."""
    for p in procs:
        p.terminate()
    for p in procs:
        p.join(TERMINATE_GRACE)
    for p in procs:
        if p.is_alive():
            p.kill()
            p.join()


#: Registered backends (see the module docstring for the contract).
BACKENDS: dict[str, Runner] = {"processes": _run_processes}
#: The backend ``run_tasks`` uses when the caller names none (set for a block by :func:`using_backend`).
_ACTIVE: contextvars.ContextVar[str | None] = contextvars.ContextVar("ctwm_parallel_backend", default=None)


@contextlib.contextmanager
def using_backend(name: str) -> Iterator[None]:
    """Inside the block, ``run_tasks`` without ``backend=`` runs on ``name`` (e.g. ``"dask"``)."""
    if name not in BACKENDS:
        raise UsageError(f"unknown backend {name!r} (choose from: {', '.join(BACKENDS)})", params=("backend",))
    token = _ACTIVE.set(name)
    try:
        yield
    finally:
        _ACTIVE.reset(token)

