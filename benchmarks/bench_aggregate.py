"""Time and peak memory of ctwm's streaming aggregation against whole-table group-bys.

    python benchmarks/bench_aggregate.py                 # 10 million events (generated once)
    python benchmarks/bench_aggregate.py --events 1e6    # a quicker run

The trace (Zipf-distributed item ids over ~1e5 items, increasing steps, a run column) is written to
``benchmarks/data/`` unless it is already there. Each contender runs in a fresh Python process,
which reports its wall time for the work (imports excluded) and its peak resident memory
(``ru_maxrss`` of that process). The contenders:

* ``ctwm``:    ``scan_trace(open_trace(path))`` + ``item_counts`` (streams record batches)
* ``pyarrow``: ``pyarrow.parquet.read_table(path).group_by("item").aggregate(...)``
* ``pandas``:  ``pandas.read_parquet(path).groupby("item").size()``

All three must agree on the number of distinct items and of events; the table then gives the
ratios ctwm / reference. "baseline" is the resident memory right after the imports, before the work.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CONTENDERS = ("ctwm", "pyarrow", "pandas")


def _maxrss_mib() -> float:
    kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    return kib / 1024


def _current_rss_mib() -> float:
    try:
        with open("/proc/self/statm") as fh:
            pages = int(fh.read().split()[1])
        return pages * resource.getpagesize() / 2**20
    except OSError:  # not Linux: fall back to the peak so far
        return _maxrss_mib()


def make_trace(path: Path, n_events: int, n_items: int, seed: int, chunk: int = 1_000_000) -> None:
    """Write ``n_events`` events: items ~ bounded Zipf(s=1) over ``n_items`` ids, 32 runs."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    ranks = np.arange(1, n_items + 1, dtype=np.float64)
    cdf = np.cumsum(1.0 / ranks)
    cdf /= cdf[-1]
    perm = rng.permutation(n_items)  # popular items are not the smallest ids
    ids = pa.array([f"m{i:06d}" for i in range(n_items)], pa.string())
    runs = pa.array([f"run-{r:02d}" for r in range(32)], pa.string())
    schema = pa.schema([("item", pa.string()), ("step", pa.int64()), ("run", pa.string())])
    tmp = path.with_suffix(".tmp")
    with pq.ParquetWriter(tmp, schema) as writer:
        for start in range(0, n_events, chunk):
            n = min(chunk, n_events - start)
            item_idx = perm[np.minimum(np.searchsorted(cdf, rng.random(n)), n_items - 1)]
            step = np.arange(start, start + n, dtype=np.int64) // 8  # 8 retrievals per agent step
            run_idx = (step * 32) // max(1, n_events // 8)  # 32 consecutive episodes
            table = pa.table(
                {"item": ids.take(pa.array(item_idx)), "step": step, "run": runs.take(pa.array(run_idx))},
                schema=schema,
            )
            writer.write_table(table, row_group_size=chunk)
    tmp.rename(path)


def work(name: str, path: str) -> dict:
    """Run one contender in this process; return its timings and what it found."""
    if name == "ctwm":
        from ctwm_cli.traces import item_counts, open_trace, scan_trace

        base = _current_rss_mib()
        t0 = time.perf_counter()
        (counts,) = item_counts(scan_trace(open_trace(path)))
        seconds = time.perf_counter() - t0
        n_items, n_events = counts.n_items, counts.n_events
    elif name == "pyarrow":
        import pyarrow.parquet as pq

        base = _current_rss_mib()
        t0 = time.perf_counter()
        g = pq.read_table(path).group_by("item").aggregate([("item", "count")])
        seconds = time.perf_counter() - t0
        n_items, n_events = g.num_rows, int(g.column("item_count").to_numpy().sum())
    elif name == "pandas":
        import pandas as pd

        base = _current_rss_mib()
        t0 = time.perf_counter()
        s = pd.read_parquet(path).groupby("item").size()
        seconds = time.perf_counter() - t0
        n_items, n_events = int(s.size), int(s.sum())
    else:
        raise SystemExit(f"unknown contender {name!r}")
    return {"name": name, "seconds": seconds, "peak_mib": _maxrss_mib(), "baseline_mib": base,
            "n_items": n_items, "n_events": n_events}


def run_child(name: str, path: Path) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--worker", name, str(path)], capture_output=True, text=True, check=False
    )
    if out.returncode != 0:
        raise SystemExit(f"{name} failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=float, default=10_000_000, help="events in the trace (default 1e7)")
    ap.add_argument("--items", type=int, default=100_000, help="item ids to draw from (default 1e5)")
    ap.add_argument("--seed", type=int, default=20260101, help="seed of the generated trace")
    ap.add_argument("--repeat", type=int, default=1, help="runs per contender; the fastest is kept")
    ap.add_argument("--data-dir", type=Path, default=HERE / "data")
    ap.add_argument("--worker", nargs=2, metavar=("NAME", "PATH"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(work(*args.worker)))
        return

    n_events = int(args.events)
    args.data_dir.mkdir(parents=True, exist_ok=True)
    path = args.data_dir / f"zipf_{n_events}_{args.items}_{args.seed}.parquet"
    if not path.exists():
        print(f"generating {path} ...", file=sys.stderr)
        t0 = time.perf_counter()
        make_trace(path, n_events, args.items, args.seed)
        print(f"  done in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    size_mib = path.stat().st_size / 2**20

    results = {}
    for name in CONTENDERS:
        runs = [run_child(name, path) for _ in range(max(1, args.repeat))]
        results[name] = min(runs, key=lambda r: r["seconds"])
        results[name]["peak_mib"] = min(r["peak_mib"] for r in runs)
    found = {(r["n_items"], r["n_events"]) for r in results.values()}
    if len(found) != 1:
        raise SystemExit(f"contenders disagree: {results}")
    (n_items, n_events_found), = found

    print(f"trace: {path.name}  {n_events_found:,} events, {n_items:,} distinct items, {size_mib:.0f} MiB on disk")
    print(f"{'contender':<10} {'seconds':>8} {'peak MiB':>9} {'baseline':>9} {'work MiB':>9}"
          f" {'ctwm/ref time':>14} {'ctwm/ref peak':>14} {'ctwm/ref work':>14}")
    c = results["ctwm"]
    for name in CONTENDERS:
        r = results[name]
        work_mib = r["peak_mib"] - r["baseline_mib"]
        c_work = c["peak_mib"] - c["baseline_mib"]
        ratios = ("" if name == "ctwm" else
                  f" {c['seconds'] / r['seconds']:>14.2f} {c['peak_mib'] / r['peak_mib']:>14.2f}"
                  f" {c_work / work_mib:>14.2f}")
        print(f"{name:<10} {r['seconds']:>8.2f} {r['peak_mib']:>9.0f} {r['baseline_mib']:>9.0f}"
              f" {work_mib:>9.0f}{ratios}")
    print("peak = ru_maxrss of the contender's process; work = peak - resident memory after imports.")


if __name__ == "__main__":
    main()
