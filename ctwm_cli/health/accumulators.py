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

from ..common.errors import InputError
from ..stats.intervals import confidence_interval, newcombe_difference
from ..traces.objects import MemoryObjects
from .lifecycle import RETIRING, REVOKING, Lifecycle
from .results import (
    ATTRIBUTION_SCOPE,
    ContextUsage,
    FailureAttribution,
    Maintenance,
    StoreChurn,
)

MAINTENANCE_WARN = 0.10
NON_ITEM_EVENTS = frozenset({"search", "context", "task_outcome"})
#: Revocations: the entry was found wrong. Archive and evict retire an entry without saying it was wrong
#: (routine consolidation, capacity), so they are counted apart.
REMOVING = frozenset({*REVOKING, *RETIRING})
SUCCESS = frozenset({"success", "succeeded", "successful", "pass", "passed", "ok", "true", "1", "1.0", "yes"})
FAILURE = frozenset({"failure", "failed", "fail", "error", "false", "0", "0.0", "no"})
_NAN = float("nan")


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
    """The live store and the staleness of entries, updated row by row: the rows' transitions are
    those of :class:`~ctwm_cli.health.lifecycle.Lifecycle`; the memory-object table adds its
    ``valid_until`` and ``supersedes``.

    Sizes are kept relative to the (not yet known) initial store: an item whose first row is not a
    write was in the store when the trace began, which is learnt only when that row arrives, so
    ``size`` is ``live additions - removals`` and ``initial`` is added at the end.
    """

    def __init__(self, objects: MemoryObjects | None) -> None:
        self.valid_until: Mapping[str, float | None] = objects.valid_until if objects else {}
        self.lifecycle = Lifecycle(self.valid_until)
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

    @property
    def initial(self) -> int:
        return self.lifecycle.initial

    @property
    def size(self) -> int:
        return self.lifecycle.size

    @property
    def seen(self) -> set[str]:
        return set(self.lifecycle.items)

    def apply(self, item: str, event: str, t: float) -> int:
        """Update the store with one item row at time ``t``; return the change of the live size."""
        if event == "write":
            self.first_write.setdefault(item, t)
        return self.lifecycle.apply(item, event, t)

    def stale_reason(self, item: str, t: float) -> str | None:
        """Why a use of ``item`` at time ``t`` is stale (``superseded``/``invalidated``/``archived``/
        ``expired``), else None. An evicted entry is not stale: eviction says nothing about its content."""
        return self.lifecycle.stale_reason(item, t, self.obj_superseded_from(item))

    def obj_superseded_from(self, item: str) -> float:
        """When the object table makes ``item`` superseded: its superseder's ``created_at``, else the
        superseder's first write so far (rows come in time order, so a later write is not known yet)."""
        best = math.inf
        for new, born in self.obj_supersedes.get(item, ()):
            best = min(best, born if born is not None else self.first_write.get(new, math.inf))
        return best

    def revoked_items(self) -> set[str]:
        return self.lifecycle.revoked_items() | set(self.obj_supersedes)

    def live_at(self, t: float) -> dict[str, float | None]:
        """item -> when it last became live, for the items live at ``t`` (rows, valid_until, objects)."""
        live = self.lifecycle.live_items(t)
        return {it: since for it, since in live.items() if not self.obj_superseded_from(it) <= t}

    def retired(self, event: str) -> set[str]:
        return self.lifecycle.retired(event)


class ContextAcc:
    """Prompt tokens per (run, step); injected-memory tokens per memory step: each query (a search and
    the retrieve rows that belong to it, :mod:`.retrieval`) or (run, step) with inject rows. A step with
    only writes is no memory step: the memory token share is per search, not per call."""

    def __init__(self, mem_event: str | None) -> None:
        self.mem_event = mem_event
        self.step_keys: set = set()
        self.mem_keys: set = set()
        self.mem_tokens: dict = defaultdict(int)  # (run, step) -> memory tokens
        self.query_tokens: dict = defaultdict(int)  # memory step -> memory tokens
        self.ctx_tokens: dict = {}
        self.has_mem_tokens = False

    def feed(self, key, event: str, tokens: int | None, query=None) -> None:
        self.step_keys.add(key)
        mem_key = query if query is not None else key
        if event in ("search", "retrieve", "inject"):
            self.mem_keys.add(mem_key)
        if tokens is None:
            return
        if event == self.mem_event:
            self.mem_tokens[key] += tokens
            self.query_tokens[mem_key] += tokens
            self.has_mem_tokens = True
        elif event == "context":
            self.ctx_tokens[key] = max(self.ctx_tokens.get(key, 0), tokens)

    def finish(self, budget: int | None, notes: list[str]) -> ContextUsage:
        keys, has_mem = self.step_keys, self.has_mem_tokens
        n = len(keys)
        mem_vals = np.array([self.query_tokens.get(k, 0) for k in self.mem_keys], dtype=float)
        mem_mean = float(mem_vals.mean()) if mem_vals.size and has_mem else _NAN
        mem_max = float(mem_vals.max()) if mem_vals.size and has_mem else _NAN
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
            notes.append("no budget given: context usage and memory token share are not computed")
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


class FailureAcc:
    """Task outcomes and the entries each task used (revoked at any time, or expired when used)."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.outcome: dict[str, bool] = {}
        self.used: dict[str, set[str]] = defaultdict(set)
        self.expired_use: set[str] = set()

    def feed_outcome(self, task: str | None, outcome: str | None) -> None:
        if task is not None and outcome is not None:
            self.outcome[task] = parse_outcome(outcome, self.source)

    def feed_use(self, task: str | None, item: str, reason: str | None) -> None:
        if task is None:
            return
        self.used[task].add(item)
        if reason == "expired":
            self.expired_use.add(task)

    def finish(self, store: StoreState, objects: MemoryObjects | None, t_end: float, has_tasks: bool,
               notes: list[str]) -> FailureAttribution:
        revoked = store.revoked_items()
        expired = {it for it, vu in store.valid_until.items() if vu is not None and vu < t_end}
        items = set(store.seen) | (set(objects.ids) if objects else set())
        failed = [t for t, ok in self.outcome.items() if not ok]
        succeeded = [t for t, ok in self.outcome.items() if ok]

        def implicated(task: str) -> bool:
            return task in self.expired_use or bool(self.used.get(task, set()) & revoked)

        attributed = sorted(t for t in failed if implicated(t))
        ok_revoked = sum(implicated(t) for t in succeeded)
        nf, ns = len(failed), len(succeeded)
        pf = len(attributed) / nf if nf else _NAN
        ps = ok_revoked / ns if ns else _NAN
        ci, note = _difference_interval(len(attributed), nf, ok_revoked, ns)
        if has_tasks and not self.outcome:
            notes.append("no task outcomes (task_outcome rows or an outcome column): failure attribution and "
                         "success curve not computed")
        return FailureAttribution(
            tasks_with_outcome=len(self.outcome), failed_tasks=nf, succeeded_tasks=ns,
            failures_attributed=len(attributed), successes_with_revoked_use=ok_revoked, failed_revoked_use=pf,
            succeeded_revoked_use=ps, failure_attribution=pf - ps if nf and ns else _NAN,
            failure_attribution_confidence_interval=confidence_interval(*ci, 0.95) if ci else None, ci_note=note,
            scope=ATTRIBUTION_SCOPE,
            revoked_items=len(revoked & items), archived_items=len(store.retired("archive") & items),
            evicted_items=len(store.retired("evict") & items), expired_items=len(expired & items),
            memory_items=len(items), revoked_share=len(revoked & items) / len(items) if items else _NAN,
            attributed_tasks=tuple(attributed[:20]),
        )


def _difference_interval(k1: int, n1: int, k2: int, n2: int) -> tuple[tuple[float, float] | None, str]:
    """The interval of failed minus successful shares, or None and the reason it cannot be formed."""
    if n1 and n2:
        return newcombe_difference(k1, n1, k2, n2), (
            f"Newcombe hybrid score 95% interval over {n1} failed and {n2} successful tasks")
    if not n1 and not n2:
        return None, "not formed: no task outcomes"
    missing = "no failed tasks" if not n1 else "no successful tasks"
    return None, f"not formed: {missing} (a difference needs both)"


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
