"""Paired comparisons with bootstrap percentile intervals: the one mechanism and result type that
``ctwm replay`` (steps, moving blocks) and ``ctwm bench`` (questions or games, resampled one by one)
both use.

A metric is a ratio of sums over paired units, Σ num / Σ den (a mean when den is 1 per unit, an
error rate over the tail steps when den marks them). For treatment T and baseline B on the same
units: ``delta = T - B``, ``relative = T / B - 1``. A replicate resamples the units once for both
arms (so the pairing is kept) and recomputes both ratios from the resampled sums; the interval is
the percentile interval of the replicates at ``level``.

An interval is only reported when the resampling can vary: :class:`BlockResample` needs at least
two blocks in every episode (a block as long as the episode has one possible start, so every
replicate would equal the estimate and a zero-width "interval" would be printed), and
:class:`IndexResample` needs at least two units. Otherwise ``interval`` says why and the bounds are
``None``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from .results import ToDict, result

FORMED = "formed"
NOT_REQUESTED = "not requested (0 replicates)"


@result
class PairedDelta(ToDict):
    """Treatment minus baseline on one metric over paired units, with a bootstrap percentile CI."""

    treatment: str
    baseline: str
    metric: str
    group: str | None  # a subset of the units (e.g. a question type); None: all of them
    units: int  # paired units with data under both arms
    treatment_value: float | None
    baseline_value: float | None
    delta: float | None  # treatment - baseline
    ci_low: float | None
    ci_high: float | None
    relative: float | None  # treatment / baseline - 1
    relative_ci_low: float | None
    relative_ci_high: float | None
    interval: str  # "formed", or why no interval is given


class Resample(Protocol):
    """How units are resampled: ``sums(x)`` is each replicate's sum of ``x`` over its resampled units."""

    replicates: int
    status: str

    def sums(self, x: np.ndarray) -> np.ndarray: ...


class BlockResample:
    """Moving-block bootstrap over steps, stratified by episode: each replicate draws ``n // block``
    blocks of ``block`` consecutive steps (start uniform in ``[0, n - block]``) in each episode."""

    def __init__(self, lengths: Sequence[int], block: int, replicates: int, rng: np.random.Generator):
        self.replicates = int(replicates)
        self.size = int(block)
        self.starts: np.ndarray | None = None
        shortest = min(lengths)
        if not replicates:
            self.status = NOT_REQUESTED
        elif shortest < 2 * block:
            self.status = (f"not formable: block {block} leaves fewer than two blocks in an episode of {shortest} "
                           "steps (use a block <= half the steps)")
        else:
            self.status = FORMED
            starts, offset = [], 0
            for n in lengths:
                starts.append(offset + rng.integers(0, n - block + 1, size=(replicates, n // block)))
                offset += n
            self.starts = np.concatenate(starts, axis=1)

    def sums(self, x: np.ndarray) -> np.ndarray:
        cs = np.concatenate([[0.0], np.cumsum(x, dtype=np.float64)])
        return (cs[self.starts + self.size] - cs[self.starts]).sum(axis=1)


class IndexResample:
    """The ordinary paired bootstrap: each replicate draws ``n`` of the ``n`` units with replacement."""

    def __init__(self, n: int, replicates: int, rng: np.random.Generator):
        self.replicates = int(replicates)
        self.idx: np.ndarray | None = None
        if not replicates:
            self.status = NOT_REQUESTED
        elif n < 2:
            self.status = f"not formable: {n} paired unit(s)"
        else:
            self.status = FORMED
            self.idx = rng.integers(0, n, size=(replicates, n))

    def sums(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(x, dtype=np.float64)[self.idx].sum(axis=1)


def _ratio(num: float, den: float) -> float | None:
    return float(num / den) if den else None


def _interval(x: np.ndarray, level: float) -> tuple[float | None, float | None]:
    x = x[np.isfinite(x)]
    if not x.size:
        return None, None
    lo, hi = np.quantile(x, [(1 - level) / 2, 1 - (1 - level) / 2])
    return float(lo), float(hi)


def paired_delta(treat: tuple[np.ndarray, np.ndarray], base: tuple[np.ndarray, np.ndarray], resample: Resample, *,
                 level: float, treatment: str, baseline: str, metric: str, group: str | None = None,
                 units: int | None = None) -> PairedDelta:
    """``treat`` and ``base`` are (numerator, denominator) per unit, aligned; see the module docstring."""
    (tn, td), (bn, bd) = treat, base
    va, vb = _ratio(tn.sum(), td.sum()), _ratio(bn.sum(), bd.sum())
    delta = None if va is None or vb is None else va - vb
    rel = None if delta is None or not vb else delta / vb
    ci = rci = (None, None)
    status = resample.status
    if delta is None and status == FORMED:
        status = "not formable: no unit has data under both arms"
    if status == FORMED:
        with np.errstate(invalid="ignore", divide="ignore"):
            ra = resample.sums(tn) / resample.sums(td)
            rb = resample.sums(bn) / resample.sums(bd)
            ci = _interval(ra - rb, level)
            if rel is not None:
                rci = _interval((ra - rb) / rb, level)
    return PairedDelta(treatment=treatment, baseline=baseline, metric=metric, group=group,
                       units=int(td.size if units is None else units), treatment_value=va, baseline_value=vb,
                       delta=delta, ci_low=ci[0], ci_high=ci[1], relative=rel, relative_ci_low=rci[0],
                       relative_ci_high=rci[1], interval=status)


def ratio_interval(num: np.ndarray, den: np.ndarray, resample: Resample, level: float
                   ) -> tuple[float | None, float | None, float | None]:
    """One arm's ratio Σ num / Σ den and its bootstrap percentile interval (``None`` bounds unless formed)."""
    value = _ratio(num.sum(), den.sum())
    if value is None or resample.status != FORMED:
        return value, None, None
    with np.errstate(invalid="ignore", divide="ignore"):
        lo, hi = _interval(resample.sums(num) / resample.sums(den), level)
    return value, lo, hi
