"""``ctwm concentration``, ``ctwm psd`` and ``ctwm finite-size``: diagnostics beside the tail audit."""

from __future__ import annotations

import dataclasses
import math
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from ..common.labels import subject_label
from ..common.vocabulary import BETA_BAND, DETRENDS, LOG_BASES, SIGMA_VARIANTS
from ..plots import check_plot_path
from .option_groups import choice
from .options import (
    DetailsOpt,
    FailOnOpt,
    Format,
    JunitOpt,
    LabelOpt,
    PlotOpt,
    ReadFlags,
    SeedOpt,
    at_most,
    output_flags,
    read_flags,
    trace_labels,
)
from .output import check_output_path, check_outputs, conclude, emit, fmt_num, message, progress_bar
from .registry import result
from .seeding import resolve_seed

Detrend = choice("Detrend", DETRENDS)
LogBase = choice("LogBase", LOG_BASES)
SigmaVariant = choice("SigmaVariant", SIGMA_VARIANTS)
SIGMA_HELP = ("Reading of σ_top10. The paper's Table 1: 'the standard deviation of the top 10% access counts', read "
              "in Section 5.1 as 'top-tail log-normal concentration'. log [default]: sd of ln(count) over the top "
              "decile, the log-normal reading, scale-free so traces of any length compare; raw: sd of the counts as "
              "worded (grows with trace length); cv: sd / mean of the counts (scale-free; the closest candidate "
              "for the paper's numbers, exploratory).")
SigmaOpt = Annotated[SigmaVariant, typer.Option("--sigma", help=SIGMA_HELP)]  # type: ignore[valid-type]

#: the names --fail-on accepts
CONCENTRATION_METRICS = ("n_items", "n_events", "gini", "skewness", "max_over_median", "top10_share", "sigma_top10",
                         "sigma_top10_raw", "singleton_fraction", "sigma_top10_cv")
PSD_METRICS = ("beta", "beta_se", "r2", "n_steps", "series_total", "n_fit_bins")

TRACE_HELP = "Trace files: .jsonl, .jsonl.gz, .ndjson, .parquet, a Parquet directory, or - for JSONL on stdin."
EventOpt = Annotated[
    list[str] | None,
    typer.Option("--event", "-e", help="Event kind to count (repeatable). Default: retrieve if present, else inject."),
]


@result("concentration", "ctwm_cli.diagnostics.measures.ConcentrationReport")
@output_flags
@read_flags(engine=True)
def concentration(
    traces: Annotated[list[str], typer.Argument(metavar="TRACE...", help=TRACE_HELP)],
    event: EventOpt = None,
    group_by: Annotated[str | None, typer.Option(
        "--group-by", help="Measure each value of this column separately (e.g. run).")] = None,
    plot: PlotOpt = None,
    sigma: SigmaOpt = "log",
    label: LabelOpt = None,
    *,
    opts: ReadFlags,
    fail_on: FailOnOpt = None,
    junit_xml: JunitOpt = None,
    details: DetailsOpt = False,
    fmt: Format = Format.table,
) -> None:
    """Concentration of per-item access counts: Gini, skewness, max/median, top-10% share, σ_top10, singletons.

    skew is the bias-corrected sample skewness G1 (scipy.stats.skew(bias=False), pandas .skew()).
    σ_top10 is the standard deviation (ddof=1) of ln(count) over the top decile, the ceil(0.1·n)
    most-accessed items: scale-free, so traces of different lengths compare. The plot shows the
    rank-frequency curve (log-log) and the Lorenz curve with the Gini.

    \b
    Examples:
      ctwm concentration sample_traces/tpl_events.parquet
      ctwm concentration grid_out/ --group-by run --fail-on 'gini>0.9' --junit-xml conc.xml
      ctwm concentration a.jsonl b.parquet --format csv
    """
    from ..common.gates import evaluate_checks, parse_checks
    from ..diagnostics import concentration_of_traces

    cmap = opts.read_options()
    gates = parse_checks(fail_on, CONCENTRATION_METRICS, parameter="--fail-on")
    junit = check_output_path(junit_xml, "--junit-xml")
    check_plot_path(plot)
    check_outputs(traces, junit_xml=junit_xml, plot=plot)
    with progress_bar("reading traces") as progress:
        report = concentration_of_traces(traces, cmap, events=event, group_by=group_by, progress=progress,
                                         labels=trace_labels(label, traces))
    if plot:
        from ..plots import save_figure
        from ..plots.rank_frequency import plot_concentration

        message(f"figure: {save_figure(plot_concentration(report), plot)}")
    rows = [r.to_dict() for r in report.rows]  # the JSON's rows, field for field
    labels = [subject_label(r.source, r.group) for r in report.rows]
    checks = [c for row, label in zip(rows, labels, strict=True) for c in evaluate_checks(gates, row, subject=label)]
    variant = SigmaVariant(sigma).value
    emit("concentration", report.to_dict(), rows, fmt, tables=[_concentration_table(report, variant)], checks=checks,
         subjects=labels, summary_fields=("source", "group", *CONCENTRATION_METRICS[:6]), details=True,
         headline=_spread(report) if len(rows) > 1 else None)
    conclude("concentration", checks, junit)


def _spread(report) -> str:
    """``"54 groups: Gini 0.41 to 0.83 (median 0.62)"``, before the rows."""
    ginis = sorted(r.gini for r in report.rows if r.gini is not None and math.isfinite(r.gini))
    noun = "groups" if report.group_by else "traces"
    if not ginis:
        return f"{len(report.rows):,} {noun}: no Gini defined"
    return (f"{len(report.rows):,} {noun}: Gini {fmt_num(ginis[0])} to {fmt_num(ginis[-1])} "
            f"(median {fmt_num(ginis[len(ginis) // 2])})")


def _concentration_table(report, sigma: str = "log") -> Table:
    caption = ("skew: bias-corrected sample skewness G1. σ_top10: sd of ln(count) over the ceil(0.1·n) most-accessed "
               "items (ours, scale-free). σ raw (paper): sd of the raw top-decile counts (the paper's Table 1; grows "
               "with trace length).")
    if sigma == "cv":
        caption += " σ cv: sd / mean of the top-decile counts (scale-free; closest to the paper's numbers)."
    t = Table(
        title=f"Concentration of per-item counts ({', '.join(report.events)} events)",
        title_justify="left",
        caption=caption,
        caption_justify="left",
    )
    # log (default) and raw show the log and raw columns; cv shows the cv column in place of the log one
    first = ("σ cv", "sigma_top10_cv") if sigma == "cv" else ("σ_top10", "sigma_top10")
    for name in ("trace", "items", "events", "Gini", "skew", "max/median", "top-10% share", first[0],
                 "σ raw (paper)", "singletons"):
        t.add_column(name, justify="left" if name == "trace" else "right")
    for r in report.rows:
        t.add_row(
            Text(subject_label(r.source, r.group)), fmt_num(r.n_items), fmt_num(r.n_events), fmt_num(r.gini),
            fmt_num(r.skewness), fmt_num(r.max_over_median), fmt_num(r.top10_share), fmt_num(getattr(r, first[1])),
            fmt_num(r.sigma_top10_raw), fmt_num(r.singleton_fraction),
        )
    return t


@result("psd", "ctwm_cli.diagnostics.spectrum.PsdResult")
@output_flags
@read_flags()
def psd(
    trace: Annotated[str, typer.Argument(metavar="TRACE", help=TRACE_HELP + " Needs a step column.")],
    series: Annotated[
        str,
        typer.Option(
            "--series",
            help="Per-step series: core = accesses to the top-decile items (ceil(0.1·n) most accessed); "
            "total = all counted events; item:ID = one item.",
        ),
    ] = "core",
    band: Annotated[
        str | None,
        typer.Option(
            "--band", metavar="LO:HI",
            help="Frequency band of the fit, cycles/step (Nyquist 0.5). Default: 3/nperseg : 0.125."),
    ] = None,
    beta_band: Annotated[
        str, typer.Option("--beta-band", metavar="LO:HI", help="β range reported as 1/f-like.")
    ] = f"{BETA_BAND[0]}:{BETA_BAND[1]}",
    nperseg: Annotated[
        int | None, typer.Option(
            "--nperseg", help="Welch segment length. Default: largest power of two <= steps/8, at least 64.")
    ] = None,
    detrend: Annotated[Detrend, typer.Option(  # type: ignore[valid-type]
        "--detrend", help="Per-segment detrending: constant (mean removed) or linear.")] = "constant",
    run: Annotated[str | None, typer.Option(
        "--run", help="Use only this run (required when the trace holds several).")] = None,
    event: EventOpt = None,
    plot: PlotOpt = None,
    label: Annotated[str | None, typer.Option(
        "--label", metavar="NAME", help="Name of the trace in the result (default: its path relative to the working "
        "directory). ctwm diff pairs results by this name.")] = None,
    *,
    opts: ReadFlags,
    fail_on: FailOnOpt = None,
    junit_xml: JunitOpt = None,
    fmt: Format = Format.table,
) -> None:
    """PSD exponent β of a per-step access series: Welch PSD, OLS of log P on log f over a band, β = -slope.

    White noise gives β ≈ 0, 1/f noise β ≈ 1, a random walk β ≈ 2. The result says whether β falls in
    the 1/f band (--beta-band); nothing forces it there.

    \b
    Examples:
      ctwm psd sample_traces/world_semantic/trace.parquet
      ctwm psd trace.parquet --series total --run r1 --fail-on 'beta>1.5' --json
      ctwm psd trace.parquet --series item:m42 --band 0.01:0.1 --plot psd.png
    """
    from ..common.gates import evaluate_checks, parse_checks
    from ..diagnostics import psd_of_trace
    from ..diagnostics.spectrum import parse_band

    cmap = opts.read_options()
    gates = parse_checks(fail_on, PSD_METRICS, parameter="--fail-on")
    junit = check_output_path(junit_xml, "--junit-xml")
    band_v = parse_band(band, "--band") if band is not None else None
    beta_v = parse_band(beta_band, "--beta-band")
    check_plot_path(plot)
    check_outputs([trace], junit_xml=junit_xml, plot=plot)
    with progress_bar(f"reading {trace}") as progress:
        res = psd_of_trace(
            trace, cmap, series=series, events=event, run=run, nperseg=nperseg, detrend=Detrend(detrend).value,
            band=band_v, beta_band=beta_v, progress=progress,
        )
    if label is not None:
        res = dataclasses.replace(res, source=trace_labels([label], [trace])[0])
    if plot:
        from ..plots import save_figure
        from ..plots.psd import plot_psd

        message(f"figure: {save_figure(plot_psd(res), plot)}")
    d = res.to_dict()
    label = subject_label(res.source, res.run)
    checks = list(evaluate_checks(gates, d, subject=label))
    emit("psd", d, [d], fmt, tables=[_psd_table(res)], checks=checks, subjects=[label])
    conclude("psd", checks, junit)


def _psd_table(res) -> Table:
    t = Table(
        title=Text(f"PSD exponent of the '{res.series}' series of {subject_label(res.source, res.run)}"),
        title_justify="left",
        show_header=False,
    )
    t.add_column("field", style="bold")
    t.add_column("value")
    verdict = "yes" if res.in_beta_band else "no"
    t.add_row("β", f"{fmt_num(res.beta)} ± {fmt_num(res.beta_se)} (OLS standard error)")
    t.add_row("R²", fmt_num(res.r2))
    t.add_row(f"in 1/f band [{res.beta_band[0]:g}, {res.beta_band[1]:g}]", verdict)
    t.add_row("fit band", f"{res.band[0]:.4g} .. {res.band[1]:.4g} cycles/step ({res.n_fit_bins} Welch bins)")
    t.add_row("Welch", f"nperseg {res.nperseg}, Hann window, 50% overlap, detrend {res.detrend}")
    t.add_row("steps", f"{fmt_num(res.n_steps)} ({fmt_num(res.step_min)} .. {fmt_num(res.step_max)})")
    t.add_row("accesses in series", fmt_num(res.series_total))
    if res.core_items is not None:
        t.add_row("core items", fmt_num(res.core_items))
    t.add_row("events", ", ".join(res.events))
    return t


@result("finite-size", "ctwm_cli.diagnostics.FiniteSizeReport")
@output_flags
@read_flags()
def finite_size(
    traces: Annotated[
        list[str],
        typer.Argument(
            metavar="TRACE[:SIZE]...", help="Traces labelled with their system size (A.parquet:100), or one dataset "
            "with --size-col."),
    ],
    size_col: Annotated[str | None, typer.Option(
        "--size-col", help="Column holding the system size (e.g. size of a hive-partitioned grid).")] = None,
    group_by: Annotated[str | None, typer.Option(
        "--group-by", help="Column holding the family; one row per family.")] = None,
    family: Annotated[str | None, typer.Option(
        "--family", help="Family name of the labelled traces [default: all].")] = None,
    log_base: Annotated[LogBase, typer.Option(  # type: ignore[valid-type]
        "--log-base", help="Base of log(size) in the slope: e (as the paper's Table 1), 10 or 2.")] = "e",
    null_draws: Annotated[
        int,
        typer.Option(
            "--null-draws",
            callback=at_most("null_draws"),
            help="Also simulate each run under uniform access (multinomial, same items and events) this many times "
            "and report the slope that sampling noise alone gives (null slope). 0 = off.",
        ),
    ] = 0,
    seed: SeedOpt = None,
    capacity: Annotated[
        int | None,
        typer.Option("--capacity", help="Store capacity the runs used, when no world manifest records it "
                     "(the trend depends on it)."),
    ] = None,
    event: EventOpt = None,
    plot: PlotOpt = None,
    sigma: SigmaOpt = "log",
    *,
    opts: ReadFlags,
    fmt: Format = Format.table,
) -> None:
    """Finite-size trend (paper Table 1): σ_top10 per system size and its OLS slope against log(size), per family.

    σ_top10 is computed per run (a trace without a run column is one run) and averaged over the runs
    of each (family, size); the table shows mean ± sd over runs.

    \b
    Examples:
      ctwm finite-size a100.parquet:100 a500.parquet:500 a1000.parquet:1000
      ctwm finite-size grid_out/ --size-col size --group-by family --null-draws 200 --seed 1
      ctwm finite-size grid_out/ --size-col size --group-by family --sigma cv
    """
    from ..diagnostics import finite_size_of_traces
    cmap = opts.read_options()
    check_plot_path(plot)
    if null_draws:
        seed = resolve_seed(seed)
    with progress_bar("reading traces") as progress:
        report = finite_size_of_traces(
            traces, cmap, family=family, size_col=size_col, group_by=group_by, events=event,
            log_base=LogBase(log_base).value, null_draws=null_draws, seed=seed, capacity=capacity,
            sigma=SigmaVariant(sigma).value, progress=progress,
        )
    if plot:
        from ..plots import save_figure
        from ..plots.finite_size import plot_finite_size

        message(f"figure: {save_figure(plot_finite_size(report), plot)}")
    emit("finite-size", report.to_dict(), _finite_rows(report), fmt, tables=[_finite_table(report)], seed=report.seed)


def _size_name(size: float) -> str:
    return str(int(size)) if float(size).is_integer() else f"{size:g}"


def _finite_rows(report) -> list[dict]:
    rows = []
    for fam in report.families:
        row: dict = {"family": fam.family}
        for s, m, sd, n in zip(fam.sizes, fam.sigma, fam.sigma_sd, fam.n_runs, strict=True):
            k = _size_name(s)
            row[f"sigma_{k}"] = m
            row[f"sigma_sd_{k}"] = sd
            row[f"runs_{k}"] = n
        row.update(slope=fam.slope, slope_se=fam.slope_se, r2=fam.r2, log_base=fam.log_base,
                   slope_raw=fam.slope_raw, store_capacity=",".join(map(str, report.store_capacity)) or None)
        if report.null_draws:
            row["slope_null"] = fam.slope_null
        rows.append(row)
    return rows


def _finite_table(report) -> Table:
    logname = {"e": "ln", "10": "log10", "2": "log2"}[report.log_base]
    sizes = sorted({s for fam in report.families for s in fam.sizes})
    what = {"log": "sd of ln(count)", "raw": "sd of the counts", "cv": "sd / mean of the counts"}[report.sigma_variant]
    t = Table(
        title="Finite-size trend of σ_top10 (mean ± sd over runs)"
        + ("" if report.sigma_variant == "log" else f", --sigma {report.sigma_variant}"),
        title_justify="left",
        caption=f"σ_top10: {what} over the top-decile items of a run. Slope: OLS of σ on {logname}(size). "
        f"Raw slope: the same for the paper's raw-count σ. Store capacity: {_capacity_text(report)}."
        + (
            f" Null slope: the same under uniform access, same items and events per run ({report.null_draws} draws)."
            if report.null_draws else ""
        ),
        caption_justify="left",
    )
    t.add_column("family", no_wrap=True, min_width=max([6, *(len(f.family) for f in report.families)]))
    for s in sizes:
        t.add_column(f"σ_{_size_name(s)}", justify="right")
    t.add_column(f"slope per {logname}(size)", justify="right")
    t.add_column("R²", justify="right")
    t.add_column("raw slope (paper σ)", justify="right")
    if report.null_draws:
        t.add_column("null slope", justify="right")
    for fam in report.families:
        cells = {s: (m, sd, n) for s, m, sd, n in zip(fam.sizes, fam.sigma, fam.sigma_sd, fam.n_runs, strict=True)}
        out = []
        for s in sizes:
            if s not in cells:
                out.append("–")
                continue
            m, sd, n = cells[s]
            out.append(fmt_num(m, 3) + (f" ± {fmt_num(sd, 2)}" if n > 1 and math.isfinite(sd) else ""))
        slope = fmt_num(fam.slope, 3) + (f" ± {fmt_num(fam.slope_se, 2)}" if math.isfinite(fam.slope_se) else "")
        extra = [fmt_num(fam.slope_null, 3)] if report.null_draws else []
        t.add_row(fam.family, *out, slope, fmt_num(fam.r2, 3), fmt_num(fam.slope_raw, 3), *extra)
    return t


def _capacity_text(report) -> str:
    if not report.store_capacity:
        return "unknown (no world manifest; state it with --capacity)"
    return f"{', '.join(map(str, report.store_capacity))} ({report.capacity_source})"


def register(app: typer.Typer) -> None:
    app.command("concentration")(concentration)
    app.command("psd")(psd)
    app.command("finite-size")(finite_size)
