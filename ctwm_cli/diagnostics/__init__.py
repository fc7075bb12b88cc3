"""Concentration, temporal (PSD) and finite-size diagnostics of memory-access traces.

Imports numpy, scipy and pyarrow only; plots live in :mod:`ctwm_cli.plots` and import matplotlib
lazily. Public names load on first use (PEP 562, as in :mod:`ctwm_cli`): ``ctwm audit`` needs only
``measures`` (the concentration beside an audit), not the finite-size or PSD modules.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

#: public name -> (submodule, its name there). ``psd(series)`` is the estimator on a numeric series;
#: ``psd_of_trace`` builds the series from a trace.
LAZY: dict[str, tuple[str, str]] = {
    **{name: ("measures", name) for name in (
        "DEFINITIONS", "Concentration", "ConcentrationReport", "concentration", "concentration_of_traces", "gini",
        "sigma_top10", "skewness", "top_decile_size")},
    **{name: ("finite_size", name) for name in (
        "FamilyTrend", "FiniteSizeReport", "RunSigma", "SizeCell", "finite_size_of_traces", "trend",
        "uniform_null_sigma")},
    **{name: ("spectrum", name) for name in ("PsdResult", "psd_of_series", "psd_of_trace")},
    "psd": ("spectrum", "psd_of_series"),
}

__all__ = sorted(LAZY)

if TYPE_CHECKING:  # static checkers and IDEs see the real names
    from .finite_size import FamilyTrend as FamilyTrend
    from .finite_size import FiniteSizeReport as FiniteSizeReport
    from .finite_size import RunSigma as RunSigma
    from .finite_size import SizeCell as SizeCell
    from .finite_size import finite_size_of_traces as finite_size_of_traces
    from .finite_size import trend as trend
    from .finite_size import uniform_null_sigma as uniform_null_sigma
    from .measures import DEFINITIONS as DEFINITIONS
    from .measures import Concentration as Concentration
    from .measures import ConcentrationReport as ConcentrationReport
    from .measures import concentration as concentration
    from .measures import concentration_of_traces as concentration_of_traces
    from .measures import gini as gini
    from .measures import sigma_top10 as sigma_top10
    from .measures import skewness as skewness
    from .measures import top_decile_size as top_decile_size
    from .spectrum import PsdResult as PsdResult
    from .spectrum import psd_of_series as psd_of_series
    from .spectrum import psd_of_trace as psd_of_trace

    psd = psd_of_series


def __getattr__(name: str) -> Any:
    where = LAZY.get(name)
    if where is None:
        raise AttributeError(f"module 'ctwm_cli.diagnostics' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{where[0]}"), where[1])
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *LAZY})
