"""Speed of ``allocate`` at large M against a naive reference in the same run.

Reference: shares by direct powers r**-τ / sum (overflow-prone, no apportionment), Gini by
sorting plus the cumulative-sum formula (O(M log M)). Prints seconds and ratios; no assertions.

    python benchmarks/bench_allocation.py [M]
"""

from __future__ import annotations

import sys
import time
from functools import partial

import numpy as np

from ctwm_cli.allocation import allocate, tau_sweep


def best_of(fn, repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def naive(m: int, tau: float) -> float:
    r = np.arange(1, m + 1, dtype=np.float64)
    b = r**-tau
    b /= b.sum()
    x = np.sort(b)
    n = x.size
    return float((2 * np.sum(np.arange(1, n + 1) * x) / (n * x.sum())) - (n + 1) / n)


def main() -> None:
    m = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    print(f"M = {m:,}")
    for tau in (0.01, 1.0, 10.0):
        # best_of calls fn at once; partial binds this iteration's tau explicitly (B023)
        t_ours = best_of(partial(allocate, m, tau, core=100, budget=4096))
        t_ref = best_of(partial(naive, m, tau))
        g_ours = allocate(m, tau, core=100, budget=4096).gini
        print(f"tau={tau:<5} allocate {t_ours * 1e3:7.1f} ms   naive shares+sorted Gini {t_ref * 1e3:7.1f} ms   "
              f"ratio {t_ours / t_ref:5.2f}   |ΔGini| {abs(g_ours - naive(m, tau)):.1e}")
    taus = list(np.linspace(0.25, 2.0, 7))
    t_sweep = best_of(lambda: tau_sweep(m, taus, core=100, budget=4096), repeat=3)
    print(f"tau_sweep over 7 τ: {t_sweep * 1e3:.1f} ms ({t_sweep / 7 * 1e3:.1f} ms per τ)")


if __name__ == "__main__":
    main()
