"""A short power-law tail above a log-normal body: how often do the reported α intervals cover the true α?
(issue 26, README "Short tails")

Each data set: n observations; with probability ``q`` a draw from the discrete power law α = 2.5 above
x_min = 50 (exact, :func:`ctwm_cli.tail.powerlaw.sample_power_law`), otherwise ceil(LogNormal(μ, σ))
conditioned below 50. With n = 2,000 and q = 0.085 the tail holds about 170 points. For each set the
audit's power-law fit (x_min chosen by the KS scan) and ``--uncertainty B`` are computed, and four α
intervals are checked against the true 2.5:

- ``fixed-xmin se``: α̂ ± 1.96·se, the Fisher standard error at the selected x_min (what the audit prints
  without ``--uncertainty``);
- ``bootstrap se``: α̂ ± 1.96·(bootstrap sd of α over replicates that re-select x_min);
- ``percentile``: the bootstrap percentile interval (``uncertainty.interval["alpha"]``);
- ``cutoff band``: the interval ``ctwm audit --uncertainty`` reports for α when x_min is uncertain
  (``uncertainty.alpha_band``, :class:`ctwm_cli.tail.uncertainty.CutoffBand`).

``--pure`` replaces the data by a pure discrete power law (α 2.5, x_min 1, same n): the price of the
band where x_min is not in doubt.

Rates carry Wilson 95% intervals. Also reported: how often x_min lands below the true 50.

    python benchmarks/short_tail_study.py                       # README numbers (300 sets, B = 200)
    python benchmarks/short_tail_study.py --sets 40 --uncertainty 100
"""

from __future__ import annotations

import argparse
import math
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from ctwm_cli.stats.intervals import wilson_interval
from ctwm_cli.tail import audit
from ctwm_cli.tail.powerlaw import sample_power_law

ALPHA, XMIN = 2.5, 50.0


def draw(rng: np.random.Generator, n: int, q: float, mu: float, sigma: float) -> np.ndarray:
    n_tail = int(rng.binomial(n, q))
    tail = sample_power_law(ALPHA, XMIN, n_tail, rng, True)
    body = np.empty(0)
    while body.size < n - n_tail:
        b = np.ceil(rng.lognormal(mu, sigma, 2 * (n - n_tail) + 16))
        body = np.concatenate([body, b[b < XMIN]])
    return np.concatenate([body[: n - n_tail], tail])


def one(job: tuple[int, int, int, float, float, float, bool]) -> dict[str, float]:
    s, n, b, q, mu, sigma, pure = job
    rng = np.random.default_rng([26, 4, s])
    x = sample_power_law(ALPHA, 1.0, n, rng, True) if pure else draw(rng, n, q, mu, sigma)
    a = audit(x, bootstrap=0, uncertainty=b, seed=s, jobs=1, fit_check=False)
    pl = a.power_law
    out = {"xmin": pl.xmin, "alpha": pl.alpha, "n_tail": pl.n_tail}
    out["fixed-xmin se"] = abs(pl.alpha - ALPHA) <= 1.96 * pl.alpha_se
    u = a.uncertainty
    se = u.se["alpha"] if u is not None else math.nan
    out["bootstrap se"] = abs(pl.alpha - ALPHA) <= 1.96 * se
    iv = u.interval["alpha"] if u is not None else None
    out["percentile"] = iv is not None and iv.low <= ALPHA <= iv.high
    band = u.alpha_band if u is not None else None
    out["cutoff band"] = band is not None and band.low <= ALPHA <= band.high
    out["width percentile"] = iv.high - iv.low if iv is not None else math.nan
    out["width cutoff band"] = band.high - band.low if band is not None else math.nan
    out["width fixed-xmin se"] = 2 * 1.96 * pl.alpha_se
    out["width bootstrap se"] = 2 * 1.96 * se
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sets", type=int, default=300)
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--uncertainty", type=int, default=200)
    ap.add_argument("--tail-share", type=float, default=0.085)
    ap.add_argument("--mu", type=float, default=2.0)
    ap.add_argument("--sigma", type=float, default=1.0)
    ap.add_argument("--pure", action="store_true", help="a pure power law (α 2.5, x_min 1) instead")
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    t0 = time.perf_counter()
    jobs = [(s, a.n, a.uncertainty, a.tail_share, a.mu, a.sigma, a.pure) for s in range(a.sets)]
    with ProcessPoolExecutor(a.jobs) as ex:
        rows = list(ex.map(one, jobs, chunksize=4))
    if a.pure:
        print(f"pure discrete power law α {ALPHA}, x_min 1, n = {a.n}; {a.sets} sets, --uncertainty {a.uncertainty}")
    else:
        print(f"short tail: n = {a.n}, tail share {a.tail_share} (α {ALPHA}, x_min {XMIN:g}), body ceil LogNormal"
              f"({a.mu}, {a.sigma}) below {XMIN:g}; {a.sets} sets, --uncertainty {a.uncertainty}, seeds [26, 4, s]")
    low = sum(r["xmin"] < (1.0 if a.pure else XMIN) for r in rows)
    print(f"x_min below the true cutoff: {low}/{len(rows)}; median n_tail {np.median([r['n_tail'] for r in rows]):.0f};"
          f" mean α̂ {np.mean([r['alpha'] for r in rows]):.3f}")
    print("| interval | covers α = 2.5 | Wilson 95% | median width |")
    print("|---|---|---|---|")
    for key in ("fixed-xmin se", "bootstrap se", "percentile", "cutoff band"):
        k = sum(bool(r[key]) for r in rows)
        lo, hi = wilson_interval(k, len(rows))
        w = np.nanmedian([r.get(f"width {key}", math.nan) for r in rows])
        print(f"| {key} | {k / len(rows):.1%} ({k}/{len(rows)}) | [{lo:.1%}, {hi:.1%}] | {w:.3f} |")
    print(f"({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
