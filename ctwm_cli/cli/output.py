"""Output conventions shared by every command: results on stdout, messages on stderr."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import sys
import time
from collections.abc import Iterator, Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

from .._version import __version__
from ..progress import ProgressCallback
from ..results import SCHEMA_VERSION, jsonable
from .options import Format


def stdout_console() -> Console:
    return Console(file=sys.stdout, soft_wrap=False)


def stderr_console() -> Console:
    return Console(file=sys.stderr, soft_wrap=True)


def message(text: str) -> None:
    """A one-line message on stderr (never mixed into results)."""
    stderr_console().print(text, highlight=False, markup=False)


def announce_seed(seed: int | None) -> None:
    if seed is not None:
        message(f"seed: {seed}")


def envelope(command: str, payload: dict[str, Any], *, seed: int | None = None) -> dict[str, Any]:
    """The JSON document every command prints for ``--format json``."""
    doc: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "tool": "ctwm", "version": __version__, "command": command}
    if seed is not None:
        doc["seed"] = seed
    doc.update(jsonable(payload))
    return doc


def emit(
    command: str,
    payload: dict[str, Any],
    rows: Sequence[dict[str, Any]],
    fmt: Format,
    *,
    seed: int | None = None,
    tables: Sequence[Any] = (),
    title: str | None = None,
) -> None:
    """Print a result. ``rows`` feed jsonl/csv (and the default table); ``tables`` are Rich renderables
    printed instead of the default table in ``table`` format."""
    out = sys.stdout
    if fmt is Format.json:
        out.write(json.dumps(envelope(command, payload, seed=seed), indent=2) + "\n")
    elif fmt is Format.jsonl:
        for row in rows:
            out.write(json.dumps(jsonable(row)) + "\n")
    elif fmt is Format.csv:
        out.write(to_csv(rows))
    else:
        console = stdout_console()
        for t in tables or [rows_table(rows, title=title)]:
            console.print(t)
    out.flush()


def to_csv(rows: Sequence[dict[str, Any]]) -> str:
    buf = io.StringIO()
    fields = list(dict.fromkeys(k for r in rows for k in r))
    writer = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    for r in rows:
        writer.writerow({k: _cell(v) for k, v in jsonable(r).items()})
    return buf.getvalue()


def _cell(v: Any) -> Any:
    if isinstance(v, (list, dict)):
        return json.dumps(v)
    return "" if v is None else v


def fmt_num(v: Any, digits: int = 4) -> str:
    """Compact human formatting for table cells."""
    if v is None:
        return "–"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        if v != v:
            return "–"
        if v == 0 or 1e-3 <= abs(v) < 1e6:
            return f"{v:.{digits}g}"
        return f"{v:.3e}"
    if isinstance(v, (list, tuple)):
        return ", ".join(fmt_num(x, digits) for x in v)
    return str(v)


def rows_table(rows: Sequence[dict[str, Any]], *, title: str | None = None) -> Table:
    table = Table(title=title, title_justify="left")
    fields = list(dict.fromkeys(k for r in rows for k in r))
    for f in fields:
        table.add_column(f, overflow="fold")
    for r in rows:
        table.add_row(*(fmt_num(r.get(f)) for f in fields))
    return table


@contextlib.contextmanager
def progress_bar(description: str, total: int | None = None) -> Iterator[ProgressCallback]:
    """A progress callback drawing a Rich bar on stderr once work has run for more than a second.

    Off when stderr is not a terminal, so logs and CI output stay clean.
    """
    if not sys.stderr.isatty():
        yield lambda done, total=None: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    started = time.monotonic()
    state: dict[str, Any] = {"bar": None, "task": None}

    def update(done: int, tot: int | None = total) -> None:
        if state["bar"] is None:
            if time.monotonic() - started < 1.0:
                return
            bar = Progress(
                TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                console=stderr_console(), transient=True,
            )
            bar.start()
            state["bar"], state["task"] = bar, bar.add_task(description, total=tot)
        state["bar"].update(state["task"], completed=done, total=tot)

    try:
        yield update
    finally:
        if state["bar"] is not None:
            state["bar"].stop()
