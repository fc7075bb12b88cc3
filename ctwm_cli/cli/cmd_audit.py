"""``ctwm audit``: the finite-regime Clauset audit with its verdict."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated

import typer

from ..common.errors import InputError, UsageError
from ..common.inert import visible
from ..common.settings import AuditRun, AuditSettings, Declared, checked_audit, in_range, option
from ..common.vocabulary import EXPECT_RULES, SUMMARY_KEY, VERDICTS
from ..plots import check_plot_path
from .audit_tables import audit_table
from .declared import declared_flags
from .options import (
    TRACES_HELP,
    DetailsOpt,
    FailOnOpt,
    Format,
    JunitOpt,
    LabelOpt,
    PlotOpt,
    ReadFlags,
    output_flags,
    read_flags,
    trace_labels,
)
from .output import (
    announce_seed,
    check_output_path,
    check_outputs,
    conclude,
    emit,
    message,
    progress_bar,
)
from .registry import result

#: the summary table's columns when several traces or groups are audited
SUMMARY_FIELDS = ("source", "group", "n_items", "xmin", "n_tail", "alpha", "p_gof", "z", "verdict")


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class AuditFlags(Declared):
    """The options of ``ctwm audit`` that are the command's, not the library audit's: what is read, what is
    expected of the verdict, and the --across test."""

    WHAT = "audit option"

    group_by: str | None = option(None, flags=("--group-by",),
                                  help="One audit per value of this column (e.g. run, agent, episode, family).")
    event: list[str] | None = option(None, flags=("--event", "-e"), help="Event kind to count (repeatable). "  # noqa: RUF009
                                     "Default: retrieve if present, else inject.")
    expect: str | None = option(None, flags=("--expect",), choices=VERDICTS,
                                help="Exit 1 unless every audit's verdict is this one.")
    expect_rule: str = option("paper", flags=("--expect-rule",), choices=EXPECT_RULES,
                              help="Which verdict --expect checks: paper (the main verdict as printed: Definition "
                              "3.4 with the fit check, or as published with --no-fit-check) or calibrated (needs "
                              "--calibrate).")
    value_col: str | None = option(None, flags=("--value-col",), metavar="COLUMN",
                                   help="Audit the numbers in this column, one observation per row (real-valued "
                                   "sizes such as city populations or fire areas), instead of counting items; "
                                   "add --continuous for real values.")
    across: str | None = option(None, flags=("--across",), metavar="COLUMN",
                                help="Also test whether the groups of this column (run, agent, user) share one law: "
                                "a permutation likelihood-ratio test of one α against one α per group at the pooled "
                                "x_min, reported beside the pooled verdict (at --significance).")
    permutations: int = option(999, flags=("--permutations",), check=in_range(lo=1),
                               help="Permutations of the --across test.")

    def related(self) -> None:
        if self.across is not None and self.group_by is not None:
            raise UsageError("--across tests the groups of the pooled trace; it cannot be combined with --group-by "
                             "(which audits each group on its own)")
        if self.value_col is not None and self.event:
            raise UsageError("--event selects events to count; --value-col reads numbers, not events")


@output_flags
@read_flags(engine=True, scheduler=True)
@declared_flags(AuditFlags, name="flags")
@declared_flags(AuditSettings, AuditRun, build=checked_audit, name="checked")
@result("audit", "ctwm_cli.auditing.AuditResult", key="results", many=True)
def audit(
    traces: Annotated[list[str], typer.Argument(
        metavar="TRACE...", help=TRACES_HELP + " One audit per trace (or per group).")],
    fail_on: FailOnOpt = None,
    junit_xml: JunitOpt = None,
    details: DetailsOpt = False,
    plot: PlotOpt = None,
    label: LabelOpt = None,
    *,
    checked: tuple[AuditSettings, AuditRun],
    flags: AuditFlags,
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
    # The options are declared in AuditSettings, AuditRun and AuditFlags; the body calls audit_many and renders.
    from ..auditing import audit_many
    from ..common.gates import parse_checks
    from ..runtime.distributed import check_scheduler, using_scheduler

    (settings, run), f = checked, flags
    gates = parse_checks(fail_on, GATE_METRICS, parameter="--fail-on")
    junit = check_output_path(junit_xml, "--junit-xml")
    if f.expect_rule == "calibrated" and run.calibrate < 1:
        raise UsageError("--expect-rule calibrated needs --calibrate R (R >= 1)")
    labels = trace_labels(label, traces)
    check_plot_path(plot)
    check_outputs(traces, junit_xml=junit_xml, plot=plot)
    check_scheduler(opts.scheduler)
    read = opts.read_options()
    with using_scheduler(opts.scheduler):
        counts = _read(traces, read, f, labels, settings.discrete)
        announce_seed(settings.seed)
        with progress_bar("bootstrap replicates") as progress, progress_bar("calibration replicates") as cal_progress:
            results = audit_many(counts, settings=settings, jobs=run.jobs, diagnostics=run.diagnostics,
                                 calibrate=run.calibrate, level=run.level, progress=progress,
                                 calibration_progress=cal_progress)
        if f.across is not None:
            results = _across(results, traces, read, f.across, f.value_col, f.event, labels, f.permutations,
                              run.level)
    if plot:
        _save_plots(plot, results, counts)
    rows = [r.summary_row() for r in results]
    checks = _checks(results, rows, gates, f.expect, f.expect_rule)
    from ..reporting.summary import ACCESSES, VALUES, audit_summaries  # the lead paragraph, JSON summary

    payload = audit_summaries(results, noun="groups" if f.group_by else "traces",
                              words=VALUES if f.value_col else ACCESSES)
    emit("audit", payload, rows, fmt, seed=settings.seed, tables=[audit_table(r) for r in results], checks=checks,
         subjects=[r.label for r in results], summary_fields=_summary_fields(results), details=details,
         headline=payload[SUMMARY_KEY])
    conclude("audit", checks, junit)


def _summary_fields(results) -> tuple[str, ...]:
    """The summary table's columns: the group first when a result is a group's (a table too wide for the terminal
    repeats its first column in each panel: the group tells the rows apart), else no group column."""
    if any(r.group is not None for r in results):
        return ("group", *(k for k in SUMMARY_FIELDS if k != "group"))
    return tuple(k for k in SUMMARY_FIELDS if k != "group")


def _read(traces, read, f: AuditFlags, labels, discrete: bool):
    """The counts (or --value-col's values) of every trace or group."""
    from ..traces.paths import read_counts
    from ..traces.values import read_values

    with progress_bar("reading traces") as progress:
        counts = (read_values(traces, read, column=f.value_col, group_by=f.group_by, progress=progress,
                              labels=labels)
                  if f.value_col is not None else
                  read_counts(traces, read, group_by=f.group_by, events=f.event, progress=progress, labels=labels))
    if f.value_col is not None and discrete:
        _integers_only(counts, f.value_col)
    return counts


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
    from ..common.gates import evaluate_checks, expect_outcome

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
    "n_items", "distinct_values", "xmin", "n_tail", "alpha", "alpha_se", "p_gof", "Lambda", "sigma", "z",
    "gini", "skewness", "max_over_median", "top10_share", "sigma_top10",
)


def gate_metrics(r, row: dict) -> dict:
    """The numbers a gate can test, read off the result (no computation here)."""
    k = r.concentration.to_dict() if r.concentration is not None else {}
    return {name: row.get(name, k.get(name)) for name in GATE_METRICS}


def _plot_paths(plot: str, results) -> list[Path]:
    p = Path(plot)
    if len(results) == 1:
        return [p]
    return [p.with_name(f"{p.stem}-{i + 1}{p.suffix}") for i in range(len(results))]


def register(app: typer.Typer) -> None:
    app.command("audit")(audit)

