"""Temporal structure: the power spectral density of a per-step access series and its exponent β.

Method (every choice is a parameter; defaults stated here and in ``ctwm psd --help``):

- Series. From an event trace with ``step``: ``core`` (default) = accesses per step to the top-decile
  items, i.e. the ``ceil(0.1 n)`` items with the most accesses over the whole trace (ties broken by
  item id, ascending); ``total`` = counted events per step; ``item:ID`` = accesses per step to one
  item. Every step from the first to the last is a sample; steps without an access count 0.
- Spectrum. Welch's method (``scipy.signal.welch``), Hann window, 50% overlap, one-sided density,
  frequencies in cycles per step (Nyquist = 0.5). ``nperseg`` default: the largest power of two
  <= N/8 (about 15 averaged segments), at least 64. ``detrend='constant'`` (each segment's mean is
  removed; a linear detrend would flatten the lowest bins of a random walk).
- Fit. Ordinary least squares of log10 P on log10 f over the band ``[lo, hi]``; default
  ``lo = 3 / nperseg`` (skips the zero-frequency bin and the two lowest bins, which the window's
  leakage and the segment detrending bias) and ``hi = 0.125`` cycles/step (a quarter of Nyquist: above
  it a discrete random walk's spectrum 1/(4 sin^2(pi f)) bends away from f^-2 and counting noise
  dominates). β = -slope. ``beta_se`` is the OLS standard error treating bins as independent (Hann
  neighbours are correlated, so it is optimistic); R² is the fit's coefficient of determination.
- ``in_beta_band``: whether β lies in the 1/f band, default [0.5, 1.5]. White noise gives β ≈ 0,
  1/f ("pink") noise β ≈ 1, a random walk β ≈ 2. Nothing forces 1/f: the paper's random-walk traces
  measured β between 0.048 and 0.176.
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
from ..common.errors import InputError, UsageError
from ..common.results import ToDict, result
from ..common.vocabulary import BETA_BAND as DEFAULT_BETA_BAND
from ..runtime.progress import ProgressCallback
from ..traces import ColumnMap, item_counts, open_trace, scan_trace
from ..traces.aggregate import DEFAULT_COUNTED, event_kinds
from ..traces.schema import DEFAULT_EVENT
from ._fit import ols
from .measures import top_decile_size

MIN_STEPS = 256
MAX_STEPS = 100_000_000
MIN_NPERSEG = 64
MIN_FIT_BINS = 5
DEFAULT_HI = 0.125
DEFAULT_LO_BINS = 3


@result
class PsdResult(ToDict):
    """PSD exponent β of one series, with the fit and the choices that produced it."""

    source: str | None = None
    series: str
    run: str | None = None
    events: tuple[str, ...] = ()
    core_items: int | None = None
    n_steps: int
    step_min: int | None = None
    step_max: int | None = None
    series_total: float
    nperseg: int
    window: str = "hann"
    detrend: str
    band: tuple[float, float]
    n_fit_bins: int
    beta: float
    beta_se: float
    r2: float
    intercept: float
    beta_band: tuple[float, float]
    in_beta_band: bool
    #: Welch frequencies (cycles/step) and densities, and which bins the fit used; for plots only.
    frequencies: np.ndarray
    power: np.ndarray
    fit_mask: np.ndarray

    def to_dict(self) -> dict[str, Any]:
        skip = {"frequencies", "power", "fit_mask"}
        d = {k: v for k, v in ToDict.to_dict(self).items() if k not in skip}
        d["fit"] = "OLS of log10 P on log10 f over the band; beta = -slope"
        return d


# ---------------------------------------------------------------------------------------------
# argument checks


def parse_band(text: str, name: str) -> tuple[float, float]:
    """Parse ``LO:HI`` into two floats (for ``--band`` and ``--beta-band``)."""
    lo, sep, hi = str(text).partition(":")
    try:
        if not sep:
            raise ValueError
        out = (float(lo), float(hi))
    except ValueError:
        raise UsageError(f"{name} expects LO:HI (two numbers), got {text!r}", params=(name,)) from None
    if not all(math.isfinite(v) for v in out) or out[0] >= out[1]:
        raise UsageError(f"{name} expects LO < HI, got {text!r}", params=(name,))
    return out


def check_psd_args(nperseg: int | None, band, beta_band, detrend: str) -> None:
    """Checks that do not need the series; raise :class:`UsageError` naming the parameter."""
    if detrend not in vocabulary.DETRENDS:
        raise UsageError(f"detrend must be 'constant' or 'linear', got {detrend!r}", params=("detrend",))
    bad_type = isinstance(nperseg, bool) or not isinstance(nperseg, (int, np.integer))
    if nperseg is not None and (bad_type or nperseg < 16):
        raise UsageError(f"nperseg must be an integer >= 16, got {nperseg!r}", params=("nperseg",))
    if band is not None:
        lo, hi = (float(band[0]), float(band[1]))
        if not (0 < lo < hi <= 0.5):
            raise UsageError(f"band must satisfy 0 < LO < HI <= 0.5 cycles/step, got {lo:g}:{hi:g}", params=("band",))
    blo, bhi = (float(beta_band[0]), float(beta_band[1]))
    if not blo < bhi:
        raise UsageError(f"beta_band must satisfy LO < HI, got {blo:g}:{bhi:g}", params=("beta_band",))


def _resolve_psd_args(n: int, nperseg: int | None, band) -> tuple[int, tuple[float, float]]:
    if n < MIN_STEPS:
        raise InputError(f"the series has {n} steps; a PSD exponent needs at least {MIN_STEPS}")
    if nperseg is None:
        nperseg = max(MIN_NPERSEG, 1 << math.floor(math.log2(n / 8)))
    nperseg = int(min(nperseg, n))
    if band is None:
        band = (DEFAULT_LO_BINS / nperseg, DEFAULT_HI)
    return nperseg, (float(band[0]), float(band[1]))


# ---------------------------------------------------------------------------------------------
# the estimator


def psd_of_series(
    series: Any,
    *,
    nperseg: int | None = None,
    detrend: str = "constant",
    band: tuple[float, float] | None = None,
    beta_band: tuple[float, float] = DEFAULT_BETA_BAND,
    label: str = "series",
    source: str | None = None,
) -> PsdResult:
    """Welch PSD of a numeric series (one sample per step) and its log-log slope β = -slope."""
    x = np.asarray(series, dtype=np.float64)
    if x.ndim != 1:
        raise UsageError(f"series must be one-dimensional, got shape {x.shape}", params=("series",))
    if not np.all(np.isfinite(x)):
        raise InputError("series contains NaN or infinity")
    check_psd_args(nperseg, band, beta_band, detrend)
    nperseg, band = _resolve_psd_args(x.size, nperseg, band)
    from scipy.signal import welch

    if np.ptp(x) == 0:
        where = f"{source}: " if source else ""
        raise InputError(f"{where}the {label} series is constant (same value every step); its spectrum has no exponent")
    f, p = welch(x, fs=1.0, window="hann", nperseg=nperseg, noverlap=nperseg // 2, detrend=detrend, scaling="density")
    mask = (f >= band[0] * (1 - 1e-12)) & (f <= band[1] * (1 + 1e-12)) & (p > 0)
    k = int(mask.sum())
    if k < MIN_FIT_BINS:
        where = f"{source}: " if source else ""
        raise InputError(
            f"{where}{label} series: only {k} Welch bins in the band {band[0]:.4g}:{band[1]:.4g} "
            f"(need {MIN_FIT_BINS}); widen band or use a longer trace", params=("band",)
        )
    lx, ly = np.log10(f[mask]), np.log10(p[mask])
    fit = ols(lx, ly)
    slope, intercept, se, r2 = fit.slope, fit.intercept, fit.slope_se, fit.r2
    beta = -slope
    return PsdResult(
        source=source,
        series=label,
        n_steps=int(x.size),
        series_total=float(x.sum()),
        nperseg=nperseg,
        detrend=detrend,
        band=(float(band[0]), float(band[1])),
        n_fit_bins=k,
        beta=beta,
        beta_se=se,
        r2=r2,
        intercept=intercept,
        beta_band=(float(beta_band[0]), float(beta_band[1])),
        in_beta_band=bool(beta_band[0] <= beta <= beta_band[1]),
        frequencies=f,
        power=p,
        fit_mask=mask,
    )


# ---------------------------------------------------------------------------------------------
# per-step series from a trace


class _StepSeries:
    """Accumulates weights per integer step in a growable array (memory grows with the step range)."""

    def __init__(self) -> None:
        self.base: int | None = None
        self.values = np.zeros(0, dtype=np.float64)

    def add(self, steps: np.ndarray, weights: np.ndarray | None) -> None:
        if steps.size == 0:
            return
        lo, hi = int(steps.min()), int(steps.max())
        if self.base is None:
            self.base = lo
        if lo < self.base:
            self.values = np.concatenate([np.zeros(self.base - lo), self.values])
            self.base = lo
        size = hi - self.base + 1
        if size > MAX_STEPS:
            raise InputError(f"steps span {size:,} values (more than {MAX_STEPS:,}); is the step column a timestamp?")
        if size > self.values.size:
            self.values = np.concatenate([self.values, np.zeros(max(size, 2 * self.values.size) - self.values.size)])
        binned = np.bincount(steps - self.base, weights=weights)
        self.values[: binned.size] += binned


def parse_series(spec: str) -> tuple[str, str | None]:
    """``core`` | ``total`` | ``item:ID`` -> (kind, item id)."""
    if spec in ("core", "total"):
        return spec, None
    if spec.startswith("item:") and len(spec) > 5:
        return "item", spec[5:]
    raise UsageError(f"series must be core, total or item:ID, got {spec!r}", params=("series",))


def psd_of_trace(
    path: str,
    columns: ColumnMap | None = None,
    *,
    series: str = "core",
    events: Sequence[str] | None = None,
    run: str | None = None,
    nperseg: int | None = None,
    detrend: str = "constant",
    band: tuple[float, float] | None = None,
    beta_band: tuple[float, float] = DEFAULT_BETA_BAND,
    progress: ProgressCallback | None = None,
) -> PsdResult:
    """Build a per-step series from an event trace and estimate its PSD exponent.

    ``series='core'`` reads the trace twice (first to rank items, then to bin steps), so it needs a
    file, not standard input. A trace with several runs needs ``run`` to pick one: steps of
    different runs are different clocks.
    """
    kind, item = parse_series(series)
    check_psd_args(nperseg, band, beta_band, detrend)
    events = event_kinds(events)
    if str(path) == "-" and kind == "core":
        raise UsageError("series core reads the trace twice and cannot read standard input; save it to a file",
                         params=("series",))
    core: pa.Array | None = None
    chosen: tuple[str, ...] | None = None
    if kind == "core":
        core, chosen = _core_items(path, columns, run, events, progress)
    reader = open_trace(path, columns)
    scan = _StepScan(reader.source, reader.columns, kind, item, core, run)
    rows = 0
    for batch in reader.batches():
        rows += batch.num_rows
        scan.feed(batch)
        if progress is not None:
            progress(rows, None)
    if rows == 0:
        raise InputError(f"{reader.source}: trace is empty (no rows)")
    lo, hi = scan.step_range()
    if chosen is None:
        chosen = _resolve(scan.per_event, events, reader.source, kind, item)
    values = scan.series(chosen, lo, hi, label=series)
    res = psd_of_series(values, nperseg=nperseg, detrend=detrend, band=band, beta_band=beta_band, label=series,
                        source=reader.source)
    return dataclasses.replace(res, run=run, events=tuple(chosen), core_items=None if core is None else len(core),
                               step_min=lo, step_max=hi)


def _core_items(path: str, columns: ColumnMap | None, run: str | None, events: Sequence[str] | None,
                progress: ProgressCallback | None) -> tuple[pa.Array, tuple[str, ...]]:
    """The top-decile items of the trace (of ``run``) and the event kinds that were counted."""
    reader = open_trace(path, columns)
    scan = scan_trace(reader, group_by="run" if run is not None else None, progress=progress)
    if run is None and (scan.runs or 0) > 1:
        raise UsageError(f"{reader.source}: trace holds {scan.runs} runs; choose one with run", params=("run",))
    groups = item_counts(scan, events)
    if run is not None:
        groups = [g for g in groups if g.group == run]
        if not groups:
            raise InputError(f"{reader.source}: no events of run {run!r}")
    ic = groups[0]
    return ic.items.slice(0, top_decile_size(ic.n_items)), ic.events


class _StepScan:
    """One read of an event trace: per event kind, accesses per step of the selected items, and the
    step range of the whole (run-selected) trace."""

    def __init__(self, source: str, columns: ColumnMap, kind: str, item: str | None, core: pa.Array | None,
                 run: str | None) -> None:
        self.source, self.columns, self.kind, self.item, self.core, self.run = source, columns, kind, item, core, run
        self.per_event: dict[str, _StepSeries] = {}
        self.runs: set[str] = set()
        self.lo: int | None = None
        self.hi: int | None = None

    def feed(self, batch: pa.RecordBatch) -> None:
        batch = self._select_run(batch)
        if batch.num_rows:
            mm = pc.min_max(batch.column("step")).as_py()
            self.lo = mm["min"] if self.lo is None else min(self.lo, mm["min"])
            self.hi = mm["max"] if self.hi is None else max(self.hi, mm["max"])
        if self.kind == "core":
            batch = batch.filter(pc.is_in(batch.column("item"), value_set=self.core))
        elif self.kind == "item":
            batch = batch.filter(pc.equal(batch.column("item"), self.item))
        cols = batch.column_names
        event = batch.column("event") if "event" in cols else pa.nulls(batch.num_rows, pa.string())
        event = pc.fill_null(event, DEFAULT_EVENT)
        weights = batch.column("count") if "count" in cols else None
        for ev in pc.unique(event).to_pylist():
            sel = pc.equal(event, ev)
            steps = pc.filter(batch.column("step"), sel).to_numpy().astype(np.int64, copy=False)
            w = None if weights is None else pc.filter(weights, sel).to_numpy().astype(np.float64)
            self.per_event.setdefault(ev, _StepSeries()).add(steps, w)

    def _select_run(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        cols = batch.column_names
        if "step" not in cols:
            raise InputError(f"{self.source}: no step column (remap with step_col); a PSD needs steps",
                             params=("step_col",))
        if batch.column("step").null_count:
            raise InputError(f"{self.source}: missing value in column {self.columns.step!r}")
        if self.run is not None and "run" not in cols:
            raise InputError(f"{self.source}: run given but the trace has no run column (remap with run_col)",
                             params=("run", "run_col"))
        if "run" not in cols:
            return batch
        if self.run is not None:
            return batch.filter(pc.equal(pc.fill_null(batch.column("run"), ""), self.run))
        self.runs.update(v for v in pc.unique(batch.column("run")).to_pylist() if v is not None)
        return batch

    def step_range(self) -> tuple[int, int]:
        if self.run is None and len(self.runs) > 1:
            raise UsageError(f"{self.source}: trace holds {len(self.runs)} runs; choose one with run",
                             params=("run",))
        if self.lo is None or self.hi is None:
            which = f" of run {self.run!r}" if self.run is not None else ""
            raise InputError(f"{self.source}: no rows{which}")
        if self.hi - self.lo + 1 > MAX_STEPS:
            raise InputError(
                f"{self.source}: steps span more than {MAX_STEPS:,} values; is the step column a timestamp?"
            )
        return self.lo, self.hi

    def series(self, chosen: Sequence[str], lo: int, hi: int, *, label: str) -> np.ndarray:
        """Accesses per step of the ``chosen`` kinds over every step from ``lo`` to ``hi`` (zeros included)."""
        acc = _StepSeries()
        for ev in chosen:
            s = self.per_event.get(ev)
            if s is not None and s.base is not None:
                acc.add(np.arange(s.base, s.base + s.values.size, dtype=np.int64), s.values)
        if acc.base is None:
            raise InputError(f"{self.source}: no {label} accesses of kind {', '.join(chosen)} to build a series from")
        values = np.zeros(hi - lo + 1)
        a = max(acc.base, lo)
        b = min(acc.base + acc.values.size - 1, hi)
        values[a - lo : b - lo + 1] = acc.values[a - acc.base : b - acc.base + 1]
        return values


def _resolve(per_event: dict[str, _StepSeries], events, source: str, kind: str, item) -> tuple[str, ...]:
    present = sorted(per_event)
    if events:
        if not any(e in per_event for e in events):
            what = f"item {item!r}" if kind == "item" else "the trace"
            found = ", ".join(present) or "none"
            raise InputError(f"{source}: no events of kind {', '.join(events)} for {what} (kinds found: {found})")
        return tuple(events)
    for ev in DEFAULT_COUNTED:
        if ev in per_event:
            return (ev,)
    if kind == "item" and not per_event:
        raise InputError(f"{source}: item {item!r} never occurs in the trace")
    raise InputError(
        f"{source}: no retrieve or inject events to count (kinds found: {', '.join(present)}); choose with events",
        params=("events",),
    )
