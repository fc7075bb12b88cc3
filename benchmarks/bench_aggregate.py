"""Reading and counting a trace: ctwm against DuckDB, Polars and pyarrow in one run; a 100M-event
partitioned dataset under a 1 GiB memory limit; a grouped audit local against a Dask LocalCluster.

    python benchmarks/bench_aggregate.py                        # 10M events, 1M-item Zipf ids
    python benchmarks/bench_aggregate.py --events 1e6           # quicker
    python benchmarks/bench_aggregate.py --large 1e8            # + 100M events, memory limit 1GiB
    python benchmarks/bench_aggregate.py --audit-groups 1000 --audit-bootstrap 1000   # + grouped audit
    python benchmarks/bench_aggregate.py --jsonl --baseline ../main   # JSONL: this ctwm against another checkout

The trace (items ~ bounded Zipf(s=1) over ``--items`` ids, shuffled; increasing steps; 32 runs) is
written to ``benchmarks/data/`` unless already there. Every contender runs in a fresh Python process
that reports its wall time for the work (imports excluded), the wall time of the whole process, and
its peak resident memory (``VmHWM``). Contenders, all counting accesses per item:

* ``ctwm-aggregate``: ``scan_trace(open_trace(path), stats=False)`` — counts per (event, item) in DuckDB
* ``ctwm-counts``:    ``read_counts([path])`` — the same, plus the per-item counts sorted by count
  then id (what ``ctwm audit`` consumes)
* ``duckdb``:  ``SELECT item, count(*) FROM read_parquet(path) GROUP BY item`` (to Arrow)
* ``polars``:  ``pl.scan_parquet(path).group_by("item").len().collect()``
* ``pyarrow``: ``pq.read_table(path, columns=["item"]).group_by("item").aggregate(...)``

All must agree on the number of distinct items and events. The ratios are ctwm-aggregate / duckdb
(target: time <= 1.3x, peak <= duckdb's + 150 MiB).

``--jsonl`` times the same trace as JSON lines (``item``, ``step``, ``run``): ``ctwm-aggregate`` and
``ctwm-counts`` (hardening pass included) against DuckDB's ``read_json``; with ``--baseline DIR``
the ctwm rows also run with ``PYTHONPATH=DIR`` (another checkout) and the ratio this/baseline is
printed, interleaved run by run (issue 25: the whole-file key search must stay within 10%).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CONTENDERS = ("ctwm-aggregate", "ctwm-counts", "duckdb", "polars", "pyarrow")


def _maxrss_mib() -> float:
    """Peak resident memory of this process. VmHWM, not ru_maxrss: Linux carries ru_maxrss across
    execve, so a child started by a big parent would report the parent's peak."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


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
    ids = pa.array([f"m{i:07d}" for i in range(n_items)], pa.string())
    runs = pa.array([f"run-{r:02d}" for r in range(32)], pa.string())
    schema = pa.schema([("item", pa.string()), ("step", pa.int64()), ("run", pa.string())])
    tmp = path.with_suffix(".tmp")
    with pq.ParquetWriter(tmp, schema) as writer:
        for start in range(0, n_events, chunk):
            n = min(chunk, n_events - start)
            item_idx = perm[np.minimum(np.searchsorted(cdf, rng.random(n)), n_items - 1)]
            step = np.arange(start, start + n, dtype=np.int64) // 8  # 8 retrievals per agent step
            run_idx = np.minimum((step * 32) // max(1, n_events // 8), 31)  # 32 consecutive episodes
            table = pa.table(
                {"item": ids.take(pa.array(item_idx)), "step": step, "run": runs.take(pa.array(run_idx))},
                schema=schema,
            )
            writer.write_table(table, row_group_size=chunk)
    tmp.rename(path)


def work(name: str, path: str, memory_limit: str | None) -> dict:
    """Run one contender in this process; return its timings and what it found."""
    if name.startswith("ctwm"):
        import duckdb  # ctwm imports it lazily: imported before the clock, as for the duckdb row

        from ctwm_cli.traces import EngineOptions, open_trace, scan_trace
        from ctwm_cli.traces.paths import ReadOptions, read_counts

        engine = EngineOptions(memory_limit=memory_limit) if memory_limit else EngineOptions()
        c0 = time.process_time()
        t0 = time.perf_counter()
        if name == "ctwm-aggregate":
            scan = scan_trace(open_trace(path, engine=engine), stats=False)
            n_items, n_events = scan.n_items, sum(scan.events.values())
        else:
            (counts,) = read_counts([path], ReadOptions(engine=engine))
            n_items, n_events = counts.n_items, counts.n_events
        seconds = time.perf_counter() - t0
    elif name == "duckdb":
        import duckdb

        c0 = time.process_time()
        t0 = time.perf_counter()
        con = duckdb.connect()
        src = f"read_parquet('{path}/**/*.parquet')" if Path(path).is_dir() else f"read_parquet('{path}')"
        if path.endswith(".jsonl"):
            src = f"read_json('{path}', format = 'newline_delimited')"
        g = con.sql(f"SELECT item, count(*) AS n FROM {src} GROUP BY item").to_arrow_table()
        seconds = time.perf_counter() - t0
        n_items, n_events = g.num_rows, int(g.column("n").to_numpy().sum())
    elif name == "polars":
        import polars as pl

        c0 = time.process_time()
        t0 = time.perf_counter()
        g = pl.scan_parquet(path).group_by("item").len().collect()
        seconds = time.perf_counter() - t0
        n_items, n_events = g.height, int(g["len"].sum())
    elif name == "pyarrow":
        import pyarrow.parquet as pq

        c0 = time.process_time()
        t0 = time.perf_counter()
        g = pq.read_table(path, columns=["item"]).group_by("item").aggregate([([], "count_all")])
        seconds = time.perf_counter() - t0
        n_items, n_events = g.num_rows, int(g.column("count_all").to_numpy().sum())
    else:
        raise SystemExit(f"unknown contender {name!r}")
    cpu = time.process_time() - c0  # every thread's CPU: steadier than wall time on a shared machine
    return {"name": name, "seconds": seconds, "cpu_s": cpu, "peak_mib": _maxrss_mib(), "n_items": n_items,
            "n_events": n_events}


def run_child(name: str, path: Path, memory_limit: str | None = None, pythonpath: str | None = None) -> dict:
    cmd = [sys.executable, __file__, "--worker", name, str(path)]
    if memory_limit:
        cmd += ["--memory-limit", memory_limit]
    env = None if pythonpath is None else {**os.environ, "PYTHONPATH": pythonpath}
    t0 = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env)
    wall = time.perf_counter() - t0
    if out.returncode != 0:
        raise SystemExit(f"{name} failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1]) | {"process_s": wall}


def compare(path: Path, repeat: int) -> None:
    results = {}
    for _ in range(max(1, repeat)):  # interleaved, so load changes hit every contender alike
        for name in CONTENDERS:
            r = run_child(name, path)
            best = results.get(name)
            if best is None or r["seconds"] < best["seconds"]:
                results[name] = r | {"peak_mib": min(r["peak_mib"], best["peak_mib"]) if best else r["peak_mib"]}
    found = {(r["n_items"], r["n_events"]) for r in results.values()}
    if len(found) != 1:
        raise SystemExit(f"contenders disagree: {results}")
    ((n_items, n_events),) = found
    size_mib = path.stat().st_size / 2**20
    print(f"trace: {path.name}  {n_events:,} events, {n_items:,} distinct items, {size_mib:.0f} MiB on disk; "
          f"best of {repeat}")
    print(f"{'contender':<15} {'work s':>7} {'process s':>10} {'peak MiB':>9}")
    for name in CONTENDERS:
        r = results[name]
        print(f"{name:<15} {r['seconds']:>7.2f} {r['process_s']:>10.2f} {r['peak_mib']:>9.0f}")
    a, c, d = results["ctwm-aggregate"], results["ctwm-counts"], results["duckdb"]
    print(f"ctwm-aggregate / duckdb: time {a['seconds'] / d['seconds']:.2f}x (target <= 1.30), "
          f"peak {a['peak_mib'] - d['peak_mib']:+.0f} MiB (target <= +150)")
    print(f"ctwm-counts / duckdb:    time {c['seconds'] / d['seconds']:.2f}x, "
          f"peak {c['peak_mib'] - d['peak_mib']:+.0f} MiB (includes sorting the per-item counts)")


def make_jsonl(parquet: Path) -> Path:
    """The Parquet trace as JSON lines beside it (``item``, ``step``, ``run`` on every line)."""
    import duckdb

    path = parquet.with_suffix(".jsonl")
    if not path.exists():
        print(f"generating {path} ...", file=sys.stderr)
        tmp = path.with_suffix(".tmp")
        duckdb.connect().execute(f"COPY (SELECT item, step, run FROM read_parquet('{parquet}')) "
                                 f"TO '{tmp}' (FORMAT json)")
        tmp.rename(path)
    return path


def compare_jsonl(path: Path, repeat: int, baseline: str | None) -> None:
    """ctwm on a JSONL trace against DuckDB's read_json, and against ``baseline`` (another checkout)."""
    runs = [("ctwm-aggregate", None), ("ctwm-counts", None), ("duckdb", None)]
    if baseline:
        runs += [("ctwm-aggregate", baseline), ("ctwm-counts", baseline)]
    best: dict[tuple[str, str | None], dict] = {}
    cpu: dict[tuple[str, str | None], float] = {}
    for _ in range(max(1, repeat)):
        for name, where in runs:
            r = run_child(name, path, pythonpath=where)
            if (name, where) not in best or r["seconds"] < best[name, where]["seconds"]:
                best[name, where] = r
            cpu[name, where] = min(cpu.get((name, where), float("inf")), r["cpu_s"])
    found = {(r["n_items"], r["n_events"]) for r in best.values()}
    if len(found) != 1:
        raise SystemExit(f"contenders disagree: {best}")
    ((n_items, n_events),) = found
    print(f"jsonl trace: {path.name}  {n_events:,} events, {n_items:,} distinct items, "
          f"{path.stat().st_size / 2**20:.0f} MiB; best of {repeat}")
    print(f"{'contender':<40} {'wall s':>7} {'CPU s':>7} {'peak MiB':>9}  (each the best of its runs)")
    for (name, where), r in best.items():
        label = name if where is None else f"{name} [{where}]"
        print(f"{label:<40} {r['seconds']:>7.2f} {cpu[name, where]:>7.2f} {r['peak_mib']:>9.0f}")
    d = best["duckdb", None]["seconds"]
    for name in ("ctwm-aggregate", "ctwm-counts"):
        line = f"{name} / duckdb read_json: {best[name, None]['seconds'] / d:.2f}x"
        if baseline:
            line += (f"; this / baseline: wall {best[name, None]['seconds'] / best[name, baseline]['seconds']:.3f}x, "
                     f"CPU {cpu[name, None] / cpu[name, baseline]:.3f}x")
        print(line)


def large(data_dir: Path, n_events: int, n_items: int, seed: int, memory_limit: str) -> None:
    """A partitioned dataset of ``n_events`` (files of 1e7) counted under ``memory_limit``."""
    root = data_dir / f"zipf_{n_events}_{n_items}_{seed}_parts"
    per = 10_000_000
    parts = (n_events + per - 1) // per
    for k in range(parts):
        part = root / f"part={k:03d}" / "data.parquet"
        if not part.exists():
            part.parent.mkdir(parents=True, exist_ok=True)
            print(f"generating {part} ...", file=sys.stderr)
            make_trace(part, min(per, n_events - k * per), n_items, seed + k)
    in_memory = n_events * (8 + 4 + 8 + 6 + 4) / 2**30  # item text + offsets, step, run text + offsets
    r = run_child("ctwm-counts", root, memory_limit)
    print(f"large: {r['n_events']:,} events in {parts} files, {r['n_items']:,} distinct items; Arrow in-memory "
          f"size ~{in_memory:.1f} GiB; memory_limit {memory_limit}: {r['seconds']:.1f} s, "
          f"peak RSS {r['peak_mib']:.0f} MiB")


def grouped_audit(data_dir: Path, groups: int, bootstrap: int, seed: int) -> None:
    """``ctwm audit DIR --group-by run -b B`` locally and with ``--scheduler local`` (2 workers)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = data_dir / f"audit_{groups}_{seed}.parquet"
    if not path.exists():
        rng = np.random.default_rng(seed)
        per = 2_000
        items = np.char.add("m", (rng.zipf(1.8, groups * per) % 5_000).astype(str))
        runs = np.repeat([f"g{k:04d}" for k in range(groups)], per)
        pq.write_table(pa.table({"item": items, "run": runs}), path)
    base = ["ctwm", "audit", str(path), "--group-by", "run", "-b", str(bootstrap), "--seed", "1", "--json",
            "--no-diagnostics"]
    timings, outputs = {}, {}
    for label, extra in (("local (processes)", []), ("--scheduler local", ["--scheduler", "local"])):
        t0 = time.perf_counter()
        out = subprocess.run(base + extra, capture_output=True, text=True, check=False)
        timings[label] = time.perf_counter() - t0
        if out.returncode != 0:
            raise SystemExit(f"audit {label} failed:\n{out.stderr}")
        outputs[label] = json.loads(out.stdout)
    same = outputs["local (processes)"] == outputs["--scheduler local"]
    print(f"grouped audit: {groups} groups x B = {bootstrap}: " +
          ", ".join(f"{k} {v:.1f} s" for k, v in timings.items()) + f"; JSON identical: {same}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=float, default=10_000_000, help="events in the trace (default 1e7)")
    ap.add_argument("--items", type=int, default=1_000_000, help="item ids to draw from (default 1e6)")
    ap.add_argument("--seed", type=int, default=20260101, help="seed of the generated trace")
    ap.add_argument("--repeat", type=int, default=3, help="runs per contender; the fastest is kept")
    ap.add_argument("--large", type=float, default=0, help="also count a partitioned dataset of this many events")
    ap.add_argument("--large-memory-limit", default="1GiB")
    ap.add_argument("--audit-groups", type=int, default=0, help="also time a grouped audit of this many groups")
    ap.add_argument("--audit-bootstrap", type=int, default=1000)
    ap.add_argument("--data-dir", type=Path, default=HERE / "data")
    ap.add_argument("--jsonl", action="store_true", help="time the trace as JSON lines instead of Parquet")
    ap.add_argument("--baseline", help="with --jsonl: also run the ctwm rows with PYTHONPATH=BASELINE")
    ap.add_argument("--worker", nargs=2, metavar=("NAME", "PATH"), help=argparse.SUPPRESS)
    ap.add_argument("--memory-limit", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(work(*args.worker, args.memory_limit)))
        return
    n_events = int(args.events)
    args.data_dir.mkdir(parents=True, exist_ok=True)
    path = args.data_dir / f"zipf_{n_events}_{args.items}_{args.seed}.parquet"
    if not path.exists():
        print(f"generating {path} ...", file=sys.stderr)
        make_trace(path, n_events, args.items, args.seed)
    if args.jsonl:
        compare_jsonl(make_jsonl(path), args.repeat, args.baseline)
    else:
        compare(path, args.repeat)
    if args.large:
        large(args.data_dir, int(args.large), args.items, args.seed, args.large_memory_limit)
    if args.audit_groups:
        grouped_audit(args.data_dir, args.audit_groups, args.audit_bootstrap, args.seed)


if __name__ == "__main__":
    main()
