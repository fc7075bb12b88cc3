"""Reading cost of the ``--where`` guard and the engine sandbox: this checkout against another one.

    git worktree add /tmp/ctwm-before <commit before the change>
    python benchmarks/bench_where.py --baseline /tmp/ctwm-before            # 10M events
    python benchmarks/bench_where.py --baseline /tmp/ctwm-before --events 1e6 --repeat 3

Each measurement is a fresh Python process that imports ``ctwm_cli`` from the named checkout and runs
``read_counts([trace], ReadOptions(where=...))`` — with no predicate, and with the README's example
predicate — timing the call (imports excluded). The two checkouts alternate (A B A B) so a change in
the machine's load hits both; the table shows medians and the ratio this / baseline (target <= 1.05).
The trace is ``benchmarks/data/`` 's 10M-event Zipf trace of ``bench_aggregate.py`` (made if absent).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
WHERES = {"none": None, "README example": "run LIKE 'run-1%' AND step > 1000"}

_CHILD = """
import json, sys, time
from ctwm_cli.traces.paths import ReadOptions, read_counts
path, where = sys.argv[1], json.loads(sys.argv[2])
t0 = time.perf_counter()
counts = read_counts([path], ReadOptions(where=where))
print(json.dumps({"seconds": time.perf_counter() - t0, "events": int(sum(c.n_events for c in counts))}))
"""


def _run(checkout: Path, path: Path, where: str | None) -> dict:
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    out = subprocess.run([sys.executable, "-c", _CHILD, str(path), json.dumps(where)], env=env, check=True, cwd=checkout,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", type=Path, required=True, help="checkout to compare against")
    ap.add_argument("--events", type=float, default=1e7)
    ap.add_argument("--items", type=float, default=1e6)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    sys.path.insert(0, str(HERE))
    from bench_aggregate import make_trace

    n, m = int(args.events), int(args.items)
    path = HERE / "data" / f"zipf_{n}_{m}_1.parquet"  # bench_aggregate.py's name for seed 1
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        make_trace(path, n, m, seed=1)
    this = HERE.parent
    print(f"trace: {path} ({n:,} events); this: {this}; baseline: {args.baseline}; repeat {args.repeat}")
    print(f"{'predicate':<16} {'baseline s':>11} {'this s':>9} {'ratio':>7}  events")
    for label, where in WHERES.items():
        base, mine = [], []
        for _ in range(args.repeat):
            b, t = _run(args.baseline, path, where), _run(this, path, where)
            assert b["events"] == t["events"], (b, t)
            base.append(b["seconds"])
            mine.append(t["seconds"])
        mb, mt = statistics.median(base), statistics.median(mine)
        print(f"{label:<16} {mb:>11.3f} {mt:>9.3f} {mt / mb:>7.3f}  {t['events']:,}")


if __name__ == "__main__":
    main()
