"""Speed of ctwm's tail audit against igraph's plfit and the ``powerlaw`` package, on the same data.

    python benchmarks/bench_audit.py            # n = 1e4, 1e5, 1e6; B = 1000   (a few minutes)
    python benchmarks/bench_audit.py --quick    # smoke run: n = 1e4 only, B = 50
    python benchmarks/bench_audit.py --full     # also the contenders estimated to take > --budget s

Data (seeded, regenerated identically in every subprocess): discrete Zipf α = 2.2 (numpy's
``Generator.zipf``) and a rounded-up log-normal ``ceil(lognormal(2, 1.2))``, n = 1e4, 1e5, 1e6.

What is timed (wall clock, ``time.perf_counter``; "min of r" = fastest of r repeats):

* ctwm fit:   ``fit_power_law(Histogram.from_sample(x))``. numba's JIT compile (or cache load) is
  excluded: every kernel is warmed up once on small data before any timing.
* ctwm audit: ``audit(x, bootstrap=B, seed=1, jobs=2)`` (fits, alternatives, LR tests, bootstrap in 2
  worker processes). Per-replicate cost on one thread is measured directly as
  ``bootstrap_gof(hist, fit, replicates=b, jobs=1)`` / b (b = 100, 50, 20 for n = 1e4, 1e5, 1e6; the
  difference audit(B=b) - audit(B=0) would carry the noise of the alternatives' fits, which varies
  by ~100 ms under load); "eff. per rep" is (audit(B, jobs) - audit(B=0)) /
  B * jobs, i.e. the CPU time per replicate the parallel run implies (pool start-up included).
* plfit:      ``igraph.statistics.power_law_fit(x, method="discrete", p_precision=p)``; trials =
  floor(0.25/p^2): p = 0.0158 -> 1001 trials, p = 0.5 -> 1 trial (the fit plus one replicate; igraph
  has no fit-only call with a p-value precision). Its bootstrap uses OpenMP threads: the default
  (all cores) is timed in this process; one thread is timed in a subprocess with
  OMP_NUM_THREADS=1, per replicate = (T(K trials) - T(1 trial)) / (K - 1).
* powerlaw:   ``powerlaw.Fit(x, discrete=True)`` and ``.distribution_compare('truncated_power_law',
  'lognormal')``, timed separately, against ctwm's TPL-vs-LN stage ``fit_alternatives(hist, pl,
  z_star=1.96)`` (which fits all four alternative families and runs all six LR tests). The ctwm stage
  is also timed in a subprocess with OPENBLAS_NUM_THREADS=1, because scipy >= 1.15's L-BFGS-B is
  very sensitive to OpenBLAS threading on a loaded machine (scipy/scipy#22438).

A contender whose estimated time exceeds ``--budget`` seconds (default 120) prints "skipped (est. N s)";
``--full`` runs it. Estimates are conservative: bootstraps from the measured one-thread cost per
replicate times B (no credit for the second core, which other jobs may be using); powerlaw's Fit +
compare from 10x its time at the previous n.

The last table breaks one bootstrap replicate at n = 1e5 and the full fit at n = 1e6 into parts:
resampling (binomial + multinomial of the body), drawing the power-law tail, ``np.unique`` of the
tail, assembling the histogram, and the compiled x_min scan split into its MLE part (α at every
candidate) and its KS part (distance at every candidate).
"""

from __future__ import annotations

import argparse
import inspect
import json
import math
import os
import platform
import subprocess
import sys
import time
import warnings

import numpy as np

ALPHA_ZIPF = 2.2
LN_MU, LN_SIGMA = 2.0, 1.2
DATASETS = ("zipf", "lognormal")
PLFIT_FULL = 0.0158  # ~1000 trials
PLFIT_ONE = 0.5  # 1 trial
JOBS = 2


# ---------------------------------------------------------------------------------------------
# data


def make_data(kind: str, n: int, seed: int) -> np.ndarray:
    """Integer-valued float64 sample; the same (kind, n, seed) gives the same array in any process."""
    rng = np.random.default_rng([seed, n, DATASETS.index(kind)])
    if kind == "zipf":
        return rng.zipf(ALPHA_ZIPF, n).astype(np.float64)
    return np.ceil(rng.lognormal(LN_MU, LN_SIGMA, n))


def timed(fn, repeat: int = 1):
    """(fastest wall time of ``repeat`` calls, last result)."""
    best, out = math.inf, None
    for _ in range(max(1, repeat)):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def trials(p_precision: float) -> int:
    return math.floor(0.25 / p_precision**2 + 1e-9)


def precision_for(k: int) -> float:
    """A p_precision giving exactly k plfit trials (floor(0.25/p^2) = k)."""
    return 0.5 / math.sqrt(k + 0.5)


# ---------------------------------------------------------------------------------------------
# optional contenders


def import_igraph():
    try:
        import igraph  # noqa: F401
        from igraph.statistics import power_law_fit
    except ImportError:
        print("note: python-igraph is not installed (pip install igraph); plfit columns are skipped",
              file=sys.stderr)
        return None
    return power_law_fit


def import_powerlaw():
    try:
        import powerlaw
    except ImportError:
        print("note: the powerlaw package is not installed (pip install powerlaw); its columns are skipped",
              file=sys.stderr)
        return None
    return powerlaw


def plfit(power_law_fit, x: np.ndarray, p_precision: float):
    return power_law_fit(x.astype(np.int64), method="discrete", p_precision=p_precision)


# ---------------------------------------------------------------------------------------------
# ctwm


def warm_up() -> float:
    """Compile (or load from numba's cache) every kernel on small data; return the time it took."""
    from ctwm_cli.tail.audit import audit

    t0 = time.perf_counter()
    rng = np.random.default_rng(0)
    for x in (rng.zipf(ALPHA_ZIPF, 2000).astype(np.float64), np.ceil(rng.lognormal(LN_MU, LN_SIGMA, 2000))):
        audit(x, bootstrap=4, seed=0, jobs=1, label="warm-up")
    _split_kernels()
    return time.perf_counter() - t0


def ctwm_alt_stage(x: np.ndarray, repeat: int) -> float:
    from ctwm_cli.tail.audit import fit_alternatives
    from ctwm_cli.tail.powerlaw import Histogram, fit_power_law

    hist = Histogram.from_sample(x)
    pl = fit_power_law(hist)
    if pl is None:
        return math.nan
    t, _ = timed(lambda: fit_alternatives(hist, pl, z_star=1.96), repeat)
    return t


# ---------------------------------------------------------------------------------------------
# subprocess workers (own environment variables)


def worker_plfit_one_thread(sizes: list[int], seed: int, ks: dict[str, int]) -> dict:
    power_law_fit = import_igraph()
    out = {}
    if power_law_fit is None:
        return out
    plfit(power_law_fit, make_data("zipf", 1000, seed), PLFIT_ONE)
    for n in sizes:
        for kind in DATASETS:
            x = make_data(kind, n, seed)
            k = ks[str(n)]
            t1, _ = timed(lambda: plfit(power_law_fit, x, PLFIT_ONE), 2)  # noqa: B023 (called at once by timed)
            tk, _ = timed(lambda: plfit(power_law_fit, x, precision_for(k)))  # noqa: B023 (called at once by timed)
            out[f"{kind}/{n}"] = {"t1": t1, "tk": tk, "k": k, "per_rep": (tk - t1) / (k - 1)}
    return out


def worker_ctwm_alt(sizes: list[int], seed: int) -> dict:
    warm_up()
    return {f"{kind}/{n}": ctwm_alt_stage(make_data(kind, n, seed), 3) for n in sizes for kind in DATASETS}


def run_worker(name: str, env: dict[str, str], payload: dict) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", name, json.dumps(payload)]
    res = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **env}, check=False)
    if res.returncode != 0:
        print(f"warning: worker {name} failed:\n{res.stderr[-2000:]}", file=sys.stderr)
        return {}
    return json.loads(res.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------------------------------------
# breakdown of a replicate and of the fit


def _split_kernels():
    """Two compiled loops that do exactly the x_min scan's work, but separately: the MLE of α at
    every candidate, then the KS distance at every candidate (with those α, and the running best
    as the early-exit cap when ``_ks_discrete`` takes one)."""
    import numba

    from ctwm_cli.tail.powerlaw import _ks_discrete, _mle_discrete

    global _mle_all, _ks_all
    if "_mle_all" in globals():
        return

    @numba.njit(cache=False)
    def _mle_all(values, counts, min_tail):
        m = values.size
        ntail = np.empty(m)
        logsum = np.empty(m)
        acc_n = 0.0
        acc_l = 0.0
        for j in range(m - 1, -1, -1):
            acc_n += counts[j]
            acc_l += counts[j] * math.log(values[j])
            ntail[j] = acc_n
            logsum[j] = acc_l
        alphas = np.full(m, np.nan)
        for i in range(m - 1):
            if ntail[i] >= min_tail:
                alphas[i] = _mle_discrete(values[i], ntail[i], logsum[i])
        return alphas, ntail

    if len(inspect.signature(_ks_discrete.py_func).parameters) == 6:  # (..., alpha, cap): early exit

        @numba.njit(cache=False)
        def _ks_all(values, counts, alphas, ntail):
            best = math.inf
            for i in range(values.size):
                if math.isfinite(alphas[i]):
                    best = min(best, _ks_discrete(values, counts, i, ntail[i], alphas[i], best))
            return best
    else:

        @numba.njit(cache=False)
        def _ks_all(values, counts, alphas, ntail):
            best = math.inf
            for i in range(values.size):
                if math.isfinite(alphas[i]):
                    best = min(best, _ks_discrete(values, counts, i, ntail[i], alphas[i]))
            return best

    x = np.arange(1.0, 300.0)
    c = np.ones_like(x)
    a, nt = _mle_all(x, c, 10.0)
    _ks_all(x, c, a, nt)


def breakdown_replicate(x: np.ndarray, reps: int) -> dict[str, float]:
    """Seconds per replicate in each step of ``bootstrap.replicate_ks`` (same code path, timed)."""
    from ctwm_cli.tail.bootstrap import gof_tasks
    from ctwm_cli.tail.powerlaw import Histogram, fit_power_law, sample_power_law, scan_cutoffs

    hist = Histogram.from_sample(x)
    pl = fit_power_law(hist)
    (task,) = gof_tasks(hist, pl, replicates=reps, seed=np.random.SeedSequence(1), min_tail=100,
                        xmin_fixed=False)[:1]
    seeds, body_values, body_counts, n = task.seeds, task.body_values, task.body_counts, task.n
    n_tail, alpha, xmin, discrete, min_tail = task.n_tail, task.alpha, task.xmin, task.discrete, task.min_tail
    p_body = body_counts / body_counts.sum() if body_counts.size else body_counts
    acc = dict.fromkeys(("resample body", "draw tail", "np.unique tail", "assemble", "scan: MLE",
                         "scan: KS", "scan (as run)"), 0.0)
    clock = time.perf_counter
    for ss in seeds:
        t0 = clock()
        rng = np.random.default_rng(ss)
        nt = int(rng.binomial(n, n_tail / n))
        hb = rng.multinomial(n - nt, p_body) if body_values.size and nt < n else np.zeros(0, dtype=np.int64)
        t1 = clock()
        tail = sample_power_law(alpha, xmin, nt, rng, discrete)
        t2 = clock()
        tv, tc = np.unique(tail, return_counts=True)
        t3 = clock()
        keep = hb > 0
        values = np.concatenate([body_values[keep] if hb.size else body_values[:0], tv])
        counts = np.concatenate([hb[keep] if hb.size else hb, tc]).astype(np.float64)
        t4 = clock()
        scan_cutoffs(values, counts, float(min_tail), discrete, 0, values.size)
        t5 = clock()
        alphas, ntail = _mle_all(values, counts, float(min_tail))
        t6 = clock()
        _ks_all(values, counts, alphas, ntail)
        t7 = clock()
        for key, dt in zip(acc, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t6 - t5, t7 - t6, t5 - t4), strict=True):
            acc[key] += dt
    return {k: v / len(seeds) for k, v in acc.items()}


def breakdown_fit(x: np.ndarray, repeat: int) -> dict[str, float]:
    from ctwm_cli.tail.powerlaw import Histogram, fit_power_law, scan_cutoffs

    t_hist, hist = timed(lambda: Histogram.from_sample(x), repeat)
    c = hist.counts.astype(np.float64)
    t_scan, _ = timed(lambda: scan_cutoffs(hist.values, c, 100.0, True, 0, hist.values.size), repeat)
    t_mle, (alphas, ntail) = timed(lambda: _mle_all(hist.values, c, 100.0), repeat)
    t_ks, _ = timed(lambda: _ks_all(hist.values, c, alphas, ntail), repeat)
    t_fit, _ = timed(lambda: fit_power_law(hist), repeat)
    return {"np.unique (Histogram.from_sample)": t_hist, "scan: MLE": t_mle, "scan: KS": t_ks,
            "scan (as run)": t_scan, "fit_power_law on the histogram": t_fit}


# ---------------------------------------------------------------------------------------------
# formatting


def fmt_s(t) -> str:
    if isinstance(t, str):
        return t
    if t is None or not math.isfinite(t):
        return "-"
    if t < 1e-3:
        return f"{t * 1e6:.0f} µs"
    if t < 1.0:
        return f"{t * 1e3:.1f} ms"
    return f"{t:.2f} s"


def fmt_x(r) -> str:
    return "-" if r is None or not math.isfinite(r) else f"{r:.1f}x"


def ratio(a, b):
    if not isinstance(a, float) or not isinstance(b, float) or not (b > 0) or not math.isfinite(a):
        return None
    return a / b


def table(title: str, header: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    print(f"\n{title}")
    print("  ".join(h.rjust(w) if i else h.ljust(w) for i, (h, w) in enumerate(zip(header, widths, strict=True))))
    print("  ".join("-" * w for w in widths))
    for r in rows:
        print("  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True))))


def skipped(est: float) -> str:
    return f"skipped (est. {est:.0f} s)"


# ---------------------------------------------------------------------------------------------
# main


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="smoke run: n = 1e4 only, B = 50")
    ap.add_argument("--full", action="store_true", help="run every contender whatever its estimated time")
    ap.add_argument("--budget", type=float, default=120.0, help="skip contenders estimated above this (s)")
    ap.add_argument("--seed", type=int, default=20261130, help="seed of the generated data")
    ap.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        name, payload = args.worker[0], json.loads(args.worker[1])
        if name == "plfit1":
            out = worker_plfit_one_thread(payload["sizes"], payload["seed"], payload["ks"])
        else:
            out = worker_ctwm_alt(payload["sizes"], payload["seed"])
        print(json.dumps(out))
        return

    sizes = [10_000] if args.quick else [10_000, 100_000, 1_000_000]
    B = 50 if args.quick else 1000
    budget = math.inf if args.full else args.budget
    plfit_full_p = PLFIT_FULL if B == 1000 else precision_for(B)
    small_b = {10_000: 100, 100_000: 50, 1_000_000: 20}  # replicates for the one-thread per-rep cost
    plfit_k = {10_000: 100, 100_000: 25, 1_000_000: 5}  # plfit trials for its one-thread per-rep cost
    if args.quick:
        small_b, plfit_k = {10_000: 20}, {10_000: 20}
    warnings.simplefilter("ignore")  # powerlaw's and scipy's chatter

    import ctwm_cli
    from ctwm_cli.tail.audit import audit
    from ctwm_cli.tail.bootstrap import bootstrap_gof
    from ctwm_cli.tail.powerlaw import Histogram, fit_power_law

    power_law_fit = import_igraph()
    powerlaw = import_powerlaw()
    load0 = os.getloadavg()
    t_start = time.perf_counter()
    versions = {"ctwm": getattr(ctwm_cli, "__version__", "?"), "numpy": np.__version__}
    for mod in ("scipy", "numba", "igraph", "powerlaw"):
        try:
            versions[mod] = __import__(mod).__version__
        except (ImportError, AttributeError):
            versions[mod] = "-"
    print(f"python {platform.python_version()}  " + "  ".join(f"{k} {v}" for k, v in versions.items()))
    print(f"cpus: {os.cpu_count()}  load average at start: {load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f}"
          f"  (other jobs on the machine inflate every time below)")
    t_warm = warm_up()
    print(f"numba warm-up (compile or cache load, excluded from every timing): {t_warm:.2f} s")

    # subprocesses first: no OpenMP / process pool state shared with them
    print("running one-thread plfit and OPENBLAS_NUM_THREADS=1 workers ...", file=sys.stderr)
    payload = {"sizes": sizes, "seed": args.seed, "ks": {str(k): v for k, v in plfit_k.items()}}
    plfit1 = run_worker("plfit1", {"OMP_NUM_THREADS": "1"}, payload) if power_law_fit else {}
    alt1 = run_worker("alt", {"OPENBLAS_NUM_THREADS": "1"}, payload)

    R: dict[str, dict] = {}
    prev_pl_time: dict[str, float] = {}
    for n in sizes:
        for kind in DATASETS:
            key = f"{kind}/{n}"
            print(f"{key} ...", file=sys.stderr)
            x = make_data(kind, n, args.seed)
            r = R[key] = {"kind": kind, "n": n}
            # ctwm fit
            rep = 5 if n <= 100_000 else 3
            r["fit"], pl = timed(lambda: fit_power_law(Histogram.from_sample(x)), rep)  # noqa: B023 (called at once by timed)
            if pl is None:
                raise SystemExit(f"{key}: no admissible x_min (change --seed)")
            hist = Histogram.from_sample(x)
            r["distinct"] = int(hist.values.size)
            r["xmin"], r["alpha"], r["n_tail"] = pl.xmin, pl.alpha, pl.n_tail
            r["alt"] = ctwm_alt_stage(x, 3)
            r["alt_blas1"] = alt1.get(key, math.nan)
            # ctwm audit: base (B=0), one-thread per-rep, full B with 2 jobs
            r["base"], _ = timed(lambda: audit(x, bootstrap=0, seed=1, jobs=1), 2)  # noqa: B023 (called at once by timed)
            b = small_b[n]
            t_b, _ = timed(lambda: bootstrap_gof(hist, pl, replicates=b, seed=1, jobs=1))  # noqa: B023 (called at once by timed)
            r["rep1"] = t_b / b
            est = r["base"] + B * r["rep1"]  # no credit for the 2nd core: the machine is shared
            if est > budget:
                r["audit"], r["rep_eff"] = skipped(est), math.nan
            else:
                r["audit"], res = timed(lambda: audit(x, bootstrap=B, seed=1, jobs=JOBS))  # noqa: B023 (called at once by timed)
                r["rep_eff"] = (r["audit"] - r["base"]) / B * JOBS
                r["p_gof"] = res.p_gof
            # plfit
            if power_law_fit:
                p1 = plfit1.get(key, {})
                r["pl_rep1"] = p1.get("per_rep", math.nan)
                r["pl_fit1"], fitted = timed(lambda: plfit(power_law_fit, x, PLFIT_ONE), 2)  # noqa: B023 (called at once by timed)
                r["pl_xmin"], r["pl_alpha"] = fitted.xmin, fitted.alpha
                nt = trials(plfit_full_p)
                per_rep = r["pl_rep1"]
                if not math.isfinite(per_rep):  # no one-thread worker: a few trials with default threads
                    k = max(4, plfit_k[n] // 4)
                    tk, _ = timed(lambda: plfit(power_law_fit, x, precision_for(k)))  # noqa: B023 (called at once by timed)
                    per_rep = max(tk - r["pl_fit1"], 0.0) / (k - 1) * JOBS
                est = r["pl_fit1"] + (nt - 1) * per_rep  # one-thread cost: no credit for the 2nd core
                if est > budget:
                    r["pl_full"] = skipped(est)
                else:
                    r["pl_full"], res = timed(lambda: plfit(power_law_fit, x, plfit_full_p))  # noqa: B023 (called at once by timed)
                    r["pl_p"] = res.p
            # powerlaw
            if powerlaw:
                est = prev_pl_time.get(kind, 0.0) * 10
                if est > budget:
                    r["pw_fit"] = r["pw_cmp"] = skipped(est)
                else:
                    r["pw_fit"], f = timed(lambda: powerlaw.Fit(x, discrete=True, verbose=False))  # noqa: B023 (called at once by timed)
                    r["pw_cmp"], _ = timed(lambda: f.distribution_compare("truncated_power_law", "lognormal"))  # noqa: B023 (called at once by timed)
                    r["pw_xmin"], r["pw_alpha"] = float(f.xmin), float(f.alpha)
                    prev_pl_time[kind] = r["pw_fit"] + r["pw_cmp"]

    print("running the breakdowns ...", file=sys.stderr)
    n_rep = 10_000 if args.quick else 100_000
    n_fit = 10_000 if args.quick else 1_000_000
    bd_rep = {k: breakdown_replicate(make_data(k, n_rep, args.seed), 20 if args.quick else 50) for k in DATASETS}
    bd_fit = {k: breakdown_fit(make_data(k, n_fit, args.seed), 3) for k in DATASETS}
    load1 = os.getloadavg()

    # -------------------------------------------------------------------------------- tables
    rows = []
    for r in R.values():
        rows.append([r["kind"], f"{r['n']:.0e}", str(r["distinct"]), f"{r['xmin']:g}", str(r["n_tail"]),
                     f"{r['alpha']:.4f}", fmt_s(r["fit"]),
                     f"{r.get('pl_xmin', math.nan):g}/{r.get('pl_alpha', math.nan):.4f}",
                     fmt_s(r.get("pl_fit1")), fmt_x(ratio(r.get("pl_fit1"), r["fit"])),
                     f"{r.get('pw_xmin', math.nan):g}/{r.get('pw_alpha', math.nan):.4f}",
                     fmt_s(r.get("pw_fit")), fmt_x(ratio(r.get("pw_fit"), r["fit"]))])
    table("1. Power-law fit (x_min scan + α MLE). ctwm: min of 3-5 runs, JIT excluded. plfit: p_precision=0.5 "
          "(fit + 1 trial, default threads).",
          ["data", "n", "distinct", "x_min", "n_tail", "α", "ctwm fit", "plfit x_min/α", "plfit", "plfit/ctwm",
           "powerlaw x_min/α", "powerlaw Fit", "Fit/ctwm"], rows)

    rows = []
    for r in R.values():
        rows.append([r["kind"], f"{r['n']:.0e}", fmt_s(r["base"]), fmt_s(r["audit"]),
                     "-" if "p_gof" not in r else f"{r['p_gof']:.3f}",
                     fmt_s(r["rep1"]), fmt_s(r["rep_eff"]),
                     fmt_s(r.get("pl_full")), "-" if "pl_p" not in r else f"{r['pl_p']:.3f}",
                     fmt_x(ratio(r.get("pl_full"), r["audit"])),
                     fmt_s(r.get("pl_rep1")), fmt_x(ratio(r.get("pl_rep1"), r["rep1"]))])
    table(f"2. Goodness of fit, B = {B}. ctwm audit: jobs={JOBS} (2 processes); per rep 1 thread = bootstrap_gof(B=b, "
          f"jobs=1)/b; eff. = (audit - audit(B=0))/B*jobs. plfit: {trials(plfit_full_p)} "
          "trials, default OpenMP threads; per rep 1 thread from OMP_NUM_THREADS=1.",
          ["data", "n", "audit B=0", f"audit B={B}", "p_gof", "per rep 1 thr", "eff. per rep",
           "plfit full", "plfit p", "plfit/ctwm", "plfit rep 1 thr", "plfit/ctwm rep"], rows)

    rows = []
    for r in R.values():
        rows.append([r["kind"], f"{r['n']:.0e}", fmt_s(r["alt"]), fmt_s(r["alt_blas1"]),
                     fmt_s(r.get("pw_fit")), fmt_s(r.get("pw_cmp")),
                     fmt_x(ratio(r.get("pw_cmp"), r["alt"])), fmt_x(ratio(r.get("pw_cmp"), r["alt_blas1"]))])
    table("3. TPL vs log-normal. ctwm: fit_alternatives (4 families, 6 LR tests), min of 3; also in a subprocess "
          "with OPENBLAS_NUM_THREADS=1. powerlaw: Fit, then distribution_compare('truncated_power_law', 'lognormal').",
          ["data", "n", "ctwm stage", "ctwm (BLAS 1 thr)", "powerlaw Fit", "powerlaw compare",
           "compare/ctwm", "compare/ctwm(1 thr)"], rows)

    rows = []
    for kind in DATASETS:
        parts = bd_rep[kind]
        whole = sum(v for k, v in parts.items() if not k.startswith("scan:"))
        for part, t in parts.items():
            share = t / whole if not part.startswith("scan:") else t / (parts["scan: MLE"] + parts["scan: KS"])
            rows.append([f"replicate {kind} n={n_rep:.0e}", part, fmt_s(t), f"{100 * share:.0f}%"])
    for kind in DATASETS:
        for part, t in bd_fit[kind].items():
            rows.append([f"fit {kind} n={n_fit:.0e}", part, fmt_s(t), ""])
    table("4. Where the time goes (per replicate: mean of 50; fit: min of 3). scan: MLE / KS = the scan's two "
          "halves run separately (their % is of MLE + KS); other % = share of the replicate.",
          ["what", "part", "time", "share"], rows)

    # targets
    def get(key, field):
        v = R.get(key, {}).get(field)
        return v if isinstance(v, float) else math.nan

    big, mid = sizes[-1], (100_000 if 100_000 in sizes else sizes[-1])
    fit_big = max(get(f"{k}/{big}", "fit") for k in DATASETS)
    audit_mid = max(get(f"{k}/{mid}", "audit") for k in DATASETS)
    rep_ratio = min(ratio(get(f"{k}/{n}", "pl_rep1"), get(f"{k}/{n}", "rep1")) or math.nan
                    for k in DATASETS for n in sizes)
    alt_worst = max(get(f"{k}/{n}", "alt") for k in DATASETS for n in sizes)
    alt1_worst = max(get(f"{k}/{n}", "alt_blas1") for k in DATASETS for n in sizes)
    rows = [
        [f"full fit, n={big:.0e} (worst data set)", fmt_s(fit_big), "< 0.5 s", "yes" if fit_big < 0.5 else "NO",
         fmt_x(0.5 / fit_big)],
        [f"audit B={B}, n={mid:.0e} (worst)", fmt_s(audit_mid), "< 10 s", "yes" if audit_mid < 10 else "NO",
         fmt_x(10 / audit_mid)],
        ["per replicate vs plfit, 1 thread (worst n, data)", fmt_x(rep_ratio), ">= 3x",
         "yes" if rep_ratio >= 3 else "NO", fmt_x(rep_ratio / 3)],
        ["TPL-vs-LN stage (worst), default BLAS", fmt_s(alt_worst), "< 100 ms", "yes" if alt_worst < 0.1 else "NO",
         ""],
        ["TPL-vs-LN stage (worst), OPENBLAS_NUM_THREADS=1", fmt_s(alt1_worst), "< 100 ms",
         "yes" if alt1_worst < 0.1 else "NO", ""],
    ]
    table("5. Targets (2-core machine)", ["target", "measured", "limit", "met", "margin"], rows)
    print(f"\nload average at end: {load1[0]:.2f} {load1[1]:.2f} {load1[2]:.2f}; "
          f"wall time of this run: {time.perf_counter() - t_start:.0f} s")


if __name__ == "__main__":
    main()
