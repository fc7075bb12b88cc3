"""The families x sizes x seeds grid (``ctwm world grid``): a hive-partitioned Parquet dataset.

Cell ``family=F/size=N/seed=S/part-0.parquet`` holds exactly the trace of ``ctwm world run
--family F --size N --seed S`` with the grid's other options (run id ``F-N-S``); ``_manifest.json``
lists the cells and the command that repeats each.
"""

from __future__ import annotations

import dataclasses
import itertools
import time
from collections.abc import Sequence
from pathlib import Path

from ..errors import UsageError
from ..files import prepare_dir, write_json
from ..parallel import resolve_jobs, run_tasks
from ..progress import ProgressCallback
from ..results import ToDict, jsonable, result
from .config import WorldConfig
from .graphs import DEFAULT_PARAMS, FAMILIES, PAPER_SIZES
from .run import summarise
from .simulation import simulate
from .trace import GRID_MANIFEST_FILE
from .trace import manifest as manifest_doc

PART_FILE = "part-0.parquet"
#: The files a grid writes into its directory (what --overwrite may replace).
GRID_FILES = (GRID_MANIFEST_FILE, f"family=*/size=*/seed=*/{PART_FILE}")


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
                            graph_params={k: v for k, v in base.graph_params.items() if k in DEFAULT_PARAMS[f]},
                            ).resolved()
        for f, n, s in itertools.product(families, sizes, seeds)
    ]


def _grid_cell(task: tuple[WorldConfig, str]) -> GridCell:
    cfg, root = task
    started = time.perf_counter()
    sim = simulate(cfg)
    d = Path(root) / f"family={cfg.family}" / f"size={cfg.size}" / f"seed={cfg.seed}"
    d.mkdir(parents=True, exist_ok=True)
    s = summarise(sim, d, trace_name=PART_FILE, with_manifest=False)
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
    root = prepare_dir(out, ours=GRID_FILES, overwrite=overwrite)
    started = time.perf_counter()
    cells = run_tasks(_grid_cell, [(c, str(root)) for c in configs], jobs=jobs, progress=progress)
    cells = sorted(cells, key=lambda c: (FAMILIES.index(c.family), c.size, c.seed))
    by_key = {(c.family, c.size, c.seed): c for c in configs}
    manifest = root / GRID_MANIFEST_FILE
    write_json(manifest, manifest_doc("world grid", {
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
