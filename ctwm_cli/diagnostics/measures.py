"""Concentration of per-item access counts (paper Sections 5.1, 5.2, 5.6 and Table 1).

Definitions (``x`` = the per-item counts, ``n`` items, sorted descending ``x_(1) >= ... >= x_(n)``):

- ``gini``: G = sum_i sum_j |x_i - x_j| / (2 n^2 mean(x)), computed in O(n log n) from the sorted
  counts as ``(2 sum_i i y_i) / (n sum y) - (n + 1) / n`` with ``y`` ascending. 0 for equal counts,
  (n-1)/n when one item takes every access.
- ``skewness``: the *bias-corrected* sample skewness G1 = g1 sqrt(n (n-1)) / (n-2), where
  g1 = m3 / m2^1.5 is the moment estimator; this equals ``scipy.stats.skew(x, bias=False)`` and
  pandas' ``Series.skew()``. NaN when n < 3 or all counts are equal.
- ``max_over_median``: max(x) / median(x).
- ``top10_share``: share of all accesses that go to the top decile of items.
- ``sigma_top10``: standard deviation (ddof=1) of ``ln x`` over the top decile of items (see
  :func:`top_decile_size`). The paper's Table 1 calls it "the standard deviation of the top 10%
  access counts"; the raw standard deviation grows with trace length (doubling every count doubles
  it), so traces of different lengths or graph sizes would not compare. On the log scale it is
  scale-free (multiplying every count by c > 0 leaves it unchanged) and it is the log-normal shape
  parameter sigma of the top tail ("top-tail log-normal concentration", Section 5.1). Natural log
  because that is the log-normal convention; divide by ln 10 = 2.3026 for decades. NaN when the
  top decile holds fewer than 2 items (n <= 10) or a zero count.
- ``sigma_top10_raw``: the paper's Table 1 statistic as written — the standard deviation (ddof=1)
  of the raw counts over the top decile. Reported beside ``sigma_top10`` for comparison with the
  paper; it is in units of accesses and doubles when the trace doubles, so compare it only between
  traces of equal length. NaN when the top decile holds fewer than 2 items.
- ``sigma_top10_cv``: the coefficient of variation of the top-decile counts, sd (ddof=1) / mean.
  Like ``sigma_top10`` it is scale-free; it is the closest candidate found for the numbers of the
  paper's Table 1 (whose code has no implementation of the statistic; exploratory, mean |difference|
  about 0.20 over its 18 cells). NaN when the top decile holds fewer than 2 items.
- ``singleton_fraction``: share of items accessed exactly once.

**Which σ.** The paper (Table 1) defines its statistic as "the standard deviation of the top 10%
access counts" and reads it as "top-tail log-normal concentration" (Section 5.1). Read literally
that is ``raw``; the reading ctwm defaults to (``log``) is the log-normal one, because only a
scale-free statistic compares traces of different lengths and sizes, which is what a finite-size
trend does. :data:`SIGMA_VARIANTS` names the three (``ctwm concentration --sigma``, ``ctwm
finite-size --sigma``); :func:`sigma_top` computes any of them.

The top decile is the ``ceil(0.1 n)`` most-accessed items. Items tied at the boundary all have the
same count, so which of them is taken does not change any statistic: the result is deterministic.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..common import vocabulary
from ..common.errors import InputError, UsageError
from ..common.results import ToDict, result
from ..runtime.progress import ProgressCallback
from ..traces import ColumnMap, ItemCounts
from ..traces.aggregate import event_kinds
from ..traces.paths import ReadOptions, path_labels, read_counts


@result
class Concentration(ToDict):
    """Concentration statistics of one vector of per-item counts (definitions in the module doc)."""

    source: str | None = None
    group: str | None = None
    n_items: int
    n_events: float
    gini: float
    skewness: float
    max_over_median: float
    top10_share: float
    sigma_top10: float
    sigma_top10_raw: float
    singleton_fraction: float
    top_decile_items: int
    sigma_top10_cv: float = math.nan


#: One-line definitions of the statistics, included in every JSON report.
DEFINITIONS = {
    "gini": "Gini coefficient: sum_ij |x_i - x_j| / (2 n^2 mean x)",
    "skewness": "sample skewness G1, bias-corrected (= scipy.stats.skew(bias=False), pandas .skew())",
    "max_over_median": "max count / median count",
    "top10_share": "share of accesses going to the top decile (ceil(0.1 n) most-accessed items)",
    "sigma_top10": "sd (ddof=1) of ln(count) over the top decile (ceil(0.1 n) most-accessed items); scale-free",
    "sigma_top10_raw": "the paper's Table 1 statistic: sd (ddof=1) of the raw counts over the top decile; "
                       "grows with trace length",
    "singleton_fraction": "share of items accessed exactly once",
    "sigma_top10_cv": "coefficient of variation (sd ddof=1 / mean) of the top-decile counts; scale-free",
}

#: The σ_top10 readings: ``log`` (ctwm's default), ``raw`` (the paper's words), ``cv`` (closest to its numbers).
SIGMA_VARIANTS = vocabulary.SIGMA_VARIANTS
SIGMA_FIELDS = {"log": "sigma_top10", "raw": "sigma_top10_raw", "cv": "sigma_top10_cv"}


@result
class ConcentrationReport(ToDict):
    """Concentration of one or more traces (one row per trace, or per group with ``group_by``)."""

    rows: tuple[Concentration, ...]
    events: tuple[str, ...]
    group_by: str | None
    #: The sorted (descending) counts behind each row, for plots; not part of ``to_dict()``.
    counts: tuple[np.ndarray, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "events": list(self.events),
            "group_by": self.group_by,
            "definitions": dict(DEFINITIONS),
            "results": [r.to_dict() for r in self.rows],
        }


def top_decile_size(n: int) -> int:
    """Number of items in the top decile: ``ceil(0.1 n)`` (computed exactly in integers)."""
    return -(-n // 10)


def _as_counts(counts: Any) -> np.ndarray:
    if isinstance(counts, ItemCounts):
        counts = counts.counts
    try:
        x = np.asarray(counts, dtype=np.float64)
    except (TypeError, ValueError):
        raise UsageError("counts must be a sequence of non-negative numbers", params=("counts",)) from None
    if x.ndim != 1:
        raise UsageError(f"counts must be one-dimensional, got shape {x.shape}", params=("counts",))
    if x.size == 0:
        raise InputError("counts: no items to measure (empty vector)")
    if not np.all(np.isfinite(x)):
        raise InputError("counts: contains NaN or infinity")
    if np.any(x < 0):
        raise InputError("counts: contains a negative count")
    return x


def gini(counts: Any) -> float:
    """Gini coefficient of non-negative counts (NaN if they sum to 0)."""
    return _gini_sorted(np.sort(_as_counts(counts)))


def _gini_sorted(asc: np.ndarray) -> float:
    n = asc.size
    total = asc.sum()
    if total <= 0:
        return math.nan
    i = np.arange(1, n + 1, dtype=np.float64)
    g = 2.0 * float(np.dot(i, asc)) / (n * total) - (n + 1) / n
    return min(max(g, 0.0), 1.0)  # clamp round-off only


def skewness(counts: Any) -> float:
    """Bias-corrected sample skewness G1 (equals ``scipy.stats.skew(x, bias=False)``)."""
    return _skew(_as_counts(counts))


def _skew(x: np.ndarray) -> float:
    n = x.size
    if n < 3:
        return math.nan
    d = x - x.mean()
    m2 = float(np.mean(d * d))
    # all values equal up to round-off: skewness undefined (same threshold as scipy.stats.skew)
    if m2 <= (10 * np.finfo(np.float64).resolution * float(x.mean())) ** 2:
        return math.nan
    m3 = float(np.mean(d * d * d))
    g1 = m3 / m2**1.5
    return g1 * math.sqrt(n * (n - 1)) / (n - 2)


def sigma_top10(counts: Any) -> float:
    """Standard deviation (ddof=1) of ``ln count`` over the top decile of items (scale-free)."""
    desc = np.sort(_as_counts(counts))[::-1]
    return sigma_top_sorted(desc)


def sigma_top10_raw(counts: Any) -> float:
    """The paper's Table 1 statistic: standard deviation (ddof=1) of the raw counts over the top decile."""
    return sigma_top_raw_sorted(np.sort(_as_counts(counts))[::-1])


def sigma_top_raw_sorted(desc: np.ndarray) -> float:
    """:func:`sigma_top10_raw` of counts already sorted in descending order."""
    k = top_decile_size(desc.size)
    return float(np.std(desc[:k], ddof=1)) if k >= 2 else math.nan


def sigma_top_cv_sorted(desc: np.ndarray) -> float:
    """:func:`sigma_top10_cv` of counts already sorted in descending order."""
    k = top_decile_size(desc.size)
    if k < 2:
        return math.nan
    top = desc[:k]
    mean = float(top.mean())
    return float(np.std(top, ddof=1)) / mean if mean > 0 else math.nan


def sigma_top10_cv(counts: Any) -> float:
    """Coefficient of variation (sd ddof=1 / mean) of the top-decile counts (scale-free)."""
    return sigma_top_cv_sorted(np.sort(_as_counts(counts))[::-1])


def sigma_top(desc: np.ndarray, variant: str = "log") -> float:
    """The σ_top10 reading ``variant`` (one of :data:`SIGMA_VARIANTS`) of counts sorted descending."""
    if variant == "log":
        return sigma_top_sorted(desc)
    if variant == "raw":
        return sigma_top_raw_sorted(desc)
    if variant == "cv":
        return sigma_top_cv_sorted(desc)
    raise UsageError(f"sigma must be one of {', '.join(SIGMA_VARIANTS)}, got {variant!r}", params=("sigma",))


def sigma_top_sorted(desc: np.ndarray) -> float:
    """:func:`sigma_top10` of counts already sorted in descending order."""
    k = top_decile_size(desc.size)
    top = desc[:k]
    if k < 2 or top[-1] <= 0:
        return math.nan
    return float(np.std(np.log(top), ddof=1))


def concentration(counts: Any, *, source: str | None = None, group: str | None = None) -> Concentration:
    """Concentration statistics of per-item ``counts`` (array-like or :class:`ItemCounts`).

    ``source`` and ``group`` label the row; taken from ``counts`` when it is an ``ItemCounts``.
    """
    if isinstance(counts, ItemCounts):
        source = counts.source if source is None else source
        group = counts.group if group is None else group
    x = _as_counts(counts)
    asc = np.sort(x)
    desc = asc[::-1]
    n = x.size
    total = float(asc.sum())
    k = top_decile_size(n)
    median = float(np.median(asc))
    mx = float(desc[0])
    mom = mx / median if median > 0 else (math.inf if mx > 0 else math.nan)
    return Concentration(
        source=source,
        group=group,
        n_items=int(n),
        n_events=counts.n_events if isinstance(counts, ItemCounts) else (int(total) if total.is_integer() else total),
        gini=_gini_sorted(asc),
        skewness=_skew(x),
        max_over_median=mom,
        top10_share=float(desc[:k].sum()) / total if total > 0 else math.nan,
        sigma_top10=sigma_top_sorted(desc),
        sigma_top10_raw=sigma_top_raw_sorted(desc),
        singleton_fraction=float(np.count_nonzero(x == 1)) / n,
        top_decile_items=k,
        sigma_top10_cv=sigma_top_cv_sorted(desc),
    )


def concentration_of_traces(
    paths: Sequence[str],
    columns: ColumnMap | ReadOptions | None = None,
    *,
    events: Sequence[str] | None = None,
    group_by: str | None = None,
    progress: ProgressCallback | None = None,
    labels: Sequence[str | None] | None = None,
) -> ConcentrationReport:
    """Read each trace once and measure the concentration of its per-item counts.

    One row per trace, or per value of ``group_by`` within each trace. ``events`` are the event
    kinds counted (default: ``retrieve`` if present, else ``inject``). ``columns`` may be
    :class:`~ctwm_cli.traces.paths.ReadOptions` (column map, ``where`` filter, engine). ``labels``
    (one per path) name the rows' ``source`` in place of the paths.
    """
    if not paths:
        raise UsageError("give at least one trace", params=("paths",))
    events = event_kinds(events)
    rows: list[Concentration] = []
    arrays: list[np.ndarray] = []
    chosen: list[str] = []
    for path, label in zip(paths, path_labels(paths, labels), strict=True):  # one name per trace, each unique
        for ic in read_counts([path], columns, group_by=group_by, events=events, progress=progress, labels=[label]):
            rows.append(concentration(ic))
            arrays.append(ic.counts)
            chosen.extend(e for e in ic.events if e not in chosen)
    return ConcentrationReport(rows=tuple(rows), events=tuple(chosen), group_by=group_by, counts=tuple(arrays))
