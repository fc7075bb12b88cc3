"""Option aliases shared by every command, so signatures read plainly."""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING, Annotated

import typer

from ..errors import UsageError

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
    typer.Option(min=0, help="Seed of every random draw; printed on stderr and stored in JSON so a run can be repeated. Default: drawn at random."),
]
JobsOpt = Annotated[
    int | None,
    typer.Option("--jobs", "-j", help="Worker processes (default: all cores). Results do not depend on it."),
]
PlotOpt = Annotated[
    str | None,
    typer.Option("--plot", help="Also write a figure to this file (.png, .svg or .pdf)."),
]
ItemColOpt = Annotated[str | None, typer.Option("--item-col", help="Source column holding the item id [default: item].")]
StepColOpt = Annotated[str | None, typer.Option("--step-col", help="Source column holding the agent step [default: step].")]
RunColOpt = Annotated[str | None, typer.Option("--run-col", help="Source column holding the run id [default: run].")]
EventColOpt = Annotated[str | None, typer.Option("--event-col", help="Source column holding the event kind [default: event].")]
CountColOpt = Annotated[
    str | None, typer.Option("--count-col", help="Source column holding per-item counts (counts tables) [default: count].")
]
ColOpt = Annotated[
    list[str] | None,
    typer.Option("--col", help="Remap any schema column, as FIELD=SOURCE (e.g. --col rank=position). Repeatable."),
]


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

