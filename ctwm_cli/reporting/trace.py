"""The section of a trace: the audit's verdict, its CCDF, concentration, the PSD, memory health and what a CTWM
allocation would do, each from the library function the matching command calls (``audit``, ``concentration``,
``psd``, ``health``, ``simulate --trace``). Nothing is computed here that a command does not print."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..allocation import simulate_trace
from ..common.errors import InputError
from ..common.inert import visible
from ..diagnostics import psd_of_trace
from ..diagnostics.measures import ConcentrationReport, concentration
from ..health import METRICS, health_of_trace
from ..plots import series_label
from ..plots.audit_groups import plot_audit_groups
from ..plots.bands import BAND, BAND_OVER, outliers
from ..plots.ccdf import plot_audit
from ..plots.health import plot_health
from ..plots.psd import plot_psd
from ..plots.rank_frequency import plot_concentration
from ..plots.tau_sweep import plot_tau_sweep
from ..tail import audit_many
from ..tail.compare import pvalue_text
from ..traces import item_counts
from ..traces.engine import ReadOptions
from ..traces.paths import scan_paths
from .glossary import header
from .memory_lists import memory_lists
from .model import Block, Card, Figure, Section, Table
from .page import fmt
from .summary import audits_summary, health_summary
from .svg import draw_svg
from .views import views_block

#: event kinds that only memory-health telemetry carries: with any of them the section shows ``health``
HEALTH_EVENTS = frozenset({"write", "update", "supersede", "invalidate", "archive", "evict", "maintain", "search",
                           "context", "task_outcome"})
#: groups beyond this many get a row in the tables but no figure of their own (the page stays small)
MAX_GROUP_FIGURES = 12
SUMMARY_COLUMNS = ("source", "group", "n_items", "xmin", "n_tail", "alpha", "alpha_se", "p_gof", "z", "verdict",
                   "reason")
CONCENTRATION_COLUMNS = ("n_items", "n_events", "gini", "skewness", "max_over_median", "top10_share",
                         "sigma_top10", "singleton_fraction")
SIM_COLUMNS = ("tau", "access_share_core", "access_share_prompt", "access_share_summarised", "access_share_dropped")

#: a table of more rows shows this many, the rest folded under them
LONG_TABLE_ROWS = 12

Stage = Callable[[str], None]


def _median(values: Sequence[float]) -> float:
    return float(np.median(np.asarray(values, dtype=np.float64)))


def _verdict_tally(audits) -> str:
    tally: dict[str, int] = {}
    for a in audits:
        tally[a.verdict.verdict] = tally.get(a.verdict.verdict, 0) + 1
    return f"{len(audits):,} groups: " + ", ".join(f"{n:,} {k}" for k, n in sorted(tally.items())) + "."


def trace_section(
    path: str, read: ReadOptions, *, key: str, seed: int, group_by: str | None = None,
    events: Sequence[str] | None = None, objects: str | None = None, budget: int | None = None,
    bootstrap: int = 1000, jobs: int | None = None, taus: Sequence[float] = (), core: int = 10, slots: int = 512,
    psd_run: str | None = None, stage: Stage = lambda _: None,
) -> Section:
    """The section of the trace at ``path``: one read for the counts (per group with ``group_by``), then the
    audit, concentration, PSD (when it has steps), memory health (when it has those events) and the allocation
    over ``taus`` (none: left out), each a block of figures with their tables."""
    stage(f"{path}: reading")
    scan = scan_paths([path], read, group_by=group_by)[0]
    health = bool(set(scan.events) & HEALTH_EVENTS)
    try:
        counts = item_counts(scan, events)
    except InputError as exc:  # nothing to count: a memory-health export (Mem0) still has its health view
        if not health:
            raise
        stage(f"{path}: memory health")
        block, pooled = _health_block(path, read, objects, budget, key, None, [], notes := [])
        return Section(kind="trace", source=path, title=f"Trace {Path(path).name or path}",
                       card=Card(headline=f"no tail audit: {exc}", verdict=None, fields=(
                           ("rows", scan.n_rows), ("events", ", ".join(f"{k} {v:,}" for k, v in scan.events.items())),
                       )), blocks=(block,), notes=tuple(notes), summary=health_summary(pooled))
    stage(f"{path}: tail audit of {len(counts)} {'group' if len(counts) == 1 else 'groups'} (B = {bootstrap})")
    audits = audit_many(counts, bootstrap=bootstrap, seed=seed, jobs=jobs)
    notes: list[str] = []
    measures = tuple(concentration(c) for c in counts)  # as ctwm concentration measures each trace or group
    blocks = [audit_block(audits, counts, key), concentration_block(counts, key, group_by, rows=measures)]
    lead = [audits_summary(audits, concentrations=measures, noun="groups")]
    if "step" in scan.mapping and scan.kind == "events":
        stage(f"{path}: PSD")
        blocks.append(_psd_block(path, read, events, scan, psd_run, key, notes))
    else:
        notes.append("no step column: no PSD (it needs a per-step series)")
    if health:
        stage(f"{path}: memory health")
        block, pooled = _health_block(path, read, objects, budget, key, group_by, counts, notes)
        blocks.append(block)
        lead.append(health_summary(pooled, heading="Memory health"))
    else:
        notes.append("no memory-health events (write, supersede, context, ...): no memory-health view")
    if scan.kind == "events":
        stage(f"{path}: over-time and retrieval views")
        try:
            blocks.append(views_block(path, read, events=events, group_by=group_by, notes=notes, key=key,
                                      dead_weight=health, objects=objects))
        except InputError as exc:
            notes.append(f"no over-time and retrieval views: {exc}")
    if taus:
        stage(f"{path}: CTWM allocation over {len(taus)} τ")
        blocks.append(_simulate_block(path, read, events, taus, core, slots, key, notes))
    return Section(kind="trace", source=path, title=f"Trace {Path(path).name or path}",
                   card=_card(audits, counts, scan, seed), blocks=tuple(b for b in blocks if b is not None),
                   notes=tuple(notes), summary=" ".join(lead))


def shown(obj: Any, *fields: str) -> Any:
    """``obj`` with the text ``fields`` (labels from the trace) made :func:`visible` for a figure's text."""
    return dataclasses.replace(obj, **{f: visible(getattr(obj, f)) for f in fields if getattr(obj, f) is not None})


def _card(audits, counts, scan, seed: int) -> Card:
    if len(audits) == 1:
        a = audits[0]
        v, pl, c = a.verdict, a.power_law, a.tpl_vs_lognormal
        fields: list[tuple[str, Any]] = [
            ("verdict", v.verdict), ("reason", v.reason),
            ("rule", f"{v.rule} (Definition 3.4; p* = {a.settings.p_star:g}, z* = {a.settings.z_star:g})"),
            ("Assumption 3.3 (n_tail ≥ min_tail, 0 < σ < ∞)", "holds" if v.assumption_3_3 else "fails"),
            ("items n", a.n_items), ("accesses", counts[0].n_events), ("events counted", ", ".join(counts[0].events)),
        ]
        if pl is not None:
            fields += [("x_min / n_tail", f"{pl.xmin:g} / {pl.n_tail:,}"),
                       ("α ± se (confirmatory)", f"{pl.alpha:.4f} ± {pl.alpha_se:.4f}")]
        fields += [("p_gof", a.p_gof if a.gof is not None else None), ("bootstrap B", a.settings.bootstrap)]
        if c is not None:
            fields.append(("Λ_TPL,LN / σ / z", f"{c.statistic:.4g} / {c.sigma:.4g} / {c.z:.4g}"))
        fields.append(("seed", a.settings.seed))
        return Card(headline=f"{a.label}: {v.verdict} — {v.reason}", verdict=v.verdict, fields=tuple(fields))
    tally: dict[str, int] = {}
    for a in audits:
        tally[a.verdict.verdict] = tally.get(a.verdict.verdict, 0) + 1
    words = ", ".join(f"{k} {n}" for k, n in sorted(tally.items()))
    top = max(tally.items(), key=lambda kv: (kv[1], kv[0]))[0]
    items = sum(a.n_items for a in audits)
    return Card(headline=f"{len(audits)} groups by {scan.group_by}: {words}",
                verdict=top if tally[top] == len(audits) else None,
                fields=(("groups", len(audits)), ("verdicts", words), ("items (all groups)", items),
                        ("rule", f"{audits[0].verdict.rule} (Definition 3.4)"),
                        ("bootstrap B", audits[0].settings.bootstrap),
                        ("seed", f"{seed} (each group's seed derived from it and the group's label)")))


def _fits_table(a) -> Table:
    data = f"n = {a.n_items:,} items, {a.distinct_values:,} distinct counts"
    rows: list[tuple[Any, ...]] = [("data", data, None, None, None)]
    pl = a.power_law
    if pl is not None:
        rows.append(("power law", f"alpha {pl.alpha:.4g} ± {pl.alpha_se:.4g}, x_min {pl.xmin:g}", None, pl.ks, True))
    for f in a.alternatives.values():
        rows.append((f.family, ", ".join(f"{k} {v:.4g}" for k, v in f.params.items()), f.loglik, None, f.converged))
    for cmp in a.comparisons:
        rows.append((f"LR {cmp.first} vs {cmp.second}", f"Λ {cmp.statistic:.4g}, σ {cmp.sigma:.4g}, z {cmp.z:.4g}, "
                     f"p {pvalue_text(cmp.pvalue)}; preferred: {cmp.preferred or 'none'}", None, None, None))
    return Table(caption=f"Fits on the tail of {a.label} and likelihood-ratio tests (Λ > 0 favours the first family)",
                 columns=("fit or test", "parameters / statistics", "log-likelihood", "KS distance D", "converged"),
                 rows=tuple(rows))


def _ccdf_alt(a) -> str:
    pl, v = a.power_law, a.verdict
    if pl is None:
        return f"Empirical CCDF of {a.n_items:,} items; no tail could be fitted: {v.reason}."
    return (f"Above x_min = {pl.xmin:g} ({pl.n_tail:,} of {a.n_items:,} items) the tail is {v.verdict}: {v.reason}. "
            f"Fitted α = {pl.alpha:.3f} ± {pl.alpha_se:.3f}.")


def audit_block(audits, counts, key: str, *, ccdf_figures: int = MAX_GROUP_FIGURES) -> Block:
    """The CCDF of each audit (the first ``ccdf_figures``) and, for several, the groups side by side."""
    figures = []
    pairs = list(zip(audits, counts, strict=True))[:ccdf_figures]
    for i, (a, c) in enumerate(pairs):
        alt = _ccdf_alt(a)
        svg = draw_svg(lambda a=a, c=c: plot_audit(shown(a, "source", "group"), c.counts), key=f"{key}-ccdf-{i}",
                       alt=alt)
        figures.append(Figure(key=f"{key}-ccdf-{i}", title=f"CCDF with the fitted tails: {a.label}", alt=alt,
                              table=_fits_table(a), svg=svg))
    tables = ()
    if len(audits) > 1:
        rows = tuple(tuple(a.summary_row()[k] for k in SUMMARY_COLUMNS) for a in audits)
        summary = Table(caption="Tail audit per group", columns=SUMMARY_COLUMNS, rows=rows, open_rows=LONG_TABLE_ROWS,
                        summary=_verdict_tally(audits))
        tally = {}
        for a in audits:
            tally[a.verdict.verdict] = tally.get(a.verdict.verdict, 0) + 1
        alt = (f"{len(audits)} groups side by side: " + ", ".join(f"{n} {k}" for k, n in sorted(tally.items()))
               + "; α̂ with its standard error, bootstrap p_gof against p*, Vuong z against ±z*.")
        svg = draw_svg(lambda: plot_audit_groups([shown(a, "source", "group") for a in audits]), key=f"{key}-groups",
                       alt=alt)
        figures.insert(0, Figure(key=f"{key}-groups", title="Tail audit per group (paper Fig. 4 layout)", alt=alt,
                                 table=summary, svg=svg))
        if 0 < ccdf_figures < len(audits):
            tables = (Table(caption=f"Groups beyond the first {ccdf_figures} have no CCDF figure; their verdicts",
                            columns=("source", "group", "verdict", "reason"),
                            rows=tuple((a.source, a.group, a.verdict.verdict, a.verdict.reason)
                                       for a in audits[ccdf_figures:])),)
    return Block(title="Tail audit", text="x_min by KS minimisation, exact discrete MLE of α, bootstrap p_gof with "
                 "x_min re-estimated in every replicate, truncated power law against log-normal by Vuong's test "
                 "(paper Definitions 3.1–3.5). α̂ is confirmatory: it moves with x_min (paper Appendix D).",
                 figures=tuple(figures), tables=tables)


def concentration_block(counts, key: str, group_by: str | None, *, rows: tuple | None = None) -> Block:
    """Rank-frequency and Lorenz curves of ``counts``; ``rows``: their :func:`concentration`, if measured already."""
    if rows is None:
        rows = tuple(concentration(c) for c in counts)  # as ctwm concentration measures each trace or group
    report = ConcentrationReport(rows=rows, events=counts[0].events, group_by=group_by,
                                 counts=tuple(c.counts for c in counts))
    labels = [series_label(r.source, r.group) for r in rows]
    d = [r.to_dict() for r in rows]
    table = Table(caption="Concentration of per-item counts (as ctwm concentration prints it)",
                  columns=("trace", *CONCENTRATION_COLUMNS),
                  rows=tuple((lab, *(x[k] for k in CONCENTRATION_COLUMNS)) for lab, x in zip(labels, d, strict=True)),
                  open_rows=LONG_TABLE_ROWS, summary="" if len(rows) <= LONG_TABLE_ROWS else (
                      f"{len(rows):,} series; Gini median {_median([r.gini for r in rows]):.3f} (from "
                      f"{min(r.gini for r in rows):.3f} to {max(r.gini for r in rows):.3f})."))
    k0 = rows[0]
    alt = (f"Gini {k0.gini:.3f}: the top 10% of items take {k0.top10_share:.1%} of the accesses; "
           f"max/median {k0.max_over_median:.3g}." if len(rows) == 1 else
           f"Gini from {min(r.gini for r in rows):.3f} to {max(r.gini for r in rows):.3f} over {len(rows)} groups; "
           f"top-10% share from {min(r.top10_share for r in rows):.1%} to {max(r.top10_share for r in rows):.1%}.")
    if len(rows) > BAND_OVER:  # drawn as the median with a band (plots.bands): the alt says so and names outliers
        named = [labels[i] for i in outliers([r.gini for r in rows])]
        alt += (f" Drawn as the median of the {len(rows)} series with their {BAND[0]:g}th–{BAND[1]:g}th percentile "
                "band; " + (f"outliers by Gini (Tukey's fences): {', '.join(named)}." if named else
                            "no series is an outlier by Gini (Tukey's fences)."))
    fig = Figure(key=f"{key}-conc", title="Rank–frequency and Lorenz curves", alt=alt, table=table,
                 svg=draw_svg(lambda: plot_concentration(dataclasses.replace(
                     report, rows=tuple(shown(r, "source", "group") for r in rows))), key=f"{key}-conc", alt=alt))
    return Block(title="Concentration", figures=(fig,))


def _psd_block(path, read, events, scan, psd_run, key: str, notes: list[str]) -> Block | None:
    run = psd_run
    if run is None and (scan.runs or 0) > 1:
        per_run = item_counts(scan_paths([path], read, group_by="run")[0], events)
        run = max(per_run, key=lambda c: (c.n_events, str(c.group))).group
        notes.append(f"the trace holds {scan.runs} runs (different clocks): the PSD is of run {run}, the one with "
                     "the most accesses (choose another with psd_run / --psd-run)")
    try:
        res = psd_of_trace(path, read, series="core", events=events, run=run)
    except InputError as exc:
        notes.append(f"no PSD: {exc}")
        return None
    verdict = "inside" if res.in_beta_band else "outside"
    alt = (f"β = {res.beta:.3f} ± {res.beta_se:.3f} (R² {res.r2:.3f}) over {res.band[0]:.3g}–{res.band[1]:.3g} "
           f"cycles/step: {verdict} the 1/f band [{res.beta_band[0]:g}, {res.beta_band[1]:g}].")
    d = res.to_dict()
    fields = ("series", "run", "beta", "beta_se", "r2", "band", "beta_band", "in_beta_band", "n_fit_bins", "nperseg",
              "n_steps", "series_total", "core_items")
    table = Table(caption="PSD exponent (as ctwm psd prints it)", columns=("field", "value"),
                  rows=tuple((f, d.get(f)) for f in fields))
    return Block(title="Temporal structure (PSD)", figures=(Figure(
        key=f"{key}-psd", title="Welch PSD of the core series with its fitted band", alt=alt, table=table,
        svg=draw_svg(lambda: plot_psd(shown(res, "source", "run", "series")), key=f"{key}-psd", alt=alt)),))


def _health_alt(h) -> str:
    g, m = h.growth, h.metrics
    parts = [f"store growth is {g.classification} ({g.reason})"]
    for name in ("context_usage", "stale_hit_share", "revoked_share"):
        if m.get(name) is not None:
            parts.append(f"{name} {m[name]:.3g}")
    return "Memory health: " + "; ".join(parts) + "."


def _health_table(h) -> Table:
    rows = [(k, v, METRICS[k]) for k, v in h.metrics.items()]
    rows.append(("growth_classification", h.growth.classification, h.growth.reason))
    return Table(caption=f"Memory-health metrics of {h.source}" + (f" (run {h.run})" if h.run else ""),
                 columns=("metric", "value", "definition"), rows=tuple(rows))


def _health_block(path, read, objects, budget, key: str, group_by, counts, notes: list[str]) -> tuple[Block, Any]:
    """The memory-health block, and the pooled report it shows (for the section's lead)."""
    pooled = _grouped_health(path, read, objects, budget, group_by, notes)
    notes += [f"health: {w}" for w in pooled.warnings]
    alt = _health_alt(pooled)
    figures = [Figure(key=f"{key}-health", title="Store-size growth and success against memory volume", alt=alt,
                      table=_health_table(pooled), svg=draw_svg(lambda: plot_health(pooled), key=f"{key}-health",
                                                                alt=alt))]
    tables = []
    dead = getattr(pooled, "dead_weight", None)
    if dead is not None:
        tables.append(dead_weight_table(dead))
    if group_by == "run" and len(counts) > 1:
        for i, c in enumerate(counts[:MAX_GROUP_FIGURES]):
            h = health_of_trace(path, read, objects=objects, budget=budget, run=c.group)
            alt_i = _health_alt(h)
            figures.append(Figure(key=f"{key}-health-{i}", title=f"Memory health of run {c.group}", alt=alt_i,
                                  table=_health_table(h),
                                  svg=draw_svg(lambda h=h: plot_health(h), key=f"{key}-health-{i}", alt=alt_i)))
    elif pooled.groups:
        notes.append(f"memory health per {group_by}: the figures are of the pooled store; the memory lists are "
                     f"also per {group_by} (as ctwm health --group-by {group_by} prints them)")
    lists = memory_lists(pooled, notes)
    return Block(title="Memory health", text="Context usage, stale hits, revoked share and the growth class of the "
                 "live store (as ctwm health prints them).", figures=tuple(figures), tables=tuple(tables),
                 parts=lists), pooled


def dead_weight_table(dead: Any) -> Table:
    """The dead-weight numbers ``ctwm health`` prints, in words: the window, live and never-retrieved memories
    (and tokens, when sizes are known) and the shares; what the trace does not carry is left out, not shown as a
    row of dashes (the caption says which)."""
    d = dead.to_dict() if hasattr(dead, "to_dict") else dict(dead)
    unit = d.get("window_unit") or d.get("time_unit") or "step"
    if d.get("window") is None:
        window = f"the whole trace (to {unit} {fmt(d.get('window_end'))})" if d.get("window_end") is not None \
            else "the whole trace"
    else:
        window = f"the last {fmt(d['window'])} {unit}s ({fmt(d.get('window_start'))} to {fmt(d.get('window_end'))})"
    rows: list[tuple[Any, ...]] = [("Window", window)]
    for k in ("live", "never_retrieved", "dead_weight_share", "live_tokens", "never_retrieved_tokens",
              "dead_token_share"):
        if d.get(k) is not None:
            rows.append((header(k), d[k]))
    missing = [header(k).lower() for k in ("live_tokens", "never_retrieved_tokens") if d.get(k) is None]
    caption = "Dead weight (memories kept but never used)"
    summary = str(d.get("definition") or "")
    if missing:
        summary += ("; " if summary else "") + "no token sizes in the trace or objects: " + " and ".join(missing) \
            + " not known"
    return Table(caption=caption, columns=("Quantity", "Value"), rows=tuple(rows), summary=summary)


def _grouped_health(path, read, objects, budget, group_by, notes: list[str]):
    """``ctwm health`` of the trace, per ``group_by`` scope when one is given and the trace has it (else pooled,
    with a note saying why)."""
    if group_by is None:
        return health_of_trace(path, read, objects=objects, budget=budget)
    try:
        return health_of_trace(path, read, objects=objects, budget=budget, group_by=group_by)
    except InputError as exc:
        notes.append(f"memory health per {group_by}: {exc}; the view is pooled")
        return health_of_trace(path, read, objects=objects, budget=budget)


def _simulate_block(path, read, events, taus, core, slots, key: str, notes: list[str]) -> Block | None:
    try:
        sim = simulate_trace(path, taus, core=core, budget=slots, columns=read, events=events)
    except InputError as exc:
        notes.append(f"no CTWM allocation: {exc}")
        return None
    rows = tuple(tuple(r.to_dict()[k] for k in SIM_COLUMNS) for r in sim.results)
    table = Table(caption=f"Accesses served under b(r; τ) ∝ r^-τ, K = {sim.core}, B = {sim.budget:,} "
                  f"({sim.ranking} ranking; as ctwm simulate --trace prints it)",
                  columns=("τ", "served by the core", "in the prompt", "summarised", "dropped"), rows=rows)
    served = [r.access_share_prompt for r in sim.results]
    flat = max(served) - min(served) <= 1e-12
    if flat:
        where = f"the same {served[0]:.1%} at every τ"
    else:
        best = max(sim.results, key=lambda r: (r.access_share_prompt, -r.tau))
        where = f"{min(served):.1%}–{max(served):.1%} of accesses (most at τ = {best.tau:.3g})"
    alt = (f"Over τ from {sim.results[0].tau:g} to {sim.results[-1].tau:g} the prompt serves {where}; dropped at most "
           f"{max(r.access_share_dropped for r in sim.results):.1%}.")
    text = ""
    if sim.max_list_length is not None and sim.max_list_length <= sim.core and len(sim.results) > 1:
        # the note ctwm simulate --trace prints under its table, in the same words
        text = (f"Note: every step lists at most {sim.max_list_length} items, no more than the core K = {sim.core}: "
                "every listed item gets a core position whatever τ, so the rows per τ are identical; a smaller "
                "-K/--core makes τ matter.")
    core_items = Table(caption=f"The core: top {len(sim.core_items)} items by accesses", columns=("rank", "item",
                       "accesses"), rows=tuple((i + 1, item, n) for i, (item, n) in
                                               enumerate(zip(sim.core_items, sim.core_item_counts, strict=True))))
    return Block(title="What a CTWM allocation would do", text=text, figures=(Figure(
        key=f"{key}-tau", title="Shares of accesses served over the τ sweep", alt=alt, table=table,
        svg=draw_svg(lambda: plot_tau_sweep(sim.allocation, trace=shown(sim, "source")), key=f"{key}-tau",
                     alt=alt)),),
        tables=(core_items,))
