"""``ctwm report``: one self-contained HTML page for traces, ``world grid`` directories and replay results."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from ..common.errors import CheckFailed, UsageError
from .options import Format, JobsOpt, ReadFlags, SeedOpt, at_most, output_flags, read_flags
from .output import check_output_path, check_outputs, emit, message, write_atomic
from .progress_display import note
from .registry import result


@result("report", "ctwm_cli.reporting.Report")
@output_flags
@read_flags(engine=True)
def report(
    sources: Annotated[list[str], typer.Argument(
        metavar="SOURCE...", help="Traces (any format ctwm audit reads), ctwm world grid directories, replay run "
        "directories holding the command's saved --json output, or such a saved replay JSON file.")],
    output: Annotated[str, typer.Option(
        "--out", "--output", "-o", metavar="FILE.html", help="The page to write (one self-contained HTML file).")],
    group_by: Annotated[str | None, typer.Option(
        "--group-by", help="Traces: one audit per value of this column (as ctwm audit --group-by).")] = None,
    event: Annotated[list[str] | None, typer.Option(
        "--event", "-e", help="Event kind to count (repeatable). Default: retrieve if present, else inject.")] = None,
    objects: Annotated[str | None, typer.Option(
        "--objects", help="Memory-object table for the memory-health view (as ctwm health --objects).")] = None,
    budget: Annotated[int | None, typer.Option(
        "--budget", help="Prompt budget in tokens for context usage (as ctwm health --budget).")] = None,
    bootstrap: Annotated[int, typer.Option(
        "--bootstrap", "-b", callback=at_most("bootstrap"), help="Bootstrap replicates of the audit's p_gof.")] = 1000,
    sweep: Annotated[str, typer.Option(
        "--sweep", metavar="START:STOP:N", help="τ values of the allocation view (as ctwm simulate --trace --sweep; "
        "'none' leaves the view out).")] = "0.25:2:7",
    core: Annotated[int, typer.Option("--core", "-K", help="Core size K of the allocation view.")] = 10,
    slots: Annotated[int, typer.Option(
        "--slots", help="Prompt budget B in slots of the allocation view (ctwm simulate --budget).")] = 512,
    psd_run: Annotated[str | None, typer.Option(
        "--psd-run", help="Run whose PSD is shown when a trace holds several [default: the one with most accesses].")
    ] = None,
    title: Annotated[str | None, typer.Option("--title", help="Title of the page.")] = None,
    diff: Annotated[bool, typer.Option(
        "--diff", help="The pull-request page of SOURCE... = BASE HEAD (two saved results or two traces): verdict, "
        "headline numbers with intervals and gates, list changes; gated as ctwm diff gates them.")] = False,
    tol: Annotated[list[str] | None, typer.Option(
        "--tol", metavar="METRIC=VALUE", help="With --diff: a gate, as ctwm diff --tol (repeatable).")] = None,
    diff_bootstrap: Annotated[int, typer.Option(
        "--diff-bootstrap", callback=at_most("bootstrap"), help="With --diff of two traces: bootstrap "
        "replicates and permutations of each change (ctwm diff --bootstrap).")] = 200,
    level: Annotated[float, typer.Option(
        "--confidence", help="With --diff of two traces: confidence level of the intervals.")] = 0.95,
    seed: SeedOpt = None,
    jobs: JobsOpt = None,
    *,
    opts: ReadFlags,
    fmt: Format = Format.table,
) -> None:
    """One HTML page for a trace, a grid or a replay: verdict, figures and the numbers behind them.

    A trace gets the audit's verdict card, the CCDF with the fitted tails, rank-frequency and Lorenz curves,
    the PSD with its band, memory health when the trace has its events, and what a CTWM allocation would do
    over a τ sweep; a world grid the finite-size table and the audit of every run side by side; a replay the
    arms, the reference rows and every paired delta with its interval. Every number is one the matching
    command prints. Inline SVG and CSS, no script, nothing fetched, trace contents escaped: safe to open from
    an untrusted trace. Same inputs and seed, same bytes. Progress on stderr; --format json prints what the
    page shows.

    \b
    Examples:
      ctwm report sample_traces/tpl_events.parquet -o report.html --seed 1
      ctwm report grid_out/ -o grid.html --bootstrap 200 --seed 1
      ctwm report run_dir/ -o replay.html    # holding result.json: ctwm replay compare -o run_dir/ --json
      ctwm report trace.parquet --group-by run --budget 8000 -o report.html --json > report.json
      ctwm report --diff base.json head.json --tol gini=0.02 -o pr.html   # exit 1 when a gate fails
    """
    from ..reporting import report as build

    out = check_output_path(output, "--out")
    if out is not None and not out.name.lower().endswith((".html", ".htm")):
        raise UsageError(f"--out {output!r}: the page must end in .html")
    check_outputs(sources, out=out)
    res = build(sources, read=opts.read_options(), group_by=group_by, events=event, objects=objects, budget=budget,
                bootstrap=bootstrap, seed=seed, jobs=jobs, sweep=None if sweep.strip().lower() == "none" else sweep,
                core=core, slots=slots, psd_run=psd_run, title=title, stage=_stage, diff=diff, tol=tol,
                diff_bootstrap=diff_bootstrap, level=level)
    write_atomic(out, res.html)
    message(f"wrote {out} ({len(res.html.encode('utf-8')):,} bytes, {len(res.figures())} figures)")
    t = Table(title=Text(f"Report {out}"), title_justify="left")
    for col in ("section", "kind", "headline", "figures"):
        t.add_column(col)
    for s in res.sections:
        t.add_row(Text(s.title), s.kind, Text(s.card.headline if s.card else ""),
                  str(sum(len(b.figures) for b in s.blocks)))
    rows = [{"section": s.title, "kind": s.kind, "headline": s.card.headline if s.card else None}
            for s in res.sections]
    emit("report", {**res.to_dict(), "output": str(out)}, rows, fmt, seed=res.seed, tables=[t])
    if diff and res.sections and res.sections[0].card and res.sections[0].card.headline.startswith("regression"):
        raise CheckFailed("report --diff: a gate failed (the page says which); ctwm diff exits 1 on the same inputs")


def _stage(text: str) -> None:
    """The report's stages are progress (--quiet drops them); its seed is printed always."""
    (message if text.startswith("seed: ") else note)(text)


def register(app: typer.Typer) -> None:
    app.command("report")(report)
