"""Output conventions shared by every command: results on stdout, messages on stderr.

Formats: a Rich table (as wide as the terminal; 80 columns when stdout is not a terminal unless
``COLUMNS`` says otherwise; a table wider than that is split into column panels that repeat its first
column, or stacked one record per block, so no number is ever cut or wrapped; no text is read as Rich
markup, so a label such as ``grid_out[run-1]`` prints as it is), one JSON document, JSON lines and
CSV (the same field names as the JSON rows; JSON lines carry ``schema_version`` and ``seed``; CSV
booleans are ``true``/``false``), GitHub workflow-command annotations and a Markdown summary.
Gate outcomes (:mod:`ctwm_cli.common.gates`) travel with the result into every format and into JUnit XML.
"""

from __future__ import annotations

import csv
import io
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from .._version import __version__
from ..common.errors import CheckFailed, UsageError
from ..common.inert import spreadsheet_safe, visible
from ..common.results import SCHEMA_VERSION
from ..runtime.files import check_output_file, write_text
from .consoles import InertConsole, stderr_console
from .options import Format
from .progress_display import LIVE, progress_bar  # noqa: F401 - the commands' import
from .registry import REGISTRY
from .reporters import check_status, failure_text, github_annotations, junit_xml, markdown_report
from .table_fit import show

if TYPE_CHECKING:
    from ..common.gates import CheckOutcome

#: when this module was loaded: the start of the command, for JUnit's times
STARTED = time.perf_counter()

#: Console width when stdout is not a terminal and ``COLUMNS`` is unset (Rich's own default): piped
#: tables stay readable in a log (issue 24 found 210-column lines), and :func:`fit` keeps every number whole.
PIPE_WIDTH = 80


def stdout_console() -> Console:
    """Results console. Markup off: labels are data, never style tags; control characters made visible."""
    return InertConsole(file=sys.stdout, soft_wrap=False, markup=False, highlight=False, width=_width())


def _width() -> int | None:
    """The terminal's width (Rich's reading, ``COLUMNS`` included); :data:`PIPE_WIDTH` when piped."""
    import os

    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    return None if sys.stdout.isatty() else PIPE_WIDTH


def message(text: str) -> None:
    """A one-line message on stderr (never mixed into results); control characters made visible."""
    stderr_console().print(visible(text))


def announce_seed(seed: int | None) -> None:
    if seed is not None:
        message(f"seed: {seed}")


def jsonable(value: Any) -> Any:
    """:func:`ctwm_cli.common.results.jsonable`, loaded (with numpy) when a result is rendered, never for --help."""
    from ..common.results import jsonable as to_builtins

    return to_builtins(value)


class UnregisteredCommand(RuntimeError):
    """A command printed a result with no registered result class (so no schema, no vocabulary check)."""


def schema_version() -> int:
    return SCHEMA_VERSION


def envelope(command: str, payload: dict[str, Any], *, seed: int | None = None) -> dict[str, Any]:
    """The JSON document every command prints for ``--format json``."""
    doc: dict[str, Any] = {
        "schema_version": schema_version(), "tool": "ctwm", "version": __version__, "command": command,
    }
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
    checks: Sequence[CheckOutcome] = (),
    subject_field: str | None = None,
    subjects: Sequence[str] | None = None,
    summary_fields: Sequence[str] = (),
    details: bool = True,
    headline: str | None = None,
) -> None:
    """Print a result.

    ``headline``: a one-line summary printed before any table (table format only), e.g. "54 groups:
    41 inconclusive, 13 tpl-compatible".

    ``rows`` feed jsonl/csv/markdown (and the default table); ``tables`` are Rich renderables printed
    in ``table`` format. With several rows and ``summary_fields``, the table format prints one summary
    table first (a row per subject, with its gate status) and ``tables`` only when ``details``.
    ``checks`` are gate outcomes; ``subject_field`` names the row field they refer to (or ``subjects``
    gives each row's subject, when no field of the row is its label).
    """
    if command not in REGISTRY:  # a command's JSON is a contract: its result class is registered first
        raise UnregisteredCommand(f"command {command!r} prints a result but registers no result class "
                                  "(@result in ctwm_cli.cli.registry, beside the command)")
    if subjects is None and subject_field is not None:
        subjects = [str(r.get(subject_field)) for r in rows]
    out = sys.stdout
    if checks:
        payload = {**payload, "checks": [c.to_dict() for c in checks]}
    if fmt is Format.json:
        out.write(json.dumps(envelope(command, payload, seed=seed), indent=2) + "\n")
    elif fmt is Format.jsonl:
        for row in rows:
            out.write(json.dumps(jsonl_row(row, seed)) + "\n")
    elif fmt in (Format.csv, Format.csv_raw):
        out.write(to_csv(rows, raw=fmt is Format.csv_raw))
    elif fmt is Format.github:
        out.write(github_annotations(command, checks))
    elif fmt is Format.markdown:
        summary = summary_rows(rows, summary_fields, checks, subjects)
        out.write(markdown_report(command, summary, checks, seed=seed))
    else:
        _print_tables(command, rows, tables, title, checks, subjects, summary_fields, details, headline)
    out.flush()


def _print_tables(command: str, rows: Sequence[dict[str, Any]], tables: Sequence[Any], title: str | None,
                  checks: Sequence[CheckOutcome], subjects: Sequence[str] | None, summary_fields: Sequence[str],
                  details: bool, headline: str | None) -> None:
    """The table format: the headline, a summary when there are several results, each result's tables, gates."""
    console = stdout_console()
    several = len(rows) > 1 and bool(summary_fields)
    if headline:
        console.print(Text(headline))
    if several:
        show(console, rows_table(summary_rows(rows, summary_fields, checks, subjects),
                                 title=f"Summary: {len(rows)} {command} results"))
    if details or not several:
        for t in tables or [rows_table(rows, title=title)]:
            show(console, t)
    if checks:
        show(console, checks_table(checks))
    if several and not details:
        message("per-result details: add --details (or use --format json)")


def jsonl_row(row: dict[str, Any], seed: int | None) -> dict[str, Any]:
    """A JSON-lines row: the row's fields plus ``schema_version`` and ``seed`` (null when unseeded)."""
    return {"schema_version": schema_version(), "seed": seed, **jsonable(row)}


def summary_rows(
    rows: Sequence[dict[str, Any]], fields: Sequence[str], checks: Sequence[CheckOutcome],
    subjects: Sequence[str] | None,
) -> list[dict[str, Any]]:
    """Rows cut to ``fields`` plus a ``checks`` column (none / pass / fail) per subject."""
    keep = list(fields) or list(dict.fromkeys(k for r in rows for k in r))
    out = []
    for i, r in enumerate(rows):
        row = {k: r.get(k) for k in keep}
        if checks and subjects is not None:
            row["checks"] = check_status([c for c in checks if c.subject == subjects[i]])
        out.append(row)
    return out


def to_csv(rows: Sequence[dict[str, Any]], *, raw: bool = False) -> str:
    """Rows as CSV. Unless ``raw``, text cells are made inert: control characters visible and a cell a
    spreadsheet would evaluate as a formula prefixed with ``'`` (:mod:`ctwm_cli.common.inert`)."""
    buf = io.StringIO()
    fields = list(dict.fromkeys(k for r in rows for k in r))
    writer = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    for r in rows:
        cells = {k: csv_cell(v) for k, v in jsonable(r).items()}
        if not raw:
            cells = {k: spreadsheet_safe(visible(v)) if isinstance(v, str) else v for k, v in cells.items()}
        writer.writerow(cells)
    return buf.getvalue()


def csv_cell(v: Any) -> Any:
    """JSON spelling for what CSV has no type for: true/false, nested values as JSON, null as empty."""
    if isinstance(v, bool):
        return "true" if v else "false"
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
        if v.is_integer() and abs(v) < 1e15:  # a count held as a float (a saved JSON number) reads as a count
            return f"{int(v):,}"
        if v == 0 or 1e-3 <= abs(v) < 10 ** digits:
            return f"{v:.{digits}g}"
        if 10 ** digits <= abs(v) < 1e9:  # never 2.597e+04 beside 3,396: thousands separated, as integers are
            return f"{v:,.0f}"
        return f"{v:.3e}"
    if isinstance(v, (list, tuple)):
        return ", ".join(fmt_num(x, digits) for x in v)
    return str(v)


def count_line(noun: str, values: Sequence[Any]) -> str:
    """``"54 groups: 41 inconclusive, 13 tpl-compatible"``: how many of each value, most common first."""
    counts: dict[str, int] = {}
    for v in values:
        counts[str(v)] = counts.get(str(v), 0) + 1
    parts = ", ".join(f"{n:,} {v}" for v, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    return f"{len(values):,} {noun}: {parts}"


def rows_table(rows: Sequence[dict[str, Any]], *, title: str | None = None) -> Table:
    table = Table(title=title, title_justify="left")
    fields = list(dict.fromkeys(k for r in rows for k in r))
    for f in fields:
        table.add_column(f)
    for r in rows:
        table.add_row(*(Text(visible(fmt_num(r.get(f)))) for f in fields))
    return table


def checks_table(checks: Sequence[CheckOutcome]) -> Table:
    t = Table(title="Checks (--fail-on / --expect)", title_justify="left")
    for name in ("subject", "check", "status", "observed", "detail"):
        t.add_column(name)
    for c in checks:
        style = "bold red" if c.failed else ("yellow" if c.status != "pass" else "green")
        t.add_row(Text(visible(c.subject)), Text(visible(c.check)),
                  Text(c.status, style=style),
                  Text(visible(fmt_num(c.observed))), Text(visible(c.note)))
    return t


def conclude(command: str, checks: Sequence[CheckOutcome], junit: Path | None = None) -> None:
    """After the result is printed: write JUnit XML if asked, then exit 1 (CheckFailed) if any check failed."""
    if junit is not None:
        write_atomic(junit, junit_xml([(f"ctwm {command}", checks, None, time.perf_counter() - STARTED)]))
    failed = [c for c in checks if c.failed]
    if failed:
        shown = "; ".join(f"{c.subject}: {failure_text(c)}" for c in failed[:3])
        more = f"; and {len(failed) - 3} more" if len(failed) > 3 else ""
        raise CheckFailed(f"{len(failed)} of {len(checks)} check(s) failed: {shown}{more}")


def check_output_path(path: str | None, option: str) -> Path | None:
    """Fail before any work when an output file cannot be written (a directory, a missing parent)."""
    return None if path is None else check_output_file(path, param=option)


def check_outputs(inputs: Sequence[str | Path], **outputs: str | Path | None) -> None:
    """Refuse (exit 2), before any work, an output that would overwrite an input or another output.

    ``outputs`` maps a flag written with underscores (``junit_xml=``, ``plot=``, ``output=``) to its
    path; ``inputs`` are the trace arguments (globs expanded; ``-`` and URLs skipped) and config files.
    Paths are compared after resolving symlinks, so ``./t.parquet``, ``t.parquet`` and a link to it
    are one file."""
    import glob as globbing
    import os

    seen: dict[str, str] = {}
    for given in inputs:
        text = str(given)
        if text == "-" or "://" in text:
            continue
        for hit in (globbing.glob(text) if globbing.has_magic(text) else [text]):
            seen.setdefault(os.path.realpath(hit), f"the input {hit!r}")
    for name, path in outputs.items():
        if path is None:
            continue
        flag = "--" + name.replace("_", "-")
        real = os.path.realpath(path)
        if real in seen:
            raise UsageError(f"{flag} {str(path)!r}: is {seen[real]}; an output never overwrites an input",
                             params=(flag,))
        seen[real] = f"the {flag} file"


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` under a temporary name, then rename: a reader never sees half a file."""
    write_text(path, text)
