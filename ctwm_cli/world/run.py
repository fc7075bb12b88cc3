"""One run of the Synthetic Graph World (``ctwm world run``): simulate, summarise, write its files.

**Concentration numbers** (ladder and run summaries) are over per-item counts of the items that
occur: ``gini`` over memory accesses (retrieve + write events per item, as in paper Section 5.2,
where disabling retrieval leaves the write counts), ``gini_retrieve`` over retrieve events only.
Definitions are those of ``ctwm concentration`` (:mod:`ctwm_cli.diagnostics.measures`): Gini
``sum_ij |x_i - x_j| / (2 n^2 mean x)``, bias-corrected skewness, max/median, top-decile share.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ..common.results import ToDict, result, timing
from ..diagnostics.measures import concentration as _measure
from ..runtime.files import check_output_dir, prepare_dir, write_json, write_parquet
from .config import WorldConfig
from .simulation import Simulation, simulate
from .trace import MANIFEST_FILE, TRACE_FILE, manifest, trace_table

#: The files a run writes into its directory (what --overwrite may replace).
RUN_FILES = (TRACE_FILE, MANIFEST_FILE)


@result
class Concentration(ToDict):
    """Concentration of per-item counts (items with a zero count are left out)."""

    n_items: int
    n_events: int
    gini: float | None
    top10_share: float | None
    max_over_median: float | None
    skewness: float | None
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
    n_rows: int
    retrieve_events: int
    write_events: int
    n_items: int
    state_coverage: float
    transition_coverage: float
    gini: float | None
    gini_retrieve: float | None
    policy_stats: dict[str, Any]
    trace: str | None
    manifest: str | None
    sha256: str | None
    repeat: str
    steps_per_second: float = timing()


def concentration(counts: np.ndarray) -> Concentration:
    """Concentration of the positive entries of ``counts`` (zeros: items that never occurred), by
    :func:`ctwm_cli.diagnostics.measures.concentration` (the definitions of ``ctwm concentration``)."""
    x = np.asarray(counts, dtype=np.float64)
    x = x[x > 0]
    if x.size == 0:
        return Concentration(n_items=0, n_events=0, gini=None, top10_share=None, max_over_median=None, skewness=None,
                             sigma_top10=None)
    r = _measure(x)
    return Concentration(n_items=int(x.size), n_events=int(x.sum()), gini=r.gini, top10_share=r.top10_share,
                         max_over_median=r.max_over_median, skewness=r.skewness, sigma_top10=r.sigma_top10)


def run_world(config: WorldConfig, out: str | Path | None = None, *, overwrite: bool = False,
              policy_backoff: float | None = None) -> WorldRun:
    """Simulate ``config``; with ``out``, write ``out/trace.parquet`` and ``out/manifest.json``."""
    cfg = config.resolved()
    if out is not None:  # checked before the run, created after it: a failed run leaves no directory
        check_output_dir(out, ours=RUN_FILES, overwrite=overwrite)
    sim = simulate(cfg, policy_backoff=policy_backoff)
    outdir = prepare_dir(out, ours=RUN_FILES, overwrite=overwrite) if out is not None else None
    return summarise(sim, outdir)


def summarise(sim: Simulation, outdir: Path | None, trace_name: str = TRACE_FILE,
              with_manifest: bool = True) -> WorldRun:
    """The :class:`WorldRun` of ``sim``; with ``outdir``, write its trace (and manifest) there."""
    cfg = sim.config
    trace = manifest_path = digest = None
    rows = sim.retrieved.size + (sim.transitions.size if cfg.writes else 0)
    if outdir is not None:
        table = trace_table(sim)
        rows = table.num_rows
        trace_path = outdir / trace_name
        digest = write_parquet(table, trace_path)
        trace = str(trace_path)
        if with_manifest:
            manifest_path = outdir / MANIFEST_FILE
            write_json(manifest_path, manifest("world run", {
                "config": cfg.to_dict(), "seed": cfg.seed, "run": cfg.run_id, "repeat": cfg.command(),
                "trace": trace_name, "rows": rows, "sha256": digest, "trace_schema": 1,
                "eviction": cfg.eviction,
                "retrieval": "after the step's write" if cfg.order_rule == "write-first" else "before the step's write",
                "item": "transition id s<src>-a<action>->s<dst>",
            }))
            manifest_path = str(manifest_path)
    world = sim.world
    both = sim.access_counts(writes=True)
    ret = sim.access_counts(writes=False)
    return WorldRun(
        run=cfg.run_id, family=cfg.family, size=cfg.size, policy=cfg.policy, retriever=cfg.retriever,
        steps=cfg.steps, seed=cfg.seed, n_rows=int(rows), retrieve_events=int(sim.retrieved.size),
        write_events=int(sim.transitions.size) if cfg.writes else 0,
        n_items=int(np.count_nonzero(both if cfg.writes else ret)),
        state_coverage=float(np.count_nonzero(sim.visits) / world.size),
        transition_coverage=float(np.unique(sim.transitions).size / world.n_transitions),
        gini=concentration(both).gini, gini_retrieve=concentration(ret).gini,
        policy_stats=sim.policy_stats,
        steps_per_second=float(cfg.steps / sim.seconds) if sim.seconds > 0 else float("nan"),
        trace=trace, manifest=manifest_path, sha256=digest, repeat=cfg.command(),
    )
