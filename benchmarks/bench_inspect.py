"""``ctwm inspect`` of a 10M-event Parquet trace against a DuckDB group-by, each a whole process (issue 29).

    python benchmarks/bench_inspect.py                       # 10M events, 1M-item Zipf ids, 7 pairs
    python benchmarks/bench_inspect.py --baseline ../main    # + ctwm inspect of another checkout
    python benchmarks/bench_inspect.py --no-bytecode         # every import compiled from source

Both contenders are timed from outside as whole processes (interpreter start, imports, the work, exit),
in turn (A B A B ...), so a change in the machine's load hits both alike; medians are printed, with
the ratio ctwm / DuckDB taken pair by pair. Contenders:

* ``ctwm``: ``python -m ctwm_cli inspect TRACE`` (the table, as a user runs it; this checkout's code);
* ``duckdb``: ``python -c "import duckdb; duckdb.sql('SELECT item, count(*) n FROM read_parquet(TRACE)
  GROUP BY item').to_arrow_table()"`` (every group fetched as an Arrow table, as ctwm fetches its counts;
  it prints their number, which must equal ctwm's distinct items);
* ``baseline`` (with ``--baseline DIR``): ``ctwm inspect`` with ``PYTHONPATH=DIR``.

Peak memory is each child's ``ru_maxrss`` as ``os.wait4`` reports it (this parent is small and the
children are spawned, so no parent pages are counted). By default the children may write bytecode
caches (to a private ``PYTHONPYCACHEPREFIX``; one untimed run of each fills it), as an installed
package has them; ``--no-bytecode`` sets ``PYTHONDONTWRITEBYTECODE=1``, so a checkout's own modules
are compiled at every start. Targets (issue 29): ctwm / duckdb wall <= 1.30, peak <= duckdb's + 100 MiB.
The trace is the one ``bench_aggregate.py`` writes (``benchmarks/data/zipf_<events>_<items>_<seed>.parquet``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from bench_aggregate import make_trace  # noqa: E402  (the same generated trace as bench_aggregate.py)

DUCKDB = ("import duckdb, sys; t = duckdb.sql(\"SELECT item, count(*) n FROM read_parquet('{path}') "
          "GROUP BY item\").to_arrow_table(); print(t.num_rows)")


def run(cmd: list[str], env: dict[str, str]) -> dict:
    """One whole process: wall and CPU seconds, peak RSS (MiB) and its standard output.

    It runs in a neutral directory: ``python -m`` and ``-c`` put the working directory first on
    ``sys.path``, where a checkout's ``ctwm_cli`` would win over the one ``PYTHONPATH`` names."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env, cwd=tempfile.gettempdir())
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}:\n{err.read().decode(errors='replace')}")
        return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "peak": usage.ru_maxrss / 1024,
                "stdout": out.read().decode()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=float, default=10_000_000, help="events in the trace (default 1e7)")
    ap.add_argument("--items", type=int, default=1_000_000, help="item ids to draw from (default 1e6)")
    ap.add_argument("--seed", type=int, default=1, help="seed of the generated trace (default 1)")
    ap.add_argument("--pairs", type=int, default=7, help="timed runs of each contender, in turn (default 7)")
    ap.add_argument("--data-dir", type=Path, default=HERE / "data")
    ap.add_argument("--baseline", help="also time ctwm inspect with PYTHONPATH=BASELINE (another checkout)")
    ap.add_argument("--no-bytecode", action="store_true", help="PYTHONDONTWRITEBYTECODE=1 for every child")
    args = ap.parse_args()

    path = args.data_dir.resolve() / f"zipf_{int(args.events)}_{args.items}_{args.seed}.parquet"
    if not path.exists():
        args.data_dir.mkdir(parents=True, exist_ok=True)
        print(f"generating {path} ...", file=sys.stderr)
        make_trace(path, int(args.events), args.items, args.seed)

    base_env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")}
    with tempfile.TemporaryDirectory(prefix="ctwm-bench-pyc-") as cache:
        if args.no_bytecode:
            base_env["PYTHONDONTWRITEBYTECODE"] = "1"
        else:
            base_env["PYTHONPYCACHEPREFIX"] = cache
        inspect = [sys.executable, "-m", "ctwm_cli", "inspect", str(path)]
        contenders = {
            "ctwm": (inspect, {**base_env, "PYTHONPATH": str(ROOT)}),
            "duckdb": ([sys.executable, "-c", DUCKDB.format(path=str(path).replace("'", "''"))], base_env),
        }
        if args.baseline:
            contenders["baseline"] = (inspect, {**base_env, "PYTHONPATH": str(Path(args.baseline).resolve())})

        # Same work: ctwm's distinct items are DuckDB's group count (the trace has no event column).
        found = {}
        for name, (cmd, env) in contenders.items():
            if name == "duckdb":
                found[name] = int(run(cmd, env)["stdout"].split()[-1])
            else:
                (scan,) = json.loads(run([*cmd, "--json"], env)["stdout"])["results"]
                found[name] = scan["n_items"]
            run(cmd, env)  # untimed: fills the bytecode cache, warms the page cache
        if len(set(found.values())) != 1:
            raise SystemExit(f"contenders disagree on the number of distinct items: {found}")

        runs: dict[str, list[dict]] = {name: [] for name in contenders}
        for _ in range(max(1, args.pairs)):
            for name, (cmd, env) in contenders.items():
                runs[name].append(run(cmd, env))

    load = os.getloadavg()[0]
    print(f"trace: {path.name}  {found['duckdb']:,} distinct items; {args.pairs} runs each, in turn; "
          f"bytecode caches: {'off' if args.no_bytecode else 'on'}; load average after: {load:.2f}")
    print(f"{'contender':<10} {'wall s':>7} {'CPU s':>7} {'peak MiB':>9}   (medians; wall min..max)")
    med = {}
    for name, rs in runs.items():
        walls = [r["wall"] for r in rs]
        med[name] = {k: statistics.median(r[k] for r in rs) for k in ("wall", "cpu", "peak")}
        m = med[name]
        print(f"{name:<10} {m['wall']:>7.3f} {m['cpu']:>7.3f} {m['peak']:>9.0f}   ({min(walls):.3f}..{max(walls):.3f})")
    for name in [n for n in runs if n != "duckdb"]:
        wall = statistics.median(a["wall"] / b["wall"] for a, b in zip(runs[name], runs["duckdb"], strict=True))
        cpu = statistics.median(a["cpu"] / b["cpu"] for a, b in zip(runs[name], runs["duckdb"], strict=True))
        extra = med[name]["peak"] - med["duckdb"]["peak"]
        print(f"{name} / duckdb: wall {wall:.2f}x, CPU {cpu:.2f}x (target wall <= 1.30), "
              f"peak {extra:+.0f} MiB (target <= +100)")
    if "baseline" in runs:
        wall = statistics.median(a["wall"] / b["wall"] for a, b in zip(runs["ctwm"], runs["baseline"], strict=True))
        print(f"ctwm / baseline: wall {wall:.2f}x")


if __name__ == "__main__":
    main()
