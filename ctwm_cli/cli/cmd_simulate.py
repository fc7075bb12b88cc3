"""``ctwm simulate``: the CTWM rank allocation b(r; τ) ∝ r^-τ over a slot budget, τ sweeps, and
what it would have done with a real trace."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import typer
from rich import box
from rich.table import Table
from rich.text import Text

from ..common.errors import UsageError
from ..common.settings import Declared, in_range, option
from ..common.vocabulary import DEFAULT_BUDGET, DEFAULT_TAU, RANKINGS
from ..common.vocabulary import SIMULATE_CORE as DEFAULT_CORE
from ..plots import check_plot_path
from .declared import declared_flags
from .options import (
    TAU_SPEC_HELP,
    FailOnOpt,
    Format,
    JunitOpt,
    PlotOpt,
    ReadFlags,
    output_flags,
    read_flags,
    tau_values,
)
from .output import check_output_path, check_outputs, conclude, emit, fmt_num, message, progress_bar
from .registry import result

if TYPE_CHECKING:
    from ..allocation import Allocation, TauSweep, TraceSimulation

#: what --fail-on can test with --trace, per τ row (counts ranking; step ranking)
TRACE_METRICS = (
    "core_mass", "tail_share", "gini", "core_slots", "tail_slots", "items_in_prompt", "tail_items_summarised",
    "access_share_core", "access_share_prompt", "access_share_summarised", "access_share_dropped", "tv_distance",
    "items_reach_prompt", "items_only_summarised", "mean_prompt_items", "mean_tail_slots", "steps_with_summary",
)

DEFAULT_ITEMS = 1000


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class SimulateSettings(Declared):
    """The options of ``ctwm simulate`` besides the reading ones and its outputs, as checked."""

    WHAT = "simulate option"

    tau: list[str] | None = option(  # noqa: RUF009
        None, flags=("--tau", "-t"), show_default=False,
        help=f"Allocation exponent τ > 0: {TAU_SPEC_HELP}; repeatable. Several values are a sweep (one row per τ; "
        "0.25:2:7 is the paper's Section 5.6). [default: 1.0]")
    sweep: str | None = option(None, flags=("--sweep",), help="Alias of --tau START:STOP:N (a sweep of N evenly "
                               "spaced τ values inclusive).")
    items: int | None = option(None, flags=("--items", "-M"), show_default=False,
                               help="Number of ranked items M (not with --trace, which takes M from the trace). "
                               f"[default: {DEFAULT_ITEMS}]")
    core: int = option(DEFAULT_CORE, flags=("--core", "-K"), check=in_range(lo=1),
                       help="Core size K: ranks 1..K are the core, the rest the summarised tail (1 <= K < M).")
    budget: int = option(DEFAULT_BUDGET, flags=("--budget", "-B"), check=in_range(lo=1),
                         help="Prompt budget B in slots (or tokens), split between the core ranks and one "
                         "tail-summary group.")
    trace: str | None = option(None, flags=("--trace",), path=True, config=False,
                               reason="it is the entry's own traces key",
                               help="Apply the allocation to this trace's item ranking (.jsonl, .jsonl.gz, .parquet, "
                               "a Parquet directory, or - for stdin).")
    ranking: str = option("auto", flags=("--ranking",), choices=RANKINGS,
                          help="With --trace: 'counts' ranks items by access count; 'step' ranks each (run, step) "
                          "list by its rank/score column; 'auto' uses 'step' when the trace has step and rank/score "
                          "columns.")
    event: list[str] | None = option(None, flags=("--event",),  # noqa: RUF009
                                     help="With --trace: event kinds to count (repeatable). Default: retrieve, else "
                                     "inject.")
    show: int = option(20, flags=("--show",), check=in_range(lo=0),
                       help="Core ranks listed in the allocation table and JSON.")

    def related(self) -> None:
        if self.tau and self.sweep is not None:
            raise UsageError("give either --tau or --sweep, not both")
        if self.trace is not None:
            if self.items is not None:
                raise UsageError("--items cannot be combined with --trace (M is the number of items in the trace)")
            return
        m = DEFAULT_ITEMS if self.items is None else self.items
        if m < 2:
            raise UsageError(f"--items must be >= 2, got {m}")
        if self.core >= m:
            raise UsageError(f"--core must be smaller than --items ({m}), got {self.core}")


@result("simulate", variants={"allocation": "ctwm_cli.allocation.Allocation", "sweep": "ctwm_cli.allocation.TauSweep",
                              "trace": "ctwm_cli.allocation.TraceSimulation"})
@output_flags
@read_flags()
@declared_flags(SimulateSettings, name="settings")
def simulate(
    *,
    settings: SimulateSettings,
    opts: ReadFlags,
    plot: PlotOpt = None,
    fail_on: FailOnOpt = None,
    junit_xml: JunitOpt = None,
    fmt: Format = Format.table,
) -> None:
    """CTWM rank allocation b(r; τ) = r^-τ / Σ_j j^-τ (paper Definition A.1) over M ranked items.

    One τ: the allocation table (rank, share, slots of the core ranks and of the tail summary),
    core mass C(K, τ), tail share, and the concentration of b (Gini, skew, max/median). Several τ
    (--sweep or repeated --tau): one row per τ with a check column; core mass, Gini and max/median
    must rise with τ (Theorem A.4, Proposition A.3), skew is only observed. --trace: what the rule
    would have done with a real trace's ranking (items reaching the prompt, accesses served).

    \b
    Examples:
      ctwm simulate --tau 1.0 --items 1000 --core 10 --budget 512
      ctwm simulate --sweep 0.25:2:7 --plot sweep.png
      ctwm simulate --trace sample_traces/tpl_events.parquet --sweep 0.5:2:4 --fail-on 'access_share_dropped>0.2'
    """
    # Long only by its option declarations (Typer reads the signature); the body validates, calls one library
    # function per mode (allocate, tau_sweep or simulate_trace) and renders through the _emit_* helpers.
    from ..allocation import allocate, parse_sweep, simulate_trace, tau_sweep
    from ..common.gates import evaluate_checks, parse_checks

    gates = parse_checks(fail_on, TRACE_METRICS, parameter="--fail-on")
    if gates and settings.trace is None:
        raise UsageError("--fail-on needs --trace (it tests the allocation's effect on a trace)")
    junit = check_output_path(junit_xml, "--junit-xml")
    check_plot_path(plot)
    check_outputs([settings.trace] if settings.trace else [], junit_xml=junit_xml, plot=plot)
    s = settings
    core, budget, sweep, items = s.core, s.budget, s.sweep, s.items
    taus = list(parse_sweep(sweep, "--sweep")) if sweep is not None else _taus(tau_values(s.tau))
    if s.trace is not None:
        cmap = opts.read_options()
        with progress_bar("reading trace") as progress:
            res = simulate_trace(s.trace, taus, core=core, budget=budget, columns=cmap, events=s.event,
                                 ranking=s.ranking, progress=progress)
        _plot(plot, res.allocation, res)
        checks = [
            c for r in res.results for c in evaluate_checks(gates, r.to_dict(), subject=f"{res.source} tau={r.tau:g}")
        ]
        _emit_trace(res, fmt, checks)
        conclude("simulate", checks, junit)
        return
    m = DEFAULT_ITEMS if items is None else items
    if len(taus) == 1 and sweep is None:
        if plot is not None:
            raise UsageError("--plot needs several τ values (--sweep or a repeated --tau)")
        _emit_allocation(allocate(m, taus[0], core=core, budget=budget), fmt, s.show)
        return
    res_sweep = tau_sweep(m, taus, core=core, budget=budget)
    _plot(plot, res_sweep, None)
    _emit_sweep(res_sweep, fmt)


def _taus(tau: list[float]) -> list[float]:
    values = list(tau) if tau else [DEFAULT_TAU]
    for t in values:
        if not (t > 0 and t != float("inf")):
            raise UsageError(f"--tau must be a finite number > 0, got {t}")
    return values


def _plot(path: str | None, sweep: TauSweep | None, trace: TraceSimulation | None) -> None:
    if path is None:
        return
    from ..plots import save_figure
    from ..plots.tau_sweep import plot_tau_sweep

    out = save_figure(plot_tau_sweep(sweep, trace=trace), path)
    message(f"plot written to {out}")


# --------------------------------------------------------------------------------------------
# Rendering


def _emit_allocation(a: Allocation, fmt: Format, show: int) -> None:
    payload = a.to_dict(head=show)
    rows: list[dict[str, Any]] = [dict(r) for r in payload["ranks"]]
    rows.append({"rank": f"tail ({a.core + 1}-{a.n_items})", "share": a.tail_share, "quota": a.tail_quota,
                 "slots": a.tail_slots})
    t = Table(title=f"CTWM allocation  M={a.n_items:,}  K={a.core}  B={a.budget:,}  τ={fmt_num(a.tau)}",
              title_justify="left")
    for name in ("rank", "share", "quota", "slots"):
        t.add_column(name, justify="right")
    for r in payload["ranks"]:
        t.add_row(str(r["rank"]), fmt_num(r["share"]), fmt_num(r["quota"]), fmt_num(r["slots"]))
    if payload["ranks_listed"] < a.core:
        hidden = a.core_slots[payload["ranks_listed"]:]
        listed = payload["ranks_listed"]
        t.add_row(f"{listed + 1}-{a.core}", fmt_num(float(a.shares[listed:a.core].sum())),
                  fmt_num(float(a.core_quotas[listed:].sum())), fmt_num(int(hidden.sum())))
    t.add_row(f"tail {a.core + 1}-{a.n_items:,} ({a.tail_items:,} items)", fmt_num(a.tail_share), fmt_num(a.tail_quota),
              fmt_num(a.tail_slots), style="italic")
    s = Table(show_header=False, title="summary", title_justify="left")
    s.add_column("field", style="bold")
    s.add_column("value")
    for label, v in (
        ("core mass C(K, τ)", a.core_mass), ("tail share", a.tail_share), ("core slots", int(a.core_slots.sum())),
        ("tail-summary slots", a.tail_slots), ("items in prompt (core ranks with >= 1 slot)", a.items_in_prompt),
        ("Gini", a.gini), ("skew", a.skewness), ("max/median", a.max_over_median),
    ):
        s.add_row(label, fmt_num(v))
    emit("simulate", {"mode": "allocation", **payload}, rows, fmt, tables=[t, s])


def _emit_sweep(sw: TauSweep, fmt: Format) -> None:
    rows = [r.to_dict() for r in sw.results]
    t = Table(title=f"CTWM τ sweep  M={sw.n_items:,}  K={sw.core}  B={sw.budget:,}", title_justify="left",
              box=box.SIMPLE_HEAD)
    cols = ("tau", "core_mass", "gini", "skewness", "max_over_median", "top_slots", "tail_slots", "check")
    _fill(t, cols, rows, rename=_HEADERS.get)
    emit("simulate", {"mode": "sweep", **sw.to_dict()}, rows, fmt, tables=[t, _checks_table(sw)])


_HEADERS = {
    "tau": "τ", "core_mass": "C(K,τ)", "gini": "Gini", "skewness": "skew", "max_over_median": "max/med",
    "top_slots": "slots r=1", "tail_slots": "tail slots", "check": "check",
}


_TRACE_HEADERS = {
    "tau": "τ", "core_mass": "C(K,τ)", "gini": "Gini", "core_slots": "core slots", "tail_slots": "tail slots",
    "items_in_prompt": "in prompt", "tail_items_summarised": "summarised",
    "items_reach_prompt": "in prompt", "items_only_summarised": "only summ.",
    "mean_prompt_items": "prompt/step", "mean_tail_slots": "tail slots/step",
    "steps_with_summary": "summ. steps", "access_share_core": "by core", "access_share_prompt": "in prompt",
    "access_share_summarised": "summarised", "access_share_dropped": "dropped", "tv_distance": "TV(b, p)",
}


def _fill(t: Table, cols: tuple[str, ...], rows: list[dict[str, Any]], rename=lambda c: c.replace("_", " ")) -> None:
    """Add columns sized to keep every number on one line, then the rows."""
    cells = [[fmt_num(r[c]) for c in cols] for r in rows]
    for j, c in enumerate(cols):
        header = rename(c)
        width = max([len(header), *(len(row[j]) for row in cells)])
        t.add_column(header, justify="left" if c == "check" else "right", min_width=width, no_wrap=True)
    for row in cells:
        t.add_row(*row)


def _checks_table(sw: TauSweep) -> Table:
    c = Table(title="monotonicity in τ", title_justify="left")
    for name in ("metric", "basis", "increasing", "note"):
        c.add_column(name)
    for ch in sw.checks:
        c.add_row(ch.metric, ch.basis, fmt_num(ch.increasing), ch.note)
    return c


def _emit_trace(res: TraceSimulation, fmt: Format, checks: list) -> None:
    rows = [r.to_dict() for r in res.results]
    head = Table(show_header=False, title=f"CTWM on a trace ({res.ranking} ranking)", title_justify="left")
    head.add_column("field", style="bold")
    head.add_column("value", overflow="fold")
    head.add_row("trace", res.source)
    head.add_row("counted events", ", ".join(res.events))
    head.add_row("distinct items M", fmt_num(res.n_items))
    head.add_row("accesses" if res.ranking == "counts" else "ranked listings", fmt_num(res.n_accesses))
    head.add_row("core K / budget B", f"{res.core} / {res.budget:,}")
    top = zip(res.core_items, res.core_item_counts, strict=True)
    head.add_row("top-K items by count", ", ".join(f"{i} ({c:,})" for i, c in top))
    if res.ranking == "step":
        head.add_row("steps", fmt_num(res.steps))
        head.add_row("mean list length", fmt_num(res.mean_list_length))
        head.add_row("items ever at a core position", fmt_num(res.items_ever_core))
        cols = ("tau", "items_reach_prompt", "items_only_summarised", "mean_prompt_items", "mean_tail_slots",
                "steps_with_summary")
    else:
        cols = ("tau", "core_mass", "gini", "core_slots", "tail_slots", "items_in_prompt", "tail_items_summarised")
    acc = ("tau", "access_share_core", "access_share_prompt", "access_share_summarised", "access_share_dropped")
    if res.ranking == "counts":
        acc = (*acc, "tv_distance")
    t = Table(title="per τ: items (in prompt = core items with >= 1 slot; summarised = tail items behind a summary "
        "with >= 1 slot)", title_justify="left", box=box.SIMPLE_HEAD)
    _fill(t, cols, rows, rename=_TRACE_HEADERS.get)
    a = Table(title="per τ: share of accesses served", title_justify="left", box=box.SIMPLE_HEAD)
    _fill(a, acc, rows, rename=_TRACE_HEADERS.get)
    tables: list[Any] = [head, t, a]
    if res.allocation is not None and len(res.results) > 1:
        tables.append(_checks_table(res.allocation))
    if res.max_list_length is not None and res.max_list_length <= res.core and len(res.results) > 1:
        tables.append(Text(f"note: every step lists at most {res.max_list_length} items, no more than the core "
                           f"K = {res.core}: every listed item gets a core position whatever τ, so the rows per τ "
                           "are identical; a smaller -K/--core makes τ matter"))
    emit("simulate", {"mode": "trace", **res.to_dict()}, rows, fmt, tables=tables, checks=checks)


def register(app: typer.Typer) -> None:
    app.command("simulate")(simulate)
