"""ctwm's tail audit against igraph's plfit on the Clauset et al. (2009) data sets that ship in the
``powerlaw`` wheel (``powerlaw/reference_data``), whole process, same number of bootstrap replicates.

    python benchmarks/bench_real_data.py                  # B = 1000, every data set (long: tens of minutes)
    python benchmarks/bench_real_data.py --bootstrap 50   # a quick run
    python benchmarks/bench_real_data.py --only cities --only quakes --repeats 2

Every data set is fitted continuous; integer-valued ones also discrete. Each contender is a fresh
Python process started from here and timed from outside, start to exit (imports, numba's cache
load, reading the file, the fit and the bootstrap all count):

* ``ctwm``:  ``ctwm_cli.tail.audit.audit(x, discrete=..., bootstrap=B, seed=1, jobs=J)``: the whole
  audit (power-law fit, alternatives, LR tests, p_gof with x_min re-scanned in every replicate),
  ``J`` worker processes (``--jobs``, default 2).
* ``plfit``: ``igraph.statistics.power_law_fit(x, method="discrete"|"continuous", p_precision=p)``
  with ``p = 0.5/sqrt(B + 0.5)``, so that plfit runs floor(0.25/p^2) = B bootstrap trials; OpenMP
  threads ``OMP_NUM_THREADS=J``. igraph exposes no other way to set the number of trials.

The machine may be shared: the two contenders run in turn (A B A B ..., the first alternating
between data sets), so load drift hits both, and the 1-minute load average is printed beside every
pair. One warm-up run of each (not counted) fills numba's on-disk cache first. Wall: the median
over ``--repeats``. Peak memory: the largest sum of resident memory over the process and its
children (sampled every 20 ms from /proc, so worker pools count), median over repeats.
Ratios are plfit / ctwm for time (target >= 3) and ctwm - plfit for peak memory. ``--timeout T``
stops a contender after T s: its time prints as ">T" and the ratio as a bound (">r").

Left out, with the reason printed: ``quakes_original.txt`` (magnitudes, with zeros: the log of
``quakes.txt``) and ``weblinks.hist`` (a histogram of ~2·10^8 page degrees; plfit needs the sample
itself).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

SKIPPED = {
    "quakes_original.txt": "magnitudes with zeros (quakes.txt holds 10^magnitude)",
    "weblinks.hist": "a degree histogram of ~2e8 pages; plfit needs the sample",
}


def data_dir() -> Path:
    """Found without importing ``powerlaw`` (its import loads matplotlib and scipy.stats: seconds)."""
    spec = importlib.util.find_spec("powerlaw")
    if spec is None or spec.origin is None:
        raise SystemExit("the powerlaw package is not installed (pip install powerlaw)")
    return Path(spec.origin).resolve().parent / "reference_data"


def load(name: str):
    import numpy as np

    return np.loadtxt(data_dir() / f"{name}.txt", dtype=np.float64)


def datasets() -> list[str]:
    return sorted(p.stem for p in data_dir().glob("*.txt") if p.name not in SKIPPED)


def precision_for(b: int) -> float:
    """igraph's p_precision giving exactly b bootstrap trials (floor(0.25/p^2) = b)."""
    return 0.5 / math.sqrt(b + 0.5)


# ---------------------------------------------------------------------------------------------
# workers (one fresh process each)


def worker(contender: str, name: str, discrete: bool, b: int, jobs: int) -> dict:
    x = load(name)
    if contender == "ctwm":
        from ctwm_cli.tail.audit import audit

        r = audit(x, discrete=discrete, bootstrap=b, seed=1, jobs=jobs)
        pl = r.power_law
        gof = r.gof
        return {"xmin": pl.xmin if pl else None, "alpha": pl.alpha if pl else None,
                "p": gof.pvalue if gof is not None else None}
    from igraph.statistics import power_law_fit

    method = "discrete" if discrete else "continuous"
    f = power_law_fit(x.astype("int64") if discrete else x, method=method, p_precision=precision_for(max(b, 1)))
    return {"xmin": float(f.xmin), "alpha": float(f.alpha), "p": float(f.p)}


# ---------------------------------------------------------------------------------------------
# the parent: start, sample memory, time


def tree_rss(pid: int) -> int:
    """Resident bytes of ``pid`` and all its descendants (0 once gone)."""
    total = 0
    stack = [pid]
    while stack:
        p = stack.pop()
        try:
            with open(f"/proc/{p}/statm") as f:
                total += int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    stack.extend(int(c) for c in f.read().split())
        except (FileNotFoundError, ProcessLookupError, ValueError):
            continue
    return total


def run_one(contender: str, name: str, discrete: bool, b: int, jobs: int, timeout: float = math.inf) -> dict:
    env = dict(os.environ)
    env["OMP_NUM_THREADS"] = str(jobs)
    cmd = [sys.executable, __file__, "--worker", contender, name, "discrete" if discrete else "continuous",
           str(b), str(jobs)]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True,
                            start_new_session=True)
    peak = 0
    while proc.poll() is None:
        peak = max(peak, tree_rss(proc.pid))
        time.sleep(0.02)
        if time.perf_counter() - t0 > timeout:  # stopped: its time is a lower bound
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            return {"wall": time.perf_counter() - t0, "peak_mib": peak / 2**20, "timed_out": True,
                    "result": {"xmin": None, "p": None}}
    wall = time.perf_counter() - t0
    out, err = proc.communicate()
    if proc.returncode != 0:
        raise SystemExit(f"{contender} {name} failed:\n{err}")
    return {"wall": wall, "peak_mib": peak / 2**20, "timed_out": False,
            "result": json.loads(out.strip().splitlines()[-1])}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bootstrap", "-b", type=int, default=1000)
    ap.add_argument("--jobs", "-j", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--only", action="append", help="data set name (repeatable)")
    ap.add_argument("--mode", choices=("both", "discrete", "continuous"), default="both")
    ap.add_argument("--timeout", type=float, default=math.inf,
                    help="stop a contender after this many seconds; its time is then printed as '>T'")
    ap.add_argument("--worker", nargs=5, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        c, name, mode, b, jobs = a.worker
        print(json.dumps(worker(c, name, mode == "discrete", int(b), int(jobs))))
        return
    import numpy as np

    for f, why in SKIPPED.items():
        print(f"skipped {f}: {why}")
    print(f"B = {a.bootstrap}, ctwm jobs = {a.jobs}, plfit OMP_NUM_THREADS = {a.jobs}, repeats = {a.repeats}; "
          f"{os.cpu_count()} cores; python {sys.version.split()[0]}")
    print(f"{'data':<22}{'n':>8}{'distinct':>9}  {'ctwm s':>8}{'plfit s':>9}{'plfit/ctwm':>11}"
          f"  {'ctwm MiB':>9}{'plfit MiB':>10}{'Δ MiB':>7}  {'load':>5}   x_min ctwm / plfit, p ctwm / plfit")
    for c in ("ctwm", "plfit"):  # warm-up, not counted: fills numba's on-disk cache and the page cache
        run_one(c, "blackouts", True, 2, a.jobs)
    rows = []
    turn = 0
    for name in a.only or datasets():
        x = load(name)
        integer = bool(np.all(x == np.floor(x)))
        modes = [m for m in (True, False) if (integer or not m)
                 and a.mode in ("both", "discrete" if m else "continuous")]
        for discrete in modes:
            runs: dict[str, list[dict]] = {"ctwm": [], "plfit": []}
            loads = []
            for _ in range(a.repeats):
                order = ("ctwm", "plfit") if turn % 2 == 0 else ("plfit", "ctwm")
                turn += 1
                for c in order:
                    loads.append(os.getloadavg()[0])
                    runs[c].append(run_one(c, name, discrete, a.bootstrap, a.jobs, a.timeout))
            med = {c: (statistics.median(r["wall"] for r in rs), statistics.median(r["peak_mib"] for r in rs))
                   for c, rs in runs.items()}
            rc, rp = runs["ctwm"][-1]["result"], runs["plfit"][-1]["result"]
            label = f"{name} {'discrete' if discrete else 'continuous'}"
            ratio = med["plfit"][0] / med["ctwm"][0]
            cut = {c: any(r["timed_out"] for r in rs) for c, rs in runs.items()}
            # a stopped contender's time is a lower bound: the ratio is a bound too, or unknown
            rel = ">" if cut["plfit"] and not cut["ctwm"] else "<" if cut["ctwm"] and not cut["plfit"] else ""
            if cut["plfit"] and cut["ctwm"]:
                rel, ratio = "?", math.nan
            if rel != "?":
                rows.append((label, ratio))
            mem_c, mem_p = med["ctwm"][1], med["plfit"][1]
            secs = {c: (">" if cut[c] else "") + f"{med[c][0]:.1f}" for c in med}
            print(f"{label:<22}{x.size:>8}{np.unique(x).size:>9}  {secs['ctwm']:>8}{secs['plfit']:>9}"
                  f"{rel:>2}{ratio:>8.2f}x  {mem_c:>9.0f}{mem_p:>10.0f}{mem_c - mem_p:>+7.0f}"
                  f"  {statistics.median(loads):>5.1f}   {_g(rc['xmin'])} / {_g(rp['xmin'])}, "
                  f"{_g(rc['p'])} / {_g(rp['p'])}", flush=True)
    if rows:
        worst = min(rows, key=lambda r: r[1])
        print(f"slowest relative to plfit: {worst[0]} at {worst[1]:.2f}x (target >= 3x)")


def _g(v) -> str:
    return "-" if v is None else f"{v:.4g}"


if __name__ == "__main__":
    main()
