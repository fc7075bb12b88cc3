"""How a trace's events reach the disk whole: locked append-only files, Parquet segments written under a
private name and renamed into place, write-ahead logs, and the recovery of the logs a dead writer left.

**One writer per log, proven by a lock.** Each log (and each JSONL file) is held under an advisory
``flock`` by its live writer; recovery takes only logs whose lock it can get, so a live writer in
another process or another PID namespace (two containers on one volume) is never "recovered". A
log is created under a private name, locked, then renamed into place, so no recoverer sees it
unlocked; temporary files carry a random token.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import warnings
from pathlib import Path
from typing import Any

import pyarrow as pa

from ..common.errors import CtwmWarning, WriteError
from .event_rows import WRITER_SCHEMA, event_row

__all__ = [
    "TMP_PREFIX", "WAL_PREFIX", "RecoveryWarning", "append_line", "create_locked", "lock_if_free", "open_locked",
    "os_reason", "read_log", "recover_trace", "write_segment",
]

WAL_PREFIX = ".wal-"
TMP_PREFIX = ".tmp-"  # a writer's private files (a log before it is locked, a segment being written)


class RecoveryWarning(CtwmWarning):
    """A dead writer's log held lines that are not valid events; they were set aside, not read."""


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
    for wal in sorted(root.glob(f"{WAL_PREFIX}*.jsonl")):
        with lock_if_free(wal) as fd:
            if fd is None:
                continue
            segment = root / wal.name[len(WAL_PREFIX):-len(".jsonl")]
            if not segment.exists():
                rows, rejected = read_log(fd)
                if rows:
                    write_segment(segment, rows)
                    recovered += len(rows)
                if rejected:
                    aside = root / f"_rejected-{segment.stem}.jsonl"
                    aside.write_bytes(b"\n".join(rejected) + b"\n")
                    warnings.warn(f"{wal}: {len(rejected)} line(s) are not valid events; set aside in {aside.name}",
                                  RecoveryWarning, stacklevel=2)
            wal.unlink(missing_ok=True)
    for tmp in sorted(root.glob(f"{TMP_PREFIX}*")):
        with lock_if_free(tmp) as fd:
            if fd is not None:
                tmp.unlink(missing_ok=True)
    return recovered

@contextlib.contextmanager
def lock_if_free(path: Path):
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


def read_log(fd: int) -> tuple[list[dict[str, Any]], list[bytes]]:
    data = b""
    while chunk := os.read(fd, 1 << 20):
        data += chunk
    rows, rejected = [], []
    for raw in data.split(b"\n"):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
            rows.append(event_row(obj.pop("event", "retrieve"), obj.pop("item", None), **obj))
        except (ValueError, TypeError, AttributeError, RecursionError):
            rejected.append(raw)
    return rows, rejected


def write_segment(final: Path, rows: list[dict[str, Any]]) -> None:
    """Write ``rows`` to a private locked temporary file, fsync, rename into place."""
    import pyarrow.parquet as pq

    table = pa.Table.from_pylist(rows, schema=WRITER_SCHEMA)
    tmp = final.with_name(f"{TMP_PREFIX}{final.name}-{secrets.token_hex(4)}")
    fd = create_locked(tmp, rename=False)
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


def create_locked(final: Path, *, rename: bool = True) -> int:
    """A new file at ``final``, locked before any other process can see it under that name."""
    tmp = final.with_name(f"{TMP_PREFIX}{secrets.token_hex(8)}") if rename else final
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o644)
    except OSError as exc:
        raise WriteError(f"{final}: cannot create ({os_reason(exc)})") from None
    fcntl.flock(fd, fcntl.LOCK_EX)
    if rename:
        os.rename(tmp, final)
    return fd


def open_locked(path: Path) -> int:
    """The JSONL file opened for appending, under its writer's lock (a second writer is refused)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    except OSError as exc:
        raise WriteError(f"{path}: cannot open for writing ({os_reason(exc)})") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise WriteError(f"{path}: another TraceWriter has this file open (one writer per JSONL file)") from None
    return fd


def append_line(fd: int, line: bytes, path: Path) -> None:
    """Append one whole line or nothing: a short write is cut back to where the line began."""
    start = os.lseek(fd, 0, os.SEEK_END)
    try:
        _write_all(fd, line)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.ftruncate(fd, start)
        raise WriteError(f"{path}: cannot write the event ({os_reason(exc)}); the file ends at the last "
                         "complete event") from None


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def os_reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
