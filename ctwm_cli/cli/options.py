"""Option aliases shared by every command, so signatures read plainly."""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING, Annotated

import typer

from ..errors import UsageError
from ..limits import check_limit
from .choices import ENGINES, MEMORY_LIMIT, choice

if TYPE_CHECKING:
    from ..traces.schema import ColumnMap


class Format(str, Enum):  # noqa: UP042 - Typer renders str Enums as choices
    table = "table"
    json = "json"
    jsonl = "jsonl"
    csv = "csv"
    github = "github"
    markdown = "markdown"


FormatOpt = Annotated[
    Format,
    typer.Option(
        "--format", "-f",
        help="Output: a Rich table, one JSON document, JSON lines, CSV, GitHub workflow annotations of the checks, "
        "or Markdown (for $GITHUB_STEP_SUMMARY).",
    ),
]
FailOnOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--fail-on", metavar="METRIC>VALUE",
        help="Exit 1 if the condition holds (<, <=, >, >=, ==, !=), e.g. p_gof<0.1. A metric that is not available "
        "fails too, unless written METRIC? (e.g. context_usage?>0.5). Repeatable.",
    ),
]
JunitOpt = Annotated[
    str | None,
    typer.Option(
        "--junit-xml", metavar="FILE", help="Also write the checks as JUnit XML (a testcase per result x check)."
    ),
]
DetailsOpt = Annotated[
    bool, typer.Option("--details", help="With several traces or groups: print every result's table after the summary.")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Shortcut for --format json.")]
SeedOpt = Annotated[
    int | None,
    typer.Option(min=0, help="Seed of every random draw; printed on stderr and stored in JSON so a run can be "
                 "repeated. Default: drawn at random."),
]
JobsOpt = Annotated[
    int | None,
    typer.Option("--jobs", "-j", help="Worker processes (default: all cores). Results do not depend on it."),
]
PlotOpt = Annotated[
    str | None,
    typer.Option("--plot", help="Also write a figure to this file (.png, .svg or .pdf)."),
]
ItemColOpt = Annotated[
    str | None, typer.Option("--item-col", help="Source column holding the item id [default: item].")
]
StepColOpt = Annotated[
    str | None, typer.Option("--step-col", help="Source column holding the agent step [default: step].")
]
RunColOpt = Annotated[str | None, typer.Option("--run-col", help="Source column holding the run id [default: run].")]
EventColOpt = Annotated[
    str | None, typer.Option("--event-col", help="Source column holding the event kind [default: event].")
]
CountColOpt = Annotated[
    str | None,
    typer.Option("--count-col", help="Source column holding per-item counts (counts tables) [default: count]."),
]
ColOpt = Annotated[
    list[str] | None,
    typer.Option("--col", help="Remap any schema column, as FIELD=SOURCE (e.g. --col rank=position). Repeatable."),
]
#: Help text of a TRACE argument, shared by every command that reads traces.
TRACES_HELP = (
    "Traces: .jsonl, .jsonl.gz, .ndjson, .csv, .parquet, .arrow/.feather, a directory (hive partitions become "
    "columns), a quoted glob ('logs/*.parquet'), an s3:// URL (s3 extra), or - for JSONL on stdin."
)
WhereOpt = Annotated[
    str | None,
    typer.Option("--where", metavar="SQL", help="Count only rows matching this SQL predicate over the trace's columns, "
                 "e.g. \"run LIKE 'prod-%' AND step > 1000\"."),
]
MemoryLimitOpt = Annotated[
    str, typer.Option("--memory-limit", help="Memory DuckDB may use while reading and counting (e.g. 1GB, 512MiB, "
                      "50%); beyond it, it spills to a temporary directory."),
]
EngineChoice = choice("EngineChoice", ENGINES)
EngineOpt = Annotated[
    EngineChoice,  # type: ignore[valid-type]
    typer.Option("--engine", help="Counting engine: duckdb (embedded) or dask (dask.dataframe on --scheduler; "
                      "needs the dask extra)."),
]
SchedulerOpt = Annotated[
    str | None,
    typer.Option("--scheduler", envvar="CTWM_SCHEDULER", help="Dask scheduler: tcp://HOST:PORT of a running cluster, "
                 "or local (a LocalCluster on this machine). Needs the dask extra."),
]


def at_most(name: str):
    """Typer callback for a size option: its value, or exit 2 with the limit and why (``ctwm_cli.limits``)."""

    def check(value: int | None) -> int | None:
        if value is not None:
            try:
                check_limit(name, value)
            except UsageError as exc:
                raise typer.BadParameter(str(exc)) from None
        return value

    return check


def resolve_format(fmt: Format, as_json: bool) -> Format:
    return Format.json if as_json else fmt


def column_map(
    item_col: str | None = None,
    step_col: str | None = None,
    run_col: str | None = None,
    event_col: str | None = None,
    count_col: str | None = None,
    col: list[str] | None = None,
) -> ColumnMap:
    """Build the :class:`ColumnMap` from the remapping options."""
    overrides: dict[str, str | None] = {
        "item": item_col,
        "step": step_col,
        "run": run_col,
        "event": event_col,
        "count": count_col,
    }
    for spec in col or []:
        field, sep, source = spec.partition("=")
        if not sep or not field or not source:
            raise UsageError(f"--col expects FIELD=SOURCE, got {spec!r}")
        overrides[field.strip()] = source.strip()
    from ..traces.schema import ColumnMap  # the trace layer (pyarrow) loads when a command runs, not for --help

    return ColumnMap.from_overrides(overrides)


def read_options(
    item_col: str | None = None,
    step_col: str | None = None,
    run_col: str | None = None,
    event_col: str | None = None,
    count_col: str | None = None,
    col: list[str] | None = None,
    *,
    where: str | None = None,
    memory_limit: str = MEMORY_LIMIT,
    engine: str = "duckdb",
    scheduler: str | None = None,
    input_format: str = "auto",
):
    """The library's ReadOptions from the shared reading options (column map, --where, engine)."""
    from ..traces.engine import EngineOptions
    from ..traces.paths import ReadOptions

    cmap = column_map(item_col, step_col, run_col, event_col, count_col, col)
    engine = getattr(engine, "value", engine)  # the --engine choice
    return ReadOptions(columns=cmap, where=where, input_format=input_format,
                       engine=EngineOptions(engine=engine, memory_limit=memory_limit, scheduler=scheduler))
