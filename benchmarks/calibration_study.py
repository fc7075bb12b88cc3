"""How often does each verdict rule call log-normal data TPL-compatible?

Draws discrete log-normal samples (values rounded up) of a few sizes and shapes, audits each with
the paper's rule and with ``--calibrate``, and prints the false-TPL rate of both rules (and the
false-LN rate on truncated-power-law samples, as a check of the other side), with a Wilson 95%
interval. The README quotes its output.

    python benchmarks/calibration_study.py                 # README numbers (~10 min on 2 cores)
    python benchmarks/calibration_study.py --seeds 8 --quick
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from ctwm_cli.stats.intervals import wilson_interval
from ctwm_cli.tail import LOGNORMAL, TPL, audit
from ctwm_cli.tail.samplers import sample_tpl_tail


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=30)
    ap.add_argument("--bootstrap", type=int, default=100)
    ap.add_argument("--calibrate", type=int, default=100)
    ap.add_argument("--level", type=float, default=0.05)
    ap.add_argument("--jobs", type=int, default=None)
    ap.add_argument("--quick", action="store_true", help="one small configuration only")
    args = ap.parse_args()
    configs = [("lognormal", 20_000, 2.0, 1.2), ("lognormal", 100_000, 3.0, 1.0), ("lognormal", 200_000, 2.0, 0.8),
               ("lognormal", 200_000, 4.0, 1.5), ("tpl", 10_000, 1.5, 0.003)]
    if args.quick:
        configs = configs[:1]
    print(f"seeds per row {args.seeds}, bootstrap B = {args.bootstrap}, calibration R = {args.calibrate}, "
          f"level {args.level}")
    print(f"{'data':<34} {'paper: TPL':>14} {'paper: LN':>10} {'calibrated: TPL':>16} {'calibrated: LN':>15} "
          f"{'s/audit':>8}")
    for kind, n, a, b in configs:
        paper, cal = [], []
        t0 = time.perf_counter()
        for s in range(args.seeds):
            rng = np.random.default_rng(10_000 * n + s)
            if kind == "lognormal":
                x = np.ceil(rng.lognormal(a, b, n))
                label = f"ceil LogNormal(μ={a:g}, σ={b:g}), n={n:.0e}"
            else:
                x = sample_tpl_tail(a, b, 1.0, n, rng, True)
                label = f"TPL(α={a:g}, λ={b:g}), n={n:.0e}"
            r = audit(x, bootstrap=args.bootstrap, seed=s, calibrate=args.calibrate, level=args.level,
                      jobs=args.jobs)
            paper.append(r.verdict.verdict)
            cal.append(r.calibration.verdict.verdict if r.calibration else "inconclusive")
        dt = (time.perf_counter() - t0) / args.seeds

        def cell(v, calls):
            k = calls.count(v)
            lo, hi = wilson_interval(k, len(calls))
            return f"{k / len(calls):.0%} [{lo:.0%},{hi:.0%}]"

        print(f"{label:<34} {cell(TPL, paper):>14} {cell(LOGNORMAL, paper):>10} {cell(TPL, cal):>16} "
              f"{cell(LOGNORMAL, cal):>15} {dt:>8.1f}")


if __name__ == "__main__":
    main()
