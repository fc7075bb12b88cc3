"""Append-only trace writer (schema v1) that survives a killed process.

* **JSONL** (``.jsonl``/``.ndjson``): every event is one complete line handed to the kernel in one
  ``write`` on an ``O_APPEND`` descriptor before the call returns, so a process killed at any point
  (SIGKILL included) leaves only complete lines, every completed event among them.
* **Parquet** (``.parquet`` or a directory): a directory of segment files that ``ctwm`` reads as one
  data set. Events are buffered and written as a new segment when ``flush_rows`` are pending or the
  oldest pending event is ``flush_seconds`` old (a background thread checks the time), so readers see
  events at most that late; each flush is one file (a slow agent at the 30 s default makes at most
  120 files an hour; raise it for fewer, larger files). A segment is
  written to a hidden temporary name and renamed when complete, so a reader never sees half a file.
  Pending events also go to a hidden JSON-lines write-ahead log, one line per event as above: after a
  crash the closed segments read back at once, and :func:`recover_trace` (run by the next
  :class:`TraceWriter` on the same directory) turns the log into a segment, so every completed event
  is kept.

One writer may be shared by the threads of a process (a lock orders the events). Several processes
may write one Parquet directory (segments carry the process id); a JSONL file should have one writer.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import threading
import time
from pathlib import Path
from typing import Any

import pyarrow as pa

from ..errors import InputError, UsageError
from .schema import EVENT_KINDS

#: Columns of a written trace, in order (schema v1 plus the ``ctwm health`` columns).
WRITER_SCHEMA = pa.schema([
    ("item", pa.string()), ("step", pa.int64()), ("run", pa.string()), ("event", pa.string()),
    ("rank", pa.int64()), ("score", pa.float64()), ("tokens", pa.int64()), ("ts", pa.string()),
    ("task", pa.string()), ("outcome", pa.string()), ("by", pa.string()),
])
_WAL_PREFIX = ".wal-"
_OPEN_WALS: set[str] = set()  # write-ahead logs of this process's open writers (never recovered)
_OPEN_LOCK = threading.Lock()
_INT_FIELDS = ("step", "rank", "tokens")
_TEXT_FIELDS = ("run", "ts", "task", "outcome", "by")


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class TraceWriter:
    """Write memory events as a trace ``ctwm`` reads.

    ``path`` ending in ``.jsonl``/``.ndjson`` -> JSON lines; ending in ``.parquet`` or naming a
    directory -> Parquet segments (``format`` overrides). ``run`` is the default run of every event;
    ``step`` starts the step counter (``advance()`` moves it; an event without ``step=`` gets the
    current one). ``timestamps`` stamps events without ``ts`` with the UTC time.

        >>> with TraceWriter("agent.jsonl", run="episode-1") as w:      # doctest: +SKIP
        ...     w.retrieve("mem-17", rank=1, score=0.82)
        ...     w.advance()
    """

    def __init__(self, path: str | os.PathLike, *, format: str | None = None, run: str | None = None,
                 step: int = 0, timestamps: bool = True, flush_rows: int = 10_000, flush_seconds: float = 30.0):
        self.path = Path(path)
        fmt = format or ("jsonl" if self.path.name.lower().endswith((".jsonl", ".ndjson")) else "parquet")
        if fmt not in ("jsonl", "parquet"):
            raise UsageError(f"format must be jsonl or parquet, got {fmt!r}")
        if flush_rows < 1 or not flush_seconds > 0:
            raise UsageError("flush_rows must be >= 1 and flush_seconds > 0")
        self.format = fmt
        self.run = None if run is None else str(run)
        self.step = _int("step", step)
        self.timestamps = timestamps
        self.flush_rows = int(flush_rows)
        self.flush_seconds = float(flush_seconds)
        self.events_written = 0
        self._lock = threading.RLock()
        self._closed = False
        self._pending: list[dict[str, Any]] = []
        self._pending_since = 0.0
        self._segment = 0
        self._wal_fd: int | None = None
        self._flusher: threading.Thread | None = None
        self._wake = threading.Event()
        if fmt == "jsonl":
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        else:
            if self.path.exists() and not self.path.is_dir():
                raise InputError(f"{self.path}: exists and is not a directory (a Parquet trace is a directory)")
            self.path.mkdir(parents=True, exist_ok=True)
            recover_trace(self.path)
            self._stem = f"part-{time.time_ns():d}-{os.getpid()}"
            self._flusher = threading.Thread(target=self._flush_on_time, name="ctwm-trace-flush", daemon=True)
            self._flusher.start()

    # ----------------------------------------------------------------------------------------
    # events

    def retrieve(self, item: Any, **fields: Any) -> None:
        """A retrieval hit: ``rank`` (1 = top), ``score``, ``step``, ``run``, ``tokens``..."""
        self.event("retrieve", item, **fields)

    def inject(self, item: Any, **fields: Any) -> None:
        self.event("inject", item, **fields)

    def write(self, item: Any, **fields: Any) -> None:
        self.event("write", item, **fields)

    def update(self, item: Any, **fields: Any) -> None:
        self.event("update", item, **fields)

    def supersede(self, item: Any, *, by: Any = None, **fields: Any) -> None:
        """``item`` is superseded (by the item ``by``, if given)."""
        self.event("supersede", item, by=by, **fields)

    def archive(self, item: Any, **fields: Any) -> None:
        self.event("archive", item, **fields)

    def advance(self, steps: int = 1) -> int:
        """Move the step counter on (an agent step ended); returns the new step."""
        with self._lock:
            self.step += _int("steps", steps)
            return self.step

    def event(self, kind: str, item: Any, *, step: int | None = None, run: str | None = None, rank: int | None = None,
              score: float | None = None, tokens: int | None = None, ts: str | None = None, task: str | None = None,
              outcome: str | None = None, by: Any = None) -> None:
        """Append one event of ``kind`` (one of the schema's event kinds, or search/context/task_outcome)."""
        if kind not in (*EVENT_KINDS, "search", "context", "task_outcome"):
            raise UsageError(f"event kind must be one of {', '.join(EVENT_KINDS)}, got {kind!r}")
        if item is None or (isinstance(item, str) and not item) or isinstance(item, (bool, dict, list)):
            raise UsageError(f"item must be a non-empty id, got {item!r}")
        if rank is not None and _int("rank", rank) < 1:
            raise UsageError(f"rank must be >= 1 (1 = top), got {rank!r}")
        if score is not None and (isinstance(score, bool) or not math.isfinite(float(score))):
            raise UsageError(f"score must be a finite number, got {score!r}")
        row: dict[str, Any] = {"item": str(item), "step": None, "run": run, "event": kind, "rank": rank,
                               "score": None if score is None else float(score), "tokens": tokens, "ts": ts,
                               "task": task, "outcome": outcome, "by": None if by is None else str(by)}
        for name in _INT_FIELDS:
            if row[name] is not None:
                row[name] = _int(name, row[name])
        with self._lock:
            if self._closed:
                raise UsageError(f"{self.path}: the trace writer is closed")
            row["step"] = self.step if step is None else _int("step", step)
            row["run"] = self.run if run is None else str(run)
            if row["ts"] is None and self.timestamps:
                row["ts"] = _now()
            line = (json.dumps({k: v for k, v in row.items() if v is not None}, separators=(",", ":")) + "\n").encode()
            if self.format == "jsonl":
                _write_all(self._fd, line)
            else:
                self._append_pending(row, line)
            self.events_written += 1

    # ----------------------------------------------------------------------------------------
    # Parquet segments

    def _append_pending(self, row: dict[str, Any], line: bytes) -> None:
        if self._wal_fd is None:
            with _OPEN_LOCK:
                _OPEN_WALS.add(str(self._wal_path()))
            self._wal_fd = os.open(self._wal_path(), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            self._pending_since = time.monotonic()
        _write_all(self._wal_fd, line)
        self._pending.append(row)
        if len(self._pending) >= self.flush_rows:
            self._flush_segment()

    def _segment_name(self) -> str:
        return f"{self._stem}-{self._segment:06d}.parquet"

    def _wal_path(self) -> Path:
        return self.path / f"{_WAL_PREFIX}{self._segment_name()}.jsonl"

    def _flush_segment(self) -> None:
        if not self._pending:
            return
        _write_segment(self.path / self._segment_name(), self._pending)
        os.close(self._wal_fd)
        os.unlink(self._wal_path())
        with _OPEN_LOCK:
            _OPEN_WALS.discard(str(self._wal_path()))
        self._wal_fd = None
        self._pending = []
        self._segment += 1

    def _flush_on_time(self) -> None:
        while not self._wake.wait(min(self.flush_seconds, 1.0)):
            with self._lock:
                if self._pending and time.monotonic() - self._pending_since >= self.flush_seconds:
                    self._flush_segment()

    # ----------------------------------------------------------------------------------------

    def flush(self) -> None:
        """Write pending Parquet events as a segment now (JSONL events are never pending)."""
        with self._lock:
            if self.format == "parquet" and not self._closed:
                self._flush_segment()

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            if self.format == "parquet":
                self._flush_segment()
            else:
                os.close(self._fd)
            self._closed = True
        if self._flusher is not None:
            self._wake.set()
            self._flusher.join()

    def __enter__(self) -> TraceWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"TraceWriter({str(self.path)!r}, format={self.format!r}, events={self.events_written}, {state})"


def recover_trace(path: str | os.PathLike) -> int:
    """Turn the write-ahead logs that dead writers left in a Parquet trace directory into segments.

    Logs of other processes still running, and of this process's open writers, are left alone. A
    segment renamed into place before its writer died makes its log redundant (it is removed).
    Returns the number of events recovered."""
    root = Path(path)
    recovered = 0
    for wal in sorted(root.glob(f"{_WAL_PREFIX}*.jsonl")):
        segment = root / wal.name[len(_WAL_PREFIX):-len(".jsonl")]
        pid = int(segment.name.split("-")[2])
        with _OPEN_LOCK:
            if str(wal) in _OPEN_WALS or (pid != os.getpid() and _alive(pid)):
                continue
        if not segment.exists():
            rows = []
            for raw in wal.read_bytes().split(b"\n"):
                try:
                    rows.append(json.loads(raw))
                except (json.JSONDecodeError, UnicodeDecodeError):
                    continue  # the last line of a log can only be incomplete if the disk was full
            if rows:
                _write_segment(segment, [{name: r.get(name) for name in WRITER_SCHEMA.names} for r in rows])
                recovered += len(rows)
        wal.unlink()
    return recovered


def _write_segment(final: Path, rows: list[dict[str, Any]]) -> None:
    import pyarrow.parquet as pq

    table = pa.Table.from_pylist(rows, schema=WRITER_SCHEMA)
    tmp = final.with_name(f".{final.name}.tmp")
    pq.write_table(table, tmp)
    with open(tmp, "rb") as fh:
        os.fsync(fh.fileno())
    os.replace(tmp, final)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise UsageError(f"{name} must be an integer, got {value!r}", params=(name,))
    if value != int(value):
        raise UsageError(f"{name} must be an integer, got {value!r}", params=(name,))
    return int(value)
