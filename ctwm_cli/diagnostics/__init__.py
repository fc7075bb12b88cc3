"""Concentration, temporal (PSD) and finite-size diagnostics of memory-access traces.

Imports numpy, scipy and pyarrow only; plots live in :mod:`ctwm_cli.plots` and import matplotlib
lazily.
"""

from .measures import (
    DEFINITIONS,
    Concentration,
    ConcentrationReport,
    concentration,
    concentration_of_traces,
    gini,
    sigma_top10,
    skewness,
    top_decile_size,
)
from .finite_size import (
    FamilyTrend,
    FiniteSizeReport,
    RunSigma,
    SizeCell,
    finite_size_of_traces,
    trend,
    uniform_null_sigma,
)
from .spectrum import PsdResult, psd_of_series, psd_of_trace

#: ``psd(series)`` is the estimator on a numeric series; ``psd_of_trace`` builds the series from a trace.
psd = psd_of_series

__all__ = [
    "DEFINITIONS",
    "Concentration",
    "ConcentrationReport",
    "FamilyTrend",
    "FiniteSizeReport",
    "PsdResult",
    "RunSigma",
    "SizeCell",
    "concentration",
    "concentration_of_traces",
    "finite_size_of_traces",
    "gini",
    "psd",
    "psd_of_series",
    "psd_of_trace",
    "sigma_top10",
    "skewness",
    "top_decile_size",
    "trend",
    "uniform_null_sigma",
]
