"""Finite-size trend of top-decile concentration (paper Section 5.1, Table 1).

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

from ..errors import InputError, UsageError
from ..progress import ProgressCallback
from ..results import ToDict, result
from ..traces import ColumnMap, TraceReader, open_trace
from ..traces.aggregate import DEFAULT_COUNTED
from ..traces.schema import DEFAULT_EVENT
from ._fit import ols
from .measures import _sigma_top

LOG_BASES = {"e": math.e, "10": 10.0, "2": 2.0}
DEFAULT_FAMILY = "all"
_MERGE_ROWS = 1 << 20


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


@result
class FiniteSizeReport(ToDict):
    """Finite-size trend per family (``families``) and the cells behind it."""

    statistic: str = "sigma_top10: sd (ddof=1) of ln(count) over the ceil(0.1 n) most-accessed items, per run"
    log_base: str
    events: tuple[str, ...]
    null_draws: int = 0
    seed: int | None = None
    families: tuple[FamilyTrend, ...]
    cells: tuple[SizeCell, ...]
    runs: tuple[RunSigma, ...] = ()


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
            raise UsageError(f"trace size must be a positive number, got {tail!r} in {text!r}")
        return path, size
    return str(text), None


def _check_log_base(log_base: str) -> float:
    if log_base not in LOG_BASES:
        raise UsageError(f"log base must be one of {', '.join(LOG_BASES)}, got {log_base!r}")
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
        ok = [c for c in mine if math.isfinite(c.sigma)]
        fit = ols(np.log([c.size for c in ok]) / math.log(base), np.array([c.sigma for c in ok]))
        nul = [c for c in mine if math.isfinite(c.sigma_null)]
        fit_null = ols(np.log([c.size for c in nul]) / math.log(base), np.array([c.sigma_null for c in nul]))
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
            )
        )
    return tuple(out)


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
    progress: ProgressCallback | None = None,
) -> FiniteSizeReport:
    """Finite-size trend of σ_top10 from labelled traces (``PATH:SIZE``) or a dataset with ``size_col``.

    ``null_draws`` > 0 also simulates each run under uniform access (a multinomial draw of the run's
    events over its items, repeated ``null_draws`` times, seeded by ``seed``): σ_top10 then measures
    only sampling noise, which grows with size when the number of events per run is fixed. The
    null's slope (``slope_null``) is the trend that sampling noise alone would produce.
    """
    _check_log_base(log_base)
    if not isinstance(null_draws, (int, np.integer)) or isinstance(null_draws, bool) or null_draws < 0:
        raise UsageError(f"null draws must be a non-negative integer, got {null_draws!r}")
    if not traces:
        raise UsageError("give at least one trace")
    if isinstance(events, str):
        raise UsageError("events must be a sequence of event kinds, not a string")
    if family is not None and group_by is not None:
        raise UsageError("--family and --group-by exclude each other: families come from one or the other")
    specs = [parse_sized_trace(t) for t in traces]
    for text, (path, size) in zip(traces, specs, strict=True):
        if size_col is None and size is None:
            raise UsageError(f"trace {text!r} has no size: write it as PATH:SIZE, or give --size-col")
        if size_col is not None and size is not None:
            raise UsageError(f"trace {text!r} has a size but --size-col is given: use one or the other")
    tables = []
    for path, size in specs:
        tables.append(_aggregate(path, columns, size=size, family=family, size_col=size_col, group_by=group_by, progress=progress))
    table = pa.concat_tables(tables)
    chosen = _resolve_events(table, events, ", ".join(p for p, _ in specs))
    table = table.filter(pc.is_in(table.column("event"), value_set=pa.array(chosen)))
    table = table.group_by(["family", "size", "run", "item"]).aggregate([("n", "sum")])
    runs = _per_run_sigma(table)
    if not runs:
        raise InputError(f"no events of kind {', '.join(chosen)} to measure")
    if null_draws:
        children = np.random.SeedSequence(seed).spawn(len(runs))
        runs = [
            dataclasses.replace(r, sigma_null=uniform_null_sigma(r.n_items, r.n_events, null_draws, rng=np.random.default_rng(ss)))
            for r, ss in zip(runs, children, strict=True)
        ]
    cells = cells_from_runs(runs)
    return FiniteSizeReport(
        log_base=log_base,
        events=chosen,
        null_draws=int(null_draws),
        seed=seed if null_draws else None,
        families=trend(cells, log_base=log_base),
        cells=cells,
        runs=tuple(runs),
    )


def uniform_null_sigma(n_items: int, n_events: int, draws: int, *, rng: np.random.Generator | int | None = None) -> float:
    """Mean σ_top10 of ``draws`` multinomial samples of ``n_events`` accesses spread uniformly over ``n_items``."""
    rng = np.random.default_rng(rng)
    if n_items < 1 or draws < 1:
        return math.nan
    p = np.full(n_items, 1.0 / n_items)
    vals = [_sigma_top(np.sort(rng.multinomial(n_events, p))[::-1].astype(np.float64)) for _ in range(draws)]
    vals = [v for v in vals if math.isfinite(v)]
    return float(np.mean(vals)) if vals else math.nan


def _aggregate(
    path: str,
    columns: ColumnMap | None,
    *,
    size: float | None,
    family: str | None,
    size_col: str | None,
    group_by: str | None,
    progress: ProgressCallback | None,
) -> pa.Table:
    """One streaming pass: counts keyed by (family, size, run, event, item)."""
    canonical = set(ColumnMap().canonical())
    keep = tuple(dict.fromkeys(c for c in (size_col, group_by) if c is not None and c not in canonical))
    reader = open_trace(path, columns, keep=keep)
    keys = ["family", "size", "run", "event", "item"]
    merged: pa.Table | None = None
    parts: list[pa.Table] = []
    pending = 0
    rows = 0
    for batch in reader.batches():
        n = batch.num_rows
        rows += n
        cols = batch.column_names
        fam = _column(batch, group_by, reader) if group_by else pa.repeat(family or DEFAULT_FAMILY, n)
        if size_col:
            sz = _sizes(_column(batch, size_col, reader), size_col, reader.source)
        else:
            sz = pa.array(np.full(n, size, dtype=np.float64))
        run = pc.fill_null(batch.column("run"), "") if "run" in cols else pa.repeat("", n)
        run = pc.if_else(pc.equal(run, ""), reader.source, pc.binary_join_element_wise(reader.source, run, "#"))
        event = pc.fill_null(batch.column("event"), DEFAULT_EVENT) if "event" in cols else pa.repeat(DEFAULT_EVENT, n)
        weight = batch.column("count") if "count" in cols else pa.array(np.ones(n, dtype=np.int64))
        part = pa.table({"family": pc.fill_null(fam, ""), "size": sz, "run": run, "event": event, "item": batch.column("item"), "n": weight})
        parts.append(part.group_by(keys).aggregate([("n", "sum")]).rename_columns([*keys, "n"]))
        pending += parts[-1].num_rows
        if pending > max(_MERGE_ROWS, merged.num_rows if merged is not None else 0):
            merged = _merge([merged, *parts] if merged is not None else parts, keys)
            parts, pending = [], 0
        if progress is not None:
            progress(rows, None)
    if rows == 0:
        raise InputError(f"{reader.source}: trace is empty (no rows)")
    return _merge([merged, *parts] if merged is not None else parts, keys)


def _merge(tables: Sequence[pa.Table], keys: list[str]) -> pa.Table:
    t = pa.concat_tables(tables)
    return t.group_by(keys).aggregate([("n", "sum")]).rename_columns([*keys, "n"])


def _column(batch: pa.Table, name: str, reader: TraceReader) -> pa.ChunkedArray:
    canonical = {src: canon for canon, src in reader.columns.canonical().items()}
    col_name = canonical.get(name, name)
    if col_name not in batch.column_names:
        found = ", ".join(reader.columns_found)
        raise InputError(f"{reader.source}: missing column {name!r} (columns found: {found})")
    col = batch.column(col_name)
    return col if pa.types.is_string(col.type) else pc.cast(col, pa.string())


def _sizes(col: pa.ChunkedArray, name: str, source: str) -> pa.ChunkedArray:
    if col.null_count:
        raise InputError(f"{source}: missing value in size column {name!r}")
    try:
        sz = pc.cast(col, pa.float64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        raise InputError(f"{source}: size column {name!r} must hold numbers") from None
    if len(sz) and (pc.min(sz).as_py() <= 0 or not math.isfinite(pc.max(sz).as_py())):
        raise InputError(f"{source}: size column {name!r} must hold positive numbers")
    return sz


def _resolve_events(table: pa.Table, events: Sequence[str] | None, source: str) -> tuple[str, ...]:
    present = set(pc.unique(table.column("event")).to_pylist())
    if events:
        if not present.intersection(events):
            raise InputError(f"{source}: no events of kind {', '.join(events)} (kinds found: {', '.join(sorted(present))})")
        return tuple(events)
    for ev in DEFAULT_COUNTED:
        if ev in present:
            return (ev,)
    raise InputError(
        f"{source}: no retrieve or inject events to count (kinds found: {', '.join(sorted(present))}); choose with --event"
    )


def _per_run_sigma(table: pa.Table) -> list[RunSigma]:
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
                sigma=_sigma_top(desc),
                n_items=int(b - a),
                n_events=int(desc.sum()),
            )
        )
    # Arrow's group-by order is not deterministic: sort, so seeds map to the same runs every time.
    out.sort(key=lambda r: (r.family, r.size, r.run))
    return out
