"""The embedded engine: one DuckDB connection per read, with a memory limit and spill directory.

DuckDB reads every format we accept (JSONL, CSV, Parquet; Arrow IPC through pyarrow's dataset),
filters with SQL and groups out of core: when the hash tables outgrow ``memory_limit`` it spills
to a private temporary directory, so a trace larger than RAM still aggregates. Object stores are
read through an fsspec filesystem registered on the connection (DuckDB's own httpfs extension is
downloaded at run time, which an offline machine cannot do).
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import signal
import tempfile
import threading
from collections.abc import Callable, Sequence
from typing import TypeVar

from ..common.checks import check_choice
from ..common.errors import UsageError
from ..common.vocabulary import ENGINES, INPUT_FORMATS
from ..common.vocabulary import MEMORY_LIMIT as DEFAULT_MEMORY_LIMIT
from ..runtime.interrupts import Interrupted
from .predicate import check_where
from .schema import ColumnMap

T = TypeVar("T")
_SIZE = re.compile(r"^\s*\d+(\.\d+)?\s*(b|kb|mb|gb|tb|kib|mib|gib|tib|%)\s*$", re.IGNORECASE)


def quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def quote_literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class EngineOptions:
    """How traces are read and counted.

    ``engine``: ``duckdb`` (embedded, default) or ``dask`` (``dask.dataframe`` on a cluster; needs
    the ``dask`` extra). ``memory_limit``: DuckDB size such as ``1GB``, ``512MiB`` or ``50%`` of RAM.
    ``threads``: DuckDB worker threads (default: all cores). ``scheduler``: a Dask scheduler address
    (``tcp://host:port``) or ``local``, for ``engine='dask'``.
    """

    engine: str = "duckdb"
    memory_limit: str = DEFAULT_MEMORY_LIMIT
    threads: int | None = None
    scheduler: str | None = None

    def __post_init__(self) -> None:
        check_choice("engine", self.engine, ENGINES)
        if not isinstance(self.memory_limit, str) or not _SIZE.match(self.memory_limit):
            raise UsageError(
                f"memory_limit must be a size such as 1GB, 512MiB or 50%, got {self.memory_limit!r}",
                params=("memory_limit",)
            )
        if self.memory_limit.strip().endswith("%") and not 0 < float(self.memory_limit.strip()[:-1]) <= 100:
            raise UsageError(f"memory_limit must be between 0% and 100%, got {self.memory_limit!r}",
                             params=("memory_limit",))
        if self.threads is not None and (isinstance(self.threads, bool) or self.threads < 1):
            raise UsageError(f"threads must be a positive integer, got {self.threads!r}", params=("threads",))


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ReadOptions:
    """How to read a trace: column map, row filter (SQL predicate), engine, telemetry format."""

    columns: ColumnMap = dataclasses.field(default_factory=ColumnMap)
    where: str | None = None
    engine: EngineOptions = dataclasses.field(default_factory=EngineOptions)
    input_format: str = "auto"

    def __post_init__(self) -> None:
        check_where(self.where)
        check_choice("input_format", self.input_format, INPUT_FORMATS)



def spellings(path: str) -> tuple[str, ...]:
    """The names DuckDB may check a readable input under: as given, absolute, and for a URL also the
    ``proto:///path`` form its file-system layer normalises ``proto://path`` to."""
    if "://" in path:
        proto, rest = path.split("://", 1)
        return (path, f"{proto}:///{rest.lstrip('/')}", f"{proto}://{rest.lstrip('/')}")
    return (path, os.path.abspath(path), os.path.realpath(path))


def as_read_options(read: ReadOptions | ColumnMap | None) -> ReadOptions:
    """``read`` as :class:`ReadOptions` (a bare :class:`ColumnMap` keeps every other default)."""
    if read is None:
        return ReadOptions()
    if isinstance(read, ColumnMap):
        return ReadOptions(columns=read)
    if not isinstance(read, ReadOptions):
        raise UsageError(f"read must be ReadOptions or a ColumnMap, got {type(read).__name__}", params=("read",))
    return read


class Engine:
    """A DuckDB connection configured from :class:`EngineOptions`, sandboxed; use as a context manager.

    ``allowed`` names the files (and dataset directories) the connection may read: the trace's own.
    Before the first query the connection is sealed, so whatever SQL runs on it (a ``where`` predicate
    that slipped past :mod:`.predicate`, a crafted file name) can touch nothing else. Each setting
    stops one attack:

    - ``allowed_paths`` / ``allowed_directories`` + ``enable_external_access = false``: no other
      file is read (``read_text('/etc/passwd')``, ``read_text('/proc/self/environ')``,
      ``glob('/root/*')``), nothing is written (``COPY … TO``), no URL is opened
      (``read_text('http://…')``), no Python object is found by a replacement scan; the spill
      directory (``temp_directory``) stays usable;
    - ``autoinstall_known_extensions`` / ``autoload_known_extensions = false``: no extension is
      downloaded (httpfs) and nothing is created under ``~/.duckdb``;
    - ``lock_configuration = true``: no ``SET`` or ``PRAGMA`` can undo the above.

    Arrow tables and datasets registered on the connection (telemetry rows, Arrow IPC files opened
    by pyarrow) and fsspec filesystems registered for URLs still work.
    """

    def __init__(self, options: EngineOptions | None = None, *, preserve_order: bool = False,
                 allowed: Sequence[str] = (), allowed_dirs: Sequence[str] = ()):
        import duckdb

        self.options = options or EngineOptions()
        self._tmp = tempfile.mkdtemp(prefix="ctwm-duckdb-")
        self.con = duckdb.connect(config={"temp_directory": self._tmp, "autoinstall_known_extensions": False,
                                          "autoload_known_extensions": False})
        try:
            self.con.execute(f"SET memory_limit = {quote_literal(self.options.memory_limit.strip())}")
        except duckdb.Error as exc:
            self.close()
            raise UsageError(f"memory_limit: {(str(exc).splitlines() or [''])[0]}", params=("memory_limit",)) from None
        if self.options.threads is not None:
            self.con.execute(f"SET threads = {int(self.options.threads)}")
        self.con.execute(f"SET preserve_insertion_order = {'true' if preserve_order else 'false'}")
        self._seal(allowed, allowed_dirs)
        self._registered: set[str] = set()

    def _seal(self, allowed: Sequence[str], allowed_dirs: Sequence[str]) -> None:
        paths = sorted({p for path in allowed for p in spellings(path)})
        dirs = sorted({p.rstrip("/") + "/" for path in allowed_dirs for p in spellings(path)})
        if paths:
            self.con.execute(f"SET allowed_paths = [{', '.join(quote_literal(p) for p in paths)}]")
        if dirs:
            self.con.execute(f"SET allowed_directories = [{', '.join(quote_literal(d) for d in dirs)}]")
        self.con.execute("SET enable_external_access = false")
        self.con.execute("SET lock_configuration = true")

    def register_filesystem(self, fs) -> None:
        """Let DuckDB open this fsspec filesystem's URLs (s3://, gs://, memory://, ...)."""
        protocols = fs.protocol if isinstance(fs.protocol, (tuple, list)) else (fs.protocol,)
        key = ",".join(protocols)
        if key not in self._registered:
            self.con.register_filesystem(fs)
            self._registered.add(key)

    def run(self, work: Callable[[], T]) -> T:
        """``work()`` (a query's execution), stopped at once by SIGINT/SIGTERM.

        While DuckDB runs, Python's handler waits until DuckDB next checks for signals (41-43 s for a
        heavy ``where``). So the signal's C-level wake-up (``signal.set_wakeup_fd``) is watched by a
        helper thread that calls ``interrupt()`` on the connection; the query ends, and the pending
        handler raises ``Interrupted`` as usual (exit 130/143). Running the query itself on another
        thread instead left the connection "busy" after a signal (measured, DuckDB 2.0)."""
        import duckdb

        if threading.current_thread() is not threading.main_thread():
            return work()
        r, w = os.pipe()
        os.set_blocking(w, False)
        try:
            previous = signal.set_wakeup_fd(w, warn_on_full_buffer=False)
        except ValueError:  # pragma: no cover - not the main interpreter
            os.close(r)
            os.close(w)
            return work()
        seen: list[int] = []
        done, hit = threading.Event(), threading.Event()

        def watch() -> None:
            while not done.is_set():
                data = os.read(r, 16)
                hits = [b for b in data if b in (signal.SIGINT, signal.SIGTERM)]
                if hits and not done.is_set():
                    seen.append(hits[0])
                    hit.set()
                    self.con.interrupt()
                if not data:
                    return

        watcher = threading.Thread(target=watch, name="ctwm-duckdb-interrupt", daemon=True)
        watcher.start()
        try:
            return work()
        except (duckdb.InterruptException, RuntimeError) as exc:
            # DuckDB reports an interrupt as InterruptException or RuntimeError("Query interrupted"),
            # sometimes before the watcher has read the signal: wait for it, then say which one it was.
            if "interrupt" in str(exc).lower() and hit.wait(2.0):
                raise Interrupted(seen[0]) from None
            raise
        finally:
            done.set()
            signal.set_wakeup_fd(previous)
            os.close(w)  # the watcher reads end-of-file and stops
            watcher.join()
            os.close(r)

    def close(self) -> None:
        try:
            self.con.close()
        finally:
            shutil.rmtree(self._tmp, ignore_errors=True)

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
