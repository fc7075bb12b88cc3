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

Every audited data set is appended to ``--out``.jsonl as it finishes, so an interrupted run resumes where
it stopped; ``--minutes`` time-boxes a run (seeds go in rounds over all families). The summary goes to
``--out``.json and ``--out``.md. Data of seed s are drawn from ``default_rng([44, s])`` and audited with
``seed=s``: every row is reproducible on its own.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from ctwm_cli.stats.intervals import wilson_interval
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
    return f"{k}/{n} {k / n:4.0%} [{lo:.0%}, {hi:.0%}]" if n else "–"


#: the calibrated rule the records were made with ("fdb2": its TPL call needs the fast double bootstrap's
#: p-value, #{z1 >= Q}/R, <= a too; "fdb" records, a first form, are history); a rerun resumes only from these
RULE = "fdb2"


def run_key(name: str, seed: int, args) -> str:
    return f"{name}|{seed}|n={args.n}|B={args.bootstrap}|R={args.calibrate}|rule={RULE}"


def summarise(records: list[dict], args) -> tuple[dict, str]:
    """Per family and rule: counts of each decisive verdict and of confident wrong ones, Wilson 95%."""
    rows, lines = [], [f"seeds up to {args.seeds}, n = {args.n:,}, B = {args.bootstrap}, R = {args.calibrate}, "
                       "significance 0.05; Wilson 95% intervals", "",
                       "| family | rule | data sets | tpl-compatible | lognormal-compatible | confident wrong |",
                       "|---|---|---|---|---|---|"]
    for name, (_draw, wrong) in FAMILIES.items():
        recs = [r for r in records if r["family"] == name]
        if not recs:
            continue
        for rule in ("default", "calibrated"):
            vs = [r[rule] for r in recs]
            k = len(vs)
            w = sum(v in wrong for v in vs)
            lo, hi = wilson_interval(w, k)
            rows.append({"family": name, "rule": rule, "data_sets": k, "tpl": vs.count(TPL),
                         "lognormal": vs.count(LOGNORMAL), "wrong": w, "wrong_share": w / k,
                         "wrong_wilson95": [lo, hi], "wrong_verdicts": sorted(wrong),
                         "seconds_per_data_set": float(np.mean([r["seconds"] for r in recs]))})
            lines.append(f"| {name} | {rule} | {k} | {share(vs.count(TPL), k)} | {share(vs.count(LOGNORMAL), k)} | "
                         f"{share(w, k)} |")
    for rule in ("default", "calibrated"):
        sub = [r for r in rows if r["rule"] == rule]
        k, w = sum(r["data_sets"] for r in sub), sum(r["wrong"] for r in sub)
        if k:
            lines.append(f"| **all families** | {rule} | {k} | | | {share(w, k)} |")
    summary = {"study": "confusion (issue 44)", "n": args.n, "bootstrap": args.bootstrap, "calibrate": args.calibrate,
               "seeds_requested": args.seeds, "rule": RULE,
               "seed_rule": "data: default_rng([44, seed]); audit seed = seed",
               "command": "python benchmarks/confusion_study.py " + " ".join(args.argv), "rows": rows}
    return summary, "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=40)
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--bootstrap", type=int, default=200)
    ap.add_argument("--calibrate", type=int, default=200)
    ap.add_argument("--jobs", type=int, default=None)
    ap.add_argument("--only", action="append", help="a family name's start (repeatable)")
    ap.add_argument("--out", default="benchmarks/results/confusion_study",
                    help="stem of the outputs: STEM.jsonl (one line per audited data set; a rerun resumes from it), "
                         "STEM.json and STEM.md (the summary)")
    ap.add_argument("--minutes", type=float, default=None,
                    help="start no new data set after this many minutes (seeds run in rounds over all families, "
                         "so a stopped run has about as many data sets of each)")
    args = ap.parse_args(argv)
    args.argv = sys.argv[1:] if argv is None else list(argv)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    log = out.with_suffix(".jsonl")
    records = [json.loads(line) for line in log.read_text().splitlines() if line.strip()] if log.exists() else []
    mine = lambda r: (r["n"], r["bootstrap"], r["calibrate"], r.get("rule")) == (  # noqa: E731
        args.n, args.bootstrap, args.calibrate, RULE)
    done = {r["key"] for r in records}
    names = [nm for nm in FAMILIES if not args.only or any(nm.startswith(o) for o in args.only)]
    t_start = time.perf_counter()
    print(f"seeds {args.seeds}, n = {args.n:,}, B = {args.bootstrap}, R = {args.calibrate}; resuming from "
          f"{sum(map(mine, records))} data sets in {log}", flush=True)
    with log.open("a") as fh:
        for s in range(args.seeds):
            for name in names:
                key = run_key(name, s, args)
                if key in done:
                    continue
                if args.minutes is not None and time.perf_counter() - t_start > 60 * args.minutes:
                    break
                draw, _wrong = FAMILIES[name]
                t0 = time.perf_counter()
                x = draw(args.n, np.random.default_rng([44, s]), s)
                r = audit(x, bootstrap=args.bootstrap, calibrate=args.calibrate, seed=s, jobs=args.jobs)
                rec = {"key": key, "family": name, "seed": s, "n": args.n, "bootstrap": args.bootstrap,
                       "calibrate": args.calibrate, "rule": RULE, "default": r.verdict.verdict,
                       "calibrated": r.calibration.verdict.verdict if r.calibration else INCONCLUSIVE,
                       "default_reason": r.verdict.reason,
                       "calibrated_reason": r.calibration.verdict.reason if r.calibration else "no calibration",
                       "z": r.tpl_vs_lognormal.z if r.tpl_vs_lognormal is not None else None,
                       "p_lognormal": r.calibration.pvalue_lognormal if r.calibration else None,
                       "p_lognormal_adjusted": r.calibration.pvalue_lognormal_adjusted if r.calibration else None,
                       "seconds": time.perf_counter() - t0}
                fh.write(json.dumps(rec, default=float) + "\n")
                fh.flush()
                records.append(rec)
                print(f"  seed {s:3d} {name}: {rec['default']} / {rec['calibrated']} ({rec['seconds']:.1f} s)",
                      flush=True)
            else:
                continue
            break
    summary, table = summarise([r for r in records if mine(r) and r["family"] in names], args)
    out.with_suffix(".json").write_text(json.dumps(summary, indent=1, default=float) + "\n")
    out.with_suffix(".md").write_text(table)
    print(table)


if __name__ == "__main__":
    main()
