"""The retriever ladder (``ctwm world ladder``, paper Fig. 3): concentration per retriever per family.

Each family uses one world and one seed for all retrievers; for ``random-walk`` the trajectories
are identical across retrievers, so the rungs differ only by what the retriever returns.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from ..checks import check_choice
from ..memory.retrievers import RETRIEVERS
from ..parallel import resolve_jobs, run_tasks
from ..progress import ProgressCallback
from ..results import ToDict, result
from .config import WorldConfig
from .graphs import FAMILIES
from .grid import grid_configs
from .run import concentration
from .simulation import simulate


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
    retrievers = tuple(dict.fromkeys(retrievers))  # a repeated retriever counts once
    for r in retrievers:
        check_choice("retriever", r, RETRIEVERS)
    configs = grid_configs(families, [base.size], [base.seed], base)
    tasks = [(c, retrievers) for c in configs]
    results = run_tasks(_ladder_family, tasks, jobs=resolve_jobs(jobs), progress=progress)
    order = {f: i for i, f in enumerate(families)}
    rows = sorted((r for rs in results for r in rs), key=lambda r: (order[r.family], retrievers.index(r.retriever)))
    cfg0 = configs[0]
    return Ladder(rows=tuple(rows), policy=cfg0.policy, steps=cfg0.steps, k=cfg0.k, capacity=cfg0.capacity)
