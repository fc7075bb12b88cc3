"""Append-only trace writer (schema v1) that survives a killed process.

* **JSONL** (``.jsonl``/``.ndjson``): every event is one complete line handed to the kernel in one
  ``write`` on an ``O_APPEND`` descriptor before the call returns, so a process killed at any point
  (SIGKILL included) leaves only complete lines, every completed event among them. A short write
  (a full disk, ``RLIMIT_FSIZE``) is cut back to the last complete line and raises
  :class:`~ctwm_cli.common.errors.WriteError`: each event is one whole line or nothing.
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

Every event is checked when it is called (integers in the 64-bit range, ``rank`` >= 1, ``tokens``
>= 0, a finite ``score``, text fields as strings without lone surrogates): a rejected event raises
:class:`~ctwm_cli.common.errors.UsageError` naming the argument and changes nothing written or pending, so
a flush cannot fail on the data. A flush that fails on the disk keeps its events pending (and in the
log) and raises one :class:`~ctwm_cli.common.errors.WriteError` on the next call or ``close()``; the
background flush thread never raises.

**One writer per log, proven by a lock** (:mod:`ctwm_cli.traces.durable_files` has the files, locks and
recovery; :mod:`ctwm_cli.traces.event_rows` the checks). One writer may be shared by the threads of a
process (a lock orders the events); several may write one Parquet directory; a JSONL file has one
writer at a time (a second one is refused).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import math
import numbers
import os
import secrets
import threading
import time
from pathlib import Path
from typing import Any

import pyarrow as pa

from ..common.errors import UsageError, WriteError
from .durable_files import (
    WAL_PREFIX,
    append_line,
    create_locked,
    open_locked,
    os_reason,
    recover_trace,
    write_segment,
)
from .event_rows import checked_integer, checked_text, event_row

__all__ = ["TraceWriter", "recover_trace"]

_SUFFIXES = ((".jsonl", "jsonl"), (".ndjson", "jsonl"), (".parquet", "parquet"))


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class TraceWriter:
    """Write memory events as a trace ``ctwm`` reads.

    ``path`` ending in ``.jsonl``/``.ndjson`` -> JSON lines; ending in ``.parquet`` or naming an
    existing directory -> Parquet segments. Any other name needs ``format`` (``jsonl`` or
    ``parquet``), which may not contradict the suffix. ``run`` is the default run of every event;
    ``step`` starts the step counter (``advance()`` moves it; an event without ``step=`` gets the
    current one). ``timestamps`` stamps events without ``ts`` with the UTC time.

        >>> with TraceWriter("agent.jsonl", run="episode-1") as w:      # doctest: +SKIP
        ...     w.retrieve("mem-17", rank=1, score=0.82)
        ...     w.advance()
    """

    def __init__(self, path: str | os.PathLike, *, format: str | None = None, run: str | None = None,
                 step: int = 0, timestamps: bool = True, flush_rows: int = 10_000, flush_seconds: float = 30.0):
        self.path = Path(path)
        fmt = _format_for(self.path, format)
        if checked_integer(flush_rows, "flush_rows") < 1:
            raise UsageError(f"flush_rows must be >= 1, got {flush_rows!r}", params=("flush_rows",))
        if isinstance(flush_seconds, bool) or not isinstance(flush_seconds, numbers.Real) \
                or not 0 < flush_seconds < math.inf:
            raise UsageError(f"flush_seconds must be a positive number, got {flush_seconds!r}",
                             params=("flush_seconds",))
        self.format = fmt
        self.run = None if run is None else checked_text("run", str(run))
        self.step = checked_integer(step, "step")
        self.timestamps = timestamps
        self.flush_rows = int(flush_rows)
        self.flush_seconds = float(flush_seconds)
        self.events_written = 0
        self._lock = threading.RLock()
        self._closed = False
        self._error: WriteError | None = None  # a failed background flush, raised by the next call
        self._pending: list[dict[str, Any]] = []
        self._pending_since = 0.0
        self._segment = 0
        self._wal_fd: int | None = None
        self._flusher: threading.Thread | None = None
        self._wake = threading.Event()
        if fmt == "jsonl":
            self._fd = open_locked(self.path)
        else:
            if self.path.exists() and not self.path.is_dir():
                raise WriteError(f"{self.path}: exists and is not a directory (a Parquet trace is a directory)")
            try:
                self.path.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise WriteError(f"{self.path}: cannot create the trace directory ({os_reason(exc)})") from None
            recover_trace(self.path)
            self._stem = f"part-{time.time_ns():d}-{os.getpid()}-{secrets.token_hex(4)}"
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
            self.step = checked_integer(self.step + checked_integer(steps, "steps"), "step")
            return self.step

    def event(self, kind: str, item: Any, *, step: int | None = None, run: str | None = None, rank: int | None = None,
              score: float | None = None, tokens: int | None = None, ts: str | None = None, task: str | None = None,
              outcome: str | None = None, by: Any = None) -> None:
        """Append one event of ``kind`` (one of the schema's event kinds, or search/context/task_outcome).

        Every argument is checked before anything is written: a :class:`UsageError` naming it
        leaves the trace as it was."""
        row = event_row(kind, item, step=step, run=run, rank=rank, score=score, tokens=tokens, ts=ts, task=task,
                   outcome=outcome, by=by)
        with self._lock:
            if self._closed:
                raise UsageError(f"{self.path}: the trace writer is closed", params=())
            self._raise_stored()
            if row["step"] is None:
                row["step"] = self.step
            if row["run"] is None:
                row["run"] = self.run
            if row["ts"] is None and self.timestamps:
                row["ts"] = _now()
            line = (json.dumps({k: v for k, v in row.items() if v is not None}, separators=(",", ":")) + "\n").encode()
            if self.format == "jsonl":
                append_line(self._fd, line, self.path)
            else:
                self._append_pending(row, line)
            self.events_written += 1

    # ----------------------------------------------------------------------------------------
    # Parquet segments

    def _append_pending(self, row: dict[str, Any], line: bytes) -> None:
        if self._wal_fd is None:
            self._wal_fd = create_locked(self._wal_path())
            self._pending_since = time.monotonic()
        append_line(self._wal_fd, line, self._wal_path())
        self._pending.append(row)
        if len(self._pending) >= self.flush_rows:
            self._flush_segment()

    def _segment_name(self) -> str:
        return f"{self._stem}-{self._segment:06d}.parquet"

    def _wal_path(self) -> Path:
        return self.path / f"{WAL_PREFIX}{self._segment_name()}.jsonl"

    def _flush_segment(self) -> None:
        """Write the pending events as one segment; on failure they stay pending and in the log."""
        if not self._pending:
            return
        try:
            write_segment(self.path / self._segment_name(), self._pending)
        except (OSError, pa.ArrowException) as exc:
            raise WriteError(f"{self.path}: cannot write a segment ({os_reason(exc)}); {len(self._pending):,} "
                             "pending events are kept in the write-ahead log") from None
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self._wal_path())
        os.close(self._wal_fd)  # releases the log's lock after the log is gone
        self._wal_fd = None
        self._pending = []
        self._segment += 1

    def _flush_on_time(self) -> None:
        while not self._wake.wait(min(self.flush_seconds, 1.0)):
            with self._lock:
                if self._closed or self._error is not None:
                    continue
                if self._pending and time.monotonic() - self._pending_since >= self.flush_seconds:
                    try:
                        self._flush_segment()
                    except WriteError as exc:  # raised by the next call; never a traceback from here
                        self._error = exc
                    except Exception as exc:
                        self._error = WriteError(f"{self.path}: background flush failed ({os_reason(exc)})")

    def _raise_stored(self) -> None:
        error, self._error = self._error, None
        if error is not None:
            raise error

    # ----------------------------------------------------------------------------------------

    def flush(self) -> None:
        """Write pending Parquet events as a segment now (JSONL events are never pending)."""
        with self._lock:
            if self._closed:
                return
            self._raise_stored()
            if self.format == "parquet":
                self._flush_segment()

    def close(self) -> None:
        """Flush and release the file. If the last flush fails its events stay in the log (the next
        writer on the directory recovers them) and the :class:`WriteError` is raised here."""
        error: WriteError | None = None
        with self._lock:
            if self._closed:
                return
            self._closed = True
            error, self._error = self._error, None
            try:
                if self.format == "parquet":
                    self._flush_segment()
            except WriteError as exc:
                error = error or exc
            finally:
                fd = self._fd if self.format == "jsonl" else self._wal_fd
                self._wal_fd = None
                if fd is not None:
                    os.close(fd)
        if self._flusher is not None:
            self._wake.set()
            self._flusher.join()
        if error is not None:
            raise error

    def __enter__(self) -> TraceWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"TraceWriter({str(self.path)!r}, format={self.format!r}, events={self.events_written}, {state})"

def _format_for(path: Path, format: str | None) -> str:
    name = path.name.lower()
    by_suffix = next((fmt for suffix, fmt in _SUFFIXES if name.endswith(suffix)), None)
    if format is not None:
        if format not in ("jsonl", "parquet"):
            raise UsageError(f"format must be jsonl or parquet, got {format!r}", params=("format",))
        if by_suffix is not None and by_suffix != format:
            raise UsageError(f"format {format!r} contradicts the name {path.name!r}", params=("format",))
        return format
    if by_suffix is not None:
        return by_suffix
    if path.is_dir():
        return "parquet"
    raise UsageError(f"path {str(path)!r}: name it .jsonl or .ndjson (JSON lines) or .parquet (a directory of "
                     "Parquet segments), or pass format", params=("path",))
