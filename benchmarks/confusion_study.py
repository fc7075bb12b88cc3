"""Which verdicts does the audit give on data whose family is known? (issue 44)

For each generating family below, ``--seeds`` data sets of ``--n`` items are drawn with samplers of this
script (numpy only; the audit's own samplers are used for the TPL, whose exact discrete sampler is the
reference) and audited with the default rule (Definition 3.4 with the fit check) and the calibrated rule
(``--calibrate R``, with the fit check). Reported per family and rule: the share of each decisive verdict
and the share of *confident wrong* verdicts, with Wilson 95% intervals.

What counts as wrong (``WRONG``): on a power law, a TPL or a mixture of power laws, ``lognormal-compatible``
(the TPL contains the power law as λ -> 0, so ``tpl-compatible`` is right there); on a log-normal,
``tpl-compatible``; on a stretched exponential either decisive verdict (neither family is the truth);
on a Simon rich-get-richer process (asymptotically a power law, α = 1 + 1/(1 - a) = 2.4) ``lognormal-
compatible``; on the random walk's top-k retrieval counts (the Synthetic Graph World's default
``random-walk`` policy, the paper's Section 3 process, whose counts the paper reads as
log-normal-compatible) ``tpl-compatible``, by the paper's reading — a convention, since the finite
process has no family.

    python benchmarks/confusion_study.py                         # full: 40 seeds, n = 20,000, B = R = 200
    python benchmarks/confusion_study.py --seeds 6 --n 5000 --bootstrap 30 --calibrate 40   # reduced
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from ctwm_cli.intervals import wilson_interval
from ctwm_cli.tail import INCONCLUSIVE, LOGNORMAL, TPL, audit
from ctwm_cli.tail.samplers import sample_tpl_tail


def simon(n_items: int, a: float, rng: np.random.Generator) -> np.ndarray:
    """Simon's model: each event is a new item with probability a, else a re-use of the item of a uniformly
    chosen past event (preferential: an item used more is re-used more); counts of the first n_items items."""
    events = np.empty(int(n_items / a * 1.2) + 10, dtype=np.int64)
    items, t = 0, 0
    while items < n_items:
        if t == 0 or rng.random() < a:
            events[t] = items
            items += 1
        else:
            events[t] = events[rng.integers(0, t)]
        t += 1
    return np.bincount(events[:t])


def random_walk(n_items: int, seed: int) -> np.ndarray:
    from ctwm_cli.world import WorldConfig, simulate

    steps = max(2000, 10 * n_items)  # about n_items distinct transitions retrieved at the default world size
    c = simulate(WorldConfig(steps=steps, seed=seed)).access_counts()
    return c[c > 0]


def mixture(weights, alphas, n, rng) -> np.ndarray:
    k = rng.multinomial(n, weights)
    return np.concatenate([rng.zipf(a, m) for a, m in zip(alphas, k, strict=True)])


FAMILIES = {
    "power law Zipf(2.2)": (lambda n, rng, s: rng.zipf(2.2, n), {LOGNORMAL}),
    "TPL(1.5, λ=0.01)": (lambda n, rng, s: sample_tpl_tail(1.5, 0.01, 1.0, n, rng, True), {LOGNORMAL}),
    "TPL(1.8, λ=0.001)": (lambda n, rng, s: sample_tpl_tail(1.8, 0.001, 1.0, n, rng, True), {LOGNORMAL}),
    "log-normal(2, 1.0)": (lambda n, rng, s: np.ceil(rng.lognormal(2.0, 1.0, n)), {TPL}),
    "log-normal(1, 2.0)": (lambda n, rng, s: np.ceil(rng.lognormal(1.0, 2.0, n)), {TPL}),
    "mixture 0.3 Zipf(1.8) + 0.7 Zipf(3)": (lambda n, rng, s: mixture([0.3, 0.7], [1.8, 3.0], n, rng), {LOGNORMAL}),
    "mixture of Zipf(1.8, 2.5, 3.5)": (lambda n, rng, s: mixture([0.2, 0.3, 0.5], [1.8, 2.5, 3.5], n, rng),
                                       {LOGNORMAL}),
    "stretched exp ceil 5 W(0.3)": (lambda n, rng, s: np.ceil(5 * rng.weibull(0.3, n)), {TPL, LOGNORMAL}),
    "stretched exp ceil 50 W(0.7)": (lambda n, rng, s: np.ceil(50 * rng.weibull(0.7, n)), {TPL, LOGNORMAL}),
    "Simon a = 2/7 (α 2.4)": (lambda n, rng, s: simon(n, 2 / 7, rng), {LOGNORMAL}),
    "random walk top-k (world)": (lambda n, rng, s: random_walk(n, s), {TPL}),
}


def share(k: int, n: int) -> str:
    lo, hi = wilson_interval(k, n)
    return f"{k}/{n} {k / n:4.0%} [{lo:.0%}, {hi:.0%}]"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=40)
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--bootstrap", type=int, default=200)
    ap.add_argument("--calibrate", type=int, default=200)
    ap.add_argument("--jobs", type=int, default=None)
    ap.add_argument("--only", action="append", help="a family name's start (repeatable)")
    args = ap.parse_args()
    print(f"seeds {args.seeds}, n = {args.n:,}, B = {args.bootstrap}, R = {args.calibrate}; Wilson 95% intervals")
    print("| family | rule | tpl-compatible | lognormal-compatible | confident wrong |\n|---|---|---|---|---|")
    for name, (draw, wrong) in FAMILIES.items():
        if args.only and not any(name.startswith(o) for o in args.only):
            continue
        rules: dict[str, list[str]] = {"default": [], "calibrated": []}
        t0 = time.perf_counter()
        for s in range(args.seeds):
            x = draw(args.n, np.random.default_rng([44, s]), s)
            r = audit(x, bootstrap=args.bootstrap, calibrate=args.calibrate, seed=s, jobs=args.jobs)
            rules["default"].append(r.verdict.verdict)
            rules["calibrated"].append(r.calibration.verdict.verdict if r.calibration else INCONCLUSIVE)
        for rule, vs in rules.items():
            k = len(vs)
            print(f"| {name} | {rule} | {share(vs.count(TPL), k)} | {share(vs.count(LOGNORMAL), k)} | "
                  f"{share(sum(v in wrong for v in vs), k)} |", flush=True)
        print(f"<!-- {name}: {(time.perf_counter() - t0) / args.seeds:.1f} s per data set -->", flush=True)


if __name__ == "__main__":
    main()
