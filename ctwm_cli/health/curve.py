"""Success rate against memory volume, and the volume at which the curve bends (its knee).

Each task with an outcome contributes one point (v, y): v = live store size when the task started
(its first row), y = 1 for success, 0 for failure. The curve shown is the success rate in up to 10
quantile bins of v. The *inflection point* is the breakpoint k of the continuous two-segment
("hinge") least-squares fit y = a + b·v + c·max(0, v - k), with k searched over the distinct
volumes that leave at least 3 tasks and 2 distinct volumes on each side; slopes b (before) and
b + c (after) tell how success responds to memory volume below and above it. ``improvement`` is
1 - SSE_hinge / SSE_line (0: no bend at all).
"""

from __future__ import annotations

import numpy as np

from ..common.checks import check_range
from ..common.errors import UsageError
from ..common.results import ToDict, result

MIN_TASKS = 10
MAX_BINS = 10


@result
class CurveBin(ToDict):
    volume_low: float
    volume_high: float
    volume_mean: float
    tasks: int
    success_rate: float


@result
class SuccessCurve(ToDict):
    """Success rate vs memory volume over tasks with an outcome."""

    tasks: int
    success_rate: float
    bins: tuple[CurveBin, ...]
    inflection_volume: float | None
    slope_before: float
    slope_after: float
    improvement: float
    reason: str
    method: str = "continuous two-segment least squares on (volume at task start, success 0/1)"


def success_volume_curve(volumes, outcomes, *, max_bins: int = MAX_BINS, min_tasks: int = MIN_TASKS) -> SuccessCurve:
    """The success-vs-volume curve of tasks (``volumes[i]``, ``outcomes[i]`` in {0, 1})."""
    v = np.asarray(volumes, dtype=float)
    y = np.asarray(outcomes, dtype=float)
    if v.shape != y.shape or v.ndim != 1:
        raise UsageError("volumes and outcomes must be 1-d sequences of the same length",
                         params=("volumes", "outcomes"))
    check_range("max_bins", max_bins, lo=1)
    if y.size and not np.all((y == 0) | (y == 1)):
        raise UsageError("outcomes must be 0 (failure) or 1 (success)", params=("outcomes",))
    order = np.lexsort((y, v))  # a canonical order: the fit does not depend on the order of tasks
    v, y = v[order], y[order]
    nan = float("nan")
    n = int(v.size)
    rate = float(y.mean()) if n else nan
    bins = _bins(v, y, max_bins)
    if n < min_tasks:
        return SuccessCurve(tasks=n, success_rate=rate, bins=bins, inflection_volume=None, slope_before=nan,
                            slope_after=nan, improvement=nan, reason=f"fewer than {min_tasks} tasks with an outcome")
    best = None
    for k in np.unique(v):
        left, right = v[v < k], v[v > k]
        if left.size < 3 or right.size < 3 or np.unique(left).size < 2 or np.unique(right).size < 2:
            continue
        X = np.column_stack([np.ones(n), v, np.maximum(0.0, v - k)])
        coef, *_ = np.linalg.lstsq(X, y, rcond=None)
        sse = float(np.sum((y - X @ coef) ** 2))
        if best is None or sse < best[0] - 1e-12:
            best = (sse, float(k), coef)
    if best is None:
        return SuccessCurve(tasks=n, success_rate=rate, bins=bins, inflection_volume=None, slope_before=nan,
                            slope_after=nan, improvement=nan,
                            reason="too few distinct volumes for a breakpoint (3 tasks and 2 volumes each side)")
    sse, k, coef = best
    X1 = np.column_stack([np.ones(n), v])
    c1, *_ = np.linalg.lstsq(X1, y, rcond=None)
    sse_line = float(np.sum((y - X1 @ c1) ** 2))
    improvement = 1.0 - sse / sse_line if sse_line > 0 else 0.0
    return SuccessCurve(tasks=n, success_rate=rate, bins=bins, inflection_volume=k, slope_before=float(coef[1]),
                        slope_after=float(coef[1] + coef[2]), improvement=improvement, reason="hinge fit")


def _bins(v: np.ndarray, y: np.ndarray, max_bins: int) -> tuple[CurveBin, ...]:
    if v.size == 0:
        return ()
    order = np.argsort(v, kind="stable")
    vs, ys = v[order], y[order]
    out = []
    for chunk in np.array_split(np.arange(vs.size), min(max_bins, vs.size)):
        if chunk.size:
            out.append(CurveBin(volume_low=float(vs[chunk[0]]), volume_high=float(vs[chunk[-1]]),
                                volume_mean=float(vs[chunk].mean()), tasks=int(chunk.size),
                                success_rate=float(ys[chunk].mean())))
    return tuple(out)
