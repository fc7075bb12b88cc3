"""What a config's entry may read: files inside its repository, never VCS metadata, never a URL.

``ctwm check`` runs each entry of a config (which may come with a pull request) as a child process
with :data:`ROOT_ENV` set to the repository (the config's directory). In that process every file the
reading layer is about to open — the concrete list, after a directory is listed or a glob expanded
(:func:`ctwm_cli.traces.sources.local_files`) — passes :func:`admit_files` first: its ``realpath`` must
lie inside the root, and no part of it may be ``.git``, ``.hg`` or ``.svn`` (CI checkouts keep the job's
token in ``.git/config``). A name that is a URL, an fsspec protocol or chain (``s3://``, ``hf://``,
``simplecache::``, ``file://``) or ``-`` (standard input) is refused by :func:`admit_name` unless the CI
operator passed ``ctwm check --allow-remote`` (:data:`REMOTE_ENV`), never by the config itself.

Checking the file actually opened, not the name given, is what closes the check-then-follow-a-link
hole: ``traces = ["d2"]`` is inside the repository, ``d2/creds.csv -> ~/.aws/credentials`` is not.
Outside ``ctwm check`` (no :data:`ROOT_ENV`) nothing is confined: the command line is the user's own.
A refusal is a :class:`~ctwm_cli.common.errors.UsageError` (exit 2) naming the path and the rule; it is raised
before a byte of the file is read, and it never quotes where a link points.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence

from ..common.errors import InputError, UsageError

ROOT_ENV = "CTWM_CONFINE_ROOT"
REMOTE_ENV = "CTWM_CONFINE_ALLOW_REMOTE"
VCS_DIRS = frozenset({".git", ".hg", ".svn"})
RULE = "a config's entries read and write only files inside its repository"


@dataclasses.dataclass(frozen=True, slots=True)
class Confinement:
    """The rules of one confined process: its repository ``root`` (a realpath) and whether remote
    traces are allowed (the operator's ``--allow-remote``)."""

    root: str
    allow_remote: bool = False

    def env(self) -> dict[str, str]:
        """The environment variables that put a child process under these rules."""
        return {ROOT_ENV: self.root, REMOTE_ENV: "1" if self.allow_remote else "0"}


def active() -> Confinement | None:
    """The rules this process runs under, or None when it runs for the user's own command line."""
    root = os.environ.get(ROOT_ENV)
    if not root:
        return None
    return Confinement(os.path.realpath(root), os.environ.get(REMOTE_ENV) == "1")


def is_remote(name: str) -> bool:
    """Whether ``name`` is read through a protocol rather than as a local path: ``scheme://`` (``file://``
    included), an fsspec chain (``a::b``), or ``-`` (standard input)."""
    return name == "-" or "://" in name or "::" in name


def admit_name(name: str, rules: Confinement | None = None) -> None:
    """Refuse a URL, protocol or ``-`` in a confined process (unless the operator allowed remote traces)."""
    _no_nul(name)
    rules = rules or active()
    if rules is None or not is_remote(name) or (rules.allow_remote and name != "-"):
        return
    what = "standard input" if name == "-" else "a URL or fsspec protocol"
    hint = "" if name == "-" else "; a CI operator may allow remote traces with ctwm check --allow-remote"
    raise UsageError(f"{name!r}: {what} is never read from a config ({RULE}{hint})", params=())


def _no_nul(name: str) -> None:
    if "\x00" in name:  # no file name can hold one (the OS raises ValueError instead of answering)
        raise UsageError(f"{name!r}: a file name cannot hold a NUL character", params=())


def admit_files(source: str, files: Sequence[str], rules: Confinement | None = None) -> list[str]:
    """``files`` (what reading ``source`` opens) if each may be read; else the first refusal.

    Everywhere: a file name that is not valid UTF-8 is an input error naming it by its ``repr`` (DuckDB
    and Arrow take UTF-8 names only). In a confined process: see the module docstring."""
    rules = rules or active()
    for f in files:
        _no_nul(f)
        try:
            f.encode("utf-8")
        except UnicodeEncodeError:
            raise InputError(f"{f!r}: the file name is not valid UTF-8; rename the file") from None
        if rules is not None:
            _admit(source, f, rules)
    return list(files)


def admit_file(path: str) -> str:
    """:func:`admit_files` of one file read as it is named."""
    return admit_files(path, [path])[0]


def _admit(source: str, path: str, rules: Confinement) -> None:
    real = os.path.realpath(path)
    rel = os.path.relpath(real, rules.root)
    named = path if path == source else f"{source}: {path}"
    if rel == os.pardir or rel.startswith(os.pardir + os.sep) or os.path.isabs(rel):
        raise UsageError(f"{named}: resolves outside the repository {rules.root!r} ({RULE})", params=())
    parts = set(rel.split(os.sep)) | set(os.path.normpath(path).split(os.sep))
    vcs = sorted(parts & VCS_DIRS)
    if vcs:
        raise UsageError(f"{named}: {vcs[0]}/ is version-control metadata, never read ({RULE}, never "
                         ".git/, .hg/ or .svn/)", params=())
