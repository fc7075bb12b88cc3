"""Uncertainty of the power-law fit by the nonparametric bootstrap (``ctwm audit --uncertainty B``).

The pattern is poweRlaw's ``bootstrap()``: resample the n observations with replacement and redo the
whole fit — x_min re-selected by the same scan (same floor, same range; kept when the user fixed it),
α re-estimated — so the spread of x_min, α and n_tail includes the cutoff's own instability (paper
Appendix D: α̂ moves with x_min). Resampling is a multinomial draw over the histogram of distinct
values, which has exactly the law of n draws with replacement from the data at O(distinct) cost.

Reported per quantity: the bootstrap standard error (sd of the replicates, ddof = 1) and the
percentile interval at ``level``. A replicate whose scan finds no admissible cutoff is counted in
``failed`` and left out of both. Each replicate has its own child seed (stream 2 of the audit's
seed), so ``jobs`` never changes the result.
"""

from __future__ import annotations

import math

import numpy as np

from ..results import ToDict, jsonable, result
from .powerlaw import Histogram, PowerLawFit, fit_power_law

QUANTITIES = ("xmin", "alpha", "n_tail")
CHUNK = 50
STREAM = 2  # spawn key of the uncertainty bootstrap (0: p_gof, 1: calibration)


@result
class Interval(ToDict):
    low: float
    high: float


@result
class Uncertainty(ToDict):
    """Bootstrap standard errors and percentile intervals of x_min, α and n_tail."""

    replicates: int
    level: float
    seed: int
    failed: int
    estimate: dict[str, float]
    se: dict[str, float]
    interval: dict[str, Interval | None]  # None: not formed (the central share of the replicates on one value)
    constant: tuple[str, ...]  # the quantities every replicate reproduced exactly (e.g. x_min at the minimum)
    draws: dict[str, np.ndarray]

    def to_dict(self) -> dict:
        out = {f: getattr(self, f) for f in ("replicates", "level", "seed", "failed", "estimate", "se", "constant")}
        out["interval"] = {k: v.to_dict() if v is not None else None for k, v in self.interval.items()}
        return jsonable(out)


@result
class UncertaintyTask:
    seeds: list[np.random.SeedSequence]
    values: np.ndarray
    counts: np.ndarray
    discrete: bool
    floor: int
    xmin: float | None
    xmin_range: tuple[float, float] | None


def replicate_fits(task: UncertaintyTask) -> np.ndarray:
    """Rows (x_min, α, n_tail) of each replicate's full re-fit; NaN where no cutoff is admissible."""
    t = task
    p = t.counts / t.counts.sum()
    n = int(t.counts.sum())
    out = np.full((len(t.seeds), 3), np.nan)
    for k, ss in enumerate(t.seeds):
        c = np.random.default_rng(ss).multinomial(n, p)
        keep = c > 0
        fit = fit_power_law(Histogram(values=t.values[keep], counts=c[keep]), discrete=t.discrete, xmin=t.xmin,
                            min_tail=t.floor, xmin_range=t.xmin_range)
        if fit is not None:
            out[k] = (fit.xmin, fit.alpha, fit.n_tail)
    return out


def uncertainty_tasks(hist: Histogram, *, replicates: int, seed: int, discrete: bool, floor: int,
                      xmin: float | None = None,
                      xmin_range: tuple[float, float] | None = None) -> list[UncertaintyTask]:
    children = np.random.SeedSequence(seed, spawn_key=(STREAM,)).spawn(replicates)
    counts = hist.counts.astype(np.float64)
    return [UncertaintyTask(seeds=children[i : i + CHUNK], values=hist.values, counts=counts, discrete=discrete,
                            floor=floor, xmin=xmin, xmin_range=xmin_range)
            for i in range(0, replicates, CHUNK)]


def summarise(pl: PowerLawFit, rows: list[np.ndarray], *, replicates: int, seed: int,
              level: float = 0.95) -> Uncertainty:
    draws = np.concatenate(rows) if rows else np.full((0, 3), np.nan)
    ok = np.all(np.isfinite(draws), axis=1)
    good = draws[ok]
    estimate = {"xmin": pl.xmin, "alpha": pl.alpha, "n_tail": float(pl.n_tail)}
    se: dict[str, float] = {}
    interval: dict[str, Interval | None] = {}
    constant = []
    q = [(1 - level) / 2, (1 + level) / 2]
    for j, name in enumerate(QUANTITIES):
        col = good[:, j]
        se[name] = float(np.std(col, ddof=1)) if col.size > 1 else math.nan
        if col.size > 1 and np.all(col == col[0]):
            constant.append(name)  # a zero-width "interval" would claim a certainty the bootstrap cannot give
            interval[name] = None
            continue
        lo, hi = np.quantile(col, q).tolist() if col.size else (math.nan, math.nan)
        # the central share of the replicates on one value (x_min = 1 in most of them at n = 100-300,
        # issue 26): a zero-width interval would be printed as a certainty; not formed instead
        interval[name] = Interval(low=float(lo), high=float(hi)) if lo != hi else None
    return Uncertainty(replicates=replicates, level=level, seed=seed, failed=int((~ok).sum()), estimate=estimate,
                       se=se, interval=interval, constant=tuple(constant),
                       draws={n: draws[:, j] for j, n in enumerate(QUANTITIES)})
