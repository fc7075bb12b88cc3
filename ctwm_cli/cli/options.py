"""Option aliases shared by every command, so signatures read plainly; and the trace-reading options, declared
once as an option group (:class:`ReadFlags`, :func:`read_flags`, :func:`column_flags`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from enum import Enum
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ..common.errors import UsageError
from ..common.settings import Declared, option
from ..common.vocabulary import ENGINES, MEMORY_LIMIT
from ..traces.formats import traces_help
from .option_groups import at_most, declared_params, opt, option_group  # noqa: F401 - at_most: the commands' import

if TYPE_CHECKING:
    from ..traces.engine import ReadOptions
    from ..traces.schema import ColumnMap


class Format(str, Enum):  # noqa: UP042 - Typer renders str Enums as choices
    table = "table"
    json = "json"
    jsonl = "jsonl"
    csv = "csv"
    csv_raw = "csv-raw"
    github = "github"
    markdown = "markdown"


FORMAT_HELP = ("Output: a Rich table, one JSON document, JSON lines, CSV (text that a spreadsheet would run as a "
               "formula gets a leading '; csv-raw keeps it as is), GitHub workflow annotations of the checks, "
               "or Markdown (for $GITHUB_STEP_SUMMARY).")
FAIL_ON_HELP = ("Exit 1 if the condition holds (<, <=, >, >=, ==, !=), e.g. p_gof<0.1. A metric that is not "
                "available fails too, unless written METRIC? (e.g. context_usage?>0.5). Repeatable.")
FailOnOpt = Annotated[list[str] | None, typer.Option("--fail-on", metavar="METRIC>VALUE", help=FAIL_ON_HELP)]
JUNIT_HELP = "Also write the checks as JUnit XML (a testcase per result x check)."
JunitOpt = Annotated[str | None, typer.Option("--junit-xml", metavar="FILE", help=JUNIT_HELP)]
DetailsOpt = Annotated[
    bool, typer.Option("--details", help="With several traces or groups: print every result's table after the summary.")
]
SeedOpt = Annotated[
    int | None,
    typer.Option(min=0, help="Seed of every random draw; printed on stderr and stored in JSON so a run can be "
                 "repeated. Default: drawn at random."),
]
JobsOpt = Annotated[
    int | None,
    typer.Option("--jobs", "-j", help="Worker processes (default: all cores). Results do not depend on it."),
]
PLOT_HELP = "Also write a figure to this file (.png, .svg or .pdf)."
PlotOpt = Annotated[str | None, typer.Option("--plot", help=PLOT_HELP)]
LabelOpt = Annotated[
    list[str] | None,
    typer.Option("--label", metavar="NAME", help="Name of the trace in the results, once per TRACE in order "
                 "(default: its path relative to the working directory; groups are NAME[group]). ctwm diff pairs "
                 "results by this name."),
]


def trace_labels(labels: list[str] | None, traces: list[str]) -> list[str] | None:
    """The --label values, one per trace, or None when --label was not given."""
    if not labels:
        return None
    if len(labels) != len(traces):
        raise UsageError(f"--label given {len(labels)} time(s) for {len(traces)} trace(s); give one per trace",
                         params=("--label",))
    if any(not name.strip() for name in labels):
        raise UsageError("--label: a name must not be empty", params=("--label",))
    return labels


#: Help text of a TRACE argument, shared by every command that reads traces (from the format registry).
TRACES_HELP = traces_help()


def resolved_format(*, output_format: Format = Format.table, output_json: bool = False, quiet: bool = False) -> Format:
    """The one place --json and --format meet: --json is --format json. Resolved as the command starts, so it
    also starts the command's progress (:func:`.progress_display.begin`: --quiet, and the clock of its lines)."""
    from .progress_display import begin

    begin(quiet=quiet)
    return Format.json if output_json else Format(output_format)


QUIET_HELP = ("No progress on stderr: neither the bars drawn on a terminal nor the lines written to a log (when "
              "stderr is not a terminal, work past 10 s prints a line per stage, then one every 30 s). Results, "
              "the seed, warnings and errors are printed as always.")
#: --format/-f, --json and --quiet/-q, declared once. A command decorated with :data:`output_flags` declares a
#: placeholder ``fmt: Format = Format.table`` where the options go in its help, and receives the resolved Format.
OUTPUT_FLAGS = [
    opt("output_format", Format, ("--format", "-f"), FORMAT_HELP, Format.table),
    opt("output_json", bool, ("--json",), "Shortcut for --format json.", False),
    opt("quiet", bool, ("--quiet", "-q"), QUIET_HELP, False),
]
output_flags = option_group(OUTPUT_FLAGS, resolved_format, name="fmt")


def comma_list(values: str | list[str] | tuple[str, ...] | None) -> list[str]:
    """A list option's values: each given value may itself be a comma list, so ``--family a,b`` and
    ``--family a --family b`` mean the same (empty items dropped, order kept)."""
    if values is None:
        return []
    items = [values] if isinstance(values, str) else list(values)
    return [v.strip() for item in items for v in str(item).split(",") if v.strip()]


def choice_list(values: list[str] | None, choices: tuple[str, ...], flag: str) -> list[str]:
    """A list option of choices, commas and repeats alike (:func:`comma_list`), each checked against
    ``choices``; an empty list when none is given."""
    out = comma_list(values)
    for v in out:
        if v not in choices:
            raise UsageError(f"{flag} must be one of {', '.join(choices)}, got {v!r}")
    return out


TAU_SPEC_HELP = "a number, a comma list (0.5,1,2) or a sweep START:STOP:N, N evenly spaced inclusive (0.25:2:7)"


def tau_values(specs: str | list[str] | None, flag: str = "--tau") -> list[float]:
    """τ values of ``--tau`` as every command reads it: each value a number, a comma list or START:STOP:N;
    repeats add up, in the order given (an empty list when none is given)."""
    from ..allocation import parse_sweep  # the library (numpy) loads when the command runs, not for --help

    out: list[float] = []
    for spec in [specs] if isinstance(specs, str) else list(specs or []):
        if ":" in spec:
            out.extend(parse_sweep(spec.strip(), flag))
            continue
        for item in comma_list(spec):
            try:
                out.append(float(item))
            except ValueError:
                raise UsageError(f"{flag} expects a number, a comma list or START:STOP:N, got {spec!r}") from None
    return out



COL_HELP = ("Remap any schema column, as FIELD=SOURCE (e.g. --col rank=position); the column must exist. Repeatable. "
            "Every remapping may also be set once per project: [columns] in ctwm.toml ([tool.ctwm.columns] in "
            "pyproject.toml); a flag overrides it.")


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ReadFlags(Declared):
    """The trace-reading options as parsed: the column remapping, --where, --memory-limit and the engine, each
    declared once (:func:`ctwm_cli.common.settings.option`); :data:`READ_FLAGS` and the config keys come from them."""

    WHAT = "reading option"

    item_col: str | None = option(None, flags=("--item-col",), help="Source column holding the item id [default: "
                                  "item]. A list column is one event per element, its 1-based position the rank; a "
                                  "dotted path (memory.id) reads a nested field. A named column must exist (exit 3).")
    step_col: str | None = option(None, flags=("--step-col",),
                                  help="Source column holding the agent step [default: step]; must exist.")
    run_col: str | None = option(None, flags=("--run-col",),
                                 help="Source column holding the run id [default: run]; must exist.")
    event_col: str | None = option(None, flags=("--event-col",),
                                   help="Source column holding the event kind [default: event]; must exist.")
    count_col: str | None = option(None, flags=("--count-col",), help="Source column holding per-item counts "
                                   "(counts tables) [default: count]; must exist.")
    col: list[str] | None = option(None, flags=("--col",), help=COL_HELP)  # noqa: RUF009
    where: str | None = option(None, flags=("--where",), metavar="SQL", help="Count only rows matching this SQL "
                               "predicate over the trace's columns, e.g. \"run LIKE 'prod-%' AND step > 1000\".")
    memory_limit: str = option(MEMORY_LIMIT, flags=("--memory-limit",), help="Memory DuckDB may use while reading "
                               "and counting (e.g. 1GB, 512MiB, 50%); beyond it, it spills to a temporary directory.")
    engine: str = option("duckdb", flags=("--engine",), choices=ENGINES, config=False,  # a str Enum once parsed
                         reason="--engine dask starts or contacts a Dask cluster",
                         help="Counting engine: duckdb (embedded) or dask (dask.dataframe on --scheduler; needs the "
                         "dask extra).")
    scheduler: str | None = option(None, flags=("--scheduler",), envvar="CTWM_SCHEDULER", config=False,
                                   reason="it contacts another machine, a Dask scheduler",
                                   help="Dask scheduler: tcp://HOST:PORT of a running cluster, or local (a "
                                   "LocalCluster on this machine). Needs the dask extra.")

    def columns(self) -> ColumnMap:
        """The :class:`ColumnMap` of the project's column map (``[columns]``) overridden by the remapping options
        (--item-col ... --count-col, --col FIELD=SOURCE)."""
        from ..traces.column_config import project_columns  # the trace layer loads when a command runs

        project, where = project_columns()
        flags: dict[str, str | None] = {"item": self.item_col, "step": self.step_col, "run": self.run_col,
                                        "event": self.event_col, "count": self.count_col}
        overrides: dict[str, str | None] = {k: v for k, v in flags.items() if v}
        origins = {k: where for k in project if k not in overrides and where}
        overrides = {**project, **overrides}
        for spec in self.col or []:
            field, sep, source = spec.partition("=")
            if not sep or not field or not source:
                raise UsageError(f"--col expects FIELD=SOURCE, got {spec!r}")
            field = field.strip()
            if flags.get(field):
                raise UsageError(f"--col {field}= and --{field}-col both name the {field} column; give one")
            overrides[field], origins[field] = source.strip(), "col"
        from ..traces.schema import ColumnMap  # the trace layer (pyarrow) loads when a command runs, not for --help

        return ColumnMap.from_overrides(overrides, origins=origins)

    def read_options(self) -> ReadOptions:
        """The library's :class:`ReadOptions`: column map, --where and the engine settings."""
        from ..traces.engine import EngineOptions, ReadOptions

        engine = EngineOptions(engine=getattr(self.engine, "value", self.engine), memory_limit=self.memory_limit,
                               scheduler=self.scheduler)
        return ReadOptions(columns=self.columns(), where=self.where, engine=engine)


_READ_PARAMS = {p.name: p for p in declared_params(ReadFlags.declarations())}
COLUMN_FLAGS = [_READ_PARAMS[n] for n in ("item_col", "step_col", "run_col", "event_col", "count_col", "col")]
READ_FLAGS = [*COLUMN_FLAGS, _READ_PARAMS["where"], _READ_PARAMS["memory_limit"]]
ENGINE_FLAG = _READ_PARAMS["engine"]
SCHEDULER_FLAG = _READ_PARAMS["scheduler"]

#: adds the column remapping options to a command, which receives them as ``opts: ReadFlags`` (``opts.columns()``)
column_flags = option_group(COLUMN_FLAGS, ReadFlags)


def read_flags(*, engine: bool = False, scheduler: bool = False) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The decorator that adds the reading options (:data:`READ_FLAGS`, and --engine, --scheduler when asked) to a
    command, in place of its keyword-only ``opts: ReadFlags``; the body calls ``opts.read_options()``."""
    extra = ([ENGINE_FLAG] if engine else []) + ([SCHEDULER_FLAG] if scheduler else [])
    return option_group([*READ_FLAGS, *extra], ReadFlags)
