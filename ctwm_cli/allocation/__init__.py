"""CTWM rank allocation (paper Section 4, Appendix A): b(r; τ) ∝ r^-τ over ranked items, the
core/tail split, largest-remainder apportionment of a slot budget, τ sweeps, and the same rule
applied to a real trace's item ranking."""

from .allocate import Allocation, allocate
from .apportion import largest_remainder
from .rank import concentration, rank_shares
from .sweep import MonotoneCheck, SweepRow, TauSweep, parse_sweep, tau_sweep
from .trace import CountsTauRow, StepTauRow, TraceSimulation, simulate_trace

__all__ = [
    "Allocation",
    "CountsTauRow",
    "MonotoneCheck",
    "StepTauRow",
    "SweepRow",
    "TauSweep",
    "TraceSimulation",
    "allocate",
    "concentration",
    "largest_remainder",
    "parse_sweep",
    "rank_shares",
    "simulate_trace",
    "tau_sweep",
]
