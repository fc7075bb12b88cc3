"""Whole-process start-up of the ``ctwm`` command against bare-import yardsticks, in the same run.

    python benchmarks/bench_startup.py              # 15 rounds
    python benchmarks/bench_startup.py --rounds 31

Every command is started as a new process (``sys.executable -m ctwm_cli ...``, the same code path as
the ``ctwm`` script) and timed from outside, start to exit, wall clock. Commands and their yardsticks
run in turn (A B A B ...), so drift in the machine's speed hits both; one warm-up round is not counted
(it also fills numba's on-disk cache). Reported: the median of each, and the median of the per-round
ratios A/B. Targets (issue 15):

* ``ctwm --version`` and ``ctwm --help``  <=  2 x  ``python -c "import typer, rich"``
* ``ctwm audit counts.parquet --bootstrap 0`` (n = 1e5 items)  <=  1.2 x  a bare
  ``python -c "import numpy, scipy.stats, pyarrow.parquet"`` that then reads the same file and runs the
  same fit (``ctwm_cli.audit(counts, bootstrap=0)``) - i.e. the CLI may add at most 20 % to the work
  that cannot be avoided.

Cross-check with an external timer: ``farm-bench -n 15 --vs 'python -c "import typer, rich"' -- ctwm --version``.
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


def write_counts(path: Path) -> None:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(20261130)
    counts = rng.zipf(2.2, N_ITEMS)
    pq.write_table(pa.table({"item": [f"m{i}" for i in range(N_ITEMS)], "count": counts}), path)


def fit_only(path: Path) -> str:
    return (
        "import numpy, scipy.stats, pyarrow.parquet as pq\n"
        "from ctwm_cli import audit\n"
        f"counts = pq.read_table({str(path)!r}).column('count').to_numpy()\n"
        "r = audit(counts, bootstrap=0, seed=1)\n"
        "print(r.verdict.verdict)\n"
    )


def run_once(cmd: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    res = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False, env=env)
    took = time.perf_counter() - started
    if res.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {res.returncode}: {res.stderr.decode()[-500:]}")
    return took


def compare(name: str, a: list[str], b: list[str], rounds: int, target: float, env: dict[str, str]) -> dict:
    run_once(a, env)
    run_once(b, env)  # warm-up: page cache, bytecode cache, numba's cache
    ta, tb = [], []
    for _ in range(rounds):
        ta.append(run_once(a, env))
        tb.append(run_once(b, env))
    ratio = statistics.median(x / y for x, y in zip(ta, tb, strict=True))
    row = {"case": name, "median_s": statistics.median(ta), "yardstick_s": statistics.median(tb), "ratio": ratio,
           "target": target, "ok": ratio <= target}
    print(f"{name:<34} {row['median_s']:7.3f} s   yardstick {row['yardstick_s']:7.3f} s   "
          f"ratio {ratio:5.2f} (target <= {target:g})  {'ok' if row['ok'] else 'MISSED'}", flush=True)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=15)
    args = ap.parse_args()
    py = sys.executable
    ctwm = [py, "-m", "ctwm_cli"]
    ui = [py, "-c", "import typer, rich"]
    with tempfile.TemporaryDirectory() as tmp:
        counts = Path(tmp) / "counts.parquet"
        write_counts(counts)
        # As installed: pip compiles bytecode, so both sides run from cached .pyc (kept under tmp, not in
        # the source tree), even where PYTHONDONTWRITEBYTECODE is set.
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = str(Path(tmp) / "pycache")
        print(f"{args.rounds} rounds, medians of whole-process wall time; Python {sys.version.split()[0]}")
        rows = [
            compare("ctwm --version", [*ctwm, "--version"], ui, args.rounds, 2.0, env),
            compare("ctwm --help", [*ctwm, "--help"], ui, args.rounds, 2.0, env),
            compare("ctwm audit (n=1e5, B=0)", [*ctwm, "audit", str(counts), "--bootstrap", "0", "--seed", "1"],
                    [py, "-c", fit_only(counts)], args.rounds, 1.2, env),
        ]
    if not all(r["ok"] for r in rows):
        sys.exit(1)


if __name__ == "__main__":
    main()
