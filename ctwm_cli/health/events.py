"""Load an event trace for ``ctwm health``: all rows, in time order, as plain Python columns."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import numpy as np

from ..common.errors import InputError, UsageError
from ..runtime.progress import ProgressCallback
from ..traces import open_trace
from ..traces.objects import parse_timestamp
from ..traces.readers import TraceReader
from ..traces.schema import DEFAULT_EVENT, HEALTH_COLUMNS, ColumnMap

#: Kinds processed first among rows at the same time (an item written at step t can be hit at t).
_FIRST_AT_SAME_TIME = frozenset({"write"})


@dataclasses.dataclass(frozen=True, slots=True)
class EventLog:
    """The rows of a trace sorted by time (stable: file order breaks ties, writes first)."""

    source: str
    format: str
    item: list[str]
    event: list[str]
    step: list[int | None]
    run: list[str | None]
    tokens: list[int | None]
    task: list[str | None]
    outcome: list[str | None]
    by: list[str | None]
    time: list[float]
    time_kind: str  # "timestamp" (seconds since the epoch), "step" or "row"
    has_step: bool
    has_tokens: bool
    has_task: bool
    group: list[str | None] | None = None  # values of the --group-by column, when one was read
    rank: list[int | None] | None = None  # the rank of each retrieve row (1 = top), when the trace has one
    query: list | None = None  # each row's query key (:func:`~ctwm_cli.health.retrieval.assign_queries`)

    def __len__(self) -> int:
        return len(self.item)

    def subset(self, keep: list[int]) -> EventLog:
        """The rows at the indices ``keep`` (in order), e.g. one tenant's rows."""

        def take(xs: list) -> list:
            return [xs[i] for i in keep]

        return dataclasses.replace(
            self, item=take(self.item), event=take(self.event), step=take(self.step), run=take(self.run),
            tokens=take(self.tokens), task=take(self.task), outcome=take(self.outcome), by=take(self.by),
            time=take(self.time), group=None if self.group is None else take(self.group),
            rank=None if self.rank is None else take(self.rank),
            query=None if self.query is None else take(self.query),
            has_step=bool(keep) and all(self.step[i] is not None for i in keep),
            has_tokens=any(self.tokens[i] is not None for i in keep),
            has_task=any(self.task[i] is not None for i in keep),
        )


def load_events(
    path: str,
    columns: ColumnMap | None = None,
    *,
    time_kind: str | None = None,
    run: str | None = None,
    input_format: str = "auto",
    extra_columns: Mapping[str, str] | None = None,
    group_column: str | None = None,
    progress: ProgressCallback | None = None,
) -> EventLog:
    """Read every row of ``path``. ``time_kind`` forces ``timestamp`` or ``step`` ordering
    (default: timestamps when every row has a parseable ``ts``, else steps, else row order).
    ``extra_columns`` maps ``task`` / ``outcome`` / ``by`` to the source columns holding them;
    ``group_column``, a source column read as text into ``group`` when the trace has it."""
    extra = _extra_map(extra_columns)
    optional = tuple(dict.fromkeys([*extra.values(), *([group_column] if group_column else [])]))
    reader = open_trace(path, columns, optional=optional, input_format=input_format)
    cols = _read_all(reader, {**extra, **({"group": group_column} if group_column else {})}, progress)
    has_group = group_column is not None and group_column in reader.columns_found
    if "count" in reader.mapping and cols["count_present"]:
        raise InputError(f"{reader.source}: a counts table has no events; ctwm health needs an event trace")
    if run is not None:
        cols = _select_run(cols, run, reader.source)
    n = len(cols["item"])
    steps = cols["step"]
    has_step = n > 0 and all(s is not None for s in steps)
    kind, time = _time_axis(cols, time_kind, has_step, reader.source)
    events = [e if e is not None else DEFAULT_EVENT for e in cols["event"]]
    prio = [0 if e in _FIRST_AT_SAME_TIME else 1 for e in events]
    keys = (np.arange(n), np.array(prio, dtype=np.int8), np.array(time, dtype=float))
    order = np.lexsort(keys) if n else np.arange(0)
    if np.array_equal(order, np.arange(n)):  # already in time order (the usual case): no copies
        take = lambda xs: xs  # noqa: E731
    else:
        idx = order.tolist()
        take = lambda xs: [xs[i] for i in idx]  # noqa: E731
    return EventLog(
        source=reader.source, format=reader.format, item=take(cols["item"]), event=take(events),
        step=take(steps), run=take(cols["run"]), tokens=take(cols["tokens"]), task=take(cols["task"]),
        outcome=take(cols["outcome"]), by=take(cols["by"]), time=take(time), time_kind=kind, has_step=has_step,
        has_tokens=any(t is not None for t in cols["tokens"]), has_task=any(t is not None for t in cols["task"]),
        group=take([None if g is None else str(g) for g in cols["group"]]) if has_group else None,
        rank=take(cols["rank"]) if any(r is not None for r in cols["rank"]) else None,
    )


def _extra_map(extra_columns: Mapping[str, str] | None) -> dict[str, str]:
    extra = {c: c for c in HEALTH_COLUMNS}
    for k, v in (extra_columns or {}).items():
        if k not in extra:
            raise UsageError(f"unknown health column {k!r} (known: {', '.join(HEALTH_COLUMNS)})",
                             params=("extra_columns",))
        if v:
            extra[k] = v
    return extra


def _select_run(cols: dict, run: str, source: str) -> dict:
    keep = [i for i, r in enumerate(cols["run"]) if r == run]
    if not keep:
        found = sorted({r for r in cols["run"] if r is not None})[:10]
        raise InputError(f"{source}: no rows of run {run!r} (runs: {', '.join(found) or 'none'})")
    return {k: ([v[i] for i in keep] if isinstance(v, list) else v) for k, v in cols.items()}


def _time_axis(cols: dict, time_kind: str | None, has_step: bool, source: str) -> tuple[str, list]:
    """``(kind, times)``: forced by ``time_kind``, else timestamps when every row has one, else steps,
    else row numbers."""
    n = len(cols["item"])
    ts_vals = [None if t is None else parse_timestamp(t) for t in cols["ts"]]
    has_ts = n > 0 and all(t is not None for t in ts_vals)
    if time_kind == "timestamp" and not has_ts:
        raise InputError(
            f"{source}: the memory-object times are ISO-8601 timestamps, so every trace row needs a ts "
            "(ISO 8601); some are missing or unparseable"
        )
    if time_kind == "step" and not has_step:
        raise InputError(f"{source}: the memory-object times are step numbers, so every trace row needs a step")
    if time_kind == "timestamp" or (time_kind is None and has_ts):
        return "timestamp", ts_vals
    if has_step:
        return "step", [float(s) for s in cols["step"]]
    return "row", [float(i) for i in range(n)]


def _read_all(reader: TraceReader, extra: Mapping[str, str], progress: ProgressCallback | None) -> dict:
    names = ("item", "event", "step", "run", "tokens", "rank", "ts", "task", "outcome", "by",
             *(("group",) if "group" in extra else ()))
    source = {k: extra.get(k, k) for k in names}
    out: dict = {k: [] for k in names}
    out["count_present"] = False
    rows = 0
    for batch in reader.batches():
        m = batch.num_rows
        rows += m
        present = batch.column_names
        if "count" in present:
            out["count_present"] = True
        for k in names:
            src = source[k]
            out[k].extend(batch.column(src).to_pylist() if src in present else [None] * m)
        if progress is not None:
            progress(rows, None)
    if rows == 0:
        raise InputError(f"{reader.source}: trace is empty (no rows)")
    return out
