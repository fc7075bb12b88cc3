"""τ sweeps of the allocation (paper Section 5.6) with honest monotonicity checks.

What the theory guarantees, for fixed 1 <= K < M and τ increasing:

* core mass C(K, τ) strictly increases — Theorem A.4. Checked on the tail share, summed in log
  space, which stays resolvable when C is within rounding of one.
* Gini strictly increases — a corollary of Theorem A.4: for descending shares summing to one,
  ``G = (2·Σ_{k=1}^{M-1} C(k, τ) - (M - 1)) / M``, a positive combination of core masses at every
  k, each strictly increasing. (Proposition A.6 only gives the limit G -> 0 as τ -> 0.)
* max/median strictly increases for M >= 2 — Proposition A.3: it equals ``m^τ`` for odd M
  (median rank m), ``2 / ((M/2)^-τ + (M/2 + 1)^-τ)`` for even M.
* skewness: no guarantee. It is constant (0) for M = 2 and the paper proves nothing about it; its
  check is labelled "observed".

A check reports whether the computed sequence moved the theory's way at every step. A guaranteed
metric that fails is a sign of floating-point resolution (τ steps too fine for the metric's
float64 value near a bound), which ``note`` says.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..common.errors import UsageError
from ..common.results import ToDict, result
from .allocate import Allocation, RenamedConcentration, allocate_unchecked
from .rank import MAX_SWEEP_CELLS, check_budget, check_core, check_items, check_tau

#: metric -> (basis label, key used for the comparison)
CHECK_BASIS: dict[str, tuple[str, str]] = {
    "core_mass": ("guaranteed (Thm A.4)", "log_tail_share"),
    "gini": ("guaranteed (Thm A.4 at every K)", "gini"),
    "max_over_median": ("guaranteed (Prop A.3)", "log_max_over_median"),
    "skewness": ("observed (no theorem)", "skewness"),
}


@result
class SweepRow(RenamedConcentration, ToDict):
    """One τ of a sweep: the allocation's summary numbers and the per-row check."""

    tau: float
    core_mass: float
    tail_share: float
    log_tail_share: float
    gini: float
    skewness: float
    max_over_median: float
    log_max_over_median: float
    top_slots: int  # slots of rank 1
    tail_slots: int
    items_in_prompt: int
    check: str  # "–" for the first row, "ok", or the metrics that did not increase from the previous τ


@result
class MonotoneCheck(ToDict):
    """Whether one metric increased at every step of the sweep, and on what grounds it should."""

    metric: str
    basis: str
    increasing: bool  # strictly increasing at every step
    non_decreasing: bool
    steps: int
    failures: tuple[float, ...]  # the τ values at which the metric did not increase
    note: str


@result
class TauSweep(ToDict):
    """``tau_sweep`` result: one row per τ (ascending) and one monotonicity check per metric."""

    n_items: int
    core: int
    budget: int
    taus: tuple[float, ...]
    results: tuple[SweepRow, ...]  # one per τ (JSON ``results``; ``rows`` before the rename)
    checks: tuple[MonotoneCheck, ...]

    @property
    def rows(self) -> tuple[SweepRow, ...]:
        """Former name of :attr:`results` (kept for library callers)."""
        return self.results

    @property
    def all_guaranteed_hold(self) -> bool:
        return all(c.increasing for c in self.checks if c.basis.startswith("guaranteed"))


def parse_sweep(spec: str, name: str = "sweep") -> tuple[float, ...]:
    """``START:STOP:N`` -> N evenly spaced τ from START to STOP inclusive (N >= 2, 0 < START < STOP)."""
    parts = str(spec).split(":")
    if len(parts) != 3:
        raise UsageError(f"{name} expects START:STOP:N (e.g. 0.25:2.0:7), got {spec!r}", params=(name,))
    try:
        lo, hi = float(parts[0]), float(parts[1])
        n = int(parts[2])
    except ValueError:
        raise UsageError(f"{name} expects START:STOP:N with numbers and an integer N, got {spec!r}",
                         params=(name,)) from None
    if not (math.isfinite(lo) and math.isfinite(hi)) or lo <= 0:
        raise UsageError(f"{name}: START must be a finite number > 0, got {parts[0]!r}", params=(name,))
    if hi <= lo:
        raise UsageError(f"{name}: STOP must be larger than START, got {spec!r}", params=(name,))
    if n < 2:
        raise UsageError(f"{name}: N must be >= 2, got {n}", params=(name,))
    if n > MAX_SWEEP_TAUS:
        raise UsageError(f"{name}: N = {n:,} is above the limit of {MAX_SWEEP_TAUS:,} τ values (each is a full "
                         "allocation and a table row; 10,000 already resolve τ to 1e-4 of the range)", params=(name,))
    return tuple(float(t) for t in np.linspace(lo, hi, n))


MAX_SWEEP_TAUS = 10_000


def check_sweep_size(n_items: int, n_taus: int) -> None:
    """A sweep keeps every τ's share vector: bound M x N before allocating."""
    if n_items * n_taus > MAX_SWEEP_CELLS:
        raise UsageError(
            f"a sweep of {n_taus:,} τ values over {n_items:,} items keeps {n_items * n_taus:,} shares, above the "
            f"limit of {MAX_SWEEP_CELLS:,} (8 bytes each); use fewer τ values or items", params=("sweep", "tau")
        )


def check_taus(taus: Sequence[float], name: str = "taus") -> tuple[float, ...]:
    """Validated, sorted, de-duplicated τ values."""
    if isinstance(taus, (str, bytes)) or len(taus) == 0:
        raise UsageError(f"{name} must be a non-empty sequence of numbers > 0", params=(name,))
    return tuple(sorted({check_tau(t, name) for t in taus}))


def tau_sweep(n_items: int, taus: Sequence[float], *, core: int, budget: int) -> TauSweep:
    """Allocate at every τ (sorted ascending) and check that concentration rises with τ."""
    m = check_items(n_items)
    k = check_core(core, m)
    b = check_budget(budget)
    if not isinstance(taus, (str, bytes)) and len(taus) > MAX_SWEEP_TAUS:
        raise UsageError(f"taus: {len(taus):,} values are above the limit of {MAX_SWEEP_TAUS:,}", params=("taus",))
    check_sweep_size(m, len(taus))
    ts = check_taus(taus)
    allocs = [allocate_unchecked(m, t, k, b) for t in ts]
    return sweep_from_allocations(allocs)


def sweep_from_allocations(allocs: Sequence[Allocation]) -> TauSweep:
    """Rows and checks of allocations ordered by increasing τ (same M, K, B)."""
    vals = [_values(a) for a in allocs]
    rows = []
    for i, (a, v) in enumerate(zip(allocs, vals, strict=True)):
        if i == 0:
            check = "–"
        else:
            bad = [metric for metric in CHECK_BASIS if not _rose(metric, vals[i - 1], v)]
            check = "ok" if not bad else "not up: " + ", ".join(bad)
        rows.append(
            SweepRow(
                tau=a.tau,
                core_mass=a.core_mass,
                tail_share=a.tail_share,
                log_tail_share=a.log_tail_share,
                gini=a.gini,
                skewness=a.skewness,
                max_over_median=a.max_over_median,
                log_max_over_median=a.log_max_over_median,
                top_slots=int(a.core_slots[0]),
                tail_slots=a.tail_slots,
                items_in_prompt=a.items_in_prompt,
                check=check,
            )
        )
    checks = tuple(_check(metric, [a.tau for a in allocs], vals) for metric in CHECK_BASIS)
    a0 = allocs[0]
    return TauSweep(
        n_items=a0.n_items, core=a0.core, budget=a0.budget, taus=tuple(a.tau for a in allocs),
        results=tuple(rows), checks=checks,
    )


def _values(a: Allocation) -> dict[str, float]:
    # "up" for every metric; the tail share goes down when the core mass goes up.
    return {"core_mass": -a.log_tail_share, "gini": a.gini, "max_over_median": a.log_max_over_median,
            "skewness": a.skewness}


def _rose(metric: str, before: dict[str, float], after: dict[str, float]) -> bool:
    return after[metric] > before[metric]


def _check(metric: str, taus: list[float], vals: list[dict[str, float]]) -> MonotoneCheck:
    basis = CHECK_BASIS[metric][0]
    diffs = [vals[i][metric] - vals[i - 1][metric] for i in range(1, len(vals))]
    failures = tuple(taus[i] for i in range(1, len(vals)) if not diffs[i - 1] > 0)
    increasing = not failures
    non_decreasing = all(d >= 0 for d in diffs)
    if len(vals) < 2:
        note = "one τ: nothing to compare"
    elif increasing:
        note = "increased at every step"
    elif basis.startswith("guaranteed") and non_decreasing:
        note = "flat steps: below float64 resolution, not a counter-example"
    elif basis.startswith("guaranteed"):
        note = "decreased: numerical error, please report"
    else:
        note = "did not increase at every step (allowed: no theorem)"
    return MonotoneCheck(
        metric=metric, basis=basis, increasing=increasing, non_decreasing=non_decreasing,
        steps=len(diffs), failures=failures, note=note,
    )

