"""Files a replay writes: ``trace.parquet`` (trace schema v1), ``steps.parquet`` and ``manifest.json``.

**Trace** — one row per memory event, ordered by run, step, event, rank; ``run`` is
``<arm>/<encoding>/<seed>`` (e.g. ``ctwm/compact/42``), ``item`` the transition id
``s<src>-a<action>->s<dst>``:

* ``retrieve``: every item ρ returned at the step, with ``rank`` and ``score`` (Full History
  retrieves nothing);
* ``inject``: every item that reached the prompt, with its ``rank`` (retrieval rank; history
  line number for Full History) and ``tokens`` (tokens of its line). Items listed in a CTWM tail
  summary are ``inject`` events too, with their rank and ``tokens`` null (a summary entry's tokens
  are not separable from its line; the step log has the prompt's total).

``ctwm audit``, ``ctwm inspect`` and ``ctwm simulate --trace`` read it as is (``--group-by run``).

When a run's policy keeps its own store (``tiered``), its items are the store's entries
(``sem17:s12-a2->s40``), and the trace also holds the store's events (``write``, ``update``,
``supersede``, ``archive``, ``maintain``), a ``search`` and a ``context`` row per step of every run,
and the columns ``task`` (``<run>/<step>``), ``outcome`` (of the step's prediction, on ``context``
rows) and ``by`` (the entry that superseded or replaced one): what ``ctwm health`` reads
(see :func:`trace_table`).

**Step log** — one row per run and step: run, memory, encoding, tau, seed, step, state, action,
next_state, item (e_t), prediction, correct, oracle_correct, counts_correct (the reference rows),
confidence, evidence, prompt_tokens (the user message), request_tokens (the whole chat request: system
prompt, user message, chat template), tail_state,
state_evidence, state_covered, transition_evidence, transition_covered, injected, summarised,
tail_items, retrieved (the ranked item ids ρ returned), api_prompt_tokens (endpoint predictor).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .._version import __version__
from ..common.errors import UsageError
from ..common.results import jsonable
from ..runtime import files
from ..runtime.files import write_json, write_parquet

TRACE_FILE = "trace.parquet"
STEPS_FILE = "steps.parquet"
MANIFEST_FILE = "manifest.json"
ROW_GROUP_ROWS = 1 << 20


def run_id(log) -> str:
    return f"{log.arm.label}/{log.arm.encoding}/{log.seed}"


#: The files a replay writes into its directory (what ``overwrite`` may replace).
REPLAY_FILES = (MANIFEST_FILE, TRACE_FILE, STEPS_FILE)


def prepare_dir(out: str | Path, overwrite: bool) -> Path:
    """The output directory, refused if it holds another run's files unless ``overwrite``."""
    return files.prepare_dir(out, ours=REPLAY_FILES, overwrite=overwrite)


def _events(log) -> tuple[np.ndarray, ...]:
    """(tid, step, rank, score, tokens, tokens_valid, score_valid, kind) of one run; kind 0 retrieve, 1 inject."""
    parts = []
    n = log.tokens.size
    lens = np.fromiter(map(len, log.retrieved), dtype=np.int64, count=n)
    total = int(lens.sum())
    if total:
        tid = np.fromiter((t for r in log.retrieved for t in r), dtype=np.int64, count=total)
        score = np.fromiter((s for r in log.scores for s in r), dtype=np.float64, count=total)
        step = np.repeat(np.arange(n, dtype=np.int64), lens)
        rank = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(lens) - lens, lens) + 1
        parts.append((tid, step, rank, score, np.zeros(total, np.int64), np.zeros(total, bool), np.ones(total, bool),
                      np.zeros(total, np.int8)))
    if log.history_tokens is not None:  # full history: at step t, lines 1..t are steps 0..t-1
        lens = np.arange(n, dtype=np.int64)
        total = int(lens.sum())
        idx = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(lens) - lens, lens)
        step = np.repeat(np.arange(n, dtype=np.int64), lens)
        parts.append((log.history_tids[idx], step, idx + 1, np.zeros(total), log.history_tokens[idx],
                      np.ones(total, bool), np.zeros(total, bool), np.ones(total, np.int8)))
    else:
        for which in ("injected", "summarised"):
            rows = getattr(log, which)
            lens = np.fromiter((len(r[0]) for r in rows), dtype=np.int64, count=n)
            total = int(lens.sum())
            if not total:
                continue
            tid = np.fromiter((t for r in rows for t in r[0]), dtype=np.int64, count=total)
            rank = np.fromiter((t for r in rows for t in r[1]), dtype=np.int64, count=total)
            if which == "injected":
                tok = np.fromiter((t for r in rows for t in r[2]), dtype=np.int64, count=total)
                valid = np.ones(total, bool)
            else:
                tok, valid = np.zeros(total, np.int64), np.zeros(total, bool)
            step = np.repeat(np.arange(n, dtype=np.int64), lens)
            parts.append((tid, step, rank, np.zeros(total), tok, valid, np.zeros(total, bool), np.ones(total, np.int8)))
    if not parts:
        e = np.zeros(0, np.int64)
        return e, e, e, np.zeros(0), e, np.zeros(0, bool), np.zeros(0, bool), np.zeros(0, np.int8)
    cols = [np.concatenate([p[i] for p in parts]) for i in range(8)]
    order = np.lexsort((cols[2], cols[7], cols[1]))  # step, then retrieve before inject, then rank
    return tuple(c[order] for c in cols)


MEMORY_EVENT_KINDS = ("write", "update", "supersede", "invalidate", "archive", "maintain")


def _item_array(log, ep):
    import pyarrow as pa

    return pa.array(log.item_names if log.item_names is not None else ep.world.items, type=pa.string())


def trace_table(logs: Sequence, episodes: Sequence, names: Sequence[str]):
    """All runs' events as one Arrow table in the trace schema.

    When some run's policy keeps its own store (``tiered``), every run also gets, per step, a
    ``search`` row (the retrieval query) and a ``context`` row (``tokens`` = prompt tokens,
    ``outcome`` = success or failure of the step's prediction), the tiered runs their store events
    (``write``, ``update``, ``supersede``, ``archive``, ``maintain``, with ``by`` naming the entry that
    superseded or replaced one), and the table three more columns: ``task`` (``<run>/<step>``: a step
    is a task), ``outcome`` and ``by`` — what ``ctwm health`` reads.
    """
    import pyarrow as pa

    extended = any(log.memory_events is not None for log in logs)
    tables = []
    for run_no, (log, ep, name) in enumerate(zip(logs, episodes, names, strict=True)):
        tid, step, rank, score, tok, tok_ok, score_ok, kind = _events(log)
        items = _item_array(log, ep)
        m = tid.size
        cols = {
            "item": items.take(pa.array(tid)),
            "step": pa.array(step, type=pa.int64()),
            "run": pa.array([name], type=pa.string()).take(pa.array(np.zeros(m, dtype=np.int32))),
            "event": pa.array(["retrieve", "inject"], type=pa.string()).take(pa.array(kind)),
            "rank": pa.array(rank, type=pa.int64()),
            "score": pa.array(score, type=pa.float64(), mask=~score_ok),
            "tokens": pa.array(tok, type=pa.int64(), mask=~tok_ok),
        }
        if extended:
            cols["by"] = pa.nulls(m, type=pa.string())
            cols["outcome"] = pa.nulls(m, type=pa.string())
            tables.append(_with_task(pa.table(cols), name, run_no))
            tables.append(_step_rows(log, name, run_no))
            if log.memory_events:
                tables.append(_memory_rows(log, items, name, run_no))
        else:
            tables.append(pa.table(cols))
    if not tables:
        return None
    out = pa.concat_tables(tables)
    if extended:  # per run: step, then retrieve/inject/search/context before the store's events of the step
        order = np.lexsort((np.asarray(out.column("_seq")), np.asarray(out.column("_group")),
                            np.asarray(out.column("step")), np.asarray(out.column("_run"))))
        out = out.take(pa.array(order)).drop_columns(["_seq", "_group", "_run"])
    return out


def _with_task(table, name: str, run_no: int, group: int = 0, seq_offset: int = 0):
    """Add ``task`` (``<run>/<step>``) and the sort keys ``_seq``, ``_group``, ``_run``."""
    import pyarrow as pa

    m = table.num_rows
    task = pa.array([f"{name}/{s}" for s in table.column("step").to_pylist()], type=pa.string())
    return (table.append_column("task", task)
            .append_column("_seq", pa.array(np.arange(m, dtype=np.int64) + seq_offset))
            .append_column("_group", pa.array(np.full(m, group, dtype=np.int8)))
            .append_column("_run", pa.array(np.full(m, run_no, dtype=np.int64))))


def _step_rows(log, name: str, run_no: int):
    """A ``search`` and a ``context`` row per step."""
    import pyarrow as pa

    n = log.tokens.size
    steps = np.repeat(np.arange(n, dtype=np.int64), 2)
    kinds = np.tile(np.array([0, 1], dtype=np.int8), n)
    tokens = np.repeat(log.tokens.astype(np.int64), 2)
    outcome = np.where(log.correct, "success", "failure")
    table = pa.table({
        "item": pa.array(["query", "prompt"], type=pa.string()).take(pa.array(kinds)),
        "step": pa.array(steps),
        "run": pa.array([name] * (2 * n), type=pa.string()),
        "event": pa.array(["search", "context"], type=pa.string()).take(pa.array(kinds)),
        "rank": pa.nulls(2 * n, type=pa.int64()),
        "score": pa.nulls(2 * n, type=pa.float64()),
        "tokens": pa.array(tokens, type=pa.int64(), mask=kinds == 0),
        "by": pa.nulls(2 * n, type=pa.string()),
        "outcome": pa.array(np.repeat(outcome, 2).tolist(), type=pa.string(), mask=kinds == 0),
    })
    # group 0 with the retrieve/inject rows, after them in the step (their _seq is shifted past)
    return _with_task(table, name, run_no, seq_offset=1 << 40)


def _memory_rows(log, items, name: str, run_no: int):
    """The store's events, in the order they happened within each step."""
    import pyarrow as pa

    ev = log.memory_events
    m = len(ev)
    step = np.fromiter((e[0] for e in ev), dtype=np.int64, count=m)
    kind = np.fromiter((MEMORY_EVENT_KINDS.index(e[1]) for e in ev), dtype=np.int8, count=m)
    eid = np.fromiter((e[2] for e in ev), dtype=np.int64, count=m)
    by = np.fromiter((e[3] for e in ev), dtype=np.int64, count=m)
    table = pa.table({
        "item": items.take(pa.array(eid)),
        "step": pa.array(step),
        "run": pa.array([name] * m, type=pa.string()),
        "event": pa.array(list(MEMORY_EVENT_KINDS), type=pa.string()).take(pa.array(kind)),
        "rank": pa.nulls(m, type=pa.int64()),
        "score": pa.nulls(m, type=pa.float64()),
        "tokens": pa.nulls(m, type=pa.int64()),
        "by": pa.array([log.item_names[b] if b >= 0 else None for b in by.tolist()], type=pa.string()),
        "outcome": pa.nulls(m, type=pa.string()),
    })
    return _with_task(table, name, run_no, group=1)


def steps_table(logs: Sequence, episodes: Sequence, tails: Sequence[np.ndarray], names: Sequence[str]):
    """The per-step log of all runs as one Arrow table."""
    import pyarrow as pa

    tables = []
    for log, ep, tail, name in zip(logs, episodes, tails, names, strict=True):
        n = log.tokens.size
        items = pa.array(ep.world.items, type=pa.string())
        flat = np.fromiter((t for r in log.retrieved for t in r), dtype=np.int64)
        offsets = np.concatenate([[0], np.cumsum([len(r) for r in log.retrieved])]).astype(np.int32)
        retrieved = pa.ListArray.from_arrays(pa.array(offsets, type=pa.int32()),
                                             _item_array(log, ep).take(pa.array(flat)))
        zeros = pa.array(np.zeros(n, dtype=np.int32))
        rep = lambda v, typ, z=zeros: pa.array([v], type=typ).take(z)  # noqa: E731
        tables.append(pa.table({
            "run": rep(name, pa.string()),
            "memory": rep(log.arm.memory, pa.string()),
            "encoding": rep(log.arm.encoding, pa.string()),
            "tau": rep(log.arm.tau, pa.float64()),
            "seed": rep(log.seed, pa.int64()),
            "step": pa.array(np.arange(n, dtype=np.int64)),
            "state": pa.array(log.states.astype(np.int64)),  # the run's own trajectory (closed loop: per arm)
            "action": pa.array(ep.world.tid_local[log.tids].astype(np.int64)),
            "next_state": pa.array(ep.world.tid_dst[log.tids].astype(np.int64)),
            "item": items.take(pa.array(log.tids)),
            "prediction": pa.array(log.prediction),
            "correct": pa.array(log.correct),
            "oracle_correct": pa.array(log.oracle_correct),
            "counts_correct": pa.array(log.counts_correct),
            "confidence": pa.array(log.confidence, type=pa.string()),
            "evidence": pa.array(log.evidence, type=pa.string()),
            "prompt_tokens": pa.array(log.tokens),
            "request_tokens": pa.array(log.request_tokens if log.request_tokens is not None else log.tokens),
            "tail_state": pa.array(tail),
            "state_evidence": pa.array(log.state_evidence),
            "state_covered": pa.array(log.state_covered),
            "transition_evidence": pa.array(log.transition_evidence),
            "transition_covered": pa.array(log.transition_covered),
            "injected": pa.array(log.n_injected if log.history_tokens is None else np.arange(n, dtype=np.int64)),
            "summarised": pa.array(log.n_summarised),
            "tail_items": pa.array(log.tail_count),
            "retrieved": retrieved,
            "api_prompt_tokens": pa.array(log.api_prompt_tokens, type=pa.int64()) if log.api_prompt_tokens is not None
            else pa.nulls(n, type=pa.int64()),
        }))
    return pa.concat_tables(tables)


def write_outputs(outdir: Path, command: str, logs: Sequence, episodes: Sequence, tails: Sequence[np.ndarray],
                  manifest: dict[str, Any], names: Sequence[str] | None = None) -> dict[str, str]:
    """Write the trace, the step log and the manifest (one episode and tail mask per log); return
    ``{file: sha256}``."""
    names = list(names) if names is not None else [run_id(g) for g in logs]
    if len(set(names)) != len(names):
        raise UsageError(f"run ids are not distinct: {', '.join(names)}", params=())
    files = {}
    trace = trace_table(logs, episodes, names)
    if trace is not None:
        files[TRACE_FILE] = write_parquet(trace, outdir / TRACE_FILE)
    files[STEPS_FILE] = write_parquet(steps_table(logs, episodes, tails, names), outdir / STEPS_FILE)
    doc = {"tool": "ctwm", "version": __version__, "command": command, **jsonable(manifest),
           "trace_schema": 1, "files": files, "runs": names}
    stats = {name: log.memory_stats for name, log in zip(names, logs, strict=True) if log.memory_stats is not None}
    if stats:
        doc["memory_stats"] = jsonable(stats)
    write_json(outdir / MANIFEST_FILE, doc)  # last: a directory with a manifest is complete
    return files
