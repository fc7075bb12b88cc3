"""Cost of ``--uncertainty`` and ``--power`` against the B = 1000 audit, at n = 1e5, in one process.

    python benchmarks/bench_audit_extras.py                 # n = 1e5, jobs = 2 (a few minutes)
    python benchmarks/bench_audit_extras.py --n 20000       # smaller

Data (seeded): ceil(LogNormal(3, 1.0)) — an inconclusive audit (the calibration study's second row), so
``--power`` runs; the script stops if it does not. Timed with
``time.perf_counter``, one run each after a warm-up (numba's cache load and the first process pool
are excluded):

* reference: ``audit(x, bootstrap=1000, jobs)`` — fits, LR tests, p_gof and the nested test's null;
* ``+ uncertainty=U``: the same plus U nonparametric re-fits (U = 1000 by default);
* ``+ power=R``: the same plus R replicates per family and multiple (R = 100, the suggested value),
  with and without ``calibrate=100`` (the calibrated rule's power costs nothing extra).

Printed: seconds and the ratio of each run to the reference (the issue's bound: ~10x).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from ctwm_cli.tail import audit


def timed(**kw) -> tuple[float, object]:
    t0 = time.perf_counter()
    r = audit(**kw)
    return time.perf_counter() - t0, r


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--uncertainty", type=int, default=1000)
    ap.add_argument("--power", type=int, default=100)
    args = ap.parse_args()
    x = np.ceil(np.random.default_rng(2).lognormal(3.0, 1.0, args.n))
    base = dict(counts=x, seed=1, jobs=args.jobs)
    audit(x[:5000], bootstrap=50, uncertainty=50, power=2, seed=1, jobs=args.jobs)  # warm-up
    t_ref, r = timed(bootstrap=1000, **base)
    print(f"n = {args.n}, jobs = {args.jobs}; reference audit B = 1000: {t_ref:.2f} s (verdict {r.verdict.verdict})")
    if r.verdict.verdict != "inconclusive":
        raise SystemExit("the verdict is decisive: --power would not run (change the data)")
    runs = [
        (f"B = 1000 + uncertainty = {args.uncertainty}", dict(bootstrap=1000, uncertainty=args.uncertainty)),
        (f"B = 1000 + power = {args.power}", dict(bootstrap=1000, power=args.power)),
        (f"B = 1000 + calibrate = 100 + power = {args.power}", dict(bootstrap=1000, calibrate=100, power=args.power)),
        ("B = 1000 + calibrate = 100 (for comparison)", dict(bootstrap=1000, calibrate=100)),
    ]
    for name, kw in runs:
        t, res = timed(**kw, **base)
        ran = "" if "power" not in kw or res.power is not None else "  (power did not run)"
        print(f"{name:<48} {t:7.2f} s   {t / t_ref:5.1f}x the reference{ran}")


if __name__ == "__main__":
    main()
