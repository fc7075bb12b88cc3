"""Per-metric accumulators of :func:`~ctwm_cli.health.report.health_of_events`.

The report makes one pass over the event rows in time order. A :class:`StoreState` keeps what every
metric shares — the live store, what is revoked or expired, the staleness of each use — and each
accumulator takes the rows it needs (``feed``) and turns them into its result (``finish``). The
definitions are in the :mod:`.report` docstring.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping

import numpy as np

from ..errors import InputError
from ..results import ToDict, result
from ..traces.objects import MemoryObjects

MAINTENANCE_WARN = 0.10
NON_ITEM_EVENTS = frozenset({"search", "context", "task_outcome"})
REVOKING = {"supersede": "superseded", "archive": "archived"}
REMOVING = frozenset({"supersede", "archive", "evict"})
USES = frozenset({"retrieve", "inject"})
SUCCESS = frozenset({"success", "succeeded", "successful", "pass", "passed", "ok", "true", "1", "1.0", "yes"})
FAILURE = frozenset({"failure", "failed", "fail", "error", "false", "0", "0.0", "no"})
_NAN = float("nan")


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


def parse_outcome(value: str, source: str) -> bool:
    v = str(value).strip().lower()
    if v in SUCCESS:
        return True
    if v in FAILURE:
        return False
    raise InputError(
        f"{source}: outcome must be success/failure (or pass/fail, ok/error, true/false, 1/0), got {value!r}"
    )


class StoreState:
    """The live store and the staleness of entries, updated row by row.

    Sizes are kept relative to the (not yet known) initial store: an item whose first row is not a
    write was in the store when the trace began, which is learnt only when that row arrives, so
    ``size`` is ``live additions - removals`` and ``initial`` is added at the end.
    """

    def __init__(self, objects: MemoryObjects | None) -> None:
        self.valid_until: Mapping[str, float | None] = objects.valid_until if objects else {}
        self.seen: set[str] = set()
        self.live: set[str] = set()
        self.initial = 0
        self.size = 0  # relative to the initial store
        self.revoked_at: dict[str, str] = {}
        self.first_write: dict[str, float] = {}
        # object-table supersedes: old -> [(new, created_at or None)]
        self.obj_supersedes: dict[str, list[tuple[str, float | None]]] = defaultdict(list)
        self.obj_edges: list[tuple[str, str]] = []
        if objects is not None:
            for new, olds in objects.supersedes.items():
                born = objects.created_at.get(new)
                for old in olds:
                    self.obj_edges.append((old, new))
                    self.obj_supersedes[old].append((new, born))

    def apply(self, item: str, event: str, t: float) -> int:
        """Update the store with one item row at time ``t``; return the change of the live size."""
        if item not in self.seen:
            self.seen.add(item)
            if event != "write":
                self.initial += 1
                self.live.add(item)
        delta = 0
        if event == "write":
            self.first_write.setdefault(item, t)
            if item not in self.live:
                self.live.add(item)
                delta = 1
        elif event in REMOVING:
            if item in self.live:
                self.live.discard(item)
                delta = -1
            if event in REVOKING and item not in self.revoked_at:
                self.revoked_at[item] = REVOKING[event]
        self.size += delta
        return delta

    def stale_reason(self, item: str, t: float) -> str | None:
        """Why a use of ``item`` at time ``t`` is stale (``superseded``/``archived``/``expired``), else None."""
        reason = self.revoked_at.get(item)
        if reason is None and self.obj_superseded_from(item) <= t:
            reason = "superseded"
        if reason is None:
            vu = self.valid_until.get(item)
            if vu is not None and t > vu:
                reason = "expired"
        return reason

    def obj_superseded_from(self, item: str) -> float:
        """When the object table makes ``item`` superseded: its superseder's ``created_at``, else the
        superseder's first write so far (rows come in time order, so a later write is not known yet)."""
        best = math.inf
        for new, born in self.obj_supersedes.get(item, ()):
            best = min(best, born if born is not None else self.first_write.get(new, math.inf))
        return best

    def revoked_items(self) -> set[str]:
        return set(self.revoked_at) | set(self.obj_supersedes)


class ContextAcc:
    """Prompt and injected-memory tokens per (run, step)."""

    def __init__(self, mem_event: str | None) -> None:
        self.mem_event = mem_event
        self.step_keys: set = set()
        self.mem_tokens: dict = defaultdict(int)
        self.ctx_tokens: dict = {}
        self.has_mem_tokens = False

    def feed(self, key, event: str, tokens: int | None) -> None:
        self.step_keys.add(key)
        if tokens is None:
            return
        if event == self.mem_event:
            self.mem_tokens[key] += tokens
            self.has_mem_tokens = True
        elif event == "context":
            self.ctx_tokens[key] = max(self.ctx_tokens.get(key, 0), tokens)

    def finish(self, budget: int | None, notes: list[str]) -> ContextUsage:
        keys, has_mem = self.step_keys, self.has_mem_tokens
        n = len(keys)
        mem_vals = np.array([self.mem_tokens.get(k, 0) for k in keys], dtype=float)
        mem_mean = float(mem_vals.mean()) if n and has_mem else _NAN
        mem_max = float(mem_vals.max()) if n and has_mem else _NAN
        ctx_keys = list(self.ctx_tokens)
        ctx_vals = np.array([self.ctx_tokens[k] for k in ctx_keys], dtype=float)
        ctx_mean = float(ctx_vals.mean()) if ctx_keys else _NAN
        share_ctx = _NAN
        if ctx_keys and has_mem and ctx_vals.sum() > 0:
            share_ctx = float(sum(self.mem_tokens.get(k, 0) for k in ctx_keys) / ctx_vals.sum())
        usage = mshare = over_share = _NAN
        if budget is not None:
            usage = float(np.mean(ctx_vals / budget)) if ctx_keys else _NAN
            mshare = mem_mean / budget
            if n and (ctx_keys or has_mem):
                over = [self.ctx_tokens.get(k, self.mem_tokens.get(k, 0)) > budget for k in keys]
                over_share = float(np.mean(over))
        else:
            notes.append("no --budget: context usage and memory token share are not computed")
        if not ctx_keys:
            notes.append("no context rows (prompt tokens per model call): context usage is not available")
        return ContextUsage(
            budget=budget, steps=n, memory_event=self.mem_event if has_mem else None, memory_tokens_mean=mem_mean,
            memory_tokens_max=mem_max, context_steps=len(ctx_keys), context_tokens_mean=ctx_mean,
            context_usage=usage, memory_token_share=mshare, memory_share_of_context=share_ctx,
            steps_over_budget=over_share,
        )


class MaintenanceAcc:
    def __init__(self) -> None:
        self.steps: set = set()

    def feed(self, key, event: str) -> None:
        if event == "maintain":
            self.steps.add(key)

    def finish(self, n_steps: int, warnings: list[str]) -> Maintenance:
        m = len(self.steps)
        ratio = m / n_steps if n_steps else _NAN
        if n_steps and ratio > MAINTENANCE_WARN:
            warnings.append(
                f"maintenance steps are {ratio:.1%} of all steps ({m} of {n_steps}), above {MAINTENANCE_WARN:.0%}"
            )
        return Maintenance(steps=n_steps, maintenance_steps=m, maintenance_ratio=ratio, warn_above=MAINTENANCE_WARN)


class ChurnAcc:
    """Writes, removals and the live-size change of each task; the size at each task's start."""

    def __init__(self) -> None:
        self.writes = self.removals = 0
        self.task_delta: dict[str, int] = defaultdict(int)
        self.task_start: dict[str, int] = {}  # relative size at the task's first row

    def see_task(self, task: str | None, size: int) -> None:
        if task is not None and task not in self.task_start:
            self.task_start[task] = size

    def feed(self, task: str | None, event: str, delta: int) -> None:
        if event == "write":
            self.writes += 1
        elif event in REMOVING:
            self.removals += 1
        if delta and task is not None:
            self.task_delta[task] += delta

    def finish(self, store: StoreState, notes: list[str]) -> StoreChurn:
        tasks = sorted(self.task_start)
        deltas = np.array([self.task_delta.get(t, 0) for t in tasks], dtype=float)
        if not tasks:
            notes.append("no task column: net new entries per task, failure attribution and the success curve need one")
        return StoreChurn(
            tasks=len(tasks), net_new_per_task=float(deltas.mean()) if tasks else _NAN,
            net_new_median=float(np.median(deltas)) if tasks else _NAN, writes=self.writes,
            removals=self.removals, initial_size=store.initial, final_size=store.initial + store.size,
        )


class RetrievalAcc:
    """Queries and hits per step, and hits on stale items."""

    def __init__(self, hit_event: str | None, has_search: bool) -> None:
        self.hit_event, self.has_search = hit_event, has_search
        self.query_steps: set = set()
        self.hit_steps: set = set()
        self.hits = self.stale = 0
        self.by_reason: dict[str, int] = defaultdict(int)
        self.superseded_hits: dict[str, int] = defaultdict(int)

    def feed_step(self, key, event: str) -> None:
        if event in ("search", "retrieve"):
            self.query_steps.add(key)
            if event == "retrieve":
                self.hit_steps.add(key)

    def feed_use(self, item: str, event: str, reason: str | None) -> None:
        if event != self.hit_event:
            return
        self.hits += 1
        if reason is not None:
            self.stale += 1
            self.by_reason[reason] += 1
            if reason == "superseded":
                self.superseded_hits[item] += 1

    def finish(self, has_step: bool, notes: list[str]) -> RetrievalHealth:
        hit_rate = _NAN
        if self.has_search and has_step:
            hit_rate = len(self.hit_steps) / len(self.query_steps) if self.query_steps else _NAN
        elif self.hit_event is not None:
            notes.append("no search rows: queries that found nothing are invisible, retrieval hit rate not computed")
        return RetrievalHealth(
            queries=len(self.query_steps), queries_with_hits=len(self.hit_steps), retrieval_hit_rate=hit_rate,
            hit_event=self.hit_event, hits=self.hits, stale_hits=self.stale,
            stale_hit_share=self.stale / self.hits if self.hits else _NAN,
            stale_by_reason=dict(sorted(self.by_reason.items())),
        )


class FailureAcc:
    """Task outcomes and the entries each task used (stale at the time, or revoked later)."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.outcome: dict[str, bool] = {}
        self.used: dict[str, set[str]] = defaultdict(set)
        self.stale_use: set[str] = set()

    def feed_outcome(self, task: str | None, outcome: str | None) -> None:
        if task is not None and outcome is not None:
            self.outcome[task] = parse_outcome(outcome, self.source)

    def feed_use(self, task: str | None, item: str, reason: str | None) -> None:
        if task is None:
            return
        self.used[task].add(item)
        if reason is not None:
            self.stale_use.add(task)

    def finish(self, store: StoreState, objects: MemoryObjects | None, t_end: float, has_tasks: bool,
               notes: list[str]) -> FailureAttribution:
        revoked = store.revoked_items()
        expired = {it for it, vu in store.valid_until.items() if vu is not None and vu < t_end}
        items = set(store.seen) | (set(objects.ids) if objects else set())
        failed = [t for t, ok in self.outcome.items() if not ok]
        succeeded = [t for t, ok in self.outcome.items() if ok]

        def implicated(task: str) -> bool:
            return task in self.stale_use or bool(self.used.get(task, set()) & revoked)

        attributed = sorted(t for t in failed if implicated(t))
        ok_revoked = sum(implicated(t) for t in succeeded)
        if has_tasks and not self.outcome:
            notes.append("no task outcomes (task_outcome rows or an outcome column): failure attribution and "
                         "success curve not computed")
        return FailureAttribution(
            tasks_with_outcome=len(self.outcome), failed_tasks=len(failed), failures_attributed=len(attributed),
            failure_attribution=len(attributed) / len(failed) if failed else _NAN,
            successes_with_revoked_use=ok_revoked / len(succeeded) if succeeded else _NAN,
            revoked_items=len(revoked & items), expired_items=len(expired & items), memory_items=len(items),
            revoked_share=len(revoked & items) / len(items) if items else _NAN, attributed_tasks=tuple(attributed[:20]),
        )


class GrowthAcc:
    """The live store size after each distinct time (relative to the initial store)."""

    def __init__(self) -> None:
        self.t: list[float] = []
        self.s: list[int] = []

    def feed(self, t: float, size: int) -> None:
        if self.t and self.t[-1] == t:
            self.s[-1] = size
        else:
            self.t.append(t)
            self.s.append(size)

    def series(self, initial: int) -> tuple[list[float], list[int]]:
        return self.t, [initial + s for s in self.s]
