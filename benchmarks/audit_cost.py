"""The audit's cost against igraph's plfit and the ``powerlaw`` package, whole process, in one run (issue 48).

    nice -n 10 python benchmarks/audit_cost.py                       # every row (tens of minutes)
    nice -n 10 python benchmarks/audit_cost.py --only blackouts --only tenants --bootstrap 200

Rows: the eight Clauset et al. (2009) data sets shipped in the ``powerlaw`` wheel (fitted discrete when every
value is an integer, else continuous, as the data are), Zipf(2.2) counts with n = 1e5 (seed 1), and 40 tenants x
3,000 events (item ids Zipf(2.0) per tenant, seed 1; ``benchmarks/audit_cost_profile.py`` generates both).
Each contender is a fresh process, timed from start to exit; CPU is user + system of the process and every
descendant it waited for (its pool's workers), from ``wait4``; peak = the largest sum of resident memory over
the process tree (sampled every 20 ms from /proc).

* ``ctwm``: the command line, ``python -m ctwm_cli audit FILE -b B -j J --format json`` (defaults: fit checks
  on), on a counts table (discrete), a ``--value-col value --continuous`` table, or the tenants' events with
  ``--group-by tenant``; files written once, before timing.
* ``plfit``: ``igraph.power_law_fit(x, method=..., p_precision=0.0158)`` (1,001 bootstrap trials, B = 1000's
  precision), ``OMP_NUM_THREADS=J``; the tenants as a loop over the 40 groups in one process.
* at B = 0: ``ctwm audit -b 0`` against ``powerlaw.Fit(x, discrete=...)`` (x_min scan and α only).

Ratios are ctwm / reference (below 1: ctwm is cheaper). ``--timeout`` stops a contender: its time prints as
">T" and the ratio as a bound.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from audit_cost_profile import tenants, zipf_counts
from bench_real_data import datasets, load, tree_rss

P_PRECISION = 0.0158  # floor(0.25 / p^2) = 1001 plfit trials


def data(name: str) -> tuple[list[np.ndarray], bool]:
    """The samples of a row (one, or one per tenant) and whether they are fitted discrete."""
    if name == "zipf":
        return [zipf_counts()], True
    if name == "tenants":
        return tenants(), True
    x = load(name)
    return [x], bool(np.all(x == np.floor(x)) and x.min() >= 1)


def write_input(name: str, folder: Path) -> tuple[Path, list[str]]:
    """The trace ctwm reads for a row, and the flags that say how."""
    xs, discrete = data(name)
    path = folder / f"{name}.jsonl"
    with path.open("w") as f:
        if name == "tenants":
            rng = np.random.default_rng(1)
            for t in range(len(xs)):
                for i in rng.zipf(2.0, 3000):  # the same draws as tenants(): same seed, same order
                    f.write(f'{{"item":"i{i}","tenant":"t{t:02d}"}}\n')
            return path, ["--group-by", "tenant"]
        if discrete:
            for i, v in enumerate(xs[0]):
                f.write(f'{{"item":"i{i}","count":{int(v)}}}\n')
            return path, []
        for v in xs[0]:
            f.write(f'{{"value":{float(v)!r}}}\n')
    return path, ["--value-col", "value", "--continuous"]


def worker(contender: str, name: str, b: int) -> None:
    xs, discrete = data(name)
    if contender == "plfit":
        from igraph import power_law_fit

        for x in xs:
            power_law_fit(x.astype("int64") if discrete else x, method="discrete" if discrete else "continuous",
                          p_precision=P_PRECISION)
    else:  # powerlaw.Fit at B = 0
        import powerlaw

        for x in xs:
            powerlaw.Fit(x, discrete=discrete, verbose=False)


def run(cmd: list[str], threads: int, timeout: float, root: str | None = None) -> dict:
    env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
    if root is not None:  # ctwm from another checkout (--baseline); `python -m` puts the cwd first on sys.path
        env["PYTHONPATH"] = root
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
                            start_new_session=True, cwd=root)
    peak = 0
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        peak = max(peak, tree_rss(proc.pid))
        if time.perf_counter() - t0 > timeout:
            os.killpg(proc.pid, signal.SIGKILL)
            _, status, usage = os.wait4(proc.pid, 0)
            return {"wall": time.perf_counter() - t0, "cpu": usage.ru_utime + usage.ru_stime,
                    "peak": peak / 2**20, "cut": True}
        time.sleep(0.02)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode not in (0, 1):  # 1: ctwm's verdict-gate exit, not used here; kept for safety
        raise SystemExit(f"{cmd} failed ({proc.returncode}):\n{proc.stderr.read().decode()[-2000:]}")
    return {"wall": time.perf_counter() - t0, "cpu": usage.ru_utime + usage.ru_stime, "peak": peak / 2**20,
            "cut": False}


def _t(r: dict) -> str:
    return (">" if r["cut"] else "") + f"{r['cpu']:.1f}/{r['wall']:.1f}"


def _ratio(a: dict, b: dict, key: str) -> str:
    """a / b; a stopped ctwm's CPU misses its killed workers (never waited for), so that ratio is unknown."""
    if a["cut"] and key == "cpu":
        return "?"
    rel = "<" if b["cut"] and not a["cut"] else ">" if a["cut"] and not b["cut"] else "?" if a["cut"] else ""
    return f"{rel}{a[key] / b[key]:.2f}x" if rel != "?" else "?"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap", "-b", type=int, default=1000)
    ap.add_argument("--jobs", "-j", type=int, default=2)
    ap.add_argument("--only", action="append")
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--no-b0", action="store_true", help="skip the B = 0 rows against powerlaw.Fit")
    ap.add_argument("--no-plfit", action="store_true", help="skip plfit (e.g. with --baseline: ctwm against itself)")
    ap.add_argument("--baseline", metavar="DIR", help="also time ctwm from this checkout (e.g. the code before)")
    ap.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.worker:
        worker(a.worker[0], a.worker[1], int(a.worker[2]))
        return
    names = a.only or [*datasets(), "zipf", "tenants"]
    me = [sys.executable, __file__, "--worker"]
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, python {sys.version.split()[0]}; "
          f"ctwm -b {a.bootstrap} -j {a.jobs}; plfit p_precision {P_PRECISION}, OMP_NUM_THREADS={a.jobs}; "
          f"load at start {os.getloadavg()[0]:.1f}")
    print("| data | n | ctwm CPU/wall s | plfit CPU/wall s | CPU ratio | wall ratio | peak MiB ctwm/plfit "
          "| B=0 ctwm CPU s | powerlaw.Fit CPU s | B=0 CPU ratio | load |"
          + (" baseline CPU/wall s | after / baseline CPU |" if a.baseline else ""))
    print("|---|---|---|---|---|---|---|---|---|---|---|" + ("---|---|" if a.baseline else ""))
    with tempfile.TemporaryDirectory() as tmp:
        warm, flags = write_input("blackouts", Path(tmp))  # numba's cache and the page cache, not counted
        run([sys.executable, "-m", "ctwm_cli", "audit", str(warm), "-b", "2", *flags], a.jobs, a.timeout)
        if a.baseline:
            run([sys.executable, "-m", "ctwm_cli", "audit", str(warm), "-b", "2", *flags], a.jobs, a.timeout,
                root=a.baseline)
        for name in names:
            path, flags = write_input(name, Path(tmp))
            ctwm = [sys.executable, "-m", "ctwm_cli", "audit", str(path), "-j", str(a.jobs), "--seed", "1",
                    "--format", "json", *flags]
            load_avg = os.getloadavg()[0]
            c = run([*ctwm, "-b", str(a.bootstrap)], a.jobs, a.timeout)
            p = (run([*me, "plfit", name, str(a.bootstrap)], a.jobs, a.timeout) if not a.no_plfit
                 else {"wall": math.nan, "cpu": math.nan, "peak": math.nan, "cut": False})
            n = 40 * 3000 if name == "tenants" else sum(x.size for x in data(name)[0])
            cells = [name, f"{n:,}", _t(c), _t(p), _ratio(c, p, "cpu"), _ratio(c, p, "wall"),
                     f"{c['peak']:.0f}/{p['peak']:.0f}"]
            if a.no_b0:
                cells += ["-", "-", "-"]
            else:
                c0 = run([*ctwm, "-b", "0"], a.jobs, a.timeout)
                f0 = run([*me, "powerlaw", name, "0"], 1, a.timeout)
                cells += [_t(c0).split("/")[0], _t(f0).split("/")[0], _ratio(c0, f0, "cpu")]
            cells.append(f"{load_avg:.1f}")
            if a.baseline:
                old = run([*ctwm, "-b", str(a.bootstrap)], a.jobs, a.timeout, root=a.baseline)
                cells += [_t(old), _ratio(c, old, "cpu")]
            print("| " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
