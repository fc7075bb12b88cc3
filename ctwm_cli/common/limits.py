"""Upper bounds on size parameters, checked before anything is allocated or run.

A size that cannot fit in memory should fail at once with the limit and the reason (usage error,
exit 2), not as a ``MemoryError`` minutes later or a process that runs until it is killed. Two
kinds of bound:

* :data:`LIMITS` — fixed maxima for replicate counts, where more only costs time (the Monte Carlo
  resolution is far past any use); checked by :func:`check_limit`.
* :func:`check_memory` — an estimate of the bytes a size needs against the memory this process can
  still get (:func:`available_memory`: ``MemAvailable``, the cgroup's limit, ``RLIMIT_AS``).
"""

from __future__ import annotations

import dataclasses
import resource
from pathlib import Path

from .errors import UsageError


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Limit:
    maximum: int
    why: str


LIMITS: dict[str, Limit] = {
    "bootstrap": Limit(maximum=100_000, why="each replicate refits the tail; 100,000 replicates already resolve "
                       "p-values to 1e-5"),
    "ci_bootstrap": Limit(maximum=100_000, why="each replicate resamples every paired difference; at 100,000 "
                          "replicates the Monte Carlo error of a 95% endpoint is far below the sampling error"),
    "calibrate": Limit(maximum=10_000, why="each replicate re-audits a simulated sample in full; 10,000 already "
                       "resolve the calibrated p-value to 1e-4"),
    "uncertainty": Limit(maximum=100_000, why="each replicate re-selects x_min and refits the tail; 100,000 "
                         "replicates resolve a 95% interval's endpoints far below their sampling error"),
    "power": Limit(maximum=10_000, why="each replicate re-audits simulated samples at five sizes up to 16x the data; "
                   "10,000 resolve a power of 0.8 to +-0.004"),
    "null_draws": Limit(maximum=100_000, why="each draw re-simulates every run; the null slope's Monte Carlo "
                        "error at 100,000 draws is below 0.3% of its spread"),
}


def check_limit(name: str, value: int) -> int:
    """``value`` if it is at most ``LIMITS[name].maximum``; else a usage error with the limit and why."""
    limit = LIMITS[name]
    if value > limit.maximum:
        raise UsageError(f"{name} = {value:,} is above the limit of {limit.maximum:,}: {limit.why}", params=(name,))
    return value


def _read_int(path: str) -> int | None:
    try:
        text = Path(path).read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def available_memory() -> int | None:
    """Bytes this process can still allocate, as well as the system tells; ``None`` if unknown."""
    bounds = []
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                bounds.append(int(line.split()[1]) * 1024)
    except (OSError, ValueError, IndexError):
        pass
    cap, used = _read_int("/sys/fs/cgroup/memory.max"), _read_int("/sys/fs/cgroup/memory.current")
    if cap is not None:
        bounds.append(cap - (used or 0))
    soft = resource.getrlimit(resource.RLIMIT_AS)[0]
    if soft not in (resource.RLIM_INFINITY, -1):
        bounds.append(int(soft))
    return min(bounds) if bounds else None


def _gib(n: float) -> str:
    return f"{n / 2**30:,.1f} GiB"


def check_memory(what: str, needed: float, *, why: str, available: int | None = None) -> None:
    """Usage error if ``needed`` bytes exceed the memory available (``what`` names the parameters)."""
    avail = available_memory() if available is None else available
    if avail is not None and needed > avail:
        raise UsageError(f"{what} need about {_gib(needed)} of memory ({why}); only {_gib(avail)} is available",
                         params=())
