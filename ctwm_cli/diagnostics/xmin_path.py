"""Paper Appendix D: under a τ scan, the Clauset cutoff x_min moves and α̂ moves with it.

Each (τ, replicate) is an *allocation-driven trace*: ``n_events`` accesses drawn independently from the
CTWM allocation b(r; τ) ∝ r^-τ over ``n_items`` ranked items (a multinomial draw; items never drawn
are not in the trace). Its per-item counts are audited like any trace: x_min by KS minimisation over
every candidate leaving ``min_tail`` observations, then the discrete MLE α̂ above it.

For a pure Zipf rank-frequency law with exponent τ, the counts follow a power law with exponent
α = 1 + 1/τ in the limit of many events per item — the reference line. With finitely many items and
events the fitted cutoff jumps between runs and across τ, and α̂ follows it rather than τ: that is the
paper's reason to report α̂ as confirmatory only and to steer with Gini, skewness and max/median,
which are reported beside it. ``alpha_xmin_spearman`` is the rank correlation of α̂ and x_min over all
runs; ``alpha_monotone`` / ``gini_monotone`` say whether the per-τ means move one way only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..allocation.rank import check_items
from ..allocation.sweep import MAX_SWEEP_TAUS, check_taus
from ..common.errors import UsageError
from ..common.results import ToDict, result
from ..common.settings import MIN_TAIL
from ..runtime.progress import ProgressCallback
from ..tail.powerlaw import Histogram, fit_power_law
from .measures import concentration

MAX_EVENTS = 100_000_000
MAX_RUNS = 10_000


@result
class XminRun(ToDict):
    tau: float
    replicate: int
    n_items_seen: int
    xmin: float | None
    alpha: float | None
    alpha_se: float | None
    n_tail: int | None
    gini: float
    skewness: float
    max_over_median: float


@result
class XminStep(ToDict):
    """One τ of the scan: α̂ and x_min over the replicates, and the concentration the paper steers by."""

    tau: float
    alpha_theory: float  # 1 + 1/τ
    alpha_mean: float
    alpha_sd: float
    xmin_median: float
    xmin_min: float
    xmin_max: float
    fits: int  # replicates with a fit (a tail of at least min_tail observations)
    gini_mean: float


@result
class XminPath(ToDict):
    n_items: int
    n_events: int
    replicates: int
    min_tail: int
    seed: int | None
    steps: tuple[XminStep, ...]
    runs: tuple[XminRun, ...]
    alpha_xmin_spearman: float
    alpha_monotone: bool
    gini_monotone: bool
    trace: str = "n_events accesses drawn from b(r; tau) over n_items ranks (multinomial), per replicate"


def xmin_path(taus: Sequence[float], *, n_items: int = 1000, n_events: int = 100_000, replicates: int = 5,
              min_tail: int = MIN_TAIL, seed: int | None = None, progress: ProgressCallback | None = None) -> XminPath:
    """Audit a replicated τ scan of allocation-driven traces (see the module docstring)."""
    ts, m = _checked(taus, n_items, n_events, replicates, min_tail)
    children = np.random.SeedSequence(seed).spawn(len(ts) * replicates)
    ranks = np.arange(1, m + 1, dtype=np.float64)
    runs: list[XminRun] = []
    for i, t in enumerate(ts):
        w = ranks**-t
        p = w / w.sum()
        for r in range(replicates):
            rng = np.random.default_rng(children[i * replicates + r])
            runs.append(_audit_run(t, r, rng.multinomial(n_events, p), min_tail))
            if progress is not None:
                progress(len(runs), len(ts) * replicates)
    steps = tuple(_step(t, [x for x in runs if x.tau == t]) for t in ts)
    fitted = [x for x in runs if x.alpha is not None]
    return XminPath(
        n_items=m, n_events=int(n_events), replicates=int(replicates), min_tail=int(min_tail), seed=seed,
        steps=steps, runs=tuple(runs),
        alpha_xmin_spearman=_spearman([x.alpha for x in fitted], [x.xmin for x in fitted]),
        alpha_monotone=_monotone([s.alpha_mean for s in steps]), gini_monotone=_monotone([s.gini_mean for s in steps]),
    )


def _checked(taus: Sequence[float], n_items: int, n_events: int, replicates: int,
             min_tail: int) -> tuple[tuple[float, ...], int]:
    if not isinstance(taus, (str, bytes)) and len(taus) > MAX_SWEEP_TAUS:
        raise UsageError(f"taus: {len(taus):,} values are above the limit of {MAX_SWEEP_TAUS:,}", params=("taus",))
    ts = check_taus(taus)
    m = check_items(n_items)
    for name, v, lo, hi in (("n_events", n_events, 1, MAX_EVENTS), ("replicates", replicates, 1, MAX_RUNS),
                            ("min_tail", min_tail, 2, MAX_EVENTS)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not lo <= v <= hi:
            raise UsageError(f"{name} must be an integer in [{lo:,}, {hi:,}], got {v!r}", params=(name,))
    if len(ts) * replicates > MAX_RUNS:
        raise UsageError(f"{len(ts)} taus x {replicates} replicates = {len(ts) * replicates:,} runs, "
                         f"above the limit of {MAX_RUNS:,}", params=("taus", "replicates"))
    return ts, m


def _audit_run(t: float, r: int, drawn: np.ndarray, min_tail: int) -> XminRun:
    """x_min, α̂ and concentration of one drawn trace (items never drawn are not in it)."""
    counts = drawn[drawn > 0].astype(np.float64)
    fit = fit_power_law(Histogram.from_sample(counts), min_tail=min_tail)
    c = concentration(counts)
    return XminRun(
        tau=t, replicate=r, n_items_seen=int(counts.size), xmin=None if fit is None else fit.xmin,
        alpha=None if fit is None else fit.alpha, alpha_se=None if fit is None else fit.alpha_se,
        n_tail=None if fit is None else fit.n_tail, gini=c.gini, skewness=c.skewness,
        max_over_median=c.max_over_median)


def _step(t: float, runs: list[XminRun]) -> XminStep:
    a = np.array([x.alpha for x in runs if x.alpha is not None], dtype=float)
    xm = np.array([x.xmin for x in runs if x.xmin is not None], dtype=float)
    nan = math.nan
    return XminStep(
        tau=t, alpha_theory=1.0 + 1.0 / t, alpha_mean=float(a.mean()) if a.size else nan,
        alpha_sd=float(a.std(ddof=1)) if a.size > 1 else nan, xmin_median=float(np.median(xm)) if xm.size else nan,
        xmin_min=float(xm.min()) if xm.size else nan, xmin_max=float(xm.max()) if xm.size else nan,
        fits=int(a.size), gini_mean=float(np.mean([x.gini for x in runs])),
    )


def _monotone(values: list[float]) -> bool:
    v = [x for x in values if math.isfinite(x)]
    d = np.diff(v)
    return bool(len(v) >= 2 and (np.all(d > 0) or np.all(d < 0)))


def _spearman(a: Sequence[float], b: Sequence[float]) -> float:
    if len(a) < 3:
        return math.nan
    from scipy.stats import spearmanr

    rho = spearmanr(a, b).statistic
    return float(rho) if np.isfinite(rho) else math.nan
