"""Run independent tasks in worker processes, results in task order (so they never depend on --jobs)."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from ..progress import ProgressCallback


def resolve_jobs(jobs: int | None) -> int:
    return max(1, jobs if jobs is not None else (os.cpu_count() or 1))


def run_tasks(
    fn: Callable[[Any], Any],
    tasks: Sequence[Any],
    *,
    jobs: int | None = None,
    sizes: Sequence[int] | None = None,
    progress: ProgressCallback | None = None,
) -> list[Any]:
    """``[fn(t) for t in tasks]``, spread over ``jobs`` processes. ``sizes`` weight the progress."""
    jobs = min(resolve_jobs(jobs), max(1, len(tasks)))
    sizes = list(sizes) if sizes is not None else [1] * len(tasks)
    total, done, out = sum(sizes), 0, []
    if jobs == 1:
        for t, s in zip(tasks, sizes, strict=True):
            out.append(fn(t))
            done += s
            if progress:
                progress(done, total)
        return out
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        for r, s in zip(pool.map(fn, tasks), sizes, strict=True):
            out.append(r)
            done += s
            if progress:
                progress(done, total)
    return out
