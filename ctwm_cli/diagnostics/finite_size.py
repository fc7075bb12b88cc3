"""Finite-size trend of top-decile concentration (paper Section 5.1, Table 1).

``sigma`` picks the reading of σ_top10 (:data:`~ctwm_cli.diagnostics.measures.SIGMA_VARIANTS`):
``log`` (default, scale-free), ``raw`` (the paper's words: "the standard deviation of the top 10%
access counts") or ``cv`` (sd / mean of the top-decile counts). The trend, the null and ``sigma`` of
every run use it; ``sigma_raw`` is always the raw one.

For every (family, size) cell: σ_top10 (see :mod:`ctwm_cli.diagnostics.measures`) of each run's
per-item counts, averaged over the cell's runs (with the standard deviation across runs). A trace
without a ``run`` column is one run. Per family: the OLS line σ = a + b · log(size) through the
per-size means, its slope b, the slope's standard error and R². The log is natural by default:
that reproduces the slopes of the paper's Table 1 from its σ columns (uniform: 0.505, R² 0.967).

Sampling noise: at a fixed number of events per run, σ_top10 grows with the number of items even
under uniform access (fewer events per item, noisier top decile). ``null_draws`` simulates each run
under uniform access (same items, same events) and reports the trend that noise alone produces
(``slope_null``): a finite-size trend means something only where it clearly exceeds that.

Inputs: several traces each labelled with a size (``A.parquet:100``), with an optional family name,
or one dataset whose rows carry the size (``size_col``) and the family (``group_by``), such as the
Synthetic Graph World grid ``OUT/family=F/size=N/seed=S/*.parquet``. Counts are aggregated in one
streaming pass per trace keyed by (family, size, run, event, item): memory grows with the number of
distinct (run, item) pairs, not with the number of events.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..common import vocabulary
from ..common.checks import check_choice
from ..common.errors import InputError, UsageError
from ..common.results import ToDict, result
from ..runtime.progress import ProgressCallback
from ..traces import ColumnMap
from ..traces.aggregate import event_kinds
from ._fit import ols
from .measures import SIGMA_VARIANTS, sigma_top, sigma_top_raw_sorted
from .sized_counts import aggregate_sized, resolve_events, store_capacity

#: What ``statistic`` says for each σ reading.
STATISTICS = {
    "log": "sigma_top10: sd (ddof=1) of ln(count) over the ceil(0.1 n) most-accessed items, per run",
    "raw": "sigma_top10 (raw): sd (ddof=1) of the counts of the ceil(0.1 n) most-accessed items, per run "
           "(the paper's wording; grows with trace length)",
    "cv": "sigma_top10 (cv): sd (ddof=1) / mean of the counts of the ceil(0.1 n) most-accessed items, per run",
}

LOG_BASES = dict(zip(vocabulary.LOG_BASES, (math.e, 10.0, 2.0), strict=True))


@result
class RunSigma(ToDict):
    """σ_top10 of one run; ``sigma_null`` is its mean under uniform access (NaN when not simulated)."""

    family: str
    size: float
    run: str
    sigma: float
    n_items: int
    n_events: int
    sigma_null: float = math.nan
    sigma_raw: float = math.nan  # the paper's raw-count statistic (sd of the top-decile counts)


@result
class SizeCell(ToDict):
    """σ_top10 of one (family, size) cell: mean and standard deviation (ddof=1) over its runs."""

    family: str
    size: float
    sigma: float
    sigma_sd: float
    n_runs: int
    n_runs_undefined: int
    mean_items: float
    sigma_null: float = math.nan
    sigma_raw: float = math.nan  # mean over the runs of the paper's raw-count statistic


@result
class FamilyTrend(ToDict):
    """One row of Table 1: σ per size and the OLS slope of σ against log(size)."""

    family: str
    sizes: tuple[float, ...]
    sigma: tuple[float, ...]
    sigma_sd: tuple[float, ...]
    n_runs: tuple[int, ...]
    slope: float
    slope_se: float
    intercept: float
    r2: float
    log_base: str
    sigma_null: tuple[float, ...] = ()
    slope_null: float = math.nan
    sigma_raw: tuple[float, ...] = ()  # the paper's raw-count statistic per size (not scale-free)
    slope_raw: float = math.nan


@result
class FiniteSizeReport(ToDict):
    """Finite-size trend per family (``families``) and the cells behind it."""

    statistic: str = STATISTICS["log"]
    statistic_raw: str = "sigma_raw: the paper's Table 1 statistic, sd (ddof=1) of the raw top-decile counts"
    log_base: str
    events: tuple[str, ...]
    null_draws: int = 0
    seed: int | None = None
    #: Store capacities the traces ran with: read from their world manifests (``_manifest.json`` of a
    #: grid, ``manifest.json`` beside a run's trace), else the ``capacity`` the caller stated.
    store_capacity: tuple[int, ...] = ()
    capacity_source: str = "unknown"
    families: tuple[FamilyTrend, ...]
    cells: tuple[SizeCell, ...]
    runs: tuple[RunSigma, ...] = ()
    sigma_variant: str = "log"


# ---------------------------------------------------------------------------------------------
# argument parsing


def parse_sized_trace(text: str) -> tuple[str, float | None]:
    """``PATH:SIZE`` -> (path, size); a plain path (or one whose suffix is not a number) -> (path, None)."""
    path, sep, tail = str(text).rpartition(":")
    if sep and path:
        try:
            size = float(tail)
        except ValueError:
            return str(text), None
        if not math.isfinite(size) or size <= 0:
            raise UsageError(f"trace size must be a positive number, got {tail!r} in {text!r}", params=("traces",))
        return path, size
    return str(text), None


def _check_log_base(log_base: str) -> float:
    check_choice("log_base", log_base, LOG_BASES)
    return LOG_BASES[log_base]


# ---------------------------------------------------------------------------------------------
# the trend from cells


def trend(
    cells: Sequence[SizeCell],
    *,
    log_base: str = "e",
) -> tuple[FamilyTrend, ...]:
    """One :class:`FamilyTrend` per family: OLS of the cells' σ on log(size) (cells with NaN σ are skipped)."""
    base = _check_log_base(log_base)
    families = sorted({c.family for c in cells})
    out = []
    for fam in families:
        mine = sorted((c for c in cells if c.family == fam), key=lambda c: c.size)
        fit, fit_null, fit_raw = (_fit_on_log_size(mine, field, base) for field in ("sigma", "sigma_null", "sigma_raw"))
        out.append(
            FamilyTrend(
                family=fam,
                sizes=tuple(c.size for c in mine),
                sigma=tuple(c.sigma for c in mine),
                sigma_sd=tuple(c.sigma_sd for c in mine),
                n_runs=tuple(c.n_runs for c in mine),
                slope=fit.slope,
                slope_se=fit.slope_se,
                intercept=fit.intercept,
                r2=fit.r2,
                log_base=log_base,
                sigma_null=tuple(c.sigma_null for c in mine),
                slope_null=fit_null.slope,
                sigma_raw=tuple(c.sigma_raw for c in mine),
                slope_raw=fit_raw.slope,
            )
        )
    return tuple(out)


def _fit_on_log_size(cells: Sequence[SizeCell], field: str, base: float):
    """OLS of ``field`` on log_base(size) over the cells where it is finite."""
    ok = [c for c in cells if math.isfinite(getattr(c, field))]
    return ols(np.log([c.size for c in ok]) / math.log(base), np.array([getattr(c, field) for c in ok]))


def cells_from_runs(runs: Sequence[RunSigma]) -> tuple[SizeCell, ...]:
    """Pool runs into per-(family, size) cells: mean and sd of σ over the runs where it is defined."""
    groups: dict[tuple[str, float], list[RunSigma]] = {}
    for r in runs:
        groups.setdefault((r.family, r.size), []).append(r)
    cells = []
    for (fam, size), vals in sorted(groups.items()):
        s = np.array([v.sigma for v in vals], dtype=np.float64)
        fin = s[np.isfinite(s)]
        nul = np.array([v.sigma_null for v in vals], dtype=np.float64)
        nul = nul[np.isfinite(nul)]
        raw = np.array([v.sigma_raw for v in vals], dtype=np.float64)
        raw = raw[np.isfinite(raw)]
        cells.append(
            SizeCell(
                family=fam,
                size=size,
                sigma=float(fin.mean()) if fin.size else math.nan,
                sigma_sd=float(fin.std(ddof=1)) if fin.size > 1 else math.nan,
                n_runs=len(vals),
                n_runs_undefined=int(s.size - fin.size),
                mean_items=float(np.mean([v.n_items for v in vals])),
                sigma_null=float(nul.mean()) if nul.size else math.nan,
                sigma_raw=float(raw.mean()) if raw.size else math.nan,
            )
        )
    return tuple(cells)


# ---------------------------------------------------------------------------------------------
# traces


def finite_size_of_traces(
    traces: Sequence[str],
    columns: ColumnMap | None = None,
    *,
    family: str | None = None,
    size_col: str | None = None,
    group_by: str | None = None,
    events: Sequence[str] | None = None,
    log_base: str = "e",
    null_draws: int = 0,
    seed: int | None = None,
    capacity: int | None = None,
    sigma: str = "log",
    progress: ProgressCallback | None = None,
) -> FiniteSizeReport:
    """Finite-size trend of σ_top10 from labelled traces (``PATH:SIZE``) or a dataset with ``size_col``.

    ``null_draws`` > 0 also simulates each run under uniform access (a multinomial draw of the run's
    events over its items, repeated ``null_draws`` times, seeded by ``seed``): σ_top10 then measures
    only sampling noise, which grows with size when the number of events per run is fixed. The
    null's slope (``slope_null``) is the trend that sampling noise alone would produce.

    The trend depends on the store capacity of the runs (the finite store bounds how many items the
    retriever can ever return), so the report states it: from the traces' world manifests when they
    have one, else ``capacity`` (the caller's statement), else ``unknown``.
    """
    _check_log_base(log_base)
    check_choice("sigma", sigma, SIGMA_VARIANTS)
    if not isinstance(null_draws, (int, np.integer)) or isinstance(null_draws, bool) or null_draws < 0:
        raise UsageError(f"null_draws must be a non-negative integer, got {null_draws!r}", params=("null_draws",))
    if not traces:
        raise UsageError("give at least one trace", params=("traces",))
    events = event_kinds(events)
    if family is not None and group_by is not None:
        raise UsageError("family and group_by exclude each other: families come from one or the other",
                         params=("family", "group_by"))
    specs = [parse_sized_trace(t) for t in traces]
    for text, (_path, size) in zip(traces, specs, strict=True):
        if size_col is None and size is None:
            raise UsageError(f"trace {text!r} has no size: write it as PATH:SIZE, or give size_col",
                             params=("size_col",))
        if size_col is not None and size is not None:
            raise UsageError(f"trace {text!r} has a size but size_col is given: use one or the other",
                             params=("size_col",))
    tables = []
    for path, size in specs:
        tables.append(aggregate_sized(path, columns, size=size, family=family, size_col=size_col, group_by=group_by,
                                 progress=progress))
    table = pa.concat_tables(tables)
    chosen = resolve_events(table, events, ", ".join(p for p, _ in specs))
    table = table.filter(pc.is_in(table.column("event"), value_set=pa.array(chosen)))
    table = table.group_by(["family", "size", "run", "item"]).aggregate([("n", "sum")])
    runs = _per_run_sigma(table, sigma)
    if not runs:
        raise InputError(f"no events of kind {', '.join(chosen)} to measure")
    if null_draws:
        children = np.random.SeedSequence(seed).spawn(len(runs))
        runs = [
            dataclasses.replace(r, sigma_null=uniform_null_sigma(r.n_items, r.n_events, null_draws,
                                                                 rng=np.random.default_rng(ss), sigma=sigma))
            for r, ss in zip(runs, children, strict=True)
        ]
    cells = cells_from_runs(runs)
    capacities, capacity_source = store_capacity(specs, capacity)
    return FiniteSizeReport(
        store_capacity=capacities,
        capacity_source=capacity_source,
        log_base=log_base,
        events=chosen,
        null_draws=int(null_draws),
        seed=seed if null_draws else None,
        families=trend(cells, log_base=log_base),
        cells=cells,
        runs=tuple(runs),
        statistic=STATISTICS[sigma],
        sigma_variant=sigma,
    )


def uniform_null_sigma(
    n_items: int, n_events: int, draws: int, *, rng: np.random.Generator | int | None = None, sigma: str = "log"
) -> float:
    """Mean σ_top10 of ``draws`` multinomial samples of ``n_events`` accesses spread uniformly over ``n_items``."""
    rng = np.random.default_rng(rng)
    if n_items < 1 or draws < 1:
        return math.nan
    p = np.full(n_items, 1.0 / n_items)
    vals = [sigma_top(np.sort(rng.multinomial(n_events, p))[::-1].astype(np.float64), sigma) for _ in range(draws)]
    vals = [v for v in vals if math.isfinite(v)]
    return float(np.mean(vals)) if vals else math.nan


def _per_run_sigma(table: pa.Table, variant: str = "log") -> list[RunSigma]:
    """σ_top10 of each (family, size, run) group of an aggregated ``(family, size, run, item, n_sum)`` table."""
    if table.num_rows == 0:
        return []

    def codes(name: str) -> tuple[np.ndarray, list[Any]]:
        enc = pc.dictionary_encode(table.column(name)).combine_chunks()
        return enc.indices.to_numpy(zero_copy_only=False), enc.dictionary.to_pylist()

    fam_c, fam_v = codes("family")
    run_c, run_v = codes("run")
    size = table.column("size").to_numpy()
    counts = table.column("n_sum").to_numpy().astype(np.float64)
    order = np.lexsort((-counts, run_c, size, fam_c))
    fam_c, run_c, size, counts = fam_c[order], run_c[order], size[order], counts[order]
    change = np.flatnonzero((np.diff(fam_c) != 0) | (np.diff(size) != 0) | (np.diff(run_c) != 0)) + 1
    starts = np.concatenate([[0], change])
    ends = np.concatenate([change, [counts.size]])
    out = []
    for a, b in zip(starts, ends, strict=True):
        desc = counts[a:b]  # already sorted descending within the group
        out.append(
            RunSigma(
                family=str(fam_v[fam_c[a]]),
                size=float(size[a]),
                run=str(run_v[run_c[a]]),
                sigma=sigma_top(desc, variant),
                sigma_raw=sigma_top_raw_sorted(desc),
                n_items=int(b - a),
                n_events=int(desc.sum()),
            )
        )
    # Arrow's group-by order is not deterministic: sort, so seeds map to the same runs every time.
    out.sort(key=lambda r: (r.family, r.size, r.run))
    return out
