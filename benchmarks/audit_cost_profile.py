"""Where the CPU of a full audit goes (issue 48), per data set, from cProfile of one in-process audit.

    nice -n 10 python benchmarks/audit_cost_profile.py                 # B = 1000 (minutes)
    nice -n 10 python benchmarks/audit_cost_profile.py --bootstrap 200 --only blackouts

Each data set is audited once with ``jobs=1`` under cProfile (so every replicate runs in this process and
is seen), seed 1, the audit's defaults otherwise (fit checks on). Clauset et al.'s blackouts, terrorism and
words (discrete, as plfit fits them) from the ``powerlaw`` wheel; Zipf(2.2) counts, n = 1e5 (seed 1); and
40 tenants x 3,000 events (item ids Zipf(2.0) per tenant, seed 1), audited as ``ctwm audit --group-by``
does (one ``audit_many`` over the groups). Rows are cumulative seconds of the named work under the
profiler (which inflates Python-heavy parts more than compiled ones), and its share of the profiled total:

* start: a fresh ``python -c "import ctwm_cli.tail.audit"`` (wall), and loading numba's cached kernels;
* fit: the x_min scan and α MLE on the data; alternatives: the five alternative fits and the LR tests;
* p_gof: its replicates: ``sample`` (body resampled, power-law tail drawn), ``scan`` (x_min re-scanned,
  α refitted), ``nested TPL refit`` (the nested test's null);
* fit checks (TPL and log-normal): ``sample`` per family, ``refits`` (warm-started), ``KS`` and the rest;
* JSON: ``to_dict`` + ``json.dumps`` of the result.

Pool and process start of workers are not in a one-job profile; ``benchmarks/audit_cost.py`` measures the
whole process at 2 jobs.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from bench_real_data import load


def tenants(k: int = 40, events: int = 3000, seed: int = 1) -> list[np.ndarray]:
    """Per-item access counts of ``k`` tenants, each ``events`` events with Zipf(2.0) item ids."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(k):
        ids = rng.zipf(2.0, events)
        c = np.bincount(ids)
        out.append(c[c > 0].astype(np.float64))
    return out


def zipf_counts(n: int = 100_000, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).zipf(2.2, n).astype(np.float64)


DATA = {
    "zipf": lambda: [zipf_counts()],
    "blackouts": lambda: [np.round(load("blackouts"))],
    "terrorism": lambda: [load("terrorism")],
    "words": lambda: [load("words")],
    "tenants": tenants,
    "tenants10": lambda: tenants(10),
}


def _keys(stats, file_part: str, name: str) -> list:
    """Every profiled function of that name in that file (e.g. each family's ``fit`` method)."""
    return [k for k in stats if k[0].endswith(file_part) and k[2] == name]


def ct(stats, file_part: str, name: str, caller: tuple[str, str] | None = None) -> float:
    """Cumulative CPU seconds of the functions (only their calls from ``caller`` = (file, name) when given)."""
    total = 0.0
    callers = _keys(stats, *caller) if caller is not None else []
    for k in _keys(stats, file_part, name):
        if caller is None:
            total += stats[k][3]
        else:
            total += sum(stats[k][4][c][3] for c in callers if c in stats[k][4])
    return total


def start_cost() -> tuple[float, float]:
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import ctwm_cli.tail.audit"], check=True)
    imports = time.perf_counter() - t
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", "from ctwm_cli.tail.kernels import compile_all; compile_all()"], check=True)
    numba = time.perf_counter() - t - imports
    return imports, max(numba, 0.0)


def profile(name: str, b: int) -> dict[str, float]:
    from ctwm_cli.tail.audit import audit_many
    from ctwm_cli.tail.kernels import compile_all

    compile_all()
    audit_many([zipf_counts(2000)], bootstrap=2, seed=1, jobs=1)  # first calls of the kernels, not profiled
    counts = DATA[name]()
    prof = cProfile.Profile(time.process_time)  # CPU, not wall: the machine is shared
    prof.enable()
    t = time.process_time()
    results = audit_many(counts, bootstrap=b, seed=1, jobs=1)
    t_json = time.process_time()
    text = json.dumps([r.to_dict() for r in results])
    json_s = time.process_time() - t_json
    total = time.process_time() - t
    prof.disable()
    s = pstats.Stats(prof).stats
    A, F, B = "tail/audit.py", "tail/fitcheck.py", "tail/bootstrap.py"
    fam = "tail/families.py"
    rep = ct(s, B, "replicate_ks")
    resample = ct(s, B, "_resample", (B, "replicate_ks"))
    nested = ct(s, fam, "fit", (B, "replicate_ks"))
    fc = ct(s, F, "replicate_family_ks")
    fc_sample = ct(s, fam, "sample", (F, "replicate_family_ks"))
    fc_fit = ct(s, fam, "fit", (F, "replicate_family_ks"))
    fc_ks = ct(s, fam, "ks_distance", (F, "replicate_family_ks"))
    tpl_s = ct(s, "tail/samplers.py", "sample_tpl_tail")
    ln_s = ct(s, "tail/samplers.py", "sample_lognormal_tail")
    prep = ct(s, A, "_prepare")
    alt = ct(s, "tail/matrix.py", "fit_alternatives")
    row = {
        "fit (scan + alpha)": prep - alt, "alternatives + LR": alt,
        "p_gof: sample": resample, "p_gof: scan": rep - resample - nested, "p_gof: nested TPL refit": nested,
        "checks: TPL sample": tpl_s, "checks: LN sample": ln_s, "checks: refits": fc_fit, "checks: KS": fc_ks,
        "checks: rest": fc - fc_sample - fc_fit - fc_ks, "JSON": json_s,
    }
    row["other"] = max(total - sum(row.values()) + 0.0, 0.0)
    row["total (profiled CPU)"] = total
    row["_bytes"] = len(text)
    return row


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap", type=int, default=1000)
    ap.add_argument("--only", action="append", choices=sorted(DATA))
    a = ap.parse_args(argv)
    names = a.only or list(DATA)
    imports, numba = start_cost()
    rows = {n: profile(n, a.bootstrap) for n in names}
    keys = [k for k in next(iter(rows.values())) if not k.startswith("_")]
    print(f"B = {a.bootstrap}, one job, cProfile; start: imports {imports:.2f} s wall, numba's cached kernels "
          f"{numba:.2f} s")
    print("| work | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for k in keys:
        cells = []
        for n in names:
            v, tot = rows[n][k], rows[n]["total (profiled CPU)"]
            cells.append(f"{v:.2f} s" if k.startswith("total") else f"{v:.2f} s ({100 * v / tot:.0f} %)")
        print(f"| {k} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
