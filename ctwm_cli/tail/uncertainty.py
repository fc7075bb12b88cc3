"""Uncertainty of the power-law fit by the nonparametric bootstrap (``ctwm audit --uncertainty B``).

The pattern is poweRlaw's ``bootstrap()``: resample the n observations with replacement and redo the
whole fit — x_min re-selected by the same scan (same floor, same range; kept when the user fixed it),
α re-estimated — so the spread of x_min, α and n_tail includes the cutoff's own instability (paper
Appendix D: α̂ moves with x_min). Resampling is a multinomial draw over the histogram of distinct
values, which has exactly the law of n draws with replacement from the data at O(distinct) cost.

Reported per quantity: the bootstrap standard error (sd of the replicates, ddof = 1) and the
percentile interval at ``level``. x_min and n_tail take only values the data hold (a cutoff is an
observed value, a tail a count), so their ends are the replicates' own order statistics — the
generalised inverse of the replicates' distribution function (numpy's ``method="inverted_cdf"``,
Hyndman & Fan type 1), not an interpolation between two of them: "[1, 1.025]" named a cutoff no replicate
chose and dodged the "not formed" rule for an interval of zero width. Type 1 keeps at least ``level``
of the replicates inside (F(Q(1-a/2)) - F(Q(a/2)-) >= 1 - a), so the integer interval is never narrower than
the share it claims. α, a continuous estimate, keeps numpy's interpolating default. An interval that does
not contain its own estimate is reported (``excludes_estimate``): the scan chose another cutoff in most
replicates, so the estimate itself is one of the unstable cases (paper Appendix D).

For α also :class:`CutoffBand`, the interval to quote when x_min is
uncertain: a short tail above a body that mimics a power law pulls the scan's x_min low, and then
every replicate's α is biased the same way and the percentile interval misses (README "Short tails").
The band adds, for every cutoff in the range the replicates chose that leaves ``min_tail`` points and
whose power law the KS test does not reject, that cutoff's own α ± z·se.

A replicate whose scan finds no admissible cutoff is counted in ``failed`` and left out of both.
Each replicate has its own child seed (stream 2 of the audit's seed), so ``jobs`` never changes the
result.
"""

from __future__ import annotations

import math

import numpy as np

from ..common.results import ToDict, jsonable, result
from ..common.settings import MIN_TAIL
from ..stats.intervals import ConfidenceInterval
from .powerlaw import Histogram, PowerLawFit, accepted_cutoffs, fit_power_law
from .special import kolmogi, ndtri

QUANTITIES = ("xmin", "alpha", "n_tail")
#: the quantiles of each quantity's interval: observed values (x_min, n_tail) by the order statistics
QUANTILE_METHOD = {"xmin": "inverted_cdf", "alpha": "linear", "n_tail": "inverted_cdf"}
CHUNK = 50
STREAM = 2  # spawn key of the uncertainty bootstrap (0: p_gof, 1: calibration)
#: level of the KS test that admits a cutoff into the band. The asymptotic Kolmogorov critical value
#: ignores that α is fitted, so the test rejects less often than this: the band errs towards width.
KS_LEVEL = 0.05


#: the percentile interval of one quantity: the vocabulary's one interval type, ``{low, high, level}``
Interval = ConfidenceInterval


@result
class CutoffBand(ToDict):
    """α over the plausible cutoffs: the union of the percentile interval and α̂(x) ± z·se(x) at every
    cutoff x in [xmin_low, xmin_high] (the replicates' range) that leaves ``min_tail`` points and passes
    the KS test at ``ks_level``; ``cutoffs`` counts those x. ``level``: the confidence level of each
    interval in the union (as every ``{low, high}`` of the vocabulary carries its level)."""

    low: float
    high: float
    level: float
    xmin_low: float
    xmin_high: float
    cutoffs: int
    ks_level: float


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
    alpha_band: CutoffBand | None = None  # None: x_min fixed by the user, or no replicate succeeded
    excludes_estimate: tuple[str, ...] = ()  # the quantities whose interval does not contain the estimate

    def to_dict(self) -> dict:
        out = {f: getattr(self, f) for f in ("replicates", "level", "seed", "failed", "estimate", "se", "constant",
                                             "excludes_estimate")}
        out["interval"] = {k: v.to_dict() if v is not None else None for k, v in self.interval.items()}
        out["alpha_band"] = self.alpha_band.to_dict() if self.alpha_band is not None else None
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
              level: float = 0.95, hist: Histogram | None = None, min_tail: int = MIN_TAIL,
              fixed_xmin: bool = False) -> Uncertainty:
    """The replicates' summary; with ``hist`` (and x_min not fixed) also α's :class:`CutoffBand`."""
    draws = np.concatenate(rows) if rows else np.full((0, 3), np.nan)
    ok = np.all(np.isfinite(draws), axis=1)
    good = draws[ok]
    estimate = {"xmin": pl.xmin, "alpha": pl.alpha, "n_tail": float(pl.n_tail)}
    se: dict[str, float] = {}
    interval: dict[str, Interval | None] = {}
    constant, excludes = [], []
    q = [(1 - level) / 2, (1 + level) / 2]
    for j, name in enumerate(QUANTITIES):
        col = good[:, j]
        se[name] = float(np.std(col, ddof=1)) if col.size > 1 else math.nan
        if col.size > 1 and np.all(col == col[0]):
            constant.append(name)  # a zero-width "interval" would claim a certainty the bootstrap cannot give
            interval[name] = None
            continue
        lo, hi = np.quantile(col, q, method=QUANTILE_METHOD[name]).tolist() if col.size else (math.nan, math.nan)
        # the central share of the replicates on one value (x_min = 1 in most of them at n = 100-300,
        # issue 26): a zero-width interval would be printed as a certainty; not formed instead
        interval[name] = ConfidenceInterval(low=float(lo), high=float(hi), level=float(level)) if lo != hi else None
        if interval[name] is not None and not lo <= estimate[name] <= hi:
            excludes.append(name)
    band = None
    if hist is not None and not fixed_xmin and good.size:
        band = cutoff_band(hist, pl, good[:, 0], interval["alpha"], level=level, min_tail=min_tail)
    return Uncertainty(replicates=replicates, level=level, seed=seed, failed=int((~ok).sum()), estimate=estimate,
                       se=se, interval=interval, constant=tuple(constant), excludes_estimate=tuple(excludes),
                       draws={n: draws[:, j] for j, n in enumerate(QUANTITIES)}, alpha_band=band)


def cutoff_band(hist: Histogram, pl: PowerLawFit, xmins: np.ndarray, percentile: Interval | None, *,
                level: float, min_tail: int) -> CutoffBand:
    """α's :class:`CutoffBand` over the cutoffs between the smallest and largest of ``xmins`` (and the
    fit's own x_min)."""
    lo_x, hi_x = min(float(xmins.min()), pl.xmin), max(float(xmins.max()), pl.xmin)
    first, last = np.searchsorted(hist.values, [lo_x, hi_x], side="left")
    xs, alphas, ses = accepted_cutoffs(hist.values, hist.counts.astype(np.float64), float(min_tail), pl.discrete,
                                       int(first), int(last) + 1, float(kolmogi(KS_LEVEL)))
    z = float(ndtri((1 + level) / 2))
    lows, highs = list(alphas - z * ses), list(alphas + z * ses)
    if percentile is not None:
        lows.append(percentile.low)
        highs.append(percentile.high)
    if not lows:  # no admissible cutoff and no percentile interval: the fit's own α ± z·se
        lows, highs = [pl.alpha - z * pl.alpha_se], [pl.alpha + z * pl.alpha_se]
    return CutoffBand(low=float(min(lows)), high=float(max(highs)), level=float(level), xmin_low=lo_x, xmin_high=hi_x,
                      cutoffs=int(xs.size), ks_level=KS_LEVEL)

