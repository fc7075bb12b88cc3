"""Score intervals of binomial proportions, shared by the health metrics and the calibration studies.

Score intervals, not Wald: at small counts and at 0 or 1 successes the Wald interval collapses to zero
width, which would be printed as if it were a confidence interval.
"""

from __future__ import annotations

import math
from statistics import NormalDist

from ..common.results import ToDict, result


@result
class ConfidenceInterval(ToDict):
    """The vocabulary's one shape of an interval (README "Vocabulary"): ``{low, high, level}``, ``level`` the
    confidence level (0.95), never a significance level. A result with no interval formed writes null."""

    low: float
    high: float
    level: float

    def negated(self) -> ConfidenceInterval:
        """The interval of ``-x`` (a reduction ``1 - T/B`` from the interval of the relative change ``T/B - 1``)."""
        return ConfidenceInterval(low=-self.high, high=-self.low, level=self.level)


def contains(low: float, high: float, estimate: float) -> bool:
    """``low <= estimate <= high`` up to rounding (12 significant digits of the largest magnitude)."""
    slack = 1e-12 * max(1.0, abs(low), abs(high), abs(estimate))
    return low - slack <= estimate <= high + slack


def confidence_interval(low: float | None, high: float | None, level: float, *,
                        estimate: float | None = None) -> ConfidenceInterval | None:
    """The interval ``[low, high]`` at confidence ``level``, or ``None`` when it was not formed (a bound is None).
    With ``estimate``, an interval that excludes it is a bug of the caller (an interval must hold its own point
    estimate) and raises ``ValueError``."""
    if low is None or high is None:
        return None
    if estimate is not None and not contains(low, high, estimate):
        raise ValueError(f"interval [{low!r}, {high!r}] excludes its estimate {estimate!r}")
    return ConfidenceInterval(low=float(low), high=float(high), level=float(level))


def wilson_interval(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion k/n; ``(nan, nan)`` when n = 0 (nothing observed)."""
    if n == 0:
        return math.nan, math.nan
    p = k / n
    den = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / den
    half = z / den * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def newcombe_difference(k1: int, n1: int, k2: int, n2: int, level: float = 0.95) -> tuple[float, float]:
    """Newcombe's hybrid score interval (1998, method 10) for p1 - p2 from two Wilson intervals;
    sound at small counts and at 0 or 1, where the Wald interval collapses to zero width."""
    z = float(NormalDist().inv_cdf(0.5 + level / 2))
    p1, p2 = k1 / n1, k2 / n2
    l1, u1 = wilson_interval(k1, n1, z)
    l2, u2 = wilson_interval(k2, n2, z)
    d = p1 - p2
    return d - math.hypot(p1 - l1, u2 - p2), d + math.hypot(u1 - p1, p2 - l2)
