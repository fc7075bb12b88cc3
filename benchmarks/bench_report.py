"""``ctwm report`` of a 10⁵-item trace against ``ctwm audit`` of the same trace, in the same run (issue 31).

    python benchmarks/bench_report.py                # 3 rounds, --bootstrap 1000 (audit's default)
    python benchmarks/bench_report.py --rounds 5 --bootstrap 200

The trace: 10⁵ distinct items with Zipf(2.2) retrieve counts (about 4·10⁵ events) dealt out over the steps of one
run, so the report draws every trace view it can (CCDF, concentration, PSD, the τ sweep of the allocation; no
memory-health view, the trace has no memory-health events). Both commands are started as new processes
(``sys.executable -m ctwm_cli``) with the same seed and bootstrap and timed from outside, wall clock; they run in
turn (A B A B ...) so drift hits both, after one warm-up pair. Printed: the median of each and the median of the
per-round ratios report/audit. Target: <= 2.

The report does the audit's work (the same ``audit_many`` call), then reads the trace again for the PSD and the
allocation and draws five figures; the bootstrap dominates both. Cross-check with an external timer,
e.g. ``/usr/bin/time -v`` around ``ctwm audit T --seed 1`` and ``ctwm report T -o /tmp/r.html --seed 1`` in turn.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

N_ITEMS = 100_000


def write_trace(path: Path) -> int:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(20261201)
    counts = rng.zipf(2.2, N_ITEMS).clip(max=50_000)
    items = np.repeat(np.arange(N_ITEMS), counts)
    rng.shuffle(items)
    pq.write_table(pa.table({"item": pa.array([f"m{i:06d}" for i in items]), "step": np.arange(items.size),
                             "run": pa.array(["r"] * items.size), "event": pa.array(["retrieve"] * items.size)}), path)
    return int(items.size)


def timed(cmd: list[str]) -> float:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--bootstrap", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "trace.parquet"
        events = write_trace(trace)
        common = ["--seed", str(args.seed), "--bootstrap", str(args.bootstrap)]
        audit = [sys.executable, "-m", "ctwm_cli", "audit", str(trace), *common]
        report = [sys.executable, "-m", "ctwm_cli", "report", str(trace), "-o", str(Path(tmp) / "r.html"), *common]
        timed(report), timed(audit)  # warm-up (numba's on-disk cache, the file cache)
        a_times, r_times, ratios = [], [], []
        for _ in range(args.rounds):
            r, a = timed(report), timed(audit)
            r_times.append(r)
            a_times.append(a)
            ratios.append(r / a)
        size = (Path(tmp) / "r.html").stat().st_size
    print(f"trace: {N_ITEMS:,} items, {events:,} events; bootstrap {args.bootstrap}, seed {args.seed}, "
          f"{args.rounds} rounds, {os.cpu_count()} cores")
    print(f"ctwm audit   median {statistics.median(a_times):7.2f} s  (min {min(a_times):.2f}, max {max(a_times):.2f})")
    print(f"ctwm report  median {statistics.median(r_times):7.2f} s  (min {min(r_times):.2f}, max {max(r_times):.2f}); "
          f"page {size:,} bytes")
    print(f"report / audit: median of per-round ratios {statistics.median(ratios):.2f} (target <= 2)")


if __name__ == "__main__":
    main()
