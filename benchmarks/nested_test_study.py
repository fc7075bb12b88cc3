"""Size of the nested power-law-vs-TPL test on power-law data: asymptotic mixture against Monte Carlo.

    python benchmarks/nested_test_study.py                 # 400 sets per α, B = 19 (~10 min on 2 cores)
    python benchmarks/nested_test_study.py --sets 100      # quicker, wider intervals

Data: discrete power law, x_min = 1 (fixed in the audit, as in the issue that found the bias),
n = 2,000, α = 2.0, 2.5, 3.5, seeded per set. For each set the audit runs with ``bootstrap=B``; the
nested test's p-value is then the Monte Carlo one, (1 + #{LR_b >= LR})/(B + 1), with LR_b taken from
the same power-law replicates as p_gof. Printed: the rejection rate at nominal 5% (and 10%) of the
½χ²_0 + ½χ²_1 mixture (``pvalue_asymptotic``) and of the Monte Carlo p-value, with Wilson 95%
intervals, and the share of sets with LR = 0 (the mixture assumes 50%). With B = 19, p <= 0.05 is
an exact 1-in-20 event under exchangeability; 10% needs B >= 9.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from ctwm_cli.stats.intervals import wilson_interval
from ctwm_cli.tail import audit, sample_power_law


def nested(alpha: float, n: int, seed: int, bootstrap: int, jobs: int | None):
    x = sample_power_law(alpha, 1.0, n, np.random.default_rng(seed), True)
    r = audit(x, xmin=1.0, bootstrap=bootstrap, seed=seed, jobs=jobs)
    return next(c for c in r.comparisons if c.nested)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sets", type=int, default=400)
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--bootstrap", type=int, default=19)
    ap.add_argument("--alphas", type=float, nargs="+", default=[2.0, 2.5, 3.5])
    ap.add_argument("--jobs", type=int, default=None)
    args = ap.parse_args()
    print(f"power law, x_min = 1, n = {args.n}, {args.sets} sets per row, B = {args.bootstrap}")
    print(f"{'α':>4} {'P(LR=0)':>8} {'mixture 5%':>20} {'Monte Carlo 5%':>20} {'mixture 10%':>20} "
          f"{'Monte Carlo 10%':>20} {'s/set':>6}")
    for alpha in args.alphas:
        t0 = time.perf_counter()
        cmps = [nested(alpha, args.n, 10_000 * int(alpha * 10) + s, args.bootstrap, args.jobs)
                for s in range(args.sets)]
        dt = (time.perf_counter() - t0) / args.sets

        def cell(ps, a):
            k = sum(p <= a for p in ps)
            lo, hi = wilson_interval(k, len(ps))
            return f"{k / len(ps):.1%} [{lo:.1%}, {hi:.1%}]"

        asym = [c.pvalue_asymptotic for c in cmps]
        mc = [c.pvalue for c in cmps]
        zero = np.mean([c.statistic <= 1e-9 for c in cmps])
        print(f"{alpha:>4} {zero:>8.1%} {cell(asym, 0.05):>20} "
              f"{cell(mc, 0.05):>20} {cell(asym, 0.10):>20} {cell(mc, 0.10):>20} {dt:>6.2f}")


if __name__ == "__main__":
    main()
