"""Does ``--power`` predict what fresh data would show?

    python benchmarks/power_check.py              # n = 2e4 log-normal, R = 100, 20 fresh audits (~6 min)
    python benchmarks/power_check.py --fresh 40   # tighter interval on the fresh rate

1. One log-normal sample, ceil(LogNormal(μ = 2, σ = 1.2)), n = 2×10⁴, is audited with ``--power R``,
   ``--calibrate`` and a bootstrap; the power table is printed.
2. For the calibrated rule on log-normal data, the multiple m the audit reports (or 16 when it says
   "beyond 16x") and its predicted power are taken; then ``--fresh`` new samples of m·n are drawn —
   (a) from the same true distribution, (b) from the audit's fitted model (body resampled below x_min,
   tail from the fitted log-normal, as ``--power`` simulates) — and each is audited in full with the
   same settings. The share of right calls (``lognormal-compatible``), with a Wilson 95% interval, is
   printed beside the prediction. (a) also carries the model error of the fit; (b) checks the simulation.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from ctwm_cli.stats.intervals import wilson_interval
from ctwm_cli.tail import LOGNORMAL, Histogram, audit
from ctwm_cli.tail.families import REGISTRY


def from_fit(hist: Histogram, r, size: int, rng: np.random.Generator) -> np.ndarray:
    """Body resampled from the data below x_min, tail from the fitted log-normal (what --power simulates)."""
    pl = r.power_law
    nt = int(rng.binomial(size, pl.n_tail / hist.n))
    below = hist.values < pl.xmin
    body = rng.choice(hist.values[below], size - nt, p=hist.counts[below] / hist.counts[below].sum())
    tail = REGISTRY["lognormal"].sample(r.alternatives["lognormal"].params, pl.xmin, nt, rng, True)
    return np.concatenate([body, tail])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--power", type=int, default=100)
    ap.add_argument("--calibrate", type=int, default=100)
    ap.add_argument("--bootstrap", type=int, default=200)
    ap.add_argument("--fresh", type=int, default=20)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--jobs", type=int, default=None)
    args = ap.parse_args()
    opts = dict(bootstrap=args.bootstrap, calibrate=args.calibrate, jobs=args.jobs)
    x = np.ceil(np.random.default_rng(args.seed).lognormal(2.0, 1.2, args.n))
    t0 = time.perf_counter()
    r = audit(x, seed=args.seed, power=args.power, **opts)
    print(f"observed: n = {args.n}, verdict {r.verdict.verdict} (calibrated {r.calibration.verdict.verdict}), "
          f"audit with --power {args.power}: {time.perf_counter() - t0:.1f} s")
    if r.power is None:
        raise SystemExit("the verdict is decisive already: no power analysis (change --seed)")
    for c in r.power.curves:
        print(f"  {c.generator:<20} {c.rule:<11} " + " ".join(f"{m}x {c.power[m]:4.0%}" for m in r.power.multiples)
              + (f"   needed {c.needed}x" if c.needed else "   needed > 16x"))
    curve = next(c for c in r.power.curves if c.generator == "lognormal" and c.rule == "calibrated")
    m = curve.needed or r.power.multiples[-1]
    predicted = curve.power[m]
    hist = Histogram.from_sample(x)
    for name, draw in (("true distribution", lambda rng, size: np.ceil(rng.lognormal(2.0, 1.2, size))),
                       ("fitted model", lambda rng, size: from_fit(hist, r, size, rng))):
        calls = []
        t0 = time.perf_counter()
        for k in range(args.fresh):
            y = draw(np.random.default_rng(10_000 + k), m * args.n)
            calls.append(audit(y, seed=k, **opts).calibration.verdict.verdict == LOGNORMAL)
        lo, hi = wilson_interval(sum(calls), len(calls))
        print(f"calibrated rule at {m}x n = {m * args.n}: predicted power {predicted:.0%}; fresh samples from the "
              f"{name}: {np.mean(calls):.0%} [{lo:.0%}, {hi:.0%}] of {len(calls)} "
              f"({(time.perf_counter() - t0) / len(calls):.1f} s/audit)")


if __name__ == "__main__":
    main()
