"""Running the Synthetic Graph World: one run, the families x sizes x seeds grid, the retriever ladder.

**Seeds.** A run's ``seed`` is split with ``SeedSequence(seed).spawn(6)`` into independent streams
for the graph, the world (payloads, actions, transition probabilities), the environment (start
state and outcomes), the policy, the store (evictions) and the retriever. A run is therefore fully
determined by its :class:`WorldConfig`; a grid cell ``family=F/size=N/seed=S`` is exactly
``ctwm world run --family F --size N --seed S`` with the grid's other options.

**Step order.** At step ``t`` in state ``s_t``: the retriever returns up to ``k`` stored transitions
for ``s_t`` (events ``retrieve``, ranks 1..k); the policy picks ``a_t``; the world draws ``s_{t+1}``;
the transition ``e_t = (s_t, a_t, s_{t+1})`` is written to the store (event ``write``, no rank).

**Trace.** ``trace.parquet`` holds one row per event, in step order (retrieves by rank, then the
write): ``item`` (transition id ``s<src>-a<action>->s<dst>``), ``step``, ``rank``, ``run``,
``event``. It is written deterministically (fixed row groups, zstd, no timestamps), so the same
configuration gives a byte-identical file. ``manifest.json`` holds the configuration, the seed, the
tool version, the row count and the trace's SHA-256.

**Concentration numbers** (ladder and run summaries) are over per-item counts of the items that
occur: ``gini`` over memory accesses (retrieve + write events per item, as in paper Section 5.2,
where disabling retrieval leaves the write counts), ``gini_retrieve`` over retrieve events only.
Definitions are those of ``ctwm concentration`` (:mod:`ctwm_cli.diagnostics.measures`): Gini
``sum_ij |x_i - x_j| / (2 n^2 mean x)``, bias-corrected skewness, max/median, top-decile share.
"""

from __future__ import annotations

import bisect
import dataclasses
import hashlib
import itertools
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .._version import __version__
from ..errors import InputError, UsageError
from ..parallel import resolve_jobs, run_tasks
from ..memory.retrievers import RETRIEVER_EVICTION, RETRIEVERS, make_retriever, make_store
from ..progress import ProgressCallback
from ..results import ToDict, jsonable, result
from .env import DEFAULT_WORLD, World, build_world
from .graphs import DEFAULT_PARAMS, FAMILIES, PAPER_SIZES, graph_params, make_graph
from .policies import POLICIES, make_policy, policy_params

TRACE_FILE = "trace.parquet"
MANIFEST_FILE = "manifest.json"
#: The grid's manifest starts with "_" so Parquet dataset readers (pyarrow ignores "_" and "."
#: prefixes) read the grid directory as a dataset.
GRID_MANIFEST_FILE = "_manifest.json"
ROW_GROUP_ROWS = 1 << 20
EVENT_NAMES = ("retrieve", "write")


@result
class WorldConfig(ToDict):
    """Everything that determines a run (stored in its manifest)."""

    family: str = "scale-free"
    size: int = 500
    graph_params: dict[str, Any] = dataclasses.field(default_factory=dict)
    world_params: dict[str, Any] = dataclasses.field(default_factory=dict)
    policy: str = "random-walk"
    policy_params: dict[str, Any] = dataclasses.field(default_factory=dict)
    retriever: str = "state-frequency"
    k: int = 3
    capacity: int = 200
    steps: int = 100_000
    seed: int = 0
    writes: bool = True
    run: str | None = None

    @property
    def run_id(self) -> str:
        return self.run or f"{self.family}-{self.size}-{self.seed}"

    def resolved(self) -> WorldConfig:
        """Validated copy with every default filled in (what the manifest records)."""
        if self.family not in FAMILIES:
            raise UsageError(f"unknown family {self.family!r} (choose from: {', '.join(FAMILIES)})")
        if self.retriever not in RETRIEVERS:
            raise UsageError(f"unknown retriever {self.retriever!r} (choose from: {', '.join(RETRIEVERS)})")
        if self.policy not in POLICIES:
            raise UsageError(f"unknown policy {self.policy!r} (choose from: {', '.join(POLICIES)})")
        if self.steps < 1:
            raise UsageError(f"steps must be >= 1, got {self.steps}")
        if self.k < 1:
            raise UsageError(f"k must be >= 1, got {self.k}")
        if self.capacity < 1:
            raise UsageError(f"capacity must be >= 1, got {self.capacity}")
        if not isinstance(self.seed, (int, np.integer)) or self.seed < 0:
            raise UsageError(f"seed must be a non-negative integer, got {self.seed!r}")
        unknown = sorted(set(self.world_params) - set(DEFAULT_WORLD))
        if unknown:
            raise UsageError(f"unknown world parameter(s): {', '.join(unknown)} (known: {', '.join(DEFAULT_WORLD)})")
        for key, value in self.world_params.items():
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                raise UsageError(f"world parameter {key!r} must be a number, got {value!r}")
            if key != "concentration" and float(value) != int(value):
                raise UsageError(f"world parameter {key!r} must be an integer, got {value!r}")
        pp = policy_params(self.policy, self.policy_params)  # holds the key's variable name, never the key
        return dataclasses.replace(
            self,
            graph_params=graph_params(self.family, self.graph_params),
            world_params={k: (v if k == "concentration" else int(v))
                          for k, v in {**DEFAULT_WORLD, **self.world_params}.items()},
            policy_params=pp,
            seed=int(self.seed),
        )

    def command(self) -> str:
        """The ``ctwm world run`` command line that repeats this run."""
        parts = ["ctwm world run", f"--family {self.family}", f"--size {self.size}", f"--policy {self.policy}",
                 f"--retriever {self.retriever}", f"--steps {self.steps}", f"--seed {self.seed}",
                 f"--k {self.k}", f"--capacity {self.capacity}"]
        parts += [f"--graph-param {k}={v}" for k, v in self.graph_params.items()]
        parts += [f"--world-param {k}={v}" for k, v in self.world_params.items()]
        parts += [f"--policy-param {k}={v}" for k, v in self.policy_params.items() if v is not None]
        if not self.writes:
            parts.append("--no-writes")
        if self.run:
            parts.append(f"--run {self.run}")
        return " ".join(parts)


@result
class Simulation(ToDict):
    """The raw outcome of a run: the trajectory and the retrieved items, as arrays."""

    config: WorldConfig
    world: World
    transitions: np.ndarray  # tid of e_t, t = 0..steps-1
    retrieved: np.ndarray  # tids of all retrieve events, in order
    retrieved_step: np.ndarray
    retrieved_rank: np.ndarray
    visits: np.ndarray  # visits per state (s_0 .. s_steps)
    policy_stats: dict[str, Any]
    seconds: float

    def access_counts(self, *, writes: bool = True) -> np.ndarray:
        """Per-transition counts of retrieve (+ write) events (zeros included)."""
        n = self.world.n_transitions
        c = np.bincount(self.retrieved, minlength=n)
        if writes:
            c = c + np.bincount(self.transitions, minlength=n)
        return c

    def to_dict(self) -> dict[str, Any]:
        return {"config": self.config.to_dict(), "steps": int(self.transitions.size),
                "retrieve_events": int(self.retrieved.size), "seconds": self.seconds}


@result
class Concentration(ToDict):
    """Concentration of per-item counts (items with a zero count are left out)."""

    n_items: int
    total: int
    gini: float | None
    top10_share: float | None
    max_over_median: float | None
    skew: float | None
    sigma_top10: float | None


@result
class WorldRun(ToDict):
    """Summary of one run (``ctwm world run``)."""

    run: str
    family: str
    size: int
    policy: str
    retriever: str
    steps: int
    seed: int
    rows: int
    retrieve_events: int
    write_events: int
    distinct_items: int
    state_coverage: float
    transition_coverage: float
    gini: float | None
    gini_retrieve: float | None
    policy_stats: dict[str, Any]
    steps_per_second: float
    trace: str | None
    manifest: str | None
    sha256: str | None
    repeat: str


# ------------------------------------------------------------------------------------ concentration


def concentration(counts: np.ndarray) -> Concentration:
    """Concentration of the positive entries of ``counts`` (zeros: items that never occurred).

    Uses :func:`ctwm_cli.diagnostics.measures.concentration` (same definitions as ``ctwm
    concentration``) when that module is present; otherwise the same definitions computed here:
    Gini ``sum_ij |x_i - x_j| / (2 n^2 mean x)``, bias-corrected skewness G1, max/median, top-decile
    share and ``sigma_top10`` = sd (ddof=1) of ``ln x`` over the ``ceil(n/10)`` largest counts.
    """
    x = np.asarray(counts, dtype=np.float64)
    x = x[x > 0]
    n = x.size
    if n == 0:
        return Concentration(n_items=0, total=0, gini=None, top10_share=None, max_over_median=None, skew=None,
                             sigma_top10=None)
    try:
        from ..diagnostics.measures import concentration as _measure
    except ImportError:  # pragma: no cover - the diagnostics module is part of the package
        _measure = None
    if _measure is not None:
        r = _measure(x)
        return Concentration(n_items=int(n), total=int(x.sum()), gini=r.gini, top10_share=r.top10_share,
                             max_over_median=r.max_over_median, skew=r.skewness, sigma_top10=r.sigma_top10)
    asc = np.sort(x)  # pragma: no cover - fallback, same definitions
    total = asc.sum()
    i = np.arange(1, n + 1)
    gini = float(np.sum((2 * i - n - 1) * asc) / (n * total))
    top = asc[n - (-(-n // 10)):]
    d = x - x.mean()
    m2 = float(np.mean(d * d))
    skew = (float(np.mean(d**3)) / m2**1.5 * np.sqrt(n * (n - 1)) / (n - 2)) if (n >= 3 and m2 > 0) else float("nan")
    return Concentration(
        n_items=int(n), total=int(total), gini=gini, top10_share=float(top.sum() / total),
        max_over_median=float(asc[-1] / np.median(asc)), skew=skew,
        sigma_top10=float(np.std(np.log(top), ddof=1)) if top.size >= 2 else float("nan"),
    )


# ------------------------------------------------------------------------------------ simulation


def simulate(config: WorldConfig, *, world: World | None = None, policy_backoff: float | None = None) -> Simulation:
    """Run ``config`` in memory (no files). ``world`` reuses an already built world of the same config."""
    cfg = config.resolved()
    ss = np.random.SeedSequence(cfg.seed)
    g_graph, g_world, g_env, g_policy, g_store, g_retr = (np.random.default_rng(s) for s in ss.spawn(6))
    if world is None:
        graph = make_graph(cfg.family, cfg.size, params=cfg.graph_params, rng=g_graph)
        world = build_world(graph, rng=g_world, **cfg.world_params)
    retriever = make_retriever(cfg.retriever, cfg.k, rng=g_retr)
    store = make_store(retriever, cfg.capacity, world.n_transitions, world.size, rng=g_store)
    params = dict(cfg.policy_params)
    if cfg.policy == "endpoint" and policy_backoff is not None:
        params["backoff"] = policy_backoff
    policy = make_policy(cfg.policy, params)
    started = time.perf_counter()
    env_u = g_env.random
    start = int(env_u() * world.size)
    if not policy.uses_memory:
        tids = _walk(world, start, cfg.steps, g_env)
        per_step = _replay_memory(tids, world, store, retriever)
        policy_stats: dict[str, Any] = {}
    else:
        policy.start(world, g_policy)
        tids, per_step = _interact(world, start, cfg.steps, store, retriever, policy, g_env)
        policy_stats = policy.stats()
    lengths = np.fromiter(map(len, per_step), dtype=np.int64, count=len(per_step))
    total = int(lengths.sum())
    flat = np.fromiter(itertools.chain.from_iterable(per_step), dtype=np.int64, count=total)
    steps_of = np.repeat(np.arange(cfg.steps, dtype=np.int64), lengths)
    offsets = np.cumsum(lengths) - lengths
    ranks = np.arange(total, dtype=np.int64) - np.repeat(offsets, lengths) + 1
    visits = np.bincount(world.tid_dst[tids], minlength=world.size)
    visits[start] += 1
    seconds = time.perf_counter() - started
    return Simulation(config=cfg, world=world, transitions=tids, retrieved=flat, retrieved_step=steps_of,
                      retrieved_rank=ranks, visits=visits, policy_stats=policy_stats, seconds=seconds)


def _walk(world: World, start: int, steps: int, gen: np.random.Generator) -> np.ndarray:
    """Random-walk trajectory: one uniform per step over the state's transitions (cum_walk)."""
    cum = world.cum_walk.tolist()
    ptr = world.state_ptr.tolist()
    dst = world.tid_dst.tolist()
    out = [0] * steps
    s = start
    br = bisect.bisect_right
    block = 1 << 16
    for lo in range(0, steps, block):
        u = gen.random(min(block, steps - lo)).tolist()
        for j, x in enumerate(u, lo):
            t = br(cum, x, ptr[s], ptr[s + 1] - 1)
            out[j] = t
            s = dst[t]
    return np.asarray(out, dtype=np.int64)


def _replay_memory(tids: np.ndarray, world: World, store, retriever) -> list[list[int]]:
    src = world.tid_src[tids].tolist()
    dst = world.tid_dst[tids].tolist()
    retrieve = retriever.retrieve
    write = store.write
    out: list[list[int]] = []
    append = out.append
    if retriever.name == "none":
        for t, s, d in zip(tids.tolist(), src, dst, strict=True):
            write(t, s, d)
        return [[]] * len(src)
    for t, s, d in zip(tids.tolist(), src, dst, strict=True):
        append(retrieve(store, s))
        write(t, s, d)
    return out


def _interact(world: World, start: int, steps: int, store, retriever, policy, gen: np.random.Generator):
    cum = world.cum_action.tolist()
    out_ptr = world.out_ptr.tolist()
    act_ptr = world.act_ptr.tolist()
    dst = world.tid_dst.tolist()
    br = bisect.bisect_right
    tids = [0] * steps
    per_step: list[list[int]] = []
    s = start
    u: list[float] = []
    for t in range(steps):
        if not u:
            u = gen.random(1 << 14).tolist()[::-1]
        got = retriever.retrieve(store, s)
        per_step.append(got)
        a = policy.act(s, got, t)
        g = act_ptr[s] + a
        if not act_ptr[s] <= g < act_ptr[s + 1]:
            raise UsageError(f"policy {policy.name} chose action {a} in state {s} with {act_ptr[s + 1] - act_ptr[s]} actions")
        tid = br(cum, u.pop(), out_ptr[g], out_ptr[g + 1] - 1)
        tids[t] = tid
        d = dst[tid]
        store.write(tid, s, d)
        s = d
    return np.asarray(tids, dtype=np.int64), per_step


# ------------------------------------------------------------------------------------ trace output


def trace_table(sim: Simulation, *, writes: bool | None = None):
    """The trace of ``sim`` as an Arrow table in the trace schema (item, step, rank, run, event)."""
    import pyarrow as pa

    cfg = sim.config
    writes = cfg.writes if writes is None else writes
    n_steps = sim.transitions.size
    items = sim.retrieved
    steps = sim.retrieved_step
    ranks = sim.retrieved_rank
    kind = np.zeros(items.size, dtype=np.int8)
    if writes:
        order_key = np.concatenate([steps * 2, np.arange(n_steps, dtype=np.int64) * 2 + 1])
        order = np.argsort(order_key, kind="stable")
        items = np.concatenate([items, sim.transitions])[order]
        steps = np.concatenate([steps, np.arange(n_steps, dtype=np.int64)])[order]
        rank_valid = np.concatenate([np.ones(ranks.size, bool), np.zeros(n_steps, bool)])[order]
        ranks = np.concatenate([ranks, np.zeros(n_steps, dtype=np.int64)])[order]
        kind = np.concatenate([kind, np.ones(n_steps, dtype=np.int8)])[order]
    else:
        rank_valid = np.ones(ranks.size, bool)
    names = pa.array(sim.world.items, type=pa.string())
    n = items.size
    return pa.table({
        "item": names.take(pa.array(items)),
        "step": pa.array(steps, type=pa.int64()),
        "rank": pa.array(ranks, type=pa.int64(), mask=~rank_valid),
        "run": pa.array([cfg.run_id], type=pa.string()).take(pa.array(np.zeros(n, dtype=np.int32))),
        "event": pa.array(list(EVENT_NAMES), type=pa.string()).take(pa.array(kind)),
    })


def write_parquet(table, path: str | Path) -> str:
    """Write ``table`` deterministically; return the file's SHA-256."""
    import pyarrow.parquet as pq

    pq.write_table(table.replace_schema_metadata(None), str(path), row_group_size=ROW_GROUP_ROWS,
                   compression="zstd", use_dictionary=True, write_statistics=True)
    return _sha256(path)


def _sha256(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _prepare_dir(out: str | Path, overwrite: bool, marker: str) -> Path:
    p = Path(out)
    if p.exists() and not p.is_dir():
        raise UsageError(f"--out {out}: exists and is not a directory")
    if (p / marker).exists() and not overwrite:
        raise UsageError(f"--out {out}: already holds {marker}; pass --overwrite to replace it")
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"--out {out}: cannot create directory ({exc.strerror})") from None
    return p


def _manifest(command: str, body: dict[str, Any]) -> dict[str, Any]:
    return {"tool": "ctwm", "version": __version__, "command": command, **jsonable(body)}


def _write_json(path: Path, doc: dict[str, Any]) -> None:
    path.write_text(json.dumps(doc, indent=2, sort_keys=False) + "\n")


def run_world(config: WorldConfig, out: str | Path | None = None, *, overwrite: bool = False,
              policy_backoff: float | None = None) -> WorldRun:
    """Simulate ``config``; with ``out``, write ``out/trace.parquet`` and ``out/manifest.json``."""
    cfg = config.resolved()
    outdir = _prepare_dir(out, overwrite, TRACE_FILE) if out is not None else None
    sim = simulate(cfg, policy_backoff=policy_backoff)
    return _summarise(sim, outdir)


def _summarise(sim: Simulation, outdir: Path | None, trace_name: str = TRACE_FILE,
               manifest: bool = True) -> WorldRun:
    cfg = sim.config
    trace = manifest_path = digest = None
    rows = sim.retrieved.size + (sim.transitions.size if cfg.writes else 0)
    if outdir is not None:
        table = trace_table(sim)
        rows = table.num_rows
        trace_path = outdir / trace_name
        digest = write_parquet(table, trace_path)
        trace = str(trace_path)
        if manifest:
            manifest_path = outdir / MANIFEST_FILE
            _write_json(manifest_path, _manifest("world run", {
                "config": cfg.to_dict(), "seed": cfg.seed, "run": cfg.run_id, "repeat": cfg.command(),
                "trace": trace_name, "rows": rows, "sha256": digest, "trace_schema": 1,
                "eviction": RETRIEVER_EVICTION[cfg.retriever], "retrieval": "before the step's write",
                "item": "transition id s<src>-a<action>->s<dst>",
            }))
            manifest_path = str(manifest_path)
    world = sim.world
    both = sim.access_counts(writes=True)
    ret = sim.access_counts(writes=False)
    return WorldRun(
        run=cfg.run_id, family=cfg.family, size=cfg.size, policy=cfg.policy, retriever=cfg.retriever,
        steps=cfg.steps, seed=cfg.seed, rows=int(rows), retrieve_events=int(sim.retrieved.size),
        write_events=int(sim.transitions.size) if cfg.writes else 0,
        distinct_items=int(np.count_nonzero(both if cfg.writes else ret)),
        state_coverage=float(np.count_nonzero(sim.visits) / world.size),
        transition_coverage=float(np.unique(sim.transitions).size / world.n_transitions),
        gini=concentration(both).gini, gini_retrieve=concentration(ret).gini,
        policy_stats=sim.policy_stats,
        steps_per_second=float(cfg.steps / sim.seconds) if sim.seconds > 0 else float("nan"),
        trace=trace, manifest=manifest_path, sha256=digest, repeat=cfg.command(),
    )


# ------------------------------------------------------------------------------------ grid


@result
class GridCell(ToDict):
    family: str
    size: int
    seed: int
    run: str
    rows: int
    gini: float | None
    file: str  # relative to the grid directory
    seconds: float


@result
class WorldGrid(ToDict):
    """Summary of ``ctwm world grid``: one cell per family x size x seed."""

    out: str
    manifest: str
    cells: tuple[GridCell, ...]
    seconds: float


def grid_configs(families: Sequence[str], sizes: Sequence[int], seeds: Sequence[int],
                 base: WorldConfig) -> list[WorldConfig]:
    if not families or not sizes or not seeds:
        raise UsageError("the grid needs at least one family, one size and one seed")
    for f in families:
        if f not in FAMILIES:
            raise UsageError(f"unknown family {f!r} (choose from: {', '.join(FAMILIES)})")
    known = {k for f in families for k in DEFAULT_PARAMS[f]}
    stray = sorted(set(base.graph_params) - known)
    if stray:
        raise UsageError(f"graph parameter(s) {', '.join(stray)} apply to none of the families {', '.join(families)}")
    return [
        dataclasses.replace(base, family=f, size=int(n), seed=int(s), run=None,
                            graph_params={k: v for k, v in base.graph_params.items() if k in DEFAULT_PARAMS[f]}).resolved()
        for f, n, s in itertools.product(families, sizes, seeds)
    ]


def _grid_cell(task: tuple[WorldConfig, str]) -> GridCell:
    cfg, root = task
    started = time.perf_counter()
    sim = simulate(cfg)
    d = Path(root) / f"family={cfg.family}" / f"size={cfg.size}" / f"seed={cfg.seed}"
    d.mkdir(parents=True, exist_ok=True)
    s = _summarise(sim, d, trace_name="part-0.parquet", manifest=False)
    return GridCell(family=cfg.family, size=cfg.size, seed=cfg.seed, run=cfg.run_id, rows=s.rows, gini=s.gini,
                    file=f"family={cfg.family}/size={cfg.size}/seed={cfg.seed}/part-0.parquet",
                    seconds=time.perf_counter() - started)


def run_grid(out: str | Path, *, families: Sequence[str] = FAMILIES, sizes: Sequence[int] = PAPER_SIZES,
             seeds: Sequence[int] = (42, 43, 44), base: WorldConfig | None = None, jobs: int | None = None,
             overwrite: bool = False, progress: ProgressCallback | None = None) -> WorldGrid:
    """Run every family x size x seed cell; write the hive-partitioned dataset
    ``out/family=F/size=N/seed=S/part-0.parquet`` (run id ``F-N-S``) and ``out/_manifest.json``."""
    base = base or WorldConfig()
    configs = grid_configs(families, sizes, seeds, base)
    jobs = resolve_jobs(jobs)
    root = _prepare_dir(out, overwrite, GRID_MANIFEST_FILE)
    started = time.perf_counter()
    cells = run_tasks(_grid_cell, [(c, str(root)) for c in configs], jobs=jobs, progress=progress)
    cells = sorted(cells, key=lambda c: (FAMILIES.index(c.family), c.size, c.seed))
    by_key = {(c.family, c.size, c.seed): c for c in configs}
    manifest = root / GRID_MANIFEST_FILE
    _write_json(manifest, _manifest("world grid", {
        "families": list(families), "sizes": [int(n) for n in sizes], "seeds": [int(s) for s in seeds],
        "shared": {k: v for k, v in configs[0].to_dict().items()
                   if k not in ("family", "size", "seed", "graph_params", "run")},
        "graph_params": jsonable(base.graph_params),
        "layout": "family=F/size=N/seed=S/part-0.parquet; run = F-N-S",
        "cells": [{"family": c.family, "size": c.size, "seed": c.seed, "run": c.run, "rows": c.rows,
                   "file": c.file, "repeat": by_key[(c.family, c.size, c.seed)].command()} for c in cells],
    }))
    return WorldGrid(out=str(root), manifest=str(manifest), cells=tuple(cells),
                     seconds=time.perf_counter() - started)


# ------------------------------------------------------------------------------------ ladder


@result
class LadderRow(ToDict):
    family: str
    size: int
    seed: int
    retriever: str
    gini: float | None
    gini_vs_state_frequency: float | None
    gini_retrieve: float | None
    top10_share: float | None
    max_over_median: float | None
    skew: float | None
    n_items: int


@result
class Ladder(ToDict):
    """``ctwm world ladder``: concentration per retriever per family (paper Fig. 3)."""

    rows: tuple[LadderRow, ...]
    policy: str
    steps: int
    k: int
    capacity: int
    counted: str = "retrieve + write events per transition (gini_retrieve: retrieve events only)"


def _ladder_family(task: tuple[WorldConfig, tuple[str, ...]]) -> list[LadderRow]:
    base, retrievers = task
    rows = []
    world = None
    ref = None
    for name in retrievers:
        cfg = dataclasses.replace(base, retriever=name).resolved()
        sim = simulate(cfg, world=world)
        world = sim.world
        c = concentration(sim.access_counts(writes=True))
        cr = concentration(sim.access_counts(writes=False))
        if name == "state-frequency":
            ref = c.gini
        rows.append([cfg, c, cr])
    out = []
    for cfg, c, cr in rows:
        ratio = c.gini / ref if (ref and c.gini is not None) else None
        out.append(LadderRow(family=cfg.family, size=cfg.size, seed=cfg.seed, retriever=cfg.retriever, gini=c.gini,
                             gini_vs_state_frequency=ratio, gini_retrieve=cr.gini, top10_share=c.top10_share,
                             max_over_median=c.max_over_median, skew=c.skew, n_items=c.n_items))
    return out


def run_ladder(*, families: Sequence[str] = FAMILIES, retrievers: Sequence[str] = RETRIEVERS,
               base: WorldConfig | None = None, jobs: int | None = None,
               progress: ProgressCallback | None = None) -> Ladder:
    """Run each retriever on each family (same world and seed per family; for ``random-walk`` the
    trajectories are identical across retrievers) and report concentration numbers."""
    base = base or WorldConfig()
    for r in retrievers:
        if r not in RETRIEVERS:
            raise UsageError(f"unknown retriever {r!r} (choose from: {', '.join(RETRIEVERS)})")
    configs = grid_configs(families, [base.size], [base.seed], base)
    tasks = [(c, tuple(retrievers)) for c in configs]
    results = run_tasks(_ladder_family, tasks, jobs=resolve_jobs(jobs), progress=progress)
    order = {f: i for i, f in enumerate(families)}
    rows = sorted((r for rs in results for r in rs), key=lambda r: (order[r.family], retrievers.index(r.retriever)))
    cfg0 = configs[0]
    return Ladder(rows=tuple(rows), policy=cfg0.policy, steps=cfg0.steps, k=cfg0.k, capacity=cfg0.capacity)
