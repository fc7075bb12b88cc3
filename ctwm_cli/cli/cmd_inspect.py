"""``ctwm inspect``: what a trace holds and how its columns were mapped."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from .options import (
    TRACES_HELP,
    Format,
    LabelOpt,
    ReadFlags,
    output_flags,
    read_flags,
    trace_labels,
)
from .output import emit, fmt_num, progress_bar
from .registry import result


@output_flags
@read_flags(engine=True)
@result("inspect", "ctwm_cli.traces.TraceScan", key="results", many=True)
def inspect(
    traces: Annotated[list[str], typer.Argument(metavar="TRACE...", help=TRACES_HELP)],
    label: LabelOpt = None,
    *,
    opts: ReadFlags,
    fmt: Format = Format.table,
) -> None:
    """Rows, distinct items, runs, event kinds, step range, and the columns found and how they were mapped.

    \b
    Examples:
      ctwm inspect sample_traces/tpl_events.parquet
      ctwm inspect agent_log.jsonl --item-col memory_id --step-col agent_step --json
      cat trace.jsonl | ctwm inspect -
      ctwm inspect 'logs/*.csv' --where "run LIKE 'prod-%' AND step > 1000"
    """
    from ..traces import paths

    read = opts.read_options()
    with progress_bar("reading traces") as progress:
        scans = paths.scan_paths(traces, read, progress=progress, labels=trace_labels(label, traces), table=False)
    rows = [s.to_dict() for s in scans]
    emit("inspect", {"results": rows}, rows, fmt, tables=[_table(s) for s in scans])


def _table(scan) -> Table:
    t = Table(title=Text(scan.source), title_justify="left", show_header=False)
    t.add_column("field", style="bold")
    t.add_column("value")
    t.add_row("format", f"{scan.format}, {scan.kind} table")
    t.add_row("rows", fmt_num(scan.n_rows))
    t.add_row("distinct items", fmt_num(scan.n_items))
    t.add_row("runs", fmt_num(scan.runs) if scan.runs is not None else "– (no run column)")
    t.add_row("events", ", ".join(f"{k}: {v:,}" for k, v in scan.events.items()))
    step = "– (no step column)" if scan.step_min is None else f"{scan.step_min:,} .. {scan.step_max:,}"
    t.add_row("steps", step)
    t.add_row("columns found", ", ".join(scan.columns_found))
    origins = scan.mapping_origins or {}
    t.add_row("mapping", ", ".join(f"{k} <- {v}{_origin(origins.get(k))}" for k, v in scan.mapping.items()))
    for line in scan.readings:
        t.add_row("read", line)
    return t


def _origin(origin: str | None) -> str:
    """`` (--item-col)``, `` (ctwm.toml [columns])``; nothing for a default mapping."""
    if origin in (None, "default"):
        return ""
    flag = "--" + origin.replace("_", "-") if origin == "col" or origin.endswith("_col") else origin
    return f" ({flag})"


def register(app: typer.Typer) -> None:
    app.command("inspect")(inspect)
