"""Does the calibrated rule hold its level? (issue 44)

On data drawn from a discrete log-normal (values rounded up) the calibrated rule should say
``tpl-compatible`` at most ``--significance`` of the time; on data from a truncated power law it should
say ``lognormal-compatible`` at most that often. For each configuration this audits ``--seeds`` fresh data
sets with ``--calibrate R`` and reports, with Wilson 95% intervals:

* ``p<=a``: the share whose Monte Carlo p-value of the calibrated one-sided test is <= a (the raw test:
  ``pvalue_lognormal`` = (1 + #{z_LN >= z})/(R + 1) on log-normal data; (1 + #{z_TPL <= z})/(R + 1) on TPL
  data) — and at 2a and 4a, where a bias shows with fewer data sets than at a;
* ``wrong``: the share of wrong decisive calibrated verdicts the user gets (fit check, rivals and
  mixture null included).

Why these two columns. (1 + k)/(R + 1) <= a is an exact level-a Monte Carlo test at *any* R when the
replicates come from the law that generated the data (the observed z and the R simulated ones are then
exchangeable; Besag & Clifford 1989), so the R of the calibration cannot by itself push the raw test above
its level: Monte Carlo error of the quantile is already paid for by the (k + 1)/(R + 1) form. What can is
that the replicates come from the *fitted* law (a parametric bootstrap): a share above a, beyond its
interval, is that bias.

    python benchmarks/calibration_level_study.py                      # the full study (hours on 2 cores)
    python benchmarks/calibration_level_study.py --seeds 20 --only 0   # one configuration, minutes

The full run: 100 data sets per configuration, B = 200, R = 200 (the README's suggested R); reduced runs
are labelled with their arguments in the first line of the output.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from ctwm_cli.intervals import wilson_interval
from ctwm_cli.tail import LOGNORMAL, TPL, audit
from ctwm_cli.tail.samplers import sample_tpl_tail

#: (generator, n, shape parameters): log-normal (μ, σ), TPL (α, λ); the first is the issue's surviving case
CONFIGS = [("lognormal", 20_000, 2.0, 1.5), ("lognormal", 20_000, 2.0, 1.0), ("lognormal", 5_000, 1.0, 1.2),
           ("lognormal", 100_000, 3.0, 1.0), ("tpl", 20_000, 1.8, 0.002), ("tpl", 5_000, 1.5, 0.01)]


def draw(kind: str, n: int, a: float, b: float, rng: np.random.Generator) -> np.ndarray:
    return np.ceil(rng.lognormal(a, b, n)) if kind == "lognormal" else sample_tpl_tail(a, b, 1.0, n, rng, True)


def raw_pvalue(r, kind: str) -> float:
    """The calibrated one-sided test's Monte Carlo p-value against the data's own family."""
    c = r.calibration
    if c is None or not c.replicates:
        return np.nan
    if kind == "lognormal":
        return c.pvalue_lognormal
    z = c.null_z["truncated_power_law"]
    z = z[np.isfinite(z)]
    return float((1 + np.sum(z <= c.observed_z)) / (z.size + 1)) if z.size and np.isfinite(c.observed_z) else np.nan


def cell(k: int, n: int) -> str:
    lo, hi = wilson_interval(k, n)
    return f"{k}/{n} = {k / n:5.1%} [{lo:4.1%}, {hi:4.1%}]" if n else "–"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=100)
    ap.add_argument("--bootstrap", type=int, default=200)
    ap.add_argument("--calibrate", type=int, default=200)
    ap.add_argument("--significance", type=float, default=0.05)
    ap.add_argument("--jobs", type=int, default=None)
    ap.add_argument("--only", type=int, action="append", help="configuration index (repeatable)")
    args = ap.parse_args()
    a = args.significance
    chosen = [CONFIGS[i] for i in args.only] if args.only else CONFIGS
    print(f"seeds per row {args.seeds}, bootstrap B = {args.bootstrap}, calibration R = {args.calibrate}, "
          f"significance {a:g}; Wilson 95% intervals")
    for kind, n, p1, p2 in chosen:
        wrong = LOGNORMAL if kind == "tpl" else TPL
        pv, verdicts = [], []
        t0 = time.perf_counter()
        for s in range(args.seeds):
            x = draw(kind, n, p1, p2, np.random.default_rng([44, n, s]))
            r = audit(x, bootstrap=args.bootstrap, seed=s, calibrate=args.calibrate, level=a, jobs=args.jobs)
            pv.append(raw_pvalue(r, kind))
            verdicts.append(r.calibration.verdict.verdict if r.calibration else "inconclusive")
        pv = np.asarray(pv)
        ok = np.isfinite(pv)
        name = f"LogNormal(μ={p1:g}, σ={p2:g})" if kind == "lognormal" else f"TPL(α={p1:g}, λ={p2:g})"
        print(f"ceil {name}, n = {n:,}  ({(time.perf_counter() - t0) / args.seeds:.1f} s/audit)")
        for m in (1, 2, 4):
            print(f"  raw test p <= {m * a:g}: {cell(int(np.sum(pv[ok] <= m * a)), int(ok.sum()))}")
        print(f"  wrong calibrated verdict ({wrong}): {cell(verdicts.count(wrong), len(verdicts))}", flush=True)


if __name__ == "__main__":
    main()
