"""``ctwm diff BASE HEAD``: how the headline numbers moved against a baseline; exit 1 on a regression."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from ..common.errors import InputError
from ..common.labels import identity
from .aliases import aliased
from .options import Format, JunitOpt, ReadFlags, SeedOpt, column_flags, output_flags
from .output import announce_seed, check_output_path, conclude, emit, fmt_num, progress_bar
from .registry import result


@output_flags
@column_flags
@result("diff", "ctwm_cli.baseline.Diff")
def diff(
    base: Annotated[str, typer.Argument(metavar="BASE", help="The baseline: a saved result (ctwm ... --json > base.json) or a trace.")],  # noqa: E501
    head: Annotated[str, typer.Argument(metavar="HEAD", help="The run to compare: the same command's saved result, or a trace.")],  # noqa: E501
    tol: Annotated[list[str] | None, typer.Option("--tol", metavar="METRIC=VALUE", help="Fail (exit 1) when |HEAD - BASE| of METRIC exceeds VALUE (traces: when a permutation test finds a change at level 1 - --confidence and, for VALUE > 0, the whole bootstrap interval lies beyond ±VALUE). Repeatable.")] = None,  # noqa: E501
    bootstrap: Annotated[int, typer.Option("--bootstrap", "-b", help="Traces: bootstrap replicates of the interval of each change, and as many permutations.")] = 200,  # noqa: E501
    level: Annotated[float, typer.Option("--confidence", help="Traces: confidence level of the intervals.")] = 0.95,
    level_alias: Annotated[float | None, typer.Option("--level", hidden=True, help="Deprecated spelling of --confidence.")] = None,  # noqa: E501
    seed: SeedOpt = None,
    event: Annotated[list[str] | None, typer.Option("--event", "-e", help="Traces: event kind to count (repeatable). Default: retrieve if present, else inject.")] = None,  # noqa: E501
    *,
    opts: ReadFlags,
    junit_xml: JunitOpt = None,
    fmt: Format = Format.table,
) -> None:
    """Compare a run against a baseline: the change of every headline number, and a regression gate.

    Two saved JSON results of the same command (audit, concentration, psd): every headline number of
    every trace or group, matched by label. Two traces: the change in Gini, top-10% share and α, each
    with a permutation p-value of "no change" (pooled items re-split at random) and a percentile
    bootstrap interval (items resampled within each trace; α refitted with x_min re-selected). Only
    metrics given a --tol are gated; same-law traces fail at most at the test's level.

    \b
    Examples:
      ctwm audit main.parquet --seed 1 --json > base.json && ctwm audit pr.parquet --seed 1 --json > head.json
      ctwm diff base.json head.json --tol alpha=0.1 --tol gini=0.02
      ctwm diff main_trace.parquet pr_trace.parquet --tol gini=0.02 --seed 1 --junit-xml diff.xml
    """
    from ..baseline import diff_counts, diff_results, parse_tolerances, saved_result
    from ..tail.audit import new_seed
    from ..traces.paths import read_counts

    tolerances = parse_tolerances(tol)
    junit = check_output_path(junit_xml, "--junit-xml")
    saved = saved_result(base), saved_result(head)
    if all(d is not None for d in saved):
        res = diff_results(saved[0], saved[1], tolerances=tolerances)
    elif any(d is not None for d in saved):
        raise InputError("compare two saved results or two traces, not one of each")
    else:
        cmap = opts.columns()
        with progress_bar("reading traces") as progress:
            counts = [read_counts([p], cmap, events=event, progress=progress) for p in (base, head)]
        if any(len(c) != 1 for c in counts):
            raise InputError("each trace must give one set of counts")
        seed = new_seed() if seed is None else seed
        announce_seed(seed)
        res = diff_counts(counts[0][0].counts, counts[1][0].counts, subject=f"{identity(base)} -> {identity(head)}",
                          tolerances=tolerances, replicates=bootstrap,
                          level=aliased(level, level_alias, "--level", "--confidence"), seed=seed)
    rows = [c.to_dict() for c in res.changes]
    emit("diff", res.to_dict(), rows, fmt, seed=res.seed, tables=[_table(res)], checks=list(res.checks),
         subject_field="subject")
    conclude("diff", list(res.checks), junit)


def _table(res) -> Table:
    traces = res.kind == "traces"
    title = f"ctwm diff ({res.kind}: {res.compared})" + (
        f", {res.level:.0%} bootstrap intervals, B = {res.replicates}, seed {res.seed}" if traces else "")
    t = Table(title=Text(title), title_justify="left")
    names = ("subject", "metric", "base", "head", "change", *(("interval", "p (permutation)") if traces else ()),
             "tolerance", "status")
    for name in names:
        t.add_column(name, justify="left" if name in ("subject", "metric", "status") else "right")
    for c in res.changes:
        ci = c.confidence_interval
        interval = (f"[{fmt_num(ci.low)}, {fmt_num(ci.high)}]" if ci is not None
                    else "not formed: every replicate agrees" if c.pvalue is not None and c.change is not None else "–")
        status = "" if c.tolerance is None else ("fail" if c.regression else "pass")
        t.add_row(Text(c.subject), c.metric, fmt_num(c.base), fmt_num(c.head),
                  "–" if c.change is None else f"{c.change:+.4g}", *((interval, fmt_num(c.pvalue)) if traces else ()),
                  fmt_num(c.tolerance), Text(status, style="bold red" if c.regression else "green"))
    return t


def register(app: typer.Typer) -> None:
    app.command("diff")(diff)
