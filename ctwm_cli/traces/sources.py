"""Where a trace's bytes are: a file, a directory (hive partitions allowed), a glob, an fsspec URL
(``s3://…``; the ``s3`` extra), or standard input — resolved to one format and a list of files."""

from __future__ import annotations

import contextlib
import dataclasses
import glob as _glob
import os
import sys
import tempfile
import weakref
from pathlib import Path
from typing import Any

from ..confine import admit_files, admit_name
from ..errors import InputError
from ..labels import identity
from .guard import DecompressionGuard, checked_blocks, first_line, open_guarded

PARQUET_SUFFIXES = (".parquet", ".pq")
JSONL_SUFFIXES = (".jsonl", ".ndjson", ".json", ".jsonl.gz", ".ndjson.gz", ".json.gz")
CSV_SUFFIXES = (".csv", ".tsv", ".csv.gz", ".tsv.gz")
IPC_SUFFIXES = (".arrow", ".feather", ".ipc", ".arrows")
FORMAT_NAMES = {"parquet": "Parquet", "jsonl": "JSONL", "csv": "CSV", "ipc": "Arrow IPC/Feather"}
UNKNOWN_FORMAT = (
    "unknown trace format (expected .jsonl, .jsonl.gz, .ndjson, .csv, .parquet, .arrow/.feather, "
    "a directory or glob of them, or - for JSONL on stdin)"
)


def format_of_name(name: str) -> str | None:
    n = name.lower()
    for fmt, suffixes in (("parquet", PARQUET_SUFFIXES), ("jsonl", JSONL_SUFFIXES), ("csv", CSV_SUFFIXES),
                          ("ipc", IPC_SUFFIXES)):
        if n.endswith(suffixes):
            return fmt
    return None


SQLITE_MAGIC = b"SQLite format 3\x00"


def is_sqlite(path: str | Path) -> bool:
    """Whether ``path`` is an SQLite database (Mem0's history.db), by its header."""
    try:
        with open(path, "rb") as fh:
            return fh.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC
    except OSError:
        return False


def _format_by_magic(head: bytes) -> str | None:
    if head.startswith(b"PAR1"):
        return "parquet"
    if head.startswith(b"ARROW1"):
        return "ipc"
    if head.startswith(b"\x1f\x8b"):
        return "jsonl"
    return None


@dataclasses.dataclass(frozen=True, slots=True)
class Layout:
    """A resolved trace: its name in messages, format, files, and the dataset root if any."""

    source: str
    format: str
    files: tuple[str, ...]
    root: str | None = None
    fs: Any = None  # fsspec filesystem for URLs
    gzip: bool = False

    @property
    def dataset(self) -> bool:
        return self.root is not None or len(self.files) > 1

    def relative(self, path: str) -> str:
        """``path`` relative to the dataset root (errors name the file inside a dataset)."""
        if self.root is None:
            return os.path.basename(path) if len(self.files) > 1 else path
        rel = os.path.relpath(path, self.root) if self.fs is None else path[len(self.root):].lstrip("/")
        return path if rel.startswith("..") else rel

    def open(self, path: str):
        """A guarded binary stream of one file (inflated if gzip)."""
        if self.fs is None:
            return open_guarded(path, self.source)
        try:
            raw = self.fs.open(path, "rb")
        except (OSError, ValueError) as exc:
            raise InputError(f"{self.source}: cannot open {path} ({first_line(exc)})") from None
        return DecompressionGuard(raw, self.source, gz=path.lower().endswith(".gz"))


def is_url(text: str) -> bool:
    return "://" in text and not text.startswith("file://")


def _has_glob(text: str) -> bool:
    return any(ch in text for ch in "*?[")


def resolve(text: str) -> Layout:
    """Resolve a path, directory, glob or URL to a :class:`Layout` (stdin: :func:`spool_stdin`); a local
    source is named by its :func:`identity`. Under a config's confinement (:mod:`ctwm_cli.confine`) the
    name and every file it lists are admitted before a byte is read."""
    admit_name(text)
    if is_url(text):
        return _resolve_url(text)
    if text.startswith("file://"):
        text = text[len("file://"):]
    text = identity(text)
    files, root = local_files(text)
    files = admit_files(text, files)
    if root is not None:
        return _directory(text, files, root=root)
    return _layout(text, files, root=None)


def local_files(text: str) -> tuple[list[str], str | None]:
    """(the files reading the local ``text`` opens, the dataset root when ``text`` is a directory): a
    glob's matches, a directory's trace files (named with a trace suffix; hidden ``.``/``_`` entries
    skipped), or the file itself."""
    if _has_glob(text) and not Path(text).exists():
        files = sorted(f for f in _glob.glob(text, recursive=True) if os.path.isfile(f))
        if not files:
            raise InputError(f"{text}: no files match this pattern")
        return files, None
    p = Path(text)
    if not p.exists():
        raise InputError(f"{text}: no such file or directory")
    if not (p.is_dir() or p.is_file()):  # opening a FIFO without a writer would wait forever
        raise InputError(f"{text}: not a regular file ({_file_kind(p)}); pass - to read JSONL from standard input")
    if p.is_dir():
        files = sorted(
            str(f) for f in p.rglob("*")
            if format_of_name(f.name) is not None and f.is_file()
            and not any(part.startswith((".", "_")) for part in f.relative_to(p).parts)
        )
        return files, text
    return [text], None


def _file_kind(p: Path) -> str:
    for test, kind in ((p.is_fifo, "a FIFO"), (p.is_socket, "a socket"), (p.is_char_device, "a character device"),
                       (p.is_block_device, "a block device")):
        if test():
            return kind
    return "not a file or directory"


def _directory(source: str, files: list[str], *, root: str, fs: Any = None) -> Layout:
    by_format: dict[str, list[str]] = {}
    for f in files:
        fmt = format_of_name(f)
        if fmt is not None:
            by_format.setdefault(fmt, []).append(f)
    if "parquet" in by_format:  # a run directory: manifest.json and README beside the Parquet parts
        return Layout(source, "parquet", tuple(by_format["parquet"]), root=root, fs=fs)
    if len(by_format) == 1:
        (fmt, chosen), = by_format.items()
        return _layout(source, chosen, root=root, fs=fs)
    if not by_format:
        raise InputError(f"{source}: directory holds no Parquet files (nor CSV, JSONL or Arrow files)")
    kinds = ", ".join(FORMAT_NAMES[k] for k in sorted(by_format))
    raise InputError(f"{source}: directory mixes trace formats ({kinds}); point at one kind of file")


def _layout(source: str, files: list[str], *, root: str | None, fs: Any = None) -> Layout:
    formats = set()
    gz = []
    for f in files:
        fmt = format_of_name(f)
        head = b""
        if fmt is None or fmt == "jsonl":
            head = _head(f, fs)
            fmt = fmt or _format_by_magic(head)
        if fmt is None:
            raise InputError(f"{f}: {UNKNOWN_FORMAT}")
        formats.add(fmt)
        gz.append(head.startswith(b"\x1f\x8b") or f.lower().endswith(".gz"))
    if len(formats) > 1:
        kinds = ", ".join(FORMAT_NAMES[k] for k in sorted(formats))
        raise InputError(f"{source}: files of more than one format ({kinds}); read them separately")
    return Layout(source, formats.pop(), tuple(files), root=root, fs=fs, gzip=bool(gz) and all(gz))


def _head(path: str, fs: Any) -> bytes:
    try:
        if fs is not None:
            with fs.open(path, "rb") as fh:
                return fh.read(8)
        with open(path, "rb") as fh:
            return fh.read(8)
    except Exception as exc:  # OSError locally; a remote store's own classes (see _resolve_url)
        raise InputError(f"{path}: cannot open ({first_line(exc)})") from None


def _resolve_url(url: str) -> Layout:
    try:
        import fsspec
    except ImportError:  # pragma: no cover - fsspec comes with the s3 and dask extras
        raise InputError(f"{url}: reading URLs needs fsspec: pip install 'ctwm[s3]'") from None
    try:
        fs, path = fsspec.core.url_to_fs(url)
    except (ImportError, ValueError) as exc:
        raise InputError(
            f"{url}: no filesystem for this URL ({first_line(exc)}); for s3:// pip install 'ctwm[s3]'"
        ) from None
    protocol = url.split("://", 1)[0]
    try:
        if _has_glob(path):
            files = sorted(fs.glob(path))
            if not files:
                raise InputError(f"{url}: no files match this pattern")
            return _layout(url, [f"{protocol}://{f}" for f in files], root=None, fs=fs)
        if fs.isdir(path):
            found = sorted(f for f in fs.find(path) if not any(
                part.startswith((".", "_")) for part in f[len(path):].strip("/").split("/")))
            return _directory(url, [f"{protocol}://{f}" for f in found], root=f"{protocol}://{path.rstrip('/')}", fs=fs)
        if not fs.exists(path):
            raise InputError(f"{url}: no such file or directory")
    except InputError:
        raise
    except Exception as exc:  # a remote store raises its own classes (botocore's NoCredentialsError,
        # EndpointConnectionError, aiohttp's errors): every one is an input error, exit 3
        raise InputError(f"{url}: cannot list ({type(exc).__name__}: {first_line(exc)})") from None
    return _layout(url, [f"{protocol}://{path}"], root=None, fs=fs)


def spool_stdin(owner: object) -> Layout:
    """Copy standard input (checked line by line) to a temporary file removed with ``owner``."""
    fd, name = tempfile.mkstemp(prefix="ctwm-stdin-", suffix=".jsonl")
    weakref.finalize(owner, remove_file, name)
    with os.fdopen(fd, "wb") as out:
        for _, block in checked_blocks(sys.stdin.buffer, "<stdin>"):
            out.write(block)
    return Layout("<stdin>", "jsonl", (name,))


def remove_file(name: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(name)
