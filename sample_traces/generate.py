"""Write the sample traces in this directory (seeded; rerun with ``python sample_traces/generate.py``).

Each trace is drawn from a known discrete distribution so that an audit has a known answer:

* ``tpl_events.parquet``       event trace, per-item retrieve counts ~ truncated power law
                               p(x) ∝ x^-1.8 e^(-0.002 x), x >= 1, 5000 items
* ``tpl_events.jsonl.gz``      the same events as JSON lines (gzip)
* ``lognormal_events.parquet`` event trace, per-item retrieve counts ~ discrete log-normal
                               X = ceil(Y), Y ~ LogNormal(mu = 2, sigma = 1.2), 2500 items
* ``powerlaw_counts.parquet``  counts table (item, count), count ~ discrete power law
                               p(x) = x^-2.5 / zeta(2.5), x >= 1, 4000 items
* ``powerlaw_counts.jsonl``    the same counts table as JSON lines
* ``agent_log.jsonl``          the first 500 rows of the TPL events under an agent's own column
                               names (memory_id, agent_step, session, event, rank)

Only numpy, pyarrow and the standard library are used; the samplers below are exact.
Event traces: every item is written once (``event = write``) at the step of its first retrieval;
its count is the number of ``retrieve`` events, dealt out in random order, ``K`` per agent step
with ranks 1..K; steps increase; four consecutive blocks of steps form runs ``run-0``..``run-3``.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
SEED = 20240611  # master seed; each file gets its own child stream (SeedSequence.spawn)
K = 5  # retrievals per agent step (ranks 1..K)
N_RUNS = 4


# ---------------------------------------------------------------------------------------------
# Exact discrete samplers


def discrete_power_law(rng: np.random.Generator, alpha: float, size: int) -> np.ndarray:
    """p(x) = x^-alpha / zeta(alpha), x = 1, 2, ...

    ``Generator.zipf`` is exactly this distribution (x_min = 1), sampled by Devroye's rejection
    method (Non-Uniform Random Variate Generation, 1986, X.6), so no truncation or rounding.
    """
    return rng.zipf(alpha, size).astype(np.int64)


def discrete_truncated_power_law(rng: np.random.Generator, alpha: float, lam: float, size: int) -> np.ndarray:
    """p(x) ∝ x^-alpha e^(-lam x), x = 1, 2, ... (power law with exponential cutoff).

    Rejection from the pure power law: propose X ~ Zipf(alpha), accept with probability
    e^(-lam (X - 1)) <= 1. The accepted X has density ∝ x^-alpha e^(-lam x) exactly.
    """
    out = np.empty(0, dtype=np.int64)
    while out.size < size:
        x = rng.zipf(alpha, 2 * (size - out.size) + 16).astype(np.int64)
        keep = rng.random(x.size) < np.exp(-lam * (x - 1))
        out = np.concatenate([out, x[keep]])
    return out[:size]


def discrete_lognormal(rng: np.random.Generator, mu: float, sigma: float, size: int) -> np.ndarray:
    """X = ceil(Y) with Y ~ LogNormal(mu, sigma): the discrete log-normal of ``ctwm audit``
    (``ctwm_cli/tail/families.py``), whose support starts at 1, so no draw is rejected:

    p(x) = Phi((ln x - mu)/sigma) - Phi((ln(x-1) - mu)/sigma), x >= 1 (ln 0 = -inf).
    """
    return np.ceil(rng.lognormal(mu, sigma, size)).astype(np.int64)


# ---------------------------------------------------------------------------------------------
# Turning per-item counts into traces


def item_ids(rng: np.random.Generator, n: int) -> np.ndarray:
    """``m000123``-style ids, shuffled so that popularity does not follow the id order."""
    return np.array([f"m{i:06d}" for i in rng.permutation(n)])


def event_trace(rng: np.random.Generator, counts: np.ndarray) -> pa.Table:
    """Events (item, step, run, event, rank) whose per-item retrieve counts are exactly ``counts``."""
    ids = item_ids(rng, counts.size)
    retrieved = rng.permutation(np.repeat(np.arange(counts.size), counts))  # item index per retrieval
    n = retrieved.size
    step = np.arange(n) // K
    rank = np.arange(n) % K + 1
    n_steps = int(step[-1]) + 1
    # First retrieval of every item: its write happens at that step, before the retrievals.
    first = np.full(counts.size, n, dtype=np.int64)
    np.minimum.at(first, retrieved, np.arange(n))
    w_step = step[first]
    all_item = np.concatenate([np.arange(counts.size), retrieved])
    all_step = np.concatenate([w_step, step])
    all_rank = np.concatenate([np.zeros(counts.size, dtype=np.int64), rank])  # 0 = no rank (write)
    order = np.lexsort((all_rank, all_step))
    all_item, all_step, all_rank = all_item[order], all_step[order], all_rank[order]
    is_write = all_rank == 0
    run = (all_step * N_RUNS) // n_steps
    return pa.table(
        {
            "item": pa.array(ids[all_item]),
            "step": pa.array(all_step, pa.int64()),
            "run": pa.array(np.char.add("run-", run.astype(str))),
            "event": pa.array(np.where(is_write, "write", "retrieve")),
            "rank": pa.array(all_rank, pa.int64(), mask=is_write),
        }
    )


def counts_table(rng: np.random.Generator, counts: np.ndarray) -> pa.Table:
    ids = item_ids(rng, counts.size)
    order = np.argsort(ids)
    return pa.table({"item": pa.array(ids[order]), "count": pa.array(counts[order], pa.int64())})


def write_jsonl(table: pa.Table, path: Path) -> None:
    """JSON lines, null fields omitted; gzip without a timestamp so reruns are byte-identical."""
    lines = []
    for row in table.to_pylist():
        lines.append(json.dumps({k: v for k, v in row.items() if v is not None}, separators=(",", ":")))
    data = ("\n".join(lines) + "\n").encode()
    if path.suffix == ".gz":
        with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as fh:
            fh.write(data)
    else:
        path.write_bytes(data)


def summary(name: str, counts: np.ndarray) -> str:
    c = np.sort(counts)
    tails = ", ".join(f"n(x>={t})={int((c >= t).sum())}" for t in (10, 30, 100))
    return (f"{name}: {c.size} items, {int(c.sum())} retrieve events, median {int(np.median(c))}, "
            f"max {int(c[-1])}, {tails}")


#: Rows of ``agent_log.jsonl``: the first rows of the TPL trace under other column names.
AGENT_LOG_ROWS = 500


def main() -> None:
    streams = [np.random.default_rng(s) for s in np.random.SeedSequence(SEED).spawn(3)]

    tpl = discrete_truncated_power_law(streams[0], alpha=1.8, lam=0.002, size=5000)
    t = event_trace(streams[0], tpl)
    pq.write_table(t, HERE / "tpl_events.parquet", compression="zstd")
    write_jsonl(t, HERE / "tpl_events.jsonl.gz")
    print(summary("tpl_events", tpl))
    # an agent's own log, with its own column names (the remapping example of the README)
    head = t.slice(0, AGENT_LOG_ROWS)
    write_jsonl(head.rename_columns(["memory_id", "agent_step", "session", "event", "rank"]),
                HERE / "agent_log.jsonl")

    ln = discrete_lognormal(streams[1], mu=2.0, sigma=1.2, size=2500)
    pq.write_table(event_trace(streams[1], ln), HERE / "lognormal_events.parquet", compression="zstd")
    print(summary("lognormal_events", ln))

    pl = discrete_power_law(streams[2], alpha=2.5, size=4000)
    c = counts_table(streams[2], pl)
    pq.write_table(c, HERE / "powerlaw_counts.parquet", compression="zstd")
    write_jsonl(c, HERE / "powerlaw_counts.jsonl")
    print(summary("powerlaw_counts", pl))

    files = sorted(p for p in HERE.iterdir() if p.suffix in (".parquet", ".gz", ".jsonl"))
    total = sum(p.stat().st_size for p in files)
    for p in files:
        print(f"  {p.name:<28} {p.stat().st_size / 1024:8.1f} KiB")
    print(f"  total {total / 1024:.1f} KiB")
    if total >= 2 * 2**20:
        raise SystemExit("sample traces exceed 2 MB")


if __name__ == "__main__":
    main()
