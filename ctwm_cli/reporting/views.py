"""The trace page's retrieval and over-time views, where the trace carries the columns they need.

* **Injection rate by rank** (``rank``, ``retrieve`` and ``inject`` rows): of the items retrieved at rank r, the
  share injected into the prompt at the same step (same run, same item) — which ranks of the list reach the model.
* **Score distribution** (``score`` on ``retrieve`` rows): counts in ten equal-width bins over the observed range.
* **Tokens per step over time** (``tokens`` and ``step``): prompt tokens summed per step (``inject`` rows when the
  trace has them, else every row with tokens), averaged over up to :data:`.periods.WINDOWS` equal windows of steps.
* **Concentration over time** (``ts`` or ``step``): per day or week (by ``ts``; week when the trace spans more
  than three weeks), else per window of steps, the Gini coefficient and top-10% share of that period's accesses,
  measured by :func:`ctwm_cli.diagnostics.measures.concentration` as ``ctwm concentration`` measures a trace.

Every number is a count, a share or a sum of the trace's own rows; per tenant with ``group_by``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..common.errors import InputError
from ..diagnostics.measures import concentration
from ..traces.engine import ReadOptions
from ..traces.paths import open_path
from .deadweight_time import dead_weight_over_time
from .model import Block, Table
from .periods import step_windows, window_label
from .view_figures import view_figure

SCORE_BINS = 10
#: tenants beyond this many get no views of their own (the pooled views cover them)
MAX_TENANTS = 12
COLUMNS = ("run", "step", "event", "rank", "score", "tokens", "ts")


def read_rows(path: str, read: ReadOptions, group_by: str | None = None) -> Any:
    """The trace's rows (item, the optional columns it has, ``group_by``) as a pandas frame."""
    import pandas as pd
    import pyarrow as pa

    reader = open_path(path, read, group_by=group_by, optional=COLUMNS)
    parts = list(reader.batches())
    if not parts:
        return pd.DataFrame({"item": []})
    return pa.concat_tables(parts, promote_options="default").to_pandas()


def injection_by_rank(rows: Any) -> Table | None:
    """Per rank: retrieved, injected at the same step, the rate. None without ranks or inject rows."""
    if not {"rank", "step", "event"} <= set(rows.columns):
        return None
    keys = [k for k in ("run", "step", "item") if k in rows.columns]
    ret = rows[(rows["event"] == "retrieve") & rows["rank"].notna()]
    inj = rows[rows["event"] == "inject"][keys].drop_duplicates()
    if ret.empty or inj.empty:
        return None
    hit = ret[keys].merge(inj.assign(_inj=True), on=keys, how="left")["_inj"].fillna(False).astype(bool).to_numpy()
    ranks = ret["rank"].astype(int).to_numpy()
    out = []
    for r in sorted(set(ranks.tolist())):
        at = ranks == r
        n, k = int(at.sum()), int(hit[at].sum())
        out.append((r, n, k, k / n))
    return Table(caption="Injection rate by rank: of the items retrieved at each rank, the share injected at the "
                 "same step", columns=("rank", "retrieved", "injected", "injection_rate"), rows=tuple(out))


def score_distribution(rows: Any) -> Table | None:
    if "score" not in rows.columns:
        return None
    s = rows[(rows.get("event", "retrieve") == "retrieve") & rows["score"].notna()]["score"].astype(float).to_numpy()
    if s.size == 0:
        return None
    lo, hi = float(s.min()), float(s.max())
    edges = np.linspace(lo, hi if hi > lo else lo + 1.0, SCORE_BINS + 1)
    counts, _ = np.histogram(s, bins=edges)
    return Table(caption=f"Retriever scores of {s.size:,} retrieve rows in {SCORE_BINS} equal bins "
                 f"(median {np.median(s):.4g})", columns=("score_low", "score_high", "rows"),
                 rows=tuple((float(edges[i]), float(edges[i + 1]), int(counts[i])) for i in range(SCORE_BINS)))


def tokens_over_time(rows: Any) -> Table | None:
    if not {"tokens", "step"} <= set(rows.columns):
        return None
    t = rows[rows["tokens"].notna() & rows["step"].notna()]
    if "event" in t.columns and (t["event"] == "inject").any():
        t = t[t["event"] == "inject"]
    if t.empty:
        return None
    keys = [k for k in ("run", "step") if k in t.columns]
    per = t.groupby(keys, dropna=False)["tokens"].sum().reset_index()
    steps, tokens = per["step"].astype(int).to_numpy(), per["tokens"].astype(float).to_numpy()
    edges = step_windows(steps)
    out = []
    for i in range(len(edges) - 1):
        at = (steps >= edges[i]) & (steps < edges[i + 1])
        if at.any():
            out.append((window_label(edges[i], edges[i + 1]), int(at.sum()),
                        float(tokens[at].mean())))
    return Table(caption="Prompt tokens per step over time (summed per step, averaged per window)",
                 columns=("period", "steps", "tokens_per_step"), rows=tuple(out))


def _periods(rows: Any) -> tuple[Any, str] | None:
    """A period label per row: day or week of ``ts``, else a window of steps; None without either."""
    import pandas as pd

    if "ts" in rows.columns and rows["ts"].notna().any():
        ts = pd.to_datetime(rows["ts"], utc=True, errors="coerce")
        span = ts.max() - ts.min()
        if span > pd.Timedelta(days=21):
            return ts.dt.strftime("%G-W%V"), "ISO week"
        return ts.dt.strftime("%Y-%m-%d"), "day"
    if "step" in rows.columns and rows["step"].notna().any():
        steps = rows["step"].astype("Int64")
        edges = step_windows(steps.dropna().astype(int).to_numpy())
        idx = np.clip(np.searchsorted(edges, steps.fillna(-1).astype(int).to_numpy(), side="right") - 1, 0,
                      len(edges) - 2)
        labels = np.array([window_label(edges[i], edges[i + 1]) for i in idx])
        return pd.Series(np.where(steps.isna().to_numpy(), None, labels), index=rows.index), "window of steps"
    return None


def concentration_over_time(rows: Any, events: Sequence[str] | None = None) -> Table | None:
    found = _periods(rows)
    if found is None:
        return None
    period, unit = found
    kinds = tuple(events) if events else (("retrieve",) if "event" not in rows.columns or
                                          (rows["event"] == "retrieve").any() else ("inject",))
    use = rows["event"].isin(kinds) if "event" in rows.columns else np.ones(len(rows), dtype=bool)
    out = []
    frame = rows.assign(_p=period)[use & period.notna()]
    for p, part in frame.groupby("_p", sort=True):
        counts = part["item"].value_counts().to_numpy()
        if counts.size < 2:
            continue
        k = concentration(counts)
        out.append((str(p), int(counts.sum()), int(counts.size), k.gini, k.top10_share))
    if not out:
        return None
    return Table(caption=f"Concentration per {unit} ({', '.join(kinds)} rows; as ctwm concentration measures "
                 "each period's accesses)", columns=("period", "accesses", "items", "gini", "top10_share"),
                 rows=tuple(out))


def views(rows: Any, events: Sequence[str] | None = None) -> tuple[Table, ...]:
    tables = (concentration_over_time(rows, events), injection_by_rank(rows), score_distribution(rows),
              tokens_over_time(rows))
    return tuple(t for t in tables if t is not None)


def views_block(path: str, read: ReadOptions, *, events: Sequence[str] | None = None,
                group_by: str | None = None, notes: list[str], key: str = "views", dead_weight: bool = False,
                objects: str | None = None) -> Block | None:
    """The over-time and retrieval views of the trace: the pooled views drawn (:mod:`.view_figures`, each figure
    with its table), one part of tables per ``group_by`` value; ``dead_weight``: with dead weight over time
    (:mod:`.deadweight_time`; a trace with memory-health events)."""
    rows = read_rows(path, read, group_by)
    pooled = views(rows, events)
    dead, dead_per = None, {}
    if dead_weight:
        try:
            dead, dead_per = dead_weight_over_time(path, read, objects=objects, group_by=group_by, groups=MAX_TENANTS)
        except InputError as exc:
            notes.append(f"no dead weight over time: {exc}")
    if dead is not None:
        pooled = (pooled[0], dead, *pooled[1:]) if pooled and pooled[0].caption.startswith("Concentration") \
            else (dead, *pooled)
    if not pooled:
        return None
    parts = []
    if group_by and group_by in rows.columns:
        values = [v for v in rows[group_by].dropna().unique().tolist()]
        for v in sorted(values, key=str)[:MAX_TENANTS]:
            t = views(rows[rows[group_by] == v], events)
            if str(v) in dead_per:
                t = (*t, dead_per[str(v)])
            if t:
                parts.append(Block(title=f"{group_by}={v}", tables=t, collapsed=len(values) > 3))
        if len(values) > MAX_TENANTS:
            notes.append(f"over-time and retrieval views: {len(values):,} values of {group_by}; the page shows the "
                         f"first {MAX_TENANTS}")
    figures = tuple(f for f in (view_figure(t, key) for t in pooled) if f is not None)
    return Block(title="Over time and retrieval", text=TEXT + (DEAD_TEXT if dead is not None else ""),
                 figures=figures, tables=tuple(t for t in pooled if not any(f.table is t for f in figures)),
                 parts=tuple(parts))


TEXT = ("Concentration per period, which ranks of the retrieved list reach the prompt, the retriever's scores and "
        "prompt tokens per step, where the trace carries ts or step, rank, score and tokens. Per-tenant views are "
        "tables under the figures.")
DEAD_TEXT = (" Dead weight over time is the state at the end of each period: the live memories that no retrieve, "
             "inject or read row has touched since the trace began, as ctwm health says of the trace cut after the "
             "period's last row (the last period's number is the whole trace's).")
