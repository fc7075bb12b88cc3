"""Size and power of ``ctwm diff`` on two traces (issue 26, README "ctwm diff as a test").

Size: pairs of independent traces drawn from one law (Zipf α 1.8, 2.0, 2.5 with 2,000 and 10,000 items;
ceil log-normal), each compared by :func:`ctwm_cli.baseline.diff_counts` with R permutations and R
bootstrap replicates. Per metric it prints the false-regression rate at tolerance 0 and at the README's
tolerances (gini 0.02, top10_share 0.02, alpha 0.1), and — for comparison with the gate before issue 26 —
how often the percentile interval alone excludes 0 (its non-coverage of the true change, 0 here).
Power: the same with head drawn from a heavier law (Zipf α 0.1 lower). Wilson 95% intervals.

    python benchmarks/diff_calibration.py                 # README numbers (~25 min on 2 cores)
    python benchmarks/diff_calibration.py --pairs 40 --replicates 39
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from ctwm_cli.baseline import TRACE_METRICS, diff_counts
from ctwm_cli.stats.intervals import wilson_interval

TOLERANCES = {"gini": 0.02, "top10_share": 0.02, "alpha": 0.1}
SETTINGS = [("zipf", 1.8, 2000), ("zipf", 1.8, 10000), ("zipf", 2.0, 2000), ("zipf", 2.0, 10000),
            ("zipf", 2.5, 2000), ("zipf", 2.5, 10000), ("lognormal", 2.0, 5000)]


def draw(kind: str, a: float, n: int, rng: np.random.Generator) -> np.ndarray:
    return rng.zipf(a, n) if kind == "zipf" else np.ceil(rng.lognormal(a, 1.2, n)).astype(np.int64)


def one(job) -> np.ndarray:
    """Rows per metric: (fails at tol 0, fails at the README tolerance, interval excludes 0)."""
    kind, a, n, shift, s, r = job
    rng = np.random.default_rng([26, int(a * 10), n, int(shift * 10), s])
    base, head = draw(kind, a, n, rng), draw(kind, a - shift, n, rng)
    # one call: at tolerance 0 the gate is "permutation p <= 0.05" alone, read off the same call
    tol = diff_counts(base, head, tolerances=TOLERANCES, replicates=r, seed=s)
    out = np.zeros((len(TRACE_METRICS), 3))
    for k, m in enumerate(TRACE_METRICS):
        c = next(c for c in tol.changes if c.metric == m)
        out[k] = (c.pvalue is not None and c.pvalue <= 0.05, c.regression,
                  (ci := c.confidence_interval) is not None and (ci.low > 0 or ci.high < 0))
    return out


def cell(k: int, n: int) -> str:
    lo, hi = wilson_interval(k, n)
    return f"{k / n:5.1%} [{lo:.1%}, {hi:.1%}]"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=200)
    ap.add_argument("--replicates", type=int, default=99)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--power", action="store_true", help="head from a law 0.1 heavier (Zipf only)")
    args = ap.parse_args()
    shift = 0.1 if args.power else 0.0
    print(f"{args.pairs} pairs per setting, R = {args.replicates} permutations and bootstrap replicates, "
          f"level 0.05, head Zipf α lower by {shift:g}")
    print(f"{'setting':<22} {'metric':<12} {'fails at tol 0':>22} {'fails at README tol':>22} "
          f"{'percentile CI excludes 0':>26}")
    for kind, a, n in SETTINGS:
        if args.power and kind != "zipf":
            continue
        t0 = time.perf_counter()
        with ProcessPoolExecutor(args.workers) as pool:
            rows = np.array(list(pool.map(one, [(kind, a, n, shift, s, args.replicates) for s in range(args.pairs)])))
        label = f"{'Zipf' if kind == 'zipf' else 'ceil LN'}({a:g}{', 1.2' if kind != 'zipf' else ''}) n={n}"
        for k, m in enumerate(TRACE_METRICS):
            tot = rows[:, k, :].sum(axis=0).astype(int)
            print(f"{label:<22} {m + ' ' + str(TOLERANCES[m]):<12} {cell(tot[0], args.pairs):>22} "
                  f"{cell(tot[1], args.pairs):>22} {cell(tot[2], args.pairs):>26}")
        print(f"{'':<22} ({(time.perf_counter() - t0) / args.pairs:.2f} s/pair)", flush=True)


if __name__ == "__main__":
    main()
