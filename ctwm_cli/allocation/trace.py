"""What CTWM would have done with a real trace: allocation over the trace's own item ranking.

Two rankings:

* ``counts`` — one global ranking of the trace's items by access count (descending, ties by item
  id), from :func:`ctwm_cli.traces.item_counts`; M = distinct items. Per τ: the core is the top K
  ids, the B slots are apportioned as in :func:`~ctwm_cli.allocation.allocate`.
* ``step`` — when the trace has a ``step`` column and a ``rank`` (or ``score``) column, every
  (run, step) is its own ranked list (rank ascending, else score descending, ties by item id;
  an item listed twice at one step keeps its best rank). A list of L items gets the allocation
  of M = L items with core min(K, L) and the full budget B.

"Reaches the prompt" means: the item's apportioned slots are >= 1. Only core ranks can reach the
prompt; tail items are represented only through the tail summary, and are counted as "summarised"
when the summary got >= 1 slot. An access is "served by the core" when its item is a core item
(τ-independent for fixed K), "served in the prompt" when its item reached the prompt (this is what
τ changes), "summarised" when its item is in a tail that has summary slots, and "dropped"
otherwise (core items with 0 slots, or a tail with no summary slot).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..common import vocabulary
from ..common.checks import check_choice
from ..common.errors import InputError, UsageError
from ..common.results import ToDict, result
from ..runtime.progress import ProgressCallback
from ..traces import ColumnMap, item_counts, open_trace, scan_trace
from ..traces.schema import DEFAULT_EVENT
from .allocate import allocate_unchecked
from .rank import check_budget, check_int
from .sweep import TauSweep, check_taus, sweep_from_allocations

RANKINGS = vocabulary.RANKINGS


@result
class CountsTauRow(ToDict):
    """Effect of one τ on a trace ranked by counts."""

    tau: float
    core_mass: float
    tail_share: float
    gini: float
    core_slots: int  # total slots of the core ranks
    tail_slots: int  # slots of the tail summary
    items_in_prompt: int  # core items with >= 1 slot
    tail_items_summarised: int  # M - K if the summary has >= 1 slot, else 0
    access_share_core: float  # accesses of the top-K items / all accesses (τ-independent)
    access_share_prompt: float  # accesses of items that reached the prompt
    access_share_summarised: float
    access_share_dropped: float
    tv_distance: float  # ½ Σ |b - p| over core ranks + pooled tail: allocation vs. the trace's own access shares


@result
class StepTauRow(ToDict):
    """Effect of one τ on a trace with per-step rankings."""

    tau: float
    items_reach_prompt: int  # distinct items with >= 1 slot at some step
    items_only_summarised: int  # distinct items never in the prompt but summarised at some step
    mean_prompt_items: float  # items with >= 1 slot, per step
    mean_tail_slots: float  # slots of the tail summary, per step
    steps_with_summary: float  # share of steps whose tail summary got >= 1 slot (of steps with a tail)
    access_share_core: float  # listed items at core positions (τ-independent)
    access_share_prompt: float
    access_share_summarised: float
    access_share_dropped: float


@result
class TraceSimulation(ToDict):
    """``simulate_trace`` result."""

    source: str
    ranking: str  # "counts" or "step"
    events: tuple[str, ...]
    n_items: int  # distinct counted items
    n_accesses: int  # counted accesses (counts mode) or distinct (run, step, item) listings (step mode)
    core: int
    budget: int
    core_items: tuple[str, ...]  # top-K ids by count over the whole trace
    core_item_counts: tuple[int, ...]
    steps: int | None
    mean_list_length: float | None
    max_list_length: int | None  # step mode: the longest ranked list of a step (<= core: τ changes nothing)
    items_ever_core: int | None  # step mode: distinct items at a core position at some step
    results: tuple[CountsTauRow, ...] | tuple[StepTauRow, ...]  # one per τ (JSON ``results``, formerly ``rows``)
    allocation: TauSweep | None  # counts mode: the sweep of the allocation itself over M = n_items

    @property
    def rows(self) -> tuple[CountsTauRow, ...] | tuple[StepTauRow, ...]:
        """Former name of :attr:`results` (kept for library callers)."""
        return self.results

    def to_dict(self) -> dict[str, Any]:
        d = {
            "source": self.source,
            "ranking": self.ranking,
            "events": list(self.events),
            "n_items": self.n_items,
            "n_accesses": self.n_accesses,
            "core": self.core,
            "budget": self.budget,
            "core_items": list(self.core_items),
            "core_item_counts": list(self.core_item_counts),
            "steps": self.steps,
            "mean_list_length": self.mean_list_length,
            "max_list_length": self.max_list_length,
            "items_ever_core": self.items_ever_core,
            "results": [r.to_dict() for r in self.results],
            "allocation": self.allocation.to_dict() if self.allocation is not None else None,
        }
        return d


def simulate_trace(
    path: str | Path,
    taus: Sequence[float],
    *,
    core: int,
    budget: int,
    columns: ColumnMap | None = None,
    events: Sequence[str] | None = None,
    ranking: str = "auto",
    progress: ProgressCallback | None = None,
) -> TraceSimulation:
    """Apply the CTWM allocation at every τ to the ranking of a trace and measure the effect.

    ``ranking="auto"`` uses per-step rankings when the trace has a ``step`` column and a ``rank``
    or ``score`` column (and is a file: standard input cannot be read twice), else counts.
    """
    ts = check_taus(taus)
    k = check_int(core, "core", minimum=1)
    b = check_budget(budget)
    check_choice("ranking", ranking, RANKINGS)
    if ranking == "step" and str(path) == "-":
        raise UsageError("ranking='step' needs a trace file: standard input can be read only once", params=("ranking",))
    reader = open_trace(path, columns)
    scan = scan_trace(reader, progress=progress)
    counts = item_counts(scan, events)[0]
    chosen = counts.events
    m = counts.n_items
    have = set(scan.mapping)
    per_step_ok = "step" in have and ("rank" in have or "score" in have)
    if ranking == "step" and not per_step_ok:
        raise InputError(
            f"{scan.source}: per-step ranking needs a step column and a rank or score column "
            f"(columns found: {', '.join(scan.columns_found)})"
        )
    mode = "step" if ranking == "step" or (ranking == "auto" and per_step_ok and str(path) != "-") else "counts"
    kk = min(k, m)
    core_items = tuple(counts.items.slice(0, kk).to_pylist())
    core_counts = tuple(int(c) for c in counts.counts[:kk])
    common = dict(source=scan.source, events=chosen, n_items=m, core=k, budget=b, core_items=core_items,
                  core_item_counts=core_counts)
    if mode == "counts":
        if k >= m:
            raise InputError(f"{scan.source}: the trace has {m} distinct items, so core={k} leaves no tail "
                             f"(core must be smaller than the number of items)")
        rows, sweep = _counts_rows(counts.counts, ts, k, b)
        return TraceSimulation(ranking="counts", n_accesses=counts.n_events, steps=None, mean_list_length=None,
                               max_list_length=None, items_ever_core=None, results=rows, allocation=sweep, **common)
    lists = _step_lists(open_trace(path, columns), chosen)
    rows, ever_core = _step_rows(lists, ts, k, b)
    return TraceSimulation(
        ranking="step", n_accesses=int(lists["position"].size), steps=int(lists["sizes"].size),
        mean_list_length=float(lists["sizes"].mean()), max_list_length=int(lists["sizes"].max()),
        items_ever_core=ever_core, results=rows, allocation=None,
        **common,
    )


# --------------------------------------------------------------------------------------------
# Counts ranking


def _counts_rows(cnt: np.ndarray, taus: tuple[float, ...], k: int, b: int) -> tuple[tuple[CountsTauRow, ...], TauSweep]:
    total = float(cnt.sum())
    p = cnt.astype(np.float64) / total
    p_core = p[:k]
    p_tail = float(cnt[k:].sum()) / total
    allocs = []
    rows = []
    for t in taus:
        a = allocate_unchecked(cnt.size, t, k, b)
        allocs.append(a)
        reach = a.core_slots >= 1
        served = float(cnt[:k][reach].sum()) / total
        summarised = p_tail if a.tail_slots >= 1 else 0.0
        tv = 0.5 * (float(np.abs(a.shares[:k] - p_core).sum()) + abs(a.tail_share - p_tail))
        rows.append(
            CountsTauRow(
                tau=t, core_mass=a.core_mass, tail_share=a.tail_share, gini=a.gini,
                core_slots=int(a.core_slots.sum()), tail_slots=a.tail_slots, items_in_prompt=int(reach.sum()),
                tail_items_summarised=(cnt.size - k) if a.tail_slots >= 1 else 0,
                access_share_core=float(p_core.sum()), access_share_prompt=served,
                access_share_summarised=summarised, access_share_dropped=max(0.0, 1.0 - served - summarised),
                tv_distance=tv,
            )
        )
    return tuple(rows), sweep_from_allocations(allocs)


# --------------------------------------------------------------------------------------------
# Per-step rankings


def _step_lists(reader, chosen: tuple[str, ...]) -> dict[str, np.ndarray]:
    """Per (run, step) ranked lists of the chosen events: item codes, positions and list sizes."""
    parts = []
    wanted = pa.array(chosen)
    for batch in reader.batches():
        cols = batch.column_names
        if "step" not in cols:
            continue
        keep = pc.is_valid(batch.column("step"))
        if "event" in cols:
            event = pc.fill_null(batch.column("event"), DEFAULT_EVENT)
            keep = pc.and_(keep, pc.is_in(event, value_set=wanted))
        elif DEFAULT_EVENT not in chosen:
            continue
        t = batch.filter(keep)
        parts.append(
            pa.table({
                "run": t.column("run") if "run" in cols else pa.nulls(t.num_rows, pa.string()),
                "step": t.column("step"),
                "item": t.column("item"),
                "rank": t.column("rank") if "rank" in cols else pa.nulls(t.num_rows, pa.int64()),
                "score": t.column("score") if "score" in cols else pa.nulls(t.num_rows, pa.float64()),
            })
        )
    table = pa.concat_tables(parts) if parts else None
    if table is None or table.num_rows == 0:
        raise InputError(f"{reader.source}: no {', '.join(chosen)} events with a step to rank")
    table = table.set_column(0, "run", pc.fill_null(table.column("run"), ""))
    # an item listed twice at one step keeps its best rank / score
    table = table.group_by(["run", "step", "item"]).aggregate([("rank", "min"), ("score", "max")])
    table = table.rename_columns(["run", "step", "item", "rank", "score"])
    # missing ranks / scores sort last: rank -> int64 max, -score -> +inf
    keyed = pa.table({
        "run": table.column("run"),
        "step": table.column("step"),
        "rank": pc.fill_null(table.column("rank"), np.iinfo(np.int64).max),
        "neg_score": pc.fill_null(pc.negate(table.column("score")), np.inf),
        "item": table.column("item"),
    })
    order = pc.sort_indices(keyed, sort_keys=[(c, "ascending") for c in keyed.column_names])
    table = table.take(order)
    run_codes = pc.dictionary_encode(table.column("run").combine_chunks()).indices.to_numpy(zero_copy_only=False)
    step = table.column("step").to_numpy()
    item_codes = pc.dictionary_encode(table.column("item").combine_chunks()).indices.to_numpy(zero_copy_only=False)
    n = step.size
    new = np.ones(n, dtype=bool)
    new[1:] = (run_codes[1:] != run_codes[:-1]) | (step[1:] != step[:-1])
    starts = np.flatnonzero(new)
    sizes = np.diff(np.append(starts, n))
    group = np.cumsum(new) - 1
    position = np.arange(n) - starts[group] + 1  # 1-based position in its step's list
    return {"item": item_codes, "position": position, "size": sizes[group], "sizes": sizes}


def _step_rows(
    lists: dict[str, np.ndarray], taus: tuple[float, ...], k: int, b: int
) -> tuple[tuple[StepTauRow, ...], int]:
    item, pos, size, sizes = lists["item"], lists["position"], lists["size"], lists["sizes"]
    n = pos.size
    n_steps = sizes.size
    is_core = pos <= k
    ever_core = int(np.unique(item[is_core]).size)
    distinct_sizes = np.unique(sizes)
    has_tail_steps = int(np.count_nonzero(sizes > k))
    rows = []
    for t in taus:
        slot = np.zeros(n, dtype=np.int64)
        tail_ok = np.zeros(n, dtype=bool)
        tail_slots_by_step = np.zeros(n_steps, dtype=np.int64)
        for length in distinct_sizes:
            a = allocate_unchecked(int(length), t, min(k, int(length)), b)
            sel = size == length
            p = pos[sel]
            in_core = p <= a.core
            vals = np.zeros(p.size, dtype=np.int64)
            vals[in_core] = a.core_slots[p[in_core] - 1]
            slot[sel] = vals
            tail_ok[sel] = (~in_core) & (a.tail_slots >= 1)
            tail_slots_by_step[sizes == length] = a.tail_slots
        in_prompt = is_core & (slot >= 1)
        reach = np.unique(item[in_prompt])
        summ = np.setdiff1d(np.unique(item[tail_ok]), reach, assume_unique=True)
        share_prompt = float(in_prompt.sum()) / n
        share_summ = float(tail_ok.sum()) / n
        rows.append(
            StepTauRow(
                tau=t,
                items_reach_prompt=int(reach.size),
                items_only_summarised=int(summ.size),
                mean_prompt_items=float(in_prompt.sum()) / n_steps,
                mean_tail_slots=float(tail_slots_by_step.mean()),
                steps_with_summary=(float(np.count_nonzero((sizes > k) & (tail_slots_by_step >= 1))) / has_tail_steps
                                    if has_tail_steps else float("nan")),
                access_share_core=float(is_core.sum()) / n,
                access_share_prompt=share_prompt,
                access_share_summarised=share_summ,
                access_share_dropped=max(0.0, 1.0 - share_prompt - share_summ),
            )
        )
    return tuple(rows), ever_core
