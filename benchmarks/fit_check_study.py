"""Does the fit check stop mixtures of power laws being called log-normal, and what does it cost on
log-normal data? (issue 26, README "Fit checks")

Each data set is audited once with ``fit_check=False`` (Definition 3.4, and the calibrated rule with the
mixture as a second null of its log-normal call) and both rules are then re-decided with the fit
check at levels 0.05 and 0.10 through the library's
own :func:`ctwm_cli.tail.verdict.fit_checked` — the same data sets, so the rows are paired. Rates carry
Wilson 95% intervals (``ctwm_cli.stats.intervals``).

    python benchmarks/fit_check_study.py                  # README numbers (60 sets per row, ~1 h on 2 cores)
    python benchmarks/fit_check_study.py --sets 10 --rows lognormal
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from ctwm_cli.stats.intervals import wilson_interval
from ctwm_cli.tail import audit
from ctwm_cli.tail.verdict import LOGNORMAL, TPL, fit_checked

ROWS = {
    "mixA": "0.2·Zipf(2.0) + 0.8·Zipf(3.5), n = 20,000",
    "mixB": "0.3·Zipf(1.8) + 0.7·Zipf(3.0), n = 20,000",
    "lognormal": "ceil LogNormal(μ = 2, σ = 1.2), n = 20,000",
}
LEVELS = (0.05, 0.10)


def draw(row: str, rng: np.random.Generator, n: int = 20_000) -> np.ndarray:
    if row == "mixA":
        return np.where(rng.random(n) < 0.2, rng.zipf(2.0, n), rng.zipf(3.5, n)).astype(float)
    if row == "mixB":
        return np.where(rng.random(n) < 0.3, rng.zipf(1.8, n), rng.zipf(3.0, n)).astype(float)
    return np.ceil(rng.lognormal(2.0, 1.2, n))


def one(job: tuple[str, int, int, int]) -> dict[str, str]:
    row, s, b, r = job
    x = draw(row, np.random.default_rng([26, list(ROWS).index(row), s]))
    a = audit(x, bootstrap=b, calibrate=r, seed=s, jobs=1, fit_check=False)
    p = {name: g.pvalue for name, g in (a.fit_checks or {}).items()}
    z = a.tpl_vs_lognormal.z if a.tpl_vs_lognormal is not None else float("nan")
    mix = {c.second: c.z for c in a.comparisons if c.first == "power_law_mixture"}
    out = {"paper": a.verdict.verdict, "calibrated": a.calibration.verdict.verdict}
    for lv in LEVELS:
        out[f"paper+check@{lv:g}"] = fit_checked(a.verdict, p, lv, z, mixture_z=mix).verdict
        out[f"calibrated+check@{lv:g}"] = fit_checked(a.calibration.verdict, p, lv, z, mixture_z=mix).verdict
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sets", type=int, default=60)
    ap.add_argument("--bootstrap", type=int, default=200)
    ap.add_argument("--calibrate", type=int, default=99)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--rows", nargs="*", default=list(ROWS), choices=list(ROWS))
    args = ap.parse_args()
    print(f"{args.sets} data sets per row, bootstrap B = {args.bootstrap}, calibration R = {args.calibrate}")
    rules = ["paper", "calibrated"] + [f"{r}+check@{lv:g}" for r in ("paper", "calibrated") for lv in LEVELS]
    for row in args.rows:
        t0 = time.perf_counter()
        with ProcessPoolExecutor(args.workers) as pool:
            res = list(pool.map(one, [(row, s, args.bootstrap, args.calibrate) for s in range(args.sets)]))
        print(f"\n{ROWS[row]}  ({(time.perf_counter() - t0) / args.sets:.1f} s/set)")
        print(f"  {'rule':<26} {'lognormal-compatible':>26} {'tpl-compatible':>26}")
        for rule in rules:
            cells = []
            for v in (LOGNORMAL, TPL):
                k = sum(x[rule] == v for x in res)
                lo, hi = wilson_interval(k, len(res))
                cells.append(f"{k / len(res):6.1%} [{lo:.0%}, {hi:.0%}]")
            print(f"  {rule:<26} {cells[0]:>26} {cells[1]:>26}")


if __name__ == "__main__":
    main()
