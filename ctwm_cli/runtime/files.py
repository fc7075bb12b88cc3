"""Writing results to disk: checked before any work, written atomically, never mixed with another run.

* :func:`check_output_file` / :func:`check_output_dir` validate an output path *before* a command
  computes anything (usage error, exit 2: a directory where a file is wanted, an unknown suffix, a
  missing parent; input/data error, exit 3: the place cannot be written). They create nothing.
* :func:`atomic_write` and the ``write_*`` helpers write a temporary file next to the target (a
  hidden ``.NAME.<pid>.<random>.tmp``, which Parquet dataset readers ignore) and rename it over the
  target: a reader sees the old file or the new one, never half of one; an interrupted write leaves
  no temporary file behind.
* :func:`prepare_dir` opens a multi-file output directory: one that holds another run's files
  (``ours``: the manifest and the part files, as glob patterns) is refused unless ``overwrite``
  (our own files are deleted, nothing else) or ``resume`` (the caller verifies and completes them).
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ..common.errors import InputError, UsageError, WriteError

ROW_GROUP_ROWS = 1 << 20


def _parent(p: Path) -> Path:
    return p.parent if str(p.parent) else Path(".")


def _probe(directory: Path, param: str, path: str | Path) -> None:
    """Create and delete a file in ``directory``: the one reliable test that we can write there."""
    probe = directory / f".ctwm-probe.{os.getpid()}.{os.urandom(4).hex()}"
    try:
        probe.touch(exist_ok=False)
        probe.unlink()
    except OSError as exc:
        raise InputError(f"{param} {str(path)!r}: cannot write in {str(directory)!r} ({exc.strerror})",
                         params=(param,)) from None


def check_output_file(path: str | Path, *, param: str = "output", suffixes: Sequence[str] = (),
                      overwrite: bool = True) -> Path:
    """Check that ``path`` can be written as a file, before any work; create nothing. With
    ``overwrite=False`` an existing file is refused (a usage error naming ``overwrite``)."""
    p = Path(path)
    if not overwrite and (p.exists() or p.is_symlink()) and not p.is_dir():
        raise UsageError(f"{param} {str(path)!r}: already exists (pass overwrite to replace it)",
                         params=(param, "overwrite"))
    if suffixes and not p.name.lower().endswith(tuple(suffixes)):
        raise UsageError(f"{param} {str(path)!r}: file must end in {' or '.join(suffixes)}", params=(param,))
    if p.is_dir():
        raise UsageError(f"{param} {str(path)!r}: is a directory, expected a file", params=(param,))
    parent = _parent(p)
    if not parent.is_dir():
        raise UsageError(f"{param} {str(path)!r}: directory {str(parent)!r} does not exist", params=(param,))
    if p.exists() and not os.access(p, os.W_OK):
        raise InputError(f"{param} {str(path)!r}: file is not writable", params=(param,))
    _probe(parent, param, path)
    return p


def _owned(directory: Path, ours: Sequence[str]) -> list[Path]:
    """Files under ``directory`` matching ``ours``, reached without a symbolic link: ``overwrite``
    never deletes through a link that points out of the directory."""
    return sorted({f for pattern in ours for f in directory.glob(pattern)
                   if f.is_file() and not through_link(directory, f)})


def through_link(root: Path, path: Path) -> bool:
    """Whether ``path`` (under ``root``) or a directory between them is a symbolic link."""
    rel = path.relative_to(root)
    return any((root / part).is_symlink() for part in [rel, *rel.parents] if part != Path("."))


LOCK_FILE = ".ctwm-lock"


@contextlib.contextmanager
def dir_lock(root: Path, param: str = "out") -> Iterator[None]:
    """Hold ``root``'s advisory lock (``flock`` on ``root/.ctwm-lock``, which records the holder's
    pid) while the block runs; another holder is an :class:`InputError` naming its pid. The lock
    file is removed (still locked) when the block ends; a lock taken on a file removed meanwhile is
    retaken on the new one, so two holders never coexist."""
    import fcntl

    path = root / LOCK_FILE
    for _ in range(100):
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        except OSError as exc:
            raise InputError(f"{param} {str(root)!r}: cannot create its lock ({exc.strerror})",
                             params=(param,)) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
            os.close(fd)
            raise InputError(f"{param} {str(root)!r}: another ctwm (pid {holder}) is writing this directory; "
                             "wait for it to finish or stop it", params=(param,)) from None
        try:
            current = os.stat(path, follow_symlinks=False)
        except FileNotFoundError:
            current = None
        if current is not None and os.path.samestat(os.fstat(fd), current):
            break
        os.close(fd)  # its holder removed it between our open and our lock: take the new one
    else:  # pragma: no cover - a hundred lost races in a row
        raise InputError(f"{param} {str(root)!r}: cannot take its lock", params=(param,))
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)
        os.close(fd)


def check_output_dir(out: str | Path, *, ours: Sequence[str], overwrite: bool = False, resume: bool = False,
                     resumable: bool = False, param: str = "out") -> Path:
    """Check that ``out`` can hold a run's files, before any work; create nothing.

    A directory holding files matching ``ours`` is refused unless ``overwrite`` or ``resume``
    (``resumable``: the caller supports ``resume``, so the message offers it).
    """
    p = Path(out)
    if overwrite and resume:
        raise UsageError("overwrite and resume exclude each other", params=("overwrite", "resume"))
    if p.exists() and not p.is_dir():
        raise UsageError(f"{param} {str(out)!r}: exists and is not a directory", params=(param,))
    existing = _owned(p, ours) if p.is_dir() else []
    if existing and not (overwrite or resume):
        more = f" and {len(existing) - 1} more files" if len(existing) > 1 else ""
        hint = "pass overwrite to replace it" + (" or resume to complete it" if resumable else "")
        raise UsageError(f"{param} {str(out)!r}: already holds {existing[0].relative_to(p)}{more} of another run; "
                         f"{hint}", params=(param, "overwrite", "resume"))
    ancestor = p
    while not ancestor.exists():
        ancestor = _parent(ancestor) if ancestor != _parent(ancestor) else Path(".")
    if not ancestor.is_dir():
        raise UsageError(f"{param} {str(out)!r}: {str(ancestor)!r} is not a directory", params=(param,))
    _probe(ancestor, param, out)
    return p


def prepare_dir(out: str | Path, *, ours: Sequence[str], overwrite: bool = False, resume: bool = False,
                resumable: bool = False, param: str = "out") -> Path:
    """:func:`check_output_dir`, then create ``out``; with ``overwrite``, delete the files matching
    ``ours`` (and the directories they leave empty) — nothing else."""
    p = check_output_dir(out, ours=ours, overwrite=overwrite, resume=resume, resumable=resumable, param=param)
    make_dir(p, param)
    if overwrite:
        clear_owned(p, ours)
    return p


@contextlib.contextmanager
def owned_dir(out: str | Path, *, ours: Sequence[str], overwrite: bool = False, resume: bool = False,
              resumable: bool = False, param: str = "out") -> Iterator[Path]:
    """:func:`prepare_dir` under :func:`dir_lock`, held until the block ends: a second run on the
    same directory (or ``resume`` of it) is refused while this one writes or cleans up."""
    p = check_output_dir(out, ours=ours, overwrite=overwrite, resume=resume, resumable=resumable, param=param)
    make_dir(p, param)
    with dir_lock(p, param):
        if overwrite:
            clear_owned(p, ours)
        yield p


def make_dir(p: Path, param: str) -> None:
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"{param} {str(p)!r}: cannot create directory ({exc.strerror})",
                         params=(param,)) from None


def clear_owned(p: Path, ours: Sequence[str]) -> None:
    """Delete the files matching ``ours`` under ``p`` (never through a link) and the directories
    they leave empty."""
    for f in _owned(p, ours):
        f.unlink()
        with contextlib.suppress(OSError):  # only empty directories go
            for d in f.relative_to(p).parents:
                if d != Path("."):
                    (p / d).rmdir()


@contextlib.contextmanager
def atomic_write(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; when the block succeeds, flush it to disk and rename
    it to ``path``; when it fails (or a signal interrupts it), delete it."""
    target = Path(path)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    try:
        try:
            yield tmp
            fd = os.open(tmp, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, target)
        except OSError as exc:  # a full disk, a file size limit, a lost mount: exit 3, not a crash
            raise WriteError(f"{target}: cannot write ({exc.strerror or str(exc).splitlines()[0]})") from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def remove_temp_files(root: str | Path) -> list[Path]:
    """Delete the temporary files :func:`atomic_write` left under ``root`` (a worker killed mid-write
    cannot delete its own) and the directories that leaves empty; return what was deleted."""
    root = Path(root)
    gone = [t for t in root.rglob(".*.tmp") if t.is_file() and t.name.count(".") >= 4 and not through_link(root, t)]
    for t in gone:
        t.unlink(missing_ok=True)
        with contextlib.suppress(OSError):  # stops at the first directory that is not empty
            for d in t.relative_to(root).parents:
                if d != Path("."):
                    (root / d).rmdir()
    return gone


def write_bytes(path: str | Path, data: bytes) -> None:
    with atomic_write(path) as tmp:
        tmp.write_bytes(data)


def write_text(path: str | Path, text: str) -> None:
    write_bytes(path, text.encode("utf-8"))


def write_json(path: str | Path, doc: dict[str, Any]) -> None:
    """``doc`` as indented JSON with a final newline."""
    write_text(path, json.dumps(doc, indent=2) + "\n")


def write_parquet(table, path: str | Path) -> str:
    """Write ``table`` deterministically (fixed row groups, zstd, no schema metadata such as
    timestamps), atomically; return the file's SHA-256."""
    import pyarrow.parquet as pq

    with atomic_write(path) as tmp:
        pq.write_table(table.replace_schema_metadata(None), str(tmp), row_group_size=ROW_GROUP_ROWS,
                       compression="zstd", use_dictionary=True, write_statistics=True)
    return sha256(path)


def sha256(path: str | Path) -> str:
    import hashlib  # here: OpenSSL's bindings cost every command's start ~4 ms, and few commands hash

    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
