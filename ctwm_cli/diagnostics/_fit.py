"""Ordinary least squares of a straight line, shared by the PSD and finite-size fits."""

from __future__ import annotations

import math

import numpy as np

from ..common.results import ToDict, result


@result
class LineFit(ToDict):
    """Least-squares line ``y = intercept + slope * x``; ``slope_se`` is the OLS standard error."""

    slope: float
    intercept: float
    slope_se: float
    r2: float
    n: int


def ols(x: np.ndarray, y: np.ndarray) -> LineFit:
    """Fit ``y = a + b x`` by least squares. NaN slope with fewer than 2 distinct x; NaN SE with n <= 2."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    n = int(x.size)
    if n < 2:
        return LineFit(slope=math.nan, intercept=math.nan, slope_se=math.nan, r2=math.nan, n=n)
    xm, ym = x.mean(), y.mean()
    dx, dy = x - xm, y - ym
    sxx = float(dx @ dx)
    if sxx <= 0:
        return LineFit(slope=math.nan, intercept=math.nan, slope_se=math.nan, r2=math.nan, n=n)
    slope = float(dx @ dy) / sxx
    intercept = float(ym - slope * xm)
    resid = dy - slope * dx
    ssr = float(resid @ resid)
    sst = float(dy @ dy)
    se = math.sqrt(ssr / (n - 2) / sxx) if n > 2 else math.nan
    r2 = 1.0 - ssr / sst if sst > 0 else math.nan
    return LineFit(slope=slope, intercept=intercept, slope_se=se, r2=r2, n=n)
