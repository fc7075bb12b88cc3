"""Store-size growth: fitted slope and a converging / linear / accelerating classification.

Method (documented in ``ctwm health --help`` and the README). The store size S(t) is a step
function of time (steps, or seconds when the trace has timestamps). Its *increments* over B equal
time bins (B = min(20, n_points // 3), at least 5) are, for a store that grows at a constant rate,
independent draws around that rate, so the question "does the growth rate change?" is an ordinary
regression of the bin rates r_k = ΔS_k / width on the bin centres: r_k = a + b c_k. The rate trend b
comes with its t-interval (B - 2 degrees of freedom). The classification:

* ``accelerating``: the interval lies above 0 and the mean rate of the last quarter of the bins
  exceeds that of the first quarter by at least ``min_change`` (25%) of the latter;
* ``converging``: the interval lies below 0 and the last-quarter rate is at least ``min_change``
  below the first-quarter rate (a saturating store), or the store does not grow at all (OLS
  slope <= 0);
* ``linear``: otherwise.

Working on increments, not on S(t) itself, matters: S(t) is a cumulative sum whose residuals about
any fitted curve are strongly autocorrelated, so AIC or F tests on S(t) find "curvature" in
perfectly linear growth. The effect-size floor keeps a huge trace from calling a 2% drift a trend.
The reported ``slope`` is the OLS slope of S on t (items per time unit) with its standard error.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from ..common.checks import check_range
from ..stats.intervals import ConfidenceInterval, confidence_interval
from ..common.errors import UsageError
from ..common.results import ToDict, result

GROWTH_CLASSES = ("converging", "linear", "accelerating", "insufficient data")
MAX_BINS = 20
MIN_BINS = 5


@result
class GrowthFit(ToDict):
    """Growth of the live store size over time."""

    classification: str
    reason: str
    time_unit: str
    n_points: int
    size_start: int | None
    size_end: int | None
    slope: float
    slope_se: float
    n_bins: int
    bin_width: float
    rate_trend: float
    rate_trend_confidence_interval: ConfidenceInterval | None  # at ``level``; None: not formed
    rate_change: float  # (final_rate - initial_rate) / initial_rate
    initial_rate: float
    final_rate: float
    level: float
    min_change: float
    method: str = "OLS of per-bin growth rate on time; t-interval on the trend; effect-size floor"

    @property
    def rate_trend_ci(self) -> tuple[float, float]:
        """``(low, high)`` of :attr:`rate_trend_confidence_interval`, NaNs when not formed (the name before schema
        version 3)."""
        ci = self.rate_trend_confidence_interval
        return (math.nan, math.nan) if ci is None else (ci.low, ci.high)

    @property
    def bins(self) -> int:
        """:attr:`n_bins` (the name before schema version 3)."""
        return self.n_bins


def classify_growth(
    times,
    sizes,
    *,
    time_unit: str = "step",
    bins: int | None = None,
    level: float = 0.95,
    min_change: float = 0.25,
) -> GrowthFit:
    """Classify the growth of ``sizes`` (store size after each distinct time in ``times``)."""
    t, s = _checked(times, sizes, bins, level, min_change)
    if t.size and np.any(np.diff(t) < 0):
        order = np.argsort(t, kind="stable")
        t, s = t[order], s[order]
    n = int(t.size)
    nan = float("nan")
    empty = dict(
        time_unit=time_unit, n_points=n, size_start=int(s[0]) if n else None, size_end=int(s[-1]) if n else None,
        n_bins=0, bin_width=nan, rate_trend=nan, rate_trend_confidence_interval=None, rate_change=nan, initial_rate=nan,
        final_rate=nan, level=level, min_change=min_change,
    )
    if n < 3 or t[-1] == t[0]:
        return GrowthFit(classification="insufficient data", reason="fewer than 3 distinct times", slope=nan,
                         slope_se=nan, **empty)
    slope, slope_se = _ols_slope(t, s)
    b = bins if bins is not None else min(MAX_BINS, n // 3)
    if b < MIN_BINS:
        cls = "converging" if slope <= 0 else "insufficient data"
        why = "store does not grow" if slope <= 0 else f"fewer than {3 * MIN_BINS} distinct times for {MIN_BINS} bins"
        return GrowthFit(classification=cls, reason=why, slope=slope, slope_se=slope_se, **empty)
    edges = np.linspace(t[0], t[-1], b + 1)
    idx = np.searchsorted(t, edges, side="right") - 1
    at_edges = s[np.clip(idx, 0, n - 1)]
    width = float(edges[1] - edges[0])
    rates = np.diff(at_edges) / width
    centres = 0.5 * (edges[:-1] + edges[1:])
    trend, trend_se = _ols_slope(centres, rates)
    q = float(stats.t.ppf(0.5 + level / 2, b - 2))
    lo, hi = trend - q * trend_se, trend + q * trend_se
    mean_rate = float(np.mean(rates))
    k = max(1, b // 4)
    r0, r1 = float(np.mean(rates[:k])), float(np.mean(rates[-k:]))
    change = (r1 - r0) / r0 if r0 > 0 else (math.inf if r1 > 0 else nan)
    common = dict(
        time_unit=time_unit, n_points=n, size_start=int(s[0]), size_end=int(s[-1]), slope=slope, slope_se=slope_se,
        n_bins=b, bin_width=width, rate_trend=trend,
        rate_trend_confidence_interval=confidence_interval(lo, hi, level), rate_change=change,
        initial_rate=r0, final_rate=r1, level=level, min_change=min_change,
    )
    if slope <= 0 or mean_rate <= 0:
        return GrowthFit(classification="converging", reason="store does not grow (slope <= 0)", **common)
    cls, why = _verdict(lo, hi, change, level, min_change)
    return GrowthFit(classification=cls, reason=why, **common)


def _checked(times, sizes, bins: int | None, level: float, min_change: float) -> tuple[np.ndarray, np.ndarray]:
    t = np.asarray(times, dtype=float)
    s = np.asarray(sizes, dtype=float)
    if t.shape != s.shape or t.ndim != 1:
        raise UsageError("times and sizes must be 1-d sequences of the same length", params=("times", "sizes"))
    check_range("level", level, lo=0, hi=1, lo_open=True, hi_open=True)
    check_range("min_change", min_change, lo=0)
    if bins is not None:
        check_range("bins", bins, lo=MIN_BINS)
    return t, s


def _verdict(lo: float, hi: float, change: float, level: float, min_change: float) -> tuple[str, str]:
    """accelerating / converging / linear of a growing store, from the rate trend's interval and change."""
    pct = f"{100 * level:g}%"
    if lo > 0 and change >= min_change:
        return "accelerating", (f"growth rate rises ({pct} interval of its trend above 0; last-quarter rate "
                                f"{_pct(change)} vs first)")
    if hi < 0 and change <= -min_change:
        return "converging", (f"growth rate falls ({pct} interval of its trend below 0; last-quarter rate "
                              f"{_pct(change)} vs first)")
    if lo > 0 or hi < 0:
        return "linear", f"rate trend significant but the rate changes by only {_pct(change)} (< {min_change:.0%})"
    return "linear", f"no significant trend in the growth rate ({pct} interval contains 0)"


def _pct(x: float) -> str:
    return "+inf" if x == math.inf else ("n/a" if math.isnan(x) else f"{x:+.0%}")


def _ols_slope(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """OLS slope and its standard error (0 when the fit is exact)."""
    xm = x - x.mean()
    sxx = float(xm @ xm)
    if sxx == 0:
        return float("nan"), float("nan")
    slope = float(xm @ (y - y.mean())) / sxx
    resid = y - y.mean() - slope * xm
    dof = x.size - 2
    if dof <= 0:
        return slope, float("nan")
    s2 = float(resid @ resid) / dof
    return slope, math.sqrt(max(s2, 0.0) / sxx)
