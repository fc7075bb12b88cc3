"""Where a trace's bytes are: a file, a directory (hive partitions allowed), a glob, an fsspec URL
(``s3://…``; the ``s3`` extra), or standard input — resolved to one format and a list of files."""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import functools
import glob as _glob
import os
import sys
import tempfile
import weakref
from pathlib import Path
from typing import Any

from ..common.errors import InputError
from ..common.labels import trace_name
from ..runtime.confine import admit_files, admit_name
from .formats import FORMATS, format_of_head, format_of_name, unknown_format
from .guard import DecompressionGuard, checked_blocks, first_line, open_guarded

#: Suffixes of JSON lines (the telemetry sniffer reads only these).
JSONL_SUFFIXES = FORMATS["jsonl"].suffixes


SQLITE_MAGIC = b"SQLite format 3\x00"


def is_sqlite(path: str | Path) -> bool:
    """Whether ``path`` is an SQLite database (Mem0's history.db), by its header."""
    try:
        with open(path, "rb") as fh:
            return fh.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC
    except OSError:
        return False


@dataclasses.dataclass(frozen=True, slots=True)
class Layout:
    """A resolved trace: its name in messages, format, files, and the dataset root if any."""

    source: str
    format: str
    files: tuple[str, ...]
    root: str | None = None
    fs: Any = None  # fsspec filesystem for URLs
    gzip: bool = False
    parts: tuple[Layout, ...] = ()  # files of several formats: one layout per format ("mixed")

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
    source is named by its :func:`~ctwm_cli.common.labels.trace_name`. Under a config's confinement
    (:mod:`ctwm_cli.runtime.confine`) the name and every file it lists are admitted before a byte is read."""
    admit_name(text)
    if is_url(text):
        return _resolve_url(text)
    text = trace_name(text)  # a local path: file:// dropped, named by its identity
    files, root = local_files(text)
    files = admit_files(text, files)
    if root is not None:
        return _directory(text, files, root=root)
    return _layout(text, files, root=None)


def local_files(text: str) -> tuple[list[str], str | None]:
    """(the files reading the local ``text`` opens, the dataset root when ``text`` is a directory): a
    glob's matches, a directory's files less those of other kinds (:func:`other_kind`: hidden ``.``/``_``
    entries, READMEs, checksums; never opened), or the file itself."""
    if _has_glob(text) and not Path(text).exists():
        files = sorted(f for f in _glob.glob(text, recursive=True)
                       if os.path.isfile(f) and not other_kind(os.path.basename(f)))
        if not files:
            raise InputError(f"{text}: no files match this pattern")
        return files, None
    p = Path(text)
    if not p.exists():
        raise InputError(f"{text}: no such file or directory")
    if not (p.is_dir() or p.is_file()):  # opening a FIFO without a writer would wait forever
        raise InputError(f"{text}: not a regular file ({_file_kind(p)}); pass - to read JSONL from standard input")
    if p.is_dir():
        # files of other kinds are never opened, so never judged; every other file is admitted before its
        # head is sniffed (a link to a secret must not be opened even to be refused as an unknown format)
        files = sorted(str(f) for f in p.rglob("*") if f.is_file() and not other_kind(os.path.relpath(f, p)))
        return files, text
    return [text], None


def _file_kind(p: Path) -> str:
    for test, kind in ((p.is_fifo, "a FIFO"), (p.is_socket, "a socket"), (p.is_char_device, "a character device"),
                       (p.is_block_device, "a block device")):
        if test():
            return kind
    return "not a file or directory"


#: Files of other kinds, skipped in a directory beside the data (issue 41: a short, tested list). Every name with a
#: part starting with ``.`` or ``_`` (``_SUCCESS``, ``_metadata``, ``_delta_log/``, Hadoop's ``.part-0.crc``); these
#: names (case-insensitive, with or without a suffix); these suffixes; and ``*.json`` files beside data files that
#: are not ``.json`` (a run's ``manifest.json``, a saved result). Anything else that is not a trace format is refused.
OTHER_KIND_NAMES = ("readme", "license", "licence", "changelog", "notice", "authors", "manifest")
OTHER_KIND_SUFFIXES = (".md", ".txt", ".rst", ".html", ".pdf", ".png", ".svg", ".yaml", ".yml", ".toml", ".crc",
                       ".py", ".sh", ".lock", ".sha256", ".md5")
_HIDDEN = (".", "_")


def other_kind(rel: str) -> bool:
    """Whether the file at ``rel`` (relative to its directory) is of another kind than data (see above)."""
    parts = rel.replace("\\", "/").split("/")
    name = parts[-1].lower()
    return (any(p.startswith(_HIDDEN) for p in parts) or name.split(".", 1)[0] in OTHER_KIND_NAMES
            or name.endswith(OTHER_KIND_SUFFIXES))


def _directory(source: str, files: list[str], *, root: str, fs: Any = None) -> Layout:
    """The data files of a directory: files of other kinds skipped, anything else refused; ``*.json`` files
    are data only when no other format is there."""
    kept, unknown = [], []
    for f in files:
        rel = f[len(root):].lstrip("/") if fs is not None else os.path.relpath(f, root)
        if other_kind(rel):
            continue
        if format_of_name(f) is not None or format_of_head(_head(f, fs)) is not None:
            kept.append(f)
        else:
            unknown.append(rel)
    if unknown:
        raise InputError(f"{source}: {_some(unknown)}: {unknown_format()}; a directory holds trace "
                         "files and files of other kinds only (README, *.md, *.txt, _SUCCESS, .crc, manifest.json): "
                         "move it, or name the data with a glob")
    data = kept
    if not data:
        kinds = ", ".join(f.title for f in FORMATS.values())
        raise InputError(f"{source}: directory holds no trace files ({kinds})")
    json_only = [f for f in data if f.lower().endswith((".json", ".json.gz"))]
    if json_only and len(json_only) < len(data):
        data = [f for f in data if f not in json_only]
    return _layout(source, data, root=root, fs=fs)


def _some(names: list[str]) -> str:
    return ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")


def _layout(source: str, files: list[str], *, root: str | None, fs: Any = None) -> Layout:
    """One format's files as a :class:`Layout`; files of several formats as one whose ``parts`` has a
    layout per format (read as one table when their columns agree, :mod:`.readers`)."""
    by_format: dict[str, list[str]] = {}
    gz: dict[str, list[bool]] = {}
    for f in files:
        fmt = format_of_name(f)
        head = b""
        if fmt is None or fmt.gzip_by_content:
            head = _head(f, fs)
            fmt = fmt or format_of_head(head)
        if fmt is None:
            raise InputError(f"{f}: {unknown_format()}")
        by_format.setdefault(fmt.name, []).append(f)
        gz.setdefault(fmt.name, []).append(head.startswith(b"\x1f\x8b") or f.lower().endswith(".gz"))
    parts = tuple(Layout(source, name, tuple(fs_), root=root, fs=fs, gzip=all(gz[name]))
                  for name, fs_ in by_format.items())
    if len(parts) == 1:
        return parts[0]
    return Layout(source, "mixed", tuple(files), root=root, fs=fs, parts=parts)


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
    fs = _with_modified(fs)

    def full(p: str) -> str:  # an HTTP filesystem's paths keep their scheme; an object store's do not
        return p if "://" in p else f"{protocol}://{p}"

    try:
        if _has_glob(path):
            files = sorted(fs.glob(path))
            if not files:
                raise InputError(f"{url}: no files match this pattern")
            return _layout(url, [full(f) for f in files], root=None, fs=fs)
        if fs.isdir(path):
            found = sorted(fs.find(path))
            return _directory(url, [full(f) for f in found], root=full(path.rstrip("/")), fs=fs)
        if not fs.exists(path):
            raise InputError(f"{url}: no such file or directory")
    except InputError:
        raise
    except Exception as exc:  # a remote store raises its own classes (botocore's NoCredentialsError,
        # EndpointConnectionError, aiohttp's errors): every one is an input error, exit 3
        raise InputError(f"{url}: cannot list ({type(exc).__name__}: {first_line(exc)})") from None
    return _layout(url, [full(path)], root=None, fs=fs)


def _with_modified(fs: Any) -> Any:
    """``fs``, or for fsspec's HTTP filesystem the same filesystem with a ``modified()``: DuckDB asks a
    registered filesystem for every file's modification time, and HTTP's raises NotImplementedError
    (fsspec takes HTTP files as static: its ``ukey`` is the URL), so every file reports the epoch."""
    from fsspec.implementations.http import HTTPFileSystem

    if type(fs) is not HTTPFileSystem:
        return fs
    return _static_http_class()(**fs.storage_options)


@functools.cache
def _static_http_class() -> type:
    from fsspec.implementations.http import HTTPFileSystem

    class StaticHTTPFileSystem(HTTPFileSystem):
        def modified(self, path: str) -> datetime.datetime:
            return datetime.datetime.fromtimestamp(0, tz=datetime.UTC)

    return StaticHTTPFileSystem


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
