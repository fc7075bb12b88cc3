"""The files of a world run: the trace table (``trace.parquet``) and the manifest (``manifest.json``).

**Trace.** One row per event, in step order (retrieves by rank, then the write): ``item``
(transition id ``s<src>-a<action>->s<dst>``), ``step``, ``rank``, ``run``, ``event``. It is written
deterministically (:func:`ctwm_cli.runtime.files.write_parquet`: fixed row groups, zstd, no timestamps), so
the same configuration gives a byte-identical file. The manifest holds the configuration, the seed,
the tool version, the row count and the trace's SHA-256.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._version import __version__
from ..common.results import jsonable
from .simulation import Simulation

TRACE_FILE = "trace.parquet"
MANIFEST_FILE = "manifest.json"
#: The grid's manifest starts with "_" so Parquet dataset readers (pyarrow ignores "_" and "."
#: prefixes) read the grid directory as a dataset.
GRID_MANIFEST_FILE = "_manifest.json"
EVENT_NAMES = ("retrieve", "write")


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


def manifest(command: str, body: dict[str, Any]) -> dict[str, Any]:
    """A manifest document: tool, version and command first, then ``body`` (JSON-safe)."""
    return {"tool": "ctwm", "version": __version__, "command": command, **jsonable(body)}
