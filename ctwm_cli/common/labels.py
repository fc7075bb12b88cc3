"""How a result names what it is about: one spelling for every command and every format (issue 24).

* A trace is named by its :func:`identity`: the path made absolute and normalised, then relative to the
  working directory when it lies inside it, so ``x.parquet``, ``./x.parquet`` and ``sub/../x.parquet``
  are one name and ``ctwm diff`` pairs their results; a ``label`` given by the caller replaces it.
* A group of a trace is ``source[group]`` (:func:`subject_label`), in tables, gate subjects and JSON.
"""

from __future__ import annotations

import os

from .errors import UsageError


def identity(text: str) -> str:
    """A local path's name in results (see the module docstring). Symlinks are not followed: a link is
    named as typed, so the name says what the user pointed at."""
    full = os.path.abspath(text)
    rel = os.path.relpath(full, os.getcwd())
    return full if rel == ".." or rel.startswith(".." + os.sep) else rel


def trace_name(text: str) -> str:
    """The name results give the trace ``text`` names, in the library and the CLI alike (``read_trace``,
    ``ctwm audit``, the uniqueness of names): standard input (``-``) and a URL as written, a local path (``file://``
    or not) by its :func:`identity`, so ``./x``, ``file://x`` and ``x`` are one name."""
    if text == "-" or ("://" in text and not text.startswith("file://")):
        return text
    return identity(text.removeprefix("file://"))


def subject_label(source: str | None, group: object | None = None) -> str:
    """``source[group]``, or ``source`` alone when ungrouped (``result`` when there is no source)."""
    name = source if source not in (None, "") else "result"
    return name if group in (None, "") else f"{name}[{group}]"


def check_unique(names: list[str]) -> None:
    """Refuse two results of one run under one name (a usage error naming it): ``ctwm diff`` pairs results by
    name, so a duplicate would hide one of them (a head whose first ``same`` regressed passed the gate). The
    message names ``label``, which the CLI writes as its ``--label`` flag."""
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise UsageError(f"two traces are named {name!r}; give each its own label", params=("label",))
        seen.add(name)
