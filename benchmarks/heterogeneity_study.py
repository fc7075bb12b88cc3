"""Size and power of the groups-share-one-law test (``ctwm audit --across COL``; issue 26, README
"Heterogeneous pools").

Each row draws ``--sets`` pooled traces of G groups, fits the pooled power law (its x_min is the
test's cutoff, as in the audit) and runs :func:`ctwm_cli.tail.heterogeneity_test` with
``--permutations``. Rates at level 0.05 carry Wilson 95% intervals; the χ²(G − 1) p-value's rate is
shown beside the permutation test's.

    python benchmarks/heterogeneity_study.py                 # README numbers (200 sets per row)
    python benchmarks/heterogeneity_study.py --sets 40
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from ctwm_cli.stats.intervals import wilson_interval
from ctwm_cli.tail import Histogram, fit_power_law, heterogeneity_test

ROWS = {
    "same-zipf": ("H0", "4 groups × 2,000, all Zipf(2.0)"),
    "same-body": ("H0", "3 groups × 2,000, all ½ ceil LogNormal(0.5, 0.6) + ½ Zipf(2.2)"),
    "same-lognormal": ("H0", "4 groups × 2,000, all ceil LogNormal(2, 1.2)"),
    "mixA": ("H1", "issue 26's pool: 4,000 Zipf(2.0) + 16,000 Zipf(3.5), as 2 groups"),
    "mixB": ("H1", "6,000 Zipf(1.8) + 14,000 Zipf(3.0), as 2 groups"),
    "close": ("H1", "2 groups × 2,000: Zipf(2.0) and Zipf(2.2)"),
}


def draw(row: str, rng: np.random.Generator) -> list[np.ndarray]:
    if row == "same-zipf":
        return [rng.zipf(2.0, 2000).astype(float) for _ in range(4)]
    if row == "same-body":
        return [np.where(rng.random(2000) < 0.5, np.ceil(rng.lognormal(0.5, 0.6, 2000)), rng.zipf(2.2, 2000))
                for _ in range(3)]
    if row == "same-lognormal":
        return [np.ceil(rng.lognormal(2.0, 1.2, 2000)) for _ in range(4)]
    if row == "mixA":
        return [rng.zipf(2.0, 4000).astype(float), rng.zipf(3.5, 16000).astype(float)]
    if row == "mixB":
        return [rng.zipf(1.8, 6000).astype(float), rng.zipf(3.0, 14000).astype(float)]
    return [rng.zipf(2.0, 2000).astype(float), rng.zipf(2.2, 2000).astype(float)]


def one(job: tuple[str, int, int]) -> tuple[bool, bool, bool]:
    row, s, perms = job
    groups = draw(row, np.random.default_rng([26, 22, list(ROWS).index(row), s]))
    fit = fit_power_law(Histogram.from_sample(np.concatenate(groups)), min_tail=10)
    h = heterogeneity_test(groups, [str(i) for i in range(len(groups))], xmin=fit.xmin, permutations=perms, seed=s)
    if h is None:  # fewer than two groups leave 10 points at the pooled cutoff: no test (not a rejection)
        return False, False, True
    return h.pvalue < 0.05, h.chi2_pvalue < 0.05, False


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sets", type=int, default=200)
    ap.add_argument("--permutations", type=int, default=199)
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    t0 = time.perf_counter()
    print(f"{a.sets} sets per row, {a.permutations} permutations, level 0.05, seeds [26, 22, row, s]")
    print("| data | under | permutation test rejects | χ² rejects | no test |")
    print("|---|---|---|---|---|")
    with ProcessPoolExecutor(a.jobs) as ex:
        for row, (hyp, text) in ROWS.items():
            res = list(ex.map(one, [(row, s, a.permutations) for s in range(a.sets)], chunksize=4))
            cells = []
            for j in (0, 1):
                k = sum(r[j] for r in res)
                lo, hi = wilson_interval(k, a.sets)
                cells.append(f"{k / a.sets:.1%} [{lo:.1%}, {hi:.1%}]")
            print(f"| {text} | {hyp} | {cells[0]} | {cells[1]} | {sum(r[2] for r in res)} |", flush=True)
    print(f"({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
