"""Does the calibrated rule hold its level? (issue 44)

On data drawn from a discrete log-normal (values rounded up) the calibrated rule should say
``tpl-compatible`` at most ``--significance`` of the time; on data from a truncated power law it should
say ``lognormal-compatible`` at most that often. For each configuration this audits ``--seeds`` fresh data
sets with ``--calibrate R`` and reports, with Wilson 95% intervals:

* ``p<=a``: the share whose Monte Carlo p-value of the calibrated one-sided test is <= a (the raw test:
  ``pvalue_lognormal`` = (1 + #{z_LN >= z})/(R + 1) on log-normal data; (1 + #{z_TPL <= z})/(R + 1) on TPL
  data) — and at 2a and 4a, where a bias shows with fewer data sets than at a;
* ``raw & adjusted p<=a`` (log-normal rows): the calibrated rule's test — the raw p and
  ``pvalue_lognormal_adjusted``, the fast double bootstrap's correction of it, both <= a
  (a record also keeps it on TPL rows, with the raw p of the TPL call and whether the correction withheld
  a TPL call: the power it costs);
* ``TPL calls``: the share of calibrated ``tpl-compatible`` verdicts (on log-normal rows its false-TPL rate,
  on TPL rows the power the correction must keep);
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
are labelled with their arguments in the first line of the output. Data of configuration i, seed s are drawn
from ``default_rng([44, n, i, s])`` (before the double bootstrap, ``[44, n, s]``: two configurations of the
same n drew the same normals, so their rows counted alike), audited with ``seed=s``. A record carries the
``RULE`` it was decided by; a rerun resumes only from records of the current rule.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from ctwm_cli.stats.intervals import wilson_interval
from ctwm_cli.tail import LOGNORMAL, TPL, audit
from ctwm_cli.tail.samplers import sample_tpl_tail

#: (generator, n, shape parameters): log-normal (μ, σ), TPL (α, λ); the first is the issue's surviving case
CONFIGS = [("lognormal", 20_000, 2.0, 1.5), ("lognormal", 20_000, 2.0, 1.0), ("lognormal", 5_000, 1.0, 1.2),
           ("lognormal", 100_000, 3.0, 1.0), ("tpl", 20_000, 1.8, 0.002), ("tpl", 5_000, 1.5, 0.01)]


#: the calibrated rule the records were made with: "fdb2" = the TPL call needs the fast double bootstrap's
#: p-value (Davidson & MacKinnon's form, #{z1 >= Q}/R) <= a too; "fdb" records (first form, (1 + #)/(R + 1)
#: with Q at the (1 + k)/(R + 1) quantile) are history
RULE = "fdb2"


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


def label(kind: str, n: int, p1: float, p2: float) -> str:
    name = f"LogNormal(μ={p1:g}, σ={p2:g})" if kind == "lognormal" else f"TPL(α={p1:g}, λ={p2:g})"
    return f"ceil {name}, n = {n:,}" if kind == "lognormal" else f"{name}, n = {n:,}"


def _rejections(recs: list[dict], field: str, a: float) -> tuple[int, dict[int, int]]:
    """Rejections at a, 2a, 4a of the p-value ``field``; ``p_adjusted`` is the rule's test: the raw p and
    the adjusted one both <= the level."""
    get = lambda r, f: r.get(f) if r.get(f) is not None else np.nan  # noqa: E731
    pv = np.array([get(r, field) for r in recs], dtype=float)
    if field == "p_adjusted":
        pv = np.maximum(pv, np.array([get(r, "p") for r in recs], dtype=float))
    ok = np.isfinite(pv)
    return int(ok.sum()), {m: int(np.sum(pv[ok] <= m * a)) for m in (1, 2, 4)}


def summarise(records: list[dict], args) -> tuple[dict, str]:
    """Per configuration and pooled per side: the raw test's rejection share at a, 2a, 4a, the double
    bootstrap's (log-normal rows), the calibrated TPL calls and the wrong calibrated verdicts, Wilson 95%."""
    a = args.significance
    head = (f"bootstrap B = {args.bootstrap}, calibration R = {args.calibrate}, significance a = {a:g}; "
            "Wilson 95% intervals")
    lines = [head, "", f"| data | data sets | raw p <= {a:g} | raw p <= {2 * a:g} | raw p <= {4 * a:g} | "
             f"raw & adjusted <= {a:g} | raw & adjusted <= {2 * a:g} | raw & adjusted <= {4 * a:g} | TPL calls | "
             "wrong calibrated verdict |", "|---|---|---|---|---|---|---|---|---|---|"]
    rows = []
    groups = [(label(*c), [r for r in records if r["config"] == list(c)]) for c in CONFIGS]
    for side, kind in (("all log-normal rows", "lognormal"), ("all TPL rows", "tpl")):
        groups.append((f"**{side}**", [r for r in records if r["config"][0] == kind]))
    for name, recs in groups:
        if not recs:
            continue
        k, rej = _rejections(recs, "p", a)
        ln = all(r["config"][0] == "lognormal" for r in recs)
        ka, adj = _rejections(recs, "p_adjusted", a) if ln else (0, {1: 0, 2: 0, 4: 0})
        w = sum(r["wrong"] for r in recs)
        t = sum(r.get("verdict") == TPL for r in recs)
        rows.append({"data": name, "data_sets": len(recs), "finite_p": k,
                     **{f"reject_at_{m * a:g}": [rej[m], k, *wilson_interval(rej[m], k)] for m in (1, 2, 4)},
                     **({f"adjusted_reject_at_{m * a:g}": [adj[m], ka, *wilson_interval(adj[m], ka)]
                         for m in (1, 2, 4)} if ln else {}),
                     "tpl_calls": [t, len(recs), *wilson_interval(t, len(recs))],
                     "wrong": [w, len(recs), *wilson_interval(w, len(recs))],
                     "seconds_per_audit": float(np.mean([r["seconds"] for r in recs]))})
        lines.append(f"| {name} | {len(recs)} | {cell(rej[1], k)} | {cell(rej[2], k)} | {cell(rej[4], k)} | "
                     f"{cell(adj[1], ka)} | {cell(adj[2], ka)} | {cell(adj[4], ka)} | {cell(t, len(recs))} | "
                     f"{cell(w, len(recs))} |")
    summary = {"study": "calibration level (issue 44)", "bootstrap": args.bootstrap, "calibrate": args.calibrate,
               "significance": a, "seeds_requested": args.seeds,
               "rule": RULE, "seed_rule": "data: default_rng([44, n, configuration index, seed]); audit seed = seed",
               "command": "python benchmarks/calibration_level_study.py " + " ".join(args.argv), "rows": rows}
    return summary, "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=100)
    ap.add_argument("--bootstrap", type=int, default=200)
    ap.add_argument("--calibrate", type=int, default=200)
    ap.add_argument("--significance", type=float, default=0.05)
    ap.add_argument("--jobs", type=int, default=None)
    ap.add_argument("--only", type=int, action="append", help="configuration index (repeatable)")
    ap.add_argument("--out", default="benchmarks/results/calibration_level_study",
                    help="stem of the outputs: STEM.jsonl (one line per audit; a rerun resumes from it), STEM.json "
                         "and STEM.md (the summary)")
    ap.add_argument("--minutes", type=float, default=None,
                    help="start no new audit after this many minutes (seeds run in rounds over the configurations)")
    args = ap.parse_args(argv)
    args.argv = sys.argv[1:] if argv is None else list(argv)
    a = args.significance
    chosen = [CONFIGS[i] for i in args.only] if args.only else CONFIGS
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    log = out.with_suffix(".jsonl")
    records = [json.loads(line) for line in log.read_text().splitlines() if line.strip()] if log.exists() else []
    mine = [r for r in records if (r["bootstrap"], r["calibrate"], r["significance"], r.get("rule")) ==
            (args.bootstrap, args.calibrate, a, RULE)]
    done = {(tuple(r["config"]), r["seed"]) for r in mine}
    print(f"seeds per row {args.seeds}, bootstrap B = {args.bootstrap}, calibration R = {args.calibrate}, "
          f"significance {a:g}; resuming from {len(mine)} audits in {log}", flush=True)
    t_start = time.perf_counter()
    with log.open("a") as fh:
        for s in range(args.seeds):
            if args.minutes is not None and time.perf_counter() - t_start > 60 * args.minutes:
                break
            for kind, n, p1, p2 in chosen:
                i = CONFIGS.index((kind, n, p1, p2))
                if ((kind, n, p1, p2), s) in done:
                    continue
                if args.minutes is not None and time.perf_counter() - t_start > 60 * args.minutes:
                    break
                t0 = time.perf_counter()
                x = draw(kind, n, p1, p2, np.random.default_rng([44, n, i, s]))
                r = audit(x, bootstrap=args.bootstrap, seed=s, calibrate=args.calibrate, level=a, jobs=args.jobs)
                p = raw_pvalue(r, kind)
                c = r.calibration
                pa = c.pvalue_lognormal_adjusted if c else np.nan
                v = r.calibration.verdict.verdict if r.calibration else "inconclusive"
                rec = {"config": [kind, n, p1, p2], "seed": s, "bootstrap": args.bootstrap,
                       "calibrate": args.calibrate, "significance": a, "rule": RULE,
                       "p": p if np.isfinite(p) else None, "p_adjusted": pa if np.isfinite(pa) else None,
                       "p_tpl_call": c.pvalue_lognormal if c and np.isfinite(c.pvalue_lognormal) else None,
                       "withheld_by_correction": bool(c and "double bootstrap" in c.verdict.reason),
                       "verdict": v, "wrong": v == (LOGNORMAL if kind == "tpl" else TPL),
                       "z": r.calibration.observed_z if r.calibration else None,
                       "seconds": time.perf_counter() - t0}
                fh.write(json.dumps(rec, default=float) + "\n")
                fh.flush()
                mine.append(rec)
                print(f"  seed {s:3d} {label(kind, n, p1, p2)}: p {p:.3f}, adjusted {pa:.3f}, {v} "
                      f"({rec['seconds']:.1f} s)", flush=True)
    summary, table = summarise(mine, args)
    out.with_suffix(".json").write_text(json.dumps(summary, indent=1, default=float) + "\n")
    out.with_suffix(".md").write_text(table)
    print(table)


if __name__ == "__main__":
    main()
