"""The retriever ladder (``ctwm world ladder``, paper Fig. 3): concentration per retriever per family.

Each family uses one world and one seed for all retrievers; for ``random-walk`` the trajectories
are identical across retrievers, so the rungs differ only by what the retriever returns.

**Eviction per rung.** By default each rung keeps the store its retriever is defined with
(:data:`~ctwm_cli.memory.retrievers.RETRIEVER_EVICTION`: LFU for ``state-frequency``, random
replacement for the non-preferential rungs), so the non-preferential rung changes retriever and
eviction at once. ``store`` holds one rule for every rung (the artifact's single LFU store), so a
rung then changes the retriever only. The ``state-tau`` rung (not in the default set) samples
``k`` of the top 10 state-mates with weights ``rank^-tau``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, ClassVar

from ..common.checks import check_choice
from ..common.results import ToDict, result
from ..memory.retrievers import ALL_RETRIEVERS, DEFAULT_TAU, RETRIEVERS
from ..runtime.parallel import resolve_jobs, run_tasks
from ..runtime.progress import ProgressCallback
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
    skewness: float | None
    n_items: int


@result
class Ladder(ToDict):
    """``ctwm world ladder``: concentration per retriever per family (paper Fig. 3)."""

    results: tuple[LadderRow, ...]  # one per (family, retriever) (JSON ``results``; ``rows`` before the rename)
    policy: str
    steps: int
    k: int
    capacity: int
    counted: str = "retrieve + write events per transition (gini_retrieve: retrieve events only)"
    store: str | None = None  # one eviction rule for every rung (None: each rung its own)
    walk: str | None = None
    order: str | None = None
    tau: float | None = None
    preset: str | None = None
    #: written by to_dict() as typed, so the schema publishes it (cli/schemas.py)
    json_fields: ClassVar[tuple[str, ...]] = ("results",)

    @property
    def rows(self) -> tuple[LadderRow, ...]:
        """Former name of :attr:`results` (kept for library callers)."""
        return self.results

    def to_dict(self) -> dict[str, Any]:
        d = ToDict.to_dict(self)
        for key in ("store", "walk", "order", "tau", "preset"):
            if d.get(key) is None:
                d.pop(key)
        return d


def _ladder_family(task: tuple[WorldConfig, tuple[str, ...], float | None]) -> list[LadderRow]:
    base, retrievers, tau = task
    rows = []
    world = None
    ref = None
    for name in retrievers:
        cfg = dataclasses.replace(base, retriever=name, tau=tau if name == "state-tau" else None).resolved()
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
                             max_over_median=c.max_over_median, skewness=c.skewness, n_items=c.n_items))
    return out


def run_ladder(*, families: Sequence[str] = FAMILIES, retrievers: Sequence[str] = RETRIEVERS,
               base: WorldConfig | None = None, jobs: int | None = None,
               progress: ProgressCallback | None = None) -> Ladder:
    """Run each retriever on each family (same world and seed per family; for ``random-walk`` the
    trajectories are identical across retrievers) and report concentration numbers."""
    base = base or WorldConfig()
    retrievers = tuple(dict.fromkeys(retrievers))  # a repeated retriever counts once
    for r in retrievers:
        check_choice("retriever", r, ALL_RETRIEVERS)
    configs = grid_configs(families, [base.size], [base.seed],
                           dataclasses.replace(base, retriever="state-frequency", tau=None))
    tasks = [(c, retrievers, base.tau) for c in configs]
    results = run_tasks(_ladder_family, tasks, jobs=resolve_jobs(jobs), progress=progress)
    order = {f: i for i, f in enumerate(families)}
    rows = sorted((r for rs in results for r in rs), key=lambda r: (order[r.family], retrievers.index(r.retriever)))
    cfg0 = configs[0]
    return Ladder(results=tuple(rows), policy=cfg0.policy, steps=cfg0.steps, k=cfg0.k, capacity=cfg0.capacity,
                  store=cfg0.store, walk=cfg0.walk, order=cfg0.order,
                  tau=(base.tau if base.tau is not None else DEFAULT_TAU) if "state-tau" in retrievers else None,
                  preset=cfg0.preset)
