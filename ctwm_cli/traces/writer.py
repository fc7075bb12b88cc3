"""Append-only trace writer (schema v1) that survives a killed process.

* **JSONL** (``.jsonl``/``.ndjson``): every event is one complete line handed to the kernel in one
  ``write`` on an ``O_APPEND`` descriptor before the call returns, so a process killed at any point
  (SIGKILL included) leaves only complete lines, every completed event among them. A short write
  (a full disk, ``RLIMIT_FSIZE``) is cut back to the last complete line and raises
  :class:`~ctwm_cli.errors.WriteError`: each event is one whole line or nothing.
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
:class:`~ctwm_cli.errors.UsageError` naming the argument and changes nothing written or pending, so
a flush cannot fail on the data. A flush that fails on the disk keeps its events pending (and in the
log) and raises one :class:`~ctwm_cli.errors.WriteError` on the next call or ``close()``; the
background flush thread never raises.

**One writer per log, proven by a lock.** Each log (and each JSONL file) is held under an advisory
``flock`` by its live writer; recovery takes only logs whose lock it can get, so a live writer in
another process or another PID namespace (two containers on one volume) is never "recovered". A
log is created under a private name, locked, then renamed into place, so no recoverer sees it
unlocked; temporary files carry a random token. One writer may be shared by the threads of a
process (a lock orders the events); several may write one Parquet directory; a JSONL file has one
writer at a time (a second one is refused).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import fcntl
import json
import math
import numbers
import os
import secrets
import threading
import time
import warnings
from pathlib import Path
from typing import Any

import pyarrow as pa

from ..errors import CtwmWarning, UsageError, WriteError
from .schema import CONTEXT_EVENT_KINDS, EVENT_KINDS

#: Columns of a written trace, in order (schema v1 plus the ``ctwm health`` columns).
WRITER_SCHEMA = pa.schema([
    ("item", pa.string()), ("step", pa.int64()), ("run", pa.string()), ("event", pa.string()),
    ("rank", pa.int64()), ("score", pa.float64()), ("tokens", pa.int64()), ("ts", pa.string()),
    ("task", pa.string()), ("outcome", pa.string()), ("by", pa.string()),
])
_WAL_PREFIX = ".wal-"
_TMP_PREFIX = ".tmp-"  # a writer's private files (a log before it is locked, a segment being written)
_TEXT_FIELDS = ("run", "ts", "task", "outcome")
_KINDS = (*EVENT_KINDS, *CONTEXT_EVENT_KINDS)
_SUFFIXES = ((".jsonl", "jsonl"), (".ndjson", "jsonl"), (".parquet", "parquet"))
_INT64 = (-(2**63), 2**63 - 1)


class RecoveryWarning(CtwmWarning):
    """A dead writer's log held lines that are not valid events; they were set aside, not read."""


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
        if _integer(flush_rows, "flush_rows") < 1:
            raise UsageError(f"flush_rows must be >= 1, got {flush_rows!r}", params=("flush_rows",))
        if isinstance(flush_seconds, bool) or not isinstance(flush_seconds, numbers.Real) \
                or not 0 < flush_seconds < math.inf:
            raise UsageError(f"flush_seconds must be a positive number, got {flush_seconds!r}",
                             params=("flush_seconds",))
        self.format = fmt
        self.run = None if run is None else _text("run", str(run))
        self.step = _integer(step, "step")
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
            self._fd = _open_locked(self.path)
        else:
            if self.path.exists() and not self.path.is_dir():
                raise WriteError(f"{self.path}: exists and is not a directory (a Parquet trace is a directory)")
            try:
                self.path.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise WriteError(f"{self.path}: cannot create the trace directory ({_reason(exc)})") from None
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
            self.step = _integer(self.step + _integer(steps, "steps"), "step")
            return self.step

    def event(self, kind: str, item: Any, *, step: int | None = None, run: str | None = None, rank: int | None = None,
              score: float | None = None, tokens: int | None = None, ts: str | None = None, task: str | None = None,
              outcome: str | None = None, by: Any = None) -> None:
        """Append one event of ``kind`` (one of the schema's event kinds, or search/context/task_outcome).

        Every argument is checked before anything is written: a :class:`UsageError` naming it
        leaves the trace as it was."""
        row = _row(kind, item, step=step, run=run, rank=rank, score=score, tokens=tokens, ts=ts, task=task,
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
                _append_line(self._fd, line, self.path)
            else:
                self._append_pending(row, line)
            self.events_written += 1

    # ----------------------------------------------------------------------------------------
    # Parquet segments

    def _append_pending(self, row: dict[str, Any], line: bytes) -> None:
        if self._wal_fd is None:
            self._wal_fd = _create_locked(self._wal_path())
            self._pending_since = time.monotonic()
        _append_line(self._wal_fd, line, self._wal_path())
        self._pending.append(row)
        if len(self._pending) >= self.flush_rows:
            self._flush_segment()

    def _segment_name(self) -> str:
        return f"{self._stem}-{self._segment:06d}.parquet"

    def _wal_path(self) -> Path:
        return self.path / f"{_WAL_PREFIX}{self._segment_name()}.jsonl"

    def _flush_segment(self) -> None:
        """Write the pending events as one segment; on failure they stay pending and in the log."""
        if not self._pending:
            return
        try:
            _write_segment(self.path / self._segment_name(), self._pending)
        except (OSError, pa.ArrowException) as exc:
            raise WriteError(f"{self.path}: cannot write a segment ({_reason(exc)}); {len(self._pending):,} "
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
                        self._error = WriteError(f"{self.path}: background flush failed ({_reason(exc)})")

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


def recover_trace(path: str | os.PathLike) -> int:
    """Turn the write-ahead logs that dead writers left in a Parquet trace directory into segments.

    A log is recovered only if its advisory lock is free: a live writer holds its own, whatever its
    process or PID namespace. A segment renamed into place before its writer died makes its log
    redundant (it is removed), and so are the private temporary files of dead writers. Lines of a
    log that are not valid events (a torn last line after a full disk, a log from an older ctwm) are
    set aside in ``_rejected-<segment>.jsonl`` with a :class:`RecoveryWarning`. Returns the number
    of events recovered."""
    root = Path(path)
    recovered = 0
    for wal in sorted(root.glob(f"{_WAL_PREFIX}*.jsonl")):
        with _lock_if_free(wal) as fd:
            if fd is None:
                continue
            segment = root / wal.name[len(_WAL_PREFIX):-len(".jsonl")]
            if not segment.exists():
                rows, rejected = _read_log(fd)
                if rows:
                    _write_segment(segment, rows)
                    recovered += len(rows)
                if rejected:
                    aside = root / f"_rejected-{segment.stem}.jsonl"
                    aside.write_bytes(b"\n".join(rejected) + b"\n")
                    warnings.warn(f"{wal}: {len(rejected)} line(s) are not valid events; set aside in {aside.name}",
                                  RecoveryWarning, stacklevel=2)
            wal.unlink(missing_ok=True)
    for tmp in sorted(root.glob(f"{_TMP_PREFIX}*")):
        with _lock_if_free(tmp) as fd:
            if fd is not None:
                tmp.unlink(missing_ok=True)
    return recovered


@contextlib.contextmanager
def _lock_if_free(path: Path):
    """An open descriptor of ``path`` holding its exclusive lock, or None if a live writer holds it
    (or the file is gone, or was replaced after we opened it: someone else recovered it)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        yield None
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield None
            return
        try:
            same = os.path.samestat(os.fstat(fd), os.stat(path))
        except FileNotFoundError:
            same = False
        yield fd if same else None
    finally:
        os.close(fd)


def _read_log(fd: int) -> tuple[list[dict[str, Any]], list[bytes]]:
    data = b""
    while chunk := os.read(fd, 1 << 20):
        data += chunk
    rows, rejected = [], []
    for raw in data.split(b"\n"):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
            rows.append(_row(obj.pop("event", "retrieve"), obj.pop("item", None), **obj))
        except (ValueError, TypeError, AttributeError, RecursionError):
            rejected.append(raw)
    return rows, rejected


def _write_segment(final: Path, rows: list[dict[str, Any]]) -> None:
    """Write ``rows`` to a private locked temporary file, fsync, rename into place."""
    import pyarrow.parquet as pq

    table = pa.Table.from_pylist(rows, schema=WRITER_SCHEMA)
    tmp = final.with_name(f"{_TMP_PREFIX}{final.name}-{secrets.token_hex(4)}")
    fd = _create_locked(tmp, rename=False)
    try:
        with os.fdopen(os.dup(fd), "wb") as fh:
            pq.write_table(table, fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, final)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    finally:
        os.close(fd)


def _create_locked(final: Path, *, rename: bool = True) -> int:
    """A new file at ``final``, locked before any other process can see it under that name."""
    tmp = final.with_name(f"{_TMP_PREFIX}{secrets.token_hex(8)}") if rename else final
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o644)
    except OSError as exc:
        raise WriteError(f"{final}: cannot create ({_reason(exc)})") from None
    fcntl.flock(fd, fcntl.LOCK_EX)
    if rename:
        os.rename(tmp, final)
    return fd


def _open_locked(path: Path) -> int:
    """The JSONL file opened for appending, under its writer's lock (a second writer is refused)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    except OSError as exc:
        raise WriteError(f"{path}: cannot open for writing ({_reason(exc)})") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise WriteError(f"{path}: another TraceWriter has this file open (one writer per JSONL file)") from None
    return fd


def _append_line(fd: int, line: bytes, path: Path) -> None:
    """Append one whole line or nothing: a short write is cut back to where the line began."""
    start = os.lseek(fd, 0, os.SEEK_END)
    try:
        _write_all(fd, line)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.ftruncate(fd, start)
        raise WriteError(f"{path}: cannot write the event ({_reason(exc)}); the file ends at the last "
                         "complete event") from None


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


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


def _row(kind: Any, item: Any, *, step: Any = None, run: Any = None, rank: Any = None, score: Any = None,
         tokens: Any = None, ts: Any = None, task: Any = None, outcome: Any = None, by: Any = None) -> dict[str, Any]:
    """One event as a row of :data:`WRITER_SCHEMA`, every field checked (UsageError naming it)."""
    if kind not in _KINDS:
        raise UsageError(f"event kind must be one of {', '.join(EVENT_KINDS)}, got {kind!r}", params=("kind",))
    if item is None or isinstance(item, (bool, dict, list, tuple, set, float, bytes)) or not str(item):
        raise UsageError(f"item must be a non-empty id, got {item!r}", params=("item",))
    row: dict[str, Any] = {"item": _text("item", str(item)), "step": None, "run": None, "event": kind,
                           "rank": None, "score": None, "tokens": None, "ts": None, "task": None,
                           "outcome": None, "by": None if by is None else _text("by", str(by))}
    for name, value, low, what in (("step", step, _INT64[0], ""), ("rank", rank, 1, " (1 = top)"),
                                   ("tokens", tokens, 0, "")):
        if value is not None:
            row[name] = _integer(value, name)
            if row[name] < low:
                raise UsageError(f"{name} must be >= {low}{what}, got {value!r}", params=(name,))
    if score is not None:
        if isinstance(score, bool) or not isinstance(score, numbers.Real) or not math.isfinite(float(score)):
            raise UsageError(f"score must be a finite number, got {score!r}", params=("score",))
        row["score"] = float(score)
    for name, value in zip(_TEXT_FIELDS, (run, ts, task, outcome), strict=True):
        if value is not None:
            if not isinstance(value, str):
                raise UsageError(f"{name} must be a string, got {type(value).__name__} {value!r}", params=(name,))
            row[name] = _text(name, value)
    return row


def _text(name: str, value: str) -> str:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(f"{name} must be valid Unicode text (it holds a lone surrogate): {value!r}",
                         params=(name,)) from None
    return value


def _integer(value: Any, name: str) -> int:
    """``value`` as a 64-bit integer (an integral float allowed), else a UsageError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise UsageError(f"{name} must be an integer, got {value!r}", params=(name,))
    if not isinstance(value, numbers.Integral) and (not math.isfinite(value) or value != int(value)):
        raise UsageError(f"{name} must be an integer, got {value!r}", params=(name,))
    value = int(value)
    if not _INT64[0] <= value <= _INT64[1]:
        raise UsageError(f"{name} must fit in 64 bits (|{name}| < 2**63), got {value}", params=(name,))
    return value
