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
  The live store: ``write`` adds an item, ``supersede`` / ``archive`` / ``evict`` remove it; an item
  first seen in another kind of row was already in the store when the trace began.
* **retrieval_hit_rate**: of the retrieval queries — steps with a ``search`` or ``retrieve`` row —
  the share that retrieved at least one item. Without ``search`` rows a query that found nothing
  leaves no trace, so the rate is reported only when the trace has ``search`` rows.
* **stale_hit_share**: of the hits (``retrieve`` rows; ``inject`` if there are none), the share on
  an item that at that moment was superseded (a ``supersede`` row before it, or a superseding
  object in the object table created before it), archived, or past its ``valid_until``.
* **failure_attribution**: of the tasks whose outcome is a failure, the share that used
  (``retrieve``/``inject``) an entry that was stale at that moment (superseded, archived or past
  ``valid_until``) or was revoked later (superseded or archived by the end of the trace; expiry
  after the use does not count: the entry was valid when used). The outcome of a task is the last non-null ``outcome`` of its
  rows (a ``task_outcome`` row, or an ``outcome`` column on any row): success / succeeded / pass /
  ok / true / 1, or failure / failed / fail / error / false / 0. **revoked_share**: items
  superseded or archived by the end / all memory items (the article's "revoked entries / total
  entries").
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

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence

import numpy as np

from .._version import __version__
from ..errors import InputError, UsageError
from ..progress import ProgressCallback
from ..results import ToDict, result
from ..traces.objects import MemoryObjects, read_objects
from ..traces.schema import ColumnMap
from .chains import Contradictions, contradiction_chains
from .checks import Check, CheckOutcome, evaluate_checks
from .curve import SuccessCurve, success_volume_curve
from .events import EventLog, load_events
from .growth import GrowthFit, classify_growth

MAINTENANCE_WARN = 0.10
MAX_SERIES_POINTS = 200
NON_ITEM_EVENTS = frozenset({"search", "context", "task_outcome"})
REVOKING = {"supersede": "superseded", "archive": "archived"}
REMOVING = frozenset({"supersede", "archive", "evict"})
SUCCESS = frozenset({"success", "succeeded", "successful", "pass", "passed", "ok", "true", "1", "1.0", "yes"})
FAILURE = frozenset({"failure", "failed", "fail", "error", "false", "0", "0.0", "no"})

#: Scalar metrics that ``--fail-on`` can test, with a one-line definition each.
METRICS: dict[str, str] = {
    "context_usage": "mean prompt tokens per step / budget (steps with a context row)",
    "memory_token_share": "mean injected memory tokens per step / budget",
    "memory_share_of_context": "injected memory tokens / prompt tokens",
    "steps_over_budget": "share of steps over the budget",
    "maintenance_ratio": "steps with a maintain row / all steps (warn > 0.10)",
    "net_new_per_task": "mean change of the live store size per task",
    "retrieval_hit_rate": "queries that retrieved >= 1 item / all queries (needs search rows)",
    "stale_hit_share": "hits on superseded, archived or expired items / all hits",
    "failure_attribution": "failed tasks that used a stale or since-revoked entry / failed tasks",
    "failures_attributed": "number of such failed tasks",
    "revoked_share": "superseded or archived items / all memory items",
    "growth_slope": "OLS slope of the live store size per time unit",
    "growth_rate_change": "relative change of the growth rate across the trace",
    "store_size": "live store size at the end of the trace",
    "success_rate": "successful tasks / tasks with an outcome",
    "inflection_volume": "store size at the knee of the success-vs-volume curve",
    "supersede_cycles": "number of supersede cycles",
    "max_chain_length": "items on the longest supersede chain",
    "superseded_but_retrieved": "items retrieved after they were superseded",
}


@result
class ContextUsage(ToDict):
    budget: int | None
    steps: int
    memory_event: str | None  # "inject" or "retrieve": whose tokens count as injected memory
    memory_tokens_mean: float
    memory_tokens_max: float
    context_steps: int
    context_tokens_mean: float
    context_usage: float
    memory_token_share: float
    memory_share_of_context: float
    steps_over_budget: float


@result
class Maintenance(ToDict):
    steps: int
    maintenance_steps: int
    maintenance_ratio: float
    warn_above: float


@result
class StoreChurn(ToDict):
    tasks: int
    net_new_per_task: float
    net_new_median: float
    writes: int
    removals: int
    initial_size: int
    final_size: int


@result
class RetrievalHealth(ToDict):
    queries: int
    queries_with_hits: int
    retrieval_hit_rate: float
    hit_event: str | None
    hits: int
    stale_hits: int
    stale_hit_share: float
    stale_by_reason: dict[str, int]


@result
class FailureAttribution(ToDict):
    tasks_with_outcome: int
    failed_tasks: int
    failures_attributed: int
    failure_attribution: float
    successes_with_revoked_use: float  # same share among successful tasks (a baseline)
    revoked_items: int  # superseded or archived by the end of the trace
    expired_items: int  # past valid_until at the end of the trace
    memory_items: int
    revoked_share: float
    attributed_tasks: tuple[str, ...]


@result
class HealthReport(ToDict):
    source: str
    format: str
    objects: dict | None
    rows: int
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
    warnings: tuple[str, ...]
    notes: tuple[str, ...]
    checks: tuple[CheckOutcome, ...] = ()
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
            "stale_hit_share": _num(r.stale_hit_share),
            "failure_attribution": _num(f.failure_attribution),
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
        import dataclasses

        return dataclasses.replace(self, checks=evaluate_checks(checks, self.metrics))


def _num(x: float | None) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)


def health_of_trace(
    path: str,
    columns: ColumnMap | None = None,
    *,
    objects: str | MemoryObjects | None = None,
    budget: int | None = None,
    run: str | None = None,
    input_format: str = "auto",
    extra_columns: Mapping[str, str] | None = None,
    checks: Sequence[Check] = (),
    progress: ProgressCallback | None = None,
) -> HealthReport:
    """Every memory-health metric of the trace at ``path`` (see the module docstring)."""
    if budget is not None and (isinstance(budget, bool) or int(budget) != budget or budget < 1):
        raise UsageError(f"--budget must be a positive integer (tokens), got {budget!r}")
    objs = read_objects(objects) if isinstance(objects, str) else objects
    log = load_events(
        path, columns, time_kind=objs.time_kind if objs is not None else None, run=run,
        input_format=input_format, extra_columns=extra_columns, progress=progress,
    )
    report = health_of_events(log, objects=objs, budget=budget, run=run)
    return report.with_checks(checks) if checks else report


def health_of_events(
    log: EventLog, *, objects: MemoryObjects | None = None, budget: int | None = None, run: str | None = None
) -> HealthReport:
    nan = float("nan")
    notes: list[str] = []
    warnings: list[str] = []
    kinds = set(log.event)
    hit_event = "retrieve" if "retrieve" in kinds else ("inject" if "inject" in kinds else None)
    mem_event = "inject" if "inject" in kinds else ("retrieve" if "retrieve" in kinds else None)

    # Objects: supersede edges, the time from which each item counts as superseded, expiry times.
    valid_until: Mapping[str, float | None] = objects.valid_until if objects else {}
    first_write: dict[str, float] = {}
    for it, ev, t in zip(log.item, log.event, log.time, strict=True):
        if ev == "write" and it not in first_write:
            first_write[it] = t
    edges: list[tuple[str, str]] = []
    obj_superseded_from: dict[str, float] = {}
    if objects is not None:
        for new, olds in objects.supersedes.items():
            born = objects.created_at.get(new)
            if born is None:
                born = first_write.get(new, math.inf)  # unknown: revoked, but not known when
            for old in olds:
                edges.append((old, new))
                obj_superseded_from[old] = min(obj_superseded_from.get(old, math.inf), born)

    # Initial store: items whose first row is not a write.
    first_kind: dict[str, str] = {}
    for it, ev in zip(log.item, log.event, strict=True):
        if ev not in NON_ITEM_EVENTS and it not in first_kind:
            first_kind[it] = ev
    live = {it for it, k in first_kind.items() if k != "write"}
    initial_size = size = len(live)

    revoked_at: dict[str, str] = {}
    stale_by_reason: dict[str, int] = defaultdict(int)
    superseded_hits: dict[str, int] = defaultdict(int)
    hits = stale = writes = removals = 0
    task_delta: dict[str, int] = defaultdict(int)
    task_start_size: dict[str, int] = {}
    task_used: dict[str, set[str]] = defaultdict(set)
    task_stale_use: set[str] = set()
    task_outcome: dict[str, bool] = {}
    series_t: list[float] = []
    series_s: list[int] = []
    # Per-step accumulators (need a step column).
    step_keys: set = set()
    mem_tokens: dict = defaultdict(int)
    ctx_tokens: dict = {}
    maint_steps: set = set()
    query_steps: set = set()
    hit_steps: set = set()
    has_search = "search" in kinds
    for i in range(len(log)):
        it, ev, t, task = log.item[i], log.event[i], log.time[i], log.task[i]
        if task is not None and task not in task_start_size:
            task_start_size[task] = size
        out = log.outcome[i]
        if task is not None and out is not None:
            task_outcome[task] = _outcome(out, log.source)
        if log.has_step and ev != "task_outcome":
            key = (log.run[i], log.step[i])
            step_keys.add(key)
            tok = log.tokens[i]
            if ev == mem_event and tok is not None:
                mem_tokens[key] += tok
            elif ev == "context" and tok is not None:
                ctx_tokens[key] = max(ctx_tokens.get(key, 0), tok)
            if ev == "maintain":
                maint_steps.add(key)
            if ev in ("search", "retrieve"):
                query_steps.add(key)
                if ev == "retrieve":
                    hit_steps.add(key)
        if ev in NON_ITEM_EVENTS:
            continue
        delta = 0
        if ev == "write":
            writes += 1
            if it not in live:
                live.add(it)
                delta = 1
        elif ev in REMOVING:
            removals += 1
            if it in live:
                live.discard(it)
                delta = -1
            if ev in REVOKING and it not in revoked_at:
                revoked_at[it] = REVOKING[ev]
            by = log.by[i]
            if ev == "supersede" and by:
                edges.append((it, by))
        if ev in ("retrieve", "inject"):
            reason = revoked_at.get(it)
            if reason is None and obj_superseded_from.get(it, math.inf) <= t:
                reason = "superseded"
            if reason is None:
                vu = valid_until.get(it)
                if vu is not None and t > vu:
                    reason = "expired"
            if task is not None:
                task_used[task].add(it)
                if reason is not None:
                    task_stale_use.add(task)
            if ev == hit_event:
                hits += 1
                if reason is not None:
                    stale += 1
                    stale_by_reason[reason] += 1
                    if reason == "superseded":
                        superseded_hits[it] += 1
        if delta:
            size += delta
            if task is not None:
                task_delta[task] += delta
        if series_t and series_t[-1] == t:
            series_s[-1] = size
        else:
            series_t.append(t)
            series_s.append(size)

    t_end = log.time[-1] if len(log) else nan
    unit = {"timestamp": "second", "step": "step", "row": "row"}[log.time_kind]
    if log.time_kind == "row":
        notes.append("no step or ts column: time is the row number; per-step metrics are not available")

    # Context usage.
    n_steps = len(step_keys)
    mem_vals = np.array([mem_tokens.get(k, 0) for k in step_keys], dtype=float) if n_steps else np.array([])
    has_mem_tokens = log.has_tokens and mem_event is not None and any(
        tok is not None for ev, tok in zip(log.event, log.tokens, strict=True) if ev == mem_event
    )
    mem_mean = float(mem_vals.mean()) if n_steps and has_mem_tokens else nan
    mem_max = float(mem_vals.max()) if n_steps and has_mem_tokens else nan
    ctx_keys = list(ctx_tokens)
    ctx_vals = np.array([ctx_tokens[k] for k in ctx_keys], dtype=float)
    ctx_mean = float(ctx_vals.mean()) if ctx_keys else nan
    share_ctx = (
        float(sum(mem_tokens.get(k, 0) for k in ctx_keys) / ctx_vals.sum()) if ctx_keys and has_mem_tokens and ctx_vals.sum() > 0 else nan
    )
    if budget is not None:
        usage = float(np.mean(ctx_vals / budget)) if ctx_keys else nan
        mshare = mem_mean / budget
        if n_steps and (ctx_keys or has_mem_tokens):
            over = [(ctx_tokens[k] if k in ctx_tokens else mem_tokens.get(k, 0)) > budget for k in step_keys]
            over_share = float(np.mean(over))
        else:
            over_share = nan
    else:
        usage = mshare = over_share = nan
        notes.append("no --budget: context usage and memory token share are not computed")
    if not ctx_keys:
        notes.append("no context rows (prompt tokens per model call): context usage is not available")
    context = ContextUsage(
        budget=budget, steps=n_steps, memory_event=mem_event if has_mem_tokens else None, memory_tokens_mean=mem_mean,
        memory_tokens_max=mem_max, context_steps=len(ctx_keys), context_tokens_mean=ctx_mean, context_usage=usage,
        memory_token_share=mshare, memory_share_of_context=share_ctx, steps_over_budget=over_share,
    )

    # Maintenance.
    ratio = len(maint_steps) / n_steps if n_steps else nan
    if n_steps and ratio > MAINTENANCE_WARN:
        warnings.append(
            f"maintenance steps are {ratio:.1%} of all steps ({len(maint_steps)} of {n_steps}), above {MAINTENANCE_WARN:.0%}"
        )
    maintenance = Maintenance(steps=n_steps, maintenance_steps=len(maint_steps), maintenance_ratio=ratio, warn_above=MAINTENANCE_WARN)

    # Churn per task.
    tasks = sorted(task_start_size)
    deltas = np.array([task_delta.get(t, 0) for t in tasks], dtype=float)
    if not tasks:
        notes.append("no task column: net new entries per task, failure attribution and the success curve need one")
    churn = StoreChurn(
        tasks=len(tasks), net_new_per_task=float(deltas.mean()) if tasks else nan,
        net_new_median=float(np.median(deltas)) if tasks else nan, writes=writes, removals=removals,
        initial_size=initial_size, final_size=size,
    )

    # Retrieval.
    if has_search and log.has_step:
        hit_rate = len(hit_steps) / len(query_steps) if query_steps else nan
    else:
        hit_rate = nan
        if hit_event is not None:
            notes.append("no search rows: queries that found nothing are invisible, retrieval hit rate not computed")
    retrieval = RetrievalHealth(
        queries=len(query_steps), queries_with_hits=len(hit_steps), retrieval_hit_rate=hit_rate, hit_event=hit_event,
        hits=hits, stale_hits=stale, stale_hit_share=stale / hits if hits else nan,
        stale_by_reason=dict(sorted(stale_by_reason.items())),
    )

    # Failure attribution.
    revoked = set(revoked_at) | set(obj_superseded_from)
    expired = {it for it, vu in valid_until.items() if vu is not None and vu < t_end}
    items = set(first_kind) | (set(objects.ids) if objects else set())
    failed = [t for t, ok in task_outcome.items() if not ok]
    succeeded = [t for t, ok in task_outcome.items() if ok]

    def implicated(task: str) -> bool:
        return task in task_stale_use or bool(task_used.get(task, set()) & revoked)

    attributed = sorted(t for t in failed if implicated(t))
    ok_revoked = sum(implicated(t) for t in succeeded)
    if tasks and not task_outcome:
        notes.append("no task outcomes (task_outcome rows or an outcome column): failure attribution and success curve not computed")
    failures = FailureAttribution(
        tasks_with_outcome=len(task_outcome), failed_tasks=len(failed), failures_attributed=len(attributed),
        failure_attribution=len(attributed) / len(failed) if failed else nan,
        successes_with_revoked_use=ok_revoked / len(succeeded) if succeeded else nan,
        revoked_items=len(revoked & items), expired_items=len(expired & items), memory_items=len(items),
        revoked_share=len(revoked & items) / len(items) if items else nan, attributed_tasks=tuple(attributed[:20]),
    )

    growth = classify_growth(series_t, series_s, time_unit=unit)
    curve = None
    if task_outcome:
        with_out = sorted(task_outcome)
        curve = success_volume_curve([task_start_size.get(t, initial_size) for t in with_out],
                                     [1.0 if task_outcome[t] else 0.0 for t in with_out])
    contradictions = contradiction_chains(edges, superseded_hits)
    if contradictions.n_cycles:
        warnings.append(f"{contradictions.n_cycles} supersede cycle(s): entries supersede each other in a loop")
    return HealthReport(
        source=log.source, format=log.format, objects=objects.to_dict() if objects else None, rows=len(log),
        time_unit=unit, run=run, context=context, maintenance=maintenance, churn=churn, retrieval=retrieval,
        failures=failures, growth=growth, growth_series=tuple(zip(series_t, series_s, strict=True)),
        success_curve=curve, contradictions=contradictions, warnings=tuple(warnings), notes=tuple(notes),
    )


def _outcome(value: str, source: str) -> bool:
    v = str(value).strip().lower()
    if v in SUCCESS:
        return True
    if v in FAILURE:
        return False
    raise InputError(
        f"{source}: outcome must be success/failure (or pass/fail, ok/error, true/false, 1/0), got {value!r}"
    )
