"""``ctwm audit``: the finite-regime Clauset audit with its verdict."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Group
from rich.table import Table
from rich.text import Text

from ..errors import InputError, UsageError
from ..inert import visible
from ..plots import check_plot_path
from ..vocabulary import SUMMARY_KEY, VERDICTS
from .aliases import aliased
from .option_groups import choice
from .options import (
    TRACES_HELP, DetailsOpt, FailOnOpt, Format, JobsOpt, JunitOpt, LabelOpt, PlotOpt, ReadFlags,
    SeedOpt, at_most, read_flags, output_flags, trace_labels,
)
from .output import (
    announce_seed, check_output_path, check_outputs, conclude, emit, fmt_num, message, progress_bar,
)

Verdict = choice("Verdict", VERDICTS)
ExpectRule = choice("ExpectRule", ("paper", "calibrated"))
CrossCheckPackage = choice("CrossCheckPackage", ("powerlaw",))
#: the summary table's columns when several traces or groups are audited
SUMMARY_FIELDS = ("label", "n", "xmin", "n_tail", "alpha", "p_gof", "z", "verdict")

VERDICT_STYLE = {"tpl-compatible": "bold green", "lognormal-compatible": "bold cyan", "inconclusive": "bold yellow"}


@output_flags
@read_flags(engine=True, scheduler=True)
def audit(
    traces: Annotated[list[str], typer.Argument(
        metavar="TRACE...", help=TRACES_HELP + " One audit per trace (or per group).")],
    group_by: Annotated[str | None, typer.Option(
        "--group-by", help="One audit per value of this column (e.g. run, agent, episode, family).")] = None,
    event: Annotated[list[str] | None, typer.Option(
        "--event", "-e", help="Event kind to count (repeatable). Default: retrieve if present, else inject.")] = None,
    discrete: Annotated[bool, typer.Option(
        "--discrete/--continuous",
        help="Discrete fits (counts are integers; default) or continuous densities.")] = True,
    xmin: Annotated[float | None, typer.Option(
        "--xmin", help="Fix the tail cutoff instead of choosing it by KS minimisation.")] = None,
    bootstrap: Annotated[int, typer.Option(
        "--bootstrap", "-b", callback=at_most("bootstrap"),
        help="Bootstrap replicates for p_gof (0 skips it; then no TPL verdict is possible).")] = 1000,
    bootstrap_old: Annotated[int | None, typer.Option(
        "-B", hidden=True, callback=at_most("bootstrap"),
        help="Deprecated spelling of --bootstrap (-B means --budget elsewhere).")] = None,
    seed: SeedOpt = None,
    jobs: JobsOpt = None,
    min_tail: Annotated[int, typer.Option(
        "--min-tail", help="Minimum tail size n_tail (Assumption 3.3). A KS-optimal cutoff leaving fewer points makes "
        "the verdict inconclusive; the best cutoff leaving --min-tail points is shown beside it, labelled "
        "constrained.")] = 100,
    scan_floor: Annotated[int, typer.Option(
        "--scan-floor", help="The x_min scan considers every cutoff leaving at least this many points "
        "(separate from --min-tail).")] = 10,
    xmax: Annotated[float | None, typer.Option(
        "--xmax", help="Fit a doubly truncated power law on [x_min, x_max] (values above are outside the model). "
        "Supports the power-law fit, its x_min scan and KS only: no alternatives, LR tests or p_gof.")] = None,
    xmin_range: Annotated[str | None, typer.Option(
        "--xmin-range", metavar="LO:HI",
        help="Only candidate cutoffs LO <= x_min <= HI (either side may be empty).")] = None,
    uncertainty: Annotated[int, typer.Option(
        "--uncertainty", metavar="B", callback=at_most("uncertainty"),
        help="Nonparametric bootstrap of the whole fit (x_min re-selected): standard errors and "
        "95% percentile intervals of x_min, α and n_tail (0: off; e.g. 500).")] = 0,
    cross_check: Annotated[CrossCheckPackage | None, typer.Option(  # type: ignore[valid-type]
        "--cross-check", help="Run the powerlaw package (Alstott et al.) on the same data and show its x_min, α, R "
        "and p beside ours, each disagreement with its known cause.")] = None,
    power: Annotated[int, typer.Option(
        "--power", metavar="R", callback=at_most("power"),
        help="For an inconclusive verdict: simulate R data sets per family (fitted log-normal, fitted TPL) "
        "at 1x-16x the observed size and report how often the verdict (fit check included) is right, and the smallest "
        "multiple with power >= 0.8 (0: off; e.g. 100).")] = 0,
    p_star: Annotated[float, typer.Option("--p-star", help="p_gof threshold p* of Definition 3.4.")] = 0.10,
    z_star: Annotated[float, typer.Option("--z-star", help="|Λ/σ| threshold z* of Definition 3.4.")] = 1.96,
    fit_check: Annotated[bool, typer.Option(
        "--fit-check/--no-fit-check",
        help="A decisive verdict also needs the family it prefers to pass its own bootstrap KS test on the tail "
        "(default); --no-fit-check: Definition 3.4 as published, without the checks' bootstraps (their cost) "
        "unless --check-all-families asks for them.")] = True,
    fit_level: Annotated[float, typer.Option(
        "--fit-level", help="Level of the preferred family's own fit check (p_gof of that family below it: "
        "inconclusive).")] = 0.05,
    check_all_families: Annotated[bool, typer.Option(
        "--check-all-families", help="Bootstrap every alternative family's own fit, not only the TPL's and the "
        "log-normal's (the ones a verdict can prefer); costs B refits per family.")] = False,
    diagnostics: Annotated[bool, typer.Option(
        "--diagnostics/--no-diagnostics",
        help="Show concentration numbers (Gini, skew, max/median, σ_top10) beside the verdict.")] = True,
    calibrate: Annotated[int, typer.Option(
        "--calibrate", callback=at_most("calibrate"), help="Calibrate the verdict with R replicates simulated from "
        "the fitted log-normal and R from the fitted TPL, each re-audited in full (0: off).")] = 0,
    level: Annotated[float, typer.Option(
        "--significance", help="Significance level a of the calibrated verdict: TPL only when z exceeds the (1-a) "
        "quantile of z under the fitted log-normal.")] = 0.05,
    level_alias: Annotated[float | None, typer.Option(
        "--level", hidden=True, help="Deprecated spelling of --significance.")] = None,
    expect: Annotated[Verdict | None, typer.Option(  # type: ignore[valid-type]
        "--expect", help="Exit 1 unless every audit's verdict is this one.")] = None,
    expect_rule: Annotated[ExpectRule, typer.Option(  # type: ignore[valid-type]
        "--expect-rule",
        help="Which verdict --expect checks: paper (the main verdict as printed: Definition 3.4 with the fit check, "
        "or as published with --no-fit-check) or calibrated (needs --calibrate).")] = "paper",
    fail_on: FailOnOpt = None,
    junit_xml: JunitOpt = None,
    details: DetailsOpt = False,
    plot: PlotOpt = None,
    label: LabelOpt = None,
    value_col: Annotated[str | None, typer.Option(
        "--value-col", metavar="COLUMN", help="Audit the numbers in this column, one observation per row "
        "(real-valued sizes such as city populations or fire areas), instead of counting items; "
        "add --continuous for real values.")] = None,
    across: Annotated[str | None, typer.Option(
        "--across", metavar="COLUMN", help="Also test whether the groups of this column (run, agent, user) share "
        "one law: a permutation likelihood-ratio test of one α against one α per group at the pooled x_min, "
        "reported beside the pooled verdict (at --significance).")] = None,
    permutations: Annotated[int, typer.Option(
        "--permutations", help="Permutations of the --across test.")] = 999,
    *,
    opts: ReadFlags,
    fmt: Format = Format.table,
) -> None:
    """Is the per-item access-count distribution heavy-tailed, and of which family?

    Fits a power-law tail (x_min by KS minimisation over every distinct value leaving at least
    --scan-floor points, exact discrete MLE of α with no cap), bootstraps p_gof (Clauset et al. 2009
    §4.1, x_min re-estimated in every replicate), fits truncated power law, log-normal, exponential
    and stretched exponential on the same tail, and runs likelihood-ratio tests. Verdict (paper
    Definition 3.4 under Assumption 3.3): tpl-compatible if p_gof >= p*, Λ_TPL,LN > 0 and
    |Λ/σ| >= z*; lognormal-compatible if Λ < 0 and |Λ/σ| >= z*; inconclusive otherwise, with the
    reason. With the fit check (default) a decisive verdict also needs the preferred family to pass its
    own bootstrap KS test, to beat every other family of as many or fewer parameters (the stretched
    exponential included) by z*, and not to lose to the mixture of two power laws. α̂ is confirmatory
    only: it moves with the selected x_min (paper Appendix D).

    \b
    Examples:
      ctwm audit sample_traces/tpl_events.parquet --seed 1
      ctwm audit grid_out/ --group-by run --bootstrap 200 --fail-on 'p_gof<0.1' --junit-xml audit.xml
      ctwm audit trace.parquet --calibrate 200 --expect tpl-compatible --expect-rule calibrated
      ctwm audit trace.parquet --fail-on 'n_tail<100' --fail-on 'gini>0.9' --format github
    """
    # Long only by its option declarations (Typer reads the signature); the body validates, calls audit_many, renders.
    from ..gates import parse_checks
    from ..auditing import audit_many
    from ..tail.settings import AuditSettings
    from ..distributed import check_scheduler, using_scheduler
    from ..traces.paths import read_counts
    from ..traces.values import read_values

    if bootstrap_old is not None:
        message("warning: -B is deprecated for audit (it means --budget elsewhere); use -b/--bootstrap")
        bootstrap = bootstrap_old
    level = aliased(level, level_alias, "--level", "--significance")
    expect = None if expect is None else Verdict(expect).value
    expect_rule = ExpectRule(expect_rule).value
    gates = parse_checks(fail_on, GATE_METRICS, parameter="--fail-on")
    junit = check_output_path(junit_xml, "--junit-xml")
    if expect_rule == "calibrated" and calibrate < 1:
        raise UsageError("--expect-rule calibrated needs --calibrate R (R >= 1)")
    labels = trace_labels(label, traces)
    if across is not None and group_by is not None:
        raise UsageError("--across tests the groups of the pooled trace; it cannot be combined with --group-by "
                         "(which audits each group on its own)")
    if permutations < 1:
        raise UsageError(f"--permutations must be >= 1, got {permutations}")
    if value_col is not None and event:
        raise UsageError("--event selects events to count; --value-col reads numbers, not events")
    check_plot_path(plot)
    check_outputs(traces, junit_xml=junit_xml, plot=plot)
    scan_range = _parse_range(xmin_range)
    settings = AuditSettings.checked(
        discrete=discrete, xmin=xmin, bootstrap=bootstrap, min_tail=min_tail, p_star=p_star, z_star=z_star,
        seed=seed, scan_floor=scan_floor, xmin_range=scan_range, uncertainty=uncertainty,
        cross_check=None if cross_check is None else CrossCheckPackage(cross_check).value, power=power, xmax=xmax,
        fit_check=fit_check, fit_level=fit_level, check_all=check_all_families, calibrate=calibrate, level=level,
        jobs=jobs)  # checked once; audit_many uses them as they are
    check_scheduler(opts.scheduler)
    read = opts.read_options()
    seed = settings.seed
    with using_scheduler(opts.scheduler):
        with progress_bar("reading traces") as progress:
            counts = (read_values(traces, read, column=value_col, group_by=group_by, progress=progress, labels=labels)
                      if value_col is not None else
                      read_counts(traces, read, group_by=group_by, events=event, progress=progress, labels=labels))
        if value_col is not None and discrete:
            _integers_only(counts, value_col)
        announce_seed(seed)
        with progress_bar("bootstrap replicates") as progress, progress_bar("calibration replicates") as cal_progress:
            results = audit_many(counts, settings=settings, jobs=jobs, diagnostics=diagnostics, calibrate=calibrate,
                                 level=level, progress=progress, calibration_progress=cal_progress)
        if across is not None:
            results = _across(results, traces, read, across, value_col, event, labels, permutations, level)
    if plot:
        _save_plots(plot, results, counts)
    rows = [r.summary_row() for r in results]
    checks = _checks(results, rows, gates, expect, expect_rule)
    from ..reporting.summary import VALUES, ACCESSES, audit_summaries  # the lead paragraph, JSON summary

    payload = audit_summaries(results, noun="groups" if group_by else "traces", words=VALUES if value_col else ACCESSES)
    emit("audit", payload, rows, fmt, seed=seed, tables=[_table(r) for r in results], checks=checks,
         subject_field="label", summary_fields=SUMMARY_FIELDS, details=details, headline=payload[SUMMARY_KEY])
    conclude("audit", checks, junit)


def _integers_only(counts, column: str) -> None:
    """A discrete fit of --value-col's numbers needs integers: say which flag fits real values."""
    import numpy as np

    for c in counts:
        if np.any(c.counts != np.floor(c.counts)):
            raise UsageError(f"{c.source}: column {column!r} holds fractions; a discrete fit needs integers "
                             "(add --continuous for real values)")


def _across(results, traces, read, column, value_col, event, labels, permutations, level):
    """Each pooled audit with the test of whether ``column``'s groups of its trace share one law."""
    from ..tail import across_groups
    from ..traces.paths import read_counts
    from ..traces.values import read_values

    out = []
    with progress_bar("groups share one law?") as progress:
        for k, (r, trace) in enumerate(zip(results, traces, strict=True)):
            one = [labels[k]] if labels is not None else None
            groups = (read_values([trace], read, column=value_col, group_by=column, labels=one)
                      if value_col is not None else read_counts([trace], read, group_by=column, events=event,
                                                                labels=one))
            done = across_groups(r, groups, permutations=permutations, level=level)
            if done.heterogeneity is None:  # said, not left out silently
                why = "no power-law cutoff" if r.power_law is None else "fewer than two groups leave 10 tail points"
                message(f"warning: {visible(r.label or trace)}: --across {column}: not tested ({why})")
            out.append(done)
            progress(k + 1, len(results))
    return out


def _save_plots(plot: str, results, counts) -> None:
    from ..plots import save_figure
    from ..plots.ccdf import plot_audit

    for r, c, path in zip(results, counts, _plot_paths(plot, results), strict=True):
        message(f"figure: {save_figure(plot_audit(r, c.counts), path)}")
    if len(results) > 1:  # the groups side by side (paper Fig. 4) at the path itself
        from ..plots.audit_groups import plot_audit_groups

        message(f"figure: {save_figure(plot_audit_groups(results), plot)}")


def _checks(results, rows: list[dict], gates, expect: str | None, expect_rule: str) -> list:
    """The --expect outcome (paper or calibrated verdict) and the --fail-on gates of every audit."""
    from ..gates import evaluate_checks, expect_outcome

    checks = []
    for r, row in zip(results, rows, strict=True):
        if expect is not None:
            if expect_rule == "calibrated" and r.calibration is None:
                raise InputError(f"{r.label}: --expect-rule calibrated, but no calibration ran "
                                 f"(no power-law tail to simulate from: {r.verdict.reason})")
            chosen = r.verdict if expect_rule == "paper" else r.calibration.verdict
            checks.append(expect_outcome(r.label, f"{expect_rule}_verdict", chosen.verdict, expect))
        checks += evaluate_checks(gates, gate_metrics(r, row), subject=r.label)
    return checks


#: the names --fail-on accepts for an audit: the summary row's numbers and the concentration measures
GATE_METRICS = (
    "n", "distinct_values", "xmin", "n_tail", "alpha", "alpha_se", "p_gof", "Lambda", "sigma", "z",
    "gini", "skewness", "max_over_median", "top10_share", "sigma_top10",
)


def gate_metrics(r, row: dict) -> dict:
    """The numbers a gate can test, read off the result (no computation here)."""
    k = r.concentration.to_dict() if r.concentration is not None else {}
    return {name: row.get(name, k.get(name)) for name in GATE_METRICS}


def _power_table(pw) -> Table:
    needed = "; ".join(f"{rule} rule: " + (f"{m}x the data" if m else f"beyond {pw.multiples[-1]}x")
                       for rule, m in pw.needed.items())
    checked = " (fit check included, as in the verdict above)" if pw.fit_check else ""
    t = Table(title=f"How much more data? Power to reach the right verdict{checked} (R = {pw.replicates} per cell; "
                    f"needed for both families at {pw.target:.0%}: {needed})", title_justify="left")
    t.add_column("data drawn from")
    t.add_column("rule")
    for m in pw.multiples:
        t.add_column(f"{m}x n", justify="right")
    t.add_column("needed", justify="right")
    for c in pw.curves:
        t.add_row(c.generator, c.rule, *(f"{c.power[m]:.0%}" for m in pw.multiples),
                  f"{c.needed}x" if c.needed else f"> {pw.multiples[-1]}x")
    widths = [(hi - lo) / 2 for c in pw.curves for lo, hi in (c.interval or {}).values() if hi == hi and lo == lo]
    notes = [f"Monte Carlo 95% intervals of the cells up to ±{max(widths):.0%} (JSON: curves[].interval)"
             ] if widths else []
    for c in pw.curves:
        if c.falls:
            why = (": its TPL call needs the pure power law to pass p_gof, which more TPL data fail (Definition 3.4)"
                   if (c.rule, c.generator) == ("paper", "truncated_power_law") else "")
            notes.append(f"{c.generator}/{c.rule} falls at {', '.join(f'{m}x' for m in c.falls)}{why}")
    if notes:
        t.caption = "; ".join(notes)
        t.caption_justify = "left"
    return t


def _cross_check_table(c) -> Table:
    t = Table(title=f"Cross-check: {c.package} {c.version} with its defaults", title_justify="left")
    for name in ("quantity", "ctwm", c.package, "why they differ"):
        t.add_column(name)
    why = {d.quantity: d.cause for d in c.disagreements}
    for q in ("xmin", "alpha", "R", "p"):
        t.add_row(q, fmt_num(c.ours[q]), fmt_num(c.theirs[q]), why.get(q, "agree"))
    t.add_row("alpha at our x_min", fmt_num(c.ours["alpha"]), fmt_num(c.theirs["alpha_reconciled"]),
              "its exact estimator, α allowed in [1, 20]")
    return t


def _parse_range(text: str | None) -> tuple[float, float] | None:
    """--xmin-range LO:HI (either side may be empty) as (lo, hi)."""
    if text is None:
        return None
    lo, sep, hi = text.partition(":")
    try:
        if not sep:
            raise ValueError(text)
        return (float(lo) if lo.strip() else 1e-300, float(hi) if hi.strip() else math.inf)
    except ValueError:
        raise UsageError(f"--xmin-range must be LO:HI (numbers; either side may be empty), got {text!r}") from None


def _plot_paths(plot: str, results) -> list[Path]:
    p = Path(plot)
    if len(results) == 1:
        return [p]
    return [p.with_name(f"{p.stem}-{i + 1}{p.suffix}") for i in range(len(results))]


def _table(r) -> Group:
    pl, c, gof = r.power_law, r.tpl_vs_lognormal, r.gof
    t = Table(title=Text(f"Tail audit: {r.label}"), title_justify="left", show_header=False)
    t.add_column("field", style="bold")
    t.add_column("value")
    t.add_row("n (items) / distinct values", f"{r.n:,} / {r.distinct_values:,}")
    if pl is not None:
        t.add_row("x_min / n_tail", f"{fmt_num(pl.xmin)} / {pl.n_tail:,}  ({pl.candidates:,} candidate cutoffs)"
                  + (f"; doubly truncated at x_max {fmt_num(pl.xmax)}" if pl.xmax is not None else ""))
        t.add_row("α ± se", f"{pl.alpha:.4f} ± {pl.alpha_se:.4f}  (confirmatory; moves with x_min)")
        t.add_row("KS distance D", fmt_num(pl.ks))
    if r.constrained is not None:
        k = r.constrained
        t.add_row("constrained cutoff", f"x_min {fmt_num(k.xmin)} / n_tail {k.n_tail:,}, α {k.alpha:.4f}, "
                  f"D {fmt_num(k.ks)}  (best cutoff leaving --min-tail points; not used for the verdict)")
    if r.uncertainty is not None:
        u = r.uncertainty
        for q in ("xmin", "alpha", "n_tail"):
            iv = u.interval[q]
            span = ("interval not formed: every replicate agrees" if iv is None and q in u.constant
                    else f"interval not formed: the central {u.level:.0%} of replicates agree" if iv is None
                    else f"{u.level:.0%} interval [{fmt_num(iv.low)}, {fmt_num(iv.high)}]"
                    + (", excludes the estimate: the replicates lie on one side of it (an unstable cutoff)"
                       if q in u.excludes_estimate else ""))
            t.add_row(f"{q}: bootstrap se", f"{fmt_num(u.se[q])}  ({span}; B = {u.replicates}, {u.failed} failed)")
        if (b := u.alpha_band) is not None:
            t.add_row("α over cutoffs", f"[{b.low:.4f}, {b.high:.4f}]  (with α ± se at the {b.cutoffs} cutoffs in "
                      f"[{fmt_num(b.xmin_low)}, {fmt_num(b.xmin_high)}] that pass KS at {b.ks_level:g}; "
                      "the interval to quote when x_min is uncertain)")
    t.add_row("p_gof", "not computed" if gof is None
              else f"{gof.pvalue:.4f}  (B = {gof.replicates}, seed {r.settings.seed})")
    if c is not None:
        t.add_row("Λ_TPL,LN / σ / z", f"{fmt_num(c.statistic)} / {fmt_num(c.sigma)} / {fmt_num(c.z)}")
    v = r.verdict
    t.add_row("verdict", Text.assemble((v.verdict, VERDICT_STYLE[v.verdict]), f"  ({v.rule} rule)"))
    t.add_row("reason", v.reason)
    if (h := r.heterogeneity) is not None:  # group names come from the trace: plain text, control characters shown
        left = f"; left out (< 10 tail points): {', '.join(h.excluded)}" if h.excluded else ""
        t.add_row("groups share one law?", Text(visible(h.summary() + left)))
    t.add_row("Assumption 3.3", "holds" if v.assumption_3_3 else "fails")
    t.add_row("pure power law passes", fmt_num(r.power_law_pass))
    if r.calibration is not None:
        cal = r.calibration
        cv = cal.verdict
        note = f"  (calibrated rule, level {cal.level:g}, R = {cal.replicates})"
        t.add_row("calibrated verdict", Text.assemble((cv.verdict, VERDICT_STYLE[cv.verdict]), note))
        t.add_row("calibrated reason", cv.reason)
        conf = cal.confusion
        if conf:
            ln, tpl = conf["lognormal"], conf["truncated_power_law"]
            t.add_row("paper rule on simulated data",
                      f"log-normal: TPL {ln['tpl-compatible']:.1%}, LN {ln['lognormal-compatible']:.1%}; "
                      f"TPL: TPL {tpl['tpl-compatible']:.1%}, LN {tpl['lognormal-compatible']:.1%}")
    if r.concentration is not None:
        k = r.concentration
        t.add_row("concentration", f"Gini {fmt_num(k.gini)}, skew {fmt_num(k.skewness)}, "
                  f"max/median {fmt_num(k.max_over_median)}, top-10% share {fmt_num(k.top10_share)}, "
                  f"σ_top10 {fmt_num(k.sigma_top10)}")
    parts: list = [t]
    if r.cross_check is not None:
        parts.append(_cross_check_table(r.cross_check))
    if r.power is not None:
        parts.append(_power_table(r.power))
    if r.alternatives:
        fits = Table(title="Alternative fits on the same tail (se from the Hessian)", title_justify="left")
        for name in ("family", "parameters", "log-likelihood", "converged", "at bound", "own fit: KS D, p"):
            fits.add_column(name)
        checks = r.fit_checks or {}
        for f in r.alternatives.values():
            se = f.se or {}
            params = ", ".join(f"{k} {fmt_num(v)}" + (f" ± {fmt_num(se[k])}" if k in se and se[k] == se[k] else "")
                               for k, v in f.params.items())
            bound = ", ".join(f"{k} = {fmt_num(b)}" for k, b in f.at_bound.items())
            bound += f" ({f.limit})" if f.limit else ""
            g = checks.get(f.family)
            own = ("not run (--no-fit-check)" if r.fit_checks is None and not r.settings.fit_check else
                   "not run (tail < --min-tail)" if r.fit_checks_skipped else "not run"
                   if r.fit_checks is None or r.settings.check_all else "not run (--check-all-families)"
                   ) if g is None else f"{fmt_num(g.statistic)}, {g.pvalue:.4f}"
            fits.add_row(f.family, params, fmt_num(f.loglik), fmt_num(f.converged), bound or "no", own)
        parts.append(fits)
    if r.comparisons:
        lr = Table(title="Likelihood-ratio tests (Λ > 0 favours the first family)", title_justify="left")
        for name in ("first", "second", "Λ", "σ", "z", "p", "preferred"):
            lr.add_column(name, justify="left" if name in ("first", "second", "preferred") else "right")
        from ..tail.compare import pvalue_text  # loaded with the audit, not at start-up

        for cmp in r.comparisons:
            second = cmp.second + (f" (nested, {cmp.method})" if cmp.nested else "")
            lr.add_row(cmp.first, second, fmt_num(cmp.statistic),
                       fmt_num(cmp.sigma), fmt_num(cmp.z), pvalue_text(cmp.pvalue), cmp.preferred or "none")
        parts.append(lr)
    return Group(*parts)


def register(app: typer.Typer) -> None:
    app.command("audit")(audit)
