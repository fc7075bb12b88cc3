"""Is the ``--power`` curve monotone within its Monte Carlo error? (issue 26, README "How much more data?")

One ceil LogNormal(2, 1.2) sample of ``--n`` points is audited with ``--calibrate``, a bootstrap and
``--power R``; every curve is printed with its cells' Monte Carlo 95% intervals and the multiples
where it falls beyond them.

    python benchmarks/power_curve.py                  # n = 5,000, R = 200 (~30 s on 2 cores)
    python benchmarks/power_curve.py --power 40       # the R of issue 26's report
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from ctwm_cli.tail import audit


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=5000)
    ap.add_argument("--power", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    x = np.ceil(np.random.default_rng(a.seed).lognormal(2.0, 1.2, a.n))
    t0 = time.perf_counter()
    r = audit(x, bootstrap=100, calibrate=100, power=a.power, seed=a.seed, jobs=a.jobs)
    print(f"ceil LogNormal(2, 1.2), n = {a.n}, seed {a.seed}: {r.verdict.verdict}; R = {a.power} per cell "
          f"({time.perf_counter() - t0:.0f} s)")
    if r.power is None:
        return
    print("| data drawn from | rule | " + " | ".join(f"{m}x" for m in r.power.multiples) + " | falls at |")
    print("|---|---|" + "---|" * (len(r.power.multiples) + 1))
    for c in r.power.curves:
        cells = [f"{c.power[m]:.0%} [{c.interval[m][0]:.0%}, {c.interval[m][1]:.0%}]" for m in r.power.multiples]
        print(f"| {c.generator} | {c.rule} | " + " | ".join(cells) + f" | {', '.join(map(str, c.falls)) or '–'} |")


if __name__ == "__main__":
    main()
