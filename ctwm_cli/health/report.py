"""Memory-health metrics of one event trace (optionally with its memory-object table).

Definitions (shown by ``ctwm health --help`` and in the README):

* A *step* is a distinct (run, step) pair of the trace. A *task* is a distinct value of ``task``.
* **context_usage**: mean over steps with a ``context`` row of prompt tokens / ``--budget``
  (prompt tokens of a step = the largest ``tokens`` of its ``context`` rows).
* **memory_token_share**: injected memory tokens per step (sum of ``tokens`` of its ``inject``
  rows, or of ``retrieve`` rows when the trace has no ``inject``), averaged over all steps, / budget.
  **memory_share_of_context**: injected memory tokens / prompt tokens over steps with a context row.
  **steps_over_budget**: share of steps whose prompt (else injected memory) tokens exceed the budget.
* **maintenance_ratio**: steps with a ``maintain`` row / all steps (warning above 10%).
* **net_new_per_task**: change of the live store size over each task's rows, averaged over tasks.
  The live store: ``write`` adds an item, ``supersede`` / ``invalidate`` / ``archive`` / ``evict``
  remove it; an item first seen in another kind of row was already in the store when the trace began.
* **retrieval_hit_rate**: of the retrieval queries — steps with a ``search`` or ``retrieve`` row —
  the share whose results were used: at least one retrieved item is also injected (an ``inject``
  row) at the same step (``hit_definition`` "used"; the article asks whether retrieval helped, and
  a trace that logs the final injection list says so). **used_result_share**: retrieved results
  injected at their step / retrieved results. A trace without ``inject`` rows beside its
  ``retrieve`` rows falls back to "returned": the share of queries that retrieved anything, which
  needs ``search`` rows (without them a query that found nothing leaves no row).
* **stale_hit_share**: of the hits (``retrieve`` rows; ``inject`` if there are none), the share on
  an item that at that moment was superseded (a ``supersede`` row before it, or a superseding
  object in the object table created before it), invalidated, archived, or past its ``valid_until``.
* **Revocation** means the entry was found wrong: ``supersede`` or ``invalidate`` (or a superseding
  object in the object table). ``archive`` (routine consolidation) and ``evict`` (capacity) retire
  an entry without judging it and are counted apart (``archived_items``, ``evicted_items``).
  **revoked_share**: revoked items / all memory items (the article's "revoked entries / total
  entries").
* **failure_attribution**: a task *used a revoked entry* when it used (``retrieve``/``inject``) an
  entry that is revoked at any time in the trace (before the use: it was stale; after: it was
  wrong when used) or that was past its ``valid_until`` when used. failure_attribution =
  (failed tasks that did) / (failed tasks) − (successful tasks that did) / (successful tasks), with
  Newcombe's hybrid-score 95% interval; with no failed or no successful task the difference and its
  interval are not formed and the result says which. It shows whether failures go with such use more
  often than successes; it cannot show that an entry caused a failure (harder tasks may both read
  more memory and fail more). ``failures_attributed`` counts the failed tasks that did. The outcome
  of a task is the last non-null ``outcome`` of its rows (a ``task_outcome`` row, or an ``outcome``
  column on any row): success / succeeded / pass / ok / true / 1, or failure / failed / fail /
  error / false / 0.
* **growth**: live store size over time (``ts`` if every row has one, else ``step``) with its OLS
  slope and a converging / linear / accelerating classification (see :mod:`.growth`).
* **success curve**: success rate against store size at task start, and its inflection point
  (see :mod:`.curve`).
* **contradictions**: supersede cycles and chains, items superseded but still retrieved (see
  :mod:`.chains`).

The trace is treated as one memory store: rows of all runs update the same store in time order
(``--run`` selects one run).
"""

from __future__ import annotations

import dataclasses
import math
from collections import defaultdict
from collections.abc import Sequence

import numpy as np

from .._version import __version__
from ..common.gates import Check, CheckOutcome, evaluate_checks
from ..common.labels import subject_label
from ..common.results import ToDict, result
from ..traces.objects import MemoryObjects
from .accumulators import NON_ITEM_EVENTS, ChurnAcc, ContextAcc, FailureAcc, GrowthAcc, MaintenanceAcc, StoreState
from .chains import Contradictions, contradiction_chains
from .curve import SuccessCurve, success_volume_curve
from .deadweight import DeadWeight, DeadWeightAcc, Window, window_start
from .events import EventLog
from .growth import GrowthFit, classify_growth
from .hotlist import HotList, hot_list
from .lifecycle import USES
from .results import ContextUsage, FailureAttribution, Maintenance, RetrievalHealth, StoreChurn
from .retrieval import RetrievalAcc, StaleAboveCurrent, assign_queries, stale_above_current, subjects
from .scopes import ScopeSummary

MAX_SERIES_POINTS = 200
#: metrics that exist only with a prompt budget (a gate on them without one fails: "needs budget")
BUDGET_METRICS = ("context_usage", "memory_token_share", "steps_over_budget")

#: Scalar metrics that ``--fail-on`` can test, with a one-line definition each.
METRICS: dict[str, str] = {
    "context_usage": "mean prompt tokens per step / budget (steps with a context row)",
    "memory_token_share": "mean injected memory tokens per step / budget",
    "memory_share_of_context": "injected memory tokens / prompt tokens",
    "steps_over_budget": "share of steps over the budget",
    "maintenance_ratio": "steps with a maintain row / all steps (warn > 0.10)",
    "net_new_per_task": "mean change of the live store size per task",
    "retrieval_hit_rate": "queries with a retrieved item injected at their step / queries (else: that retrieved any)",
    "used_result_share": "retrieved results injected at their step / retrieved results",
    "stale_hit_share": "hits on superseded, invalidated, archived or expired items / all hits",
    "failure_attribution": "share of failed minus share of successful tasks that used a revoked or expired entry",
    "failed_revoked_use": "failed tasks that used a revoked (superseded/invalidated) or expired entry / failed",
    "succeeded_revoked_use": "the same share among successful tasks",
    "failures_attributed": "number of failed tasks that used a revoked or expired entry",
    "revoked_share": "superseded or invalidated items / all memory items (archive, evict apart)",
    "growth_slope": "OLS slope of the live store size per time unit",
    "growth_rate_change": "relative change of the growth rate across the trace",
    "store_size": "live store size at the end of the trace",
    "success_rate": "successful tasks / tasks with an outcome",
    "inflection_volume": "store size at the knee of the success-vs-volume curve",
    "supersede_cycles": "number of supersede cycles",
    "max_chain_length": "items on the longest supersede chain",
    "superseded_but_retrieved": "items retrieved after they were superseded",
    "dead_weight_share": "live memories never retrieved (in the window) / live memories",
    "dead_token_share": "tokens of live memories never retrieved / tokens of live memories",
    "stale_above_current_share": "queries ranking a stale memory above a live one on the same subject / queries "
                                 "that returned anything",
}


@result
class HealthReport(ToDict):
    source: str
    format: str
    objects: dict | None
    n_rows: int
    time_unit: str
    run: str | None
    context: ContextUsage
    maintenance: Maintenance
    churn: StoreChurn
    retrieval: RetrievalHealth
    failures: FailureAttribution
    growth: GrowthFit
    growth_series: tuple[tuple[float, int], ...]
    success_curve: SuccessCurve | None
    contradictions: Contradictions
    dead_weight: DeadWeight
    hot: HotList
    stale_above_current: StaleAboveCurrent
    warnings: tuple[str, ...]
    notes: tuple[str, ...]
    checks: tuple[CheckOutcome, ...] = ()
    group_by: str | None = None
    groups: tuple[ScopeHealth, ...] = ()  # one report per scope (--group-by), beside this pooled one
    version: str = __version__

    @property
    def metrics(self) -> dict[str, float | None]:
        c, r, f, g = self.context, self.retrieval, self.failures, self.growth
        curve = self.success_curve
        return {
            "context_usage": _num(c.context_usage),
            "memory_token_share": _num(c.memory_token_share),
            "memory_share_of_context": _num(c.memory_share_of_context),
            "steps_over_budget": _num(c.steps_over_budget),
            "maintenance_ratio": _num(self.maintenance.maintenance_ratio),
            "net_new_per_task": _num(self.churn.net_new_per_task),
            "retrieval_hit_rate": _num(r.retrieval_hit_rate),
            "used_result_share": _num(r.used_result_share),
            "stale_hit_share": _num(r.stale_hit_share),
            "failure_attribution": _num(f.failure_attribution),
            "failed_revoked_use": _num(f.failed_revoked_use),
            "succeeded_revoked_use": _num(f.succeeded_revoked_use),
            "failures_attributed": float(f.failures_attributed) if f.failed_tasks else None,
            "revoked_share": _num(f.revoked_share),
            "growth_slope": _num(g.slope),
            "growth_rate_change": _num(g.rate_change),
            "store_size": float(self.churn.final_size),
            "success_rate": _num(curve.success_rate) if curve else None,
            "inflection_volume": curve.inflection_volume if curve else None,
            "supersede_cycles": float(self.contradictions.n_cycles),
            "max_chain_length": float(self.contradictions.max_chain_length),
            "superseded_but_retrieved": float(self.contradictions.superseded_but_retrieved),
            "dead_weight_share": _num(self.dead_weight.dead_weight_share),
            "dead_token_share": _num(self.dead_weight.dead_token_share),
            "stale_above_current_share": _num(self.stale_above_current.stale_above_current_share),
        }

    def to_dict(self) -> dict:
        d = ToDict.to_dict(self)
        d["metrics"] = self.metrics
        d["growth_classification"] = self.growth.classification
        series = self.growth_series
        if len(series) > MAX_SERIES_POINTS:  # thinned for JSON; the plot uses every point
            idx = np.unique(np.linspace(0, len(series) - 1, MAX_SERIES_POINTS).round().astype(int))
            series = tuple(series[i] for i in idx)
        d["growth_series"] = [[t, s] for t, s in series]
        return d

    def with_checks(self, checks: Sequence[Check]) -> HealthReport:
        """Gate outcomes of the pooled report, then of each scope's (subject ``SOURCE[user=alice]``)."""
        needs = dict.fromkeys(BUDGET_METRICS, "budget") if self.context.budget is None else {}
        out = list(evaluate_checks(checks, self.metrics, subject=self.source, needs=needs))
        for g in self.groups:
            scope = subject_label(self.source, f"{self.group_by}={g.group}")
            out += evaluate_checks(checks, g.report.metrics, subject=scope, needs=needs)
        return dataclasses.replace(self, checks=tuple(out))


@result
class ScopeHealth(ToDict):
    """The health of one scope's rows (and its share of the memory-object table)."""

    group: str
    summary: ScopeSummary
    report: HealthReport


def _num(x: float | None) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)


def health_of_events(
    log: EventLog, *, objects: MemoryObjects | None = None, budget: int | None = None, run: str | None = None,
    window: Window | None = None, end: float | None = None, window_from: float | None = None,
) -> HealthReport:
    """Every metric of an event log, in one pass over its rows (see the module docstring); ``window``:
    dead weight over the last steps or seconds only (:mod:`.deadweight`; ``window_from``: the time it
    starts, default computed from this log); ``end``: the time the store is judged at (expiry, dead
    weight), default the last row's (one scope of a trace: the trace's). Each row's query is
    ``log.query`` when set (one scope of a trace: as the whole trace assigned them), else assigned here."""
    notes: list[str] = []
    warnings: list[str] = []
    kinds = set(log.event)
    hit_event = "retrieve" if "retrieve" in kinds else ("inject" if "inject" in kinds else None)
    mem_event = "inject" if "inject" in kinds else ("retrieve" if "retrieve" in kinds else None)
    store = StoreState(objects)
    context, maint, churn = ContextAcc(mem_event), MaintenanceAcc(), ChurnAcc()
    retrieval = RetrievalAcc(hit_event, kinds)
    queries = log.query if log.query is not None else assign_queries(log.run, log.step, log.event, log.item)
    failures, growth, dead = FailureAcc(log.source), GrowthAcc(), DeadWeightAcc()
    reads: dict[str, int] = defaultdict(int)
    edges = list(store.obj_edges)
    for i in range(len(log)):
        it, ev, t, task = log.item[i], log.event[i], log.time[i], log.task[i]
        churn.see_task(task, store.size)
        failures.feed_outcome(task, log.outcome[i])
        if log.has_step and ev != "task_outcome":
            key = (log.run[i], log.step[i])
            retrieval.feed_step(queries[i], log.run[i], log.step[i], ev, it)
            context.feed(key, ev, log.tokens[i], queries[i])
            maint.feed(key, ev)
        if ev in NON_ITEM_EVENTS:
            continue
        delta = store.apply(it, ev, t)
        dead.feed(it, ev, t, log.tokens[i])
        churn.feed(task, ev, delta)
        if ev == "supersede" and log.by[i]:
            edges.append((it, log.by[i]))
        if ev in USES:
            reason = store.stale_reason(it, t)
            failures.feed_use(task, it, reason)
            retrieval.feed_use(it, ev, reason, log.rank[i] if log.rank else None)
            if ev == "read":
                reads[it] += 1
        growth.feed(t, store.size)

    unit = {"timestamp": "second", "step": "step", "row": "row"}[log.time_kind]
    if log.time_kind == "row":
        notes.append("no step or ts column: time is the row number; per-step metrics are not available")
    ctx = context.finish(budget, notes)
    maintenance = maint.finish(ctx.steps, warnings)
    store_churn = churn.finish(store, notes)
    retr = retrieval.finish(log.has_step, notes)
    t_end = end if end is not None else log.time[-1] if len(log) else float("nan")
    fail = failures.finish(store, objects, t_end, bool(churn.task_start), notes)
    series_t, series_s = growth.series(store.initial)
    curve = None
    if failures.outcome:
        with_out = sorted(failures.outcome)
        curve = success_volume_curve([churn.task_start.get(t, 0) + store.initial for t in with_out],
                                     [1.0 if failures.outcome[t] else 0.0 for t in with_out])
    contradictions = contradiction_chains(edges, retrieval.superseded_hits)
    if contradictions.n_cycles:
        warnings.append(f"{contradictions.n_cycles} supersede cycle(s): entries supersede each other in a loop")
    if window_from is None and len(log):
        window_from = window_start(window, log.time, log.step, log.time_kind, t_end)
    dead_weight = dead.finish(store.live_at(t_end) if len(log) else {}, t_end if len(log) else None, window,
                              window_from, unit, notes, reads_logged=bool(kinds & {"search", *USES}))
    content = objects.content if objects is not None else {}
    hot = hot_list(retrieval.hit_count, reads, dead_weight.dead, store.lifecycle, content, hit_event)
    above = stale_above_current(retrieval, subjects(edges, objects.subject if objects is not None else {}))
    return HealthReport(
        source=log.source, format=log.format, objects=objects.to_dict() if objects else None, n_rows=len(log),
        time_unit=unit, run=run, context=ctx, maintenance=maintenance, churn=store_churn, retrieval=retr,
        failures=fail, growth=classify_growth(series_t, series_s, time_unit=unit),
        growth_series=tuple(zip(series_t, series_s, strict=True)), success_curve=curve,
        contradictions=contradictions, dead_weight=dead_weight, hot=hot, stale_above_current=above,
        warnings=tuple(warnings), notes=tuple(notes),
    )
