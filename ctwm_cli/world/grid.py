"""The families x sizes x seeds grid (``ctwm world grid``): a hive-partitioned Parquet dataset.

Cell ``family=F/size=N/seed=S/part-0.parquet`` holds exactly the trace of ``ctwm world run
--family F --size N --seed S`` with the grid's other options (run id ``F-N-S``); ``_manifest.json``
lists the cells, each with its SHA-256 and the command that repeats it.

**Partial output.** Part files are written atomically as cells finish; the manifest is written
last, with ``status`` ``complete``. A run stopped by a signal (or a failing cell) ends its workers,
deletes their temporary files and writes a manifest with ``status`` ``interrupted`` (or
``failed``) listing the cells that finished. A directory holding a grid is refused unless
``overwrite`` (its grid files are deleted) or ``resume``: cells whose file matches the manifest's
SHA-256 are kept, the others are run, and the result is byte for byte the uninterrupted run's.

**Owned while it runs.** The run holds the directory's lock (:func:`~ctwm_cli.runtime.files.dir_lock`) from
before ``overwrite`` deletes anything until its manifest is written, so a second run or ``resume``
on the directory is refused (exit 3, naming the holder's pid) instead of racing its clean-up;
nothing is written or deleted through a symbolic link; a corrupt or foreign ``_manifest.json`` is
exit 3 with the reason.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..common.checks import check_choice
from ..common.errors import InputError, UsageError
from ..common.limits import check_memory
from ..common.results import ToDict, jsonable, result, timing
from ..runtime.files import owned_dir, remove_temp_files, sha256, through_link, write_json
from ..runtime.parallel import resolve_jobs, run_tasks
from ..runtime.progress import ProgressCallback
from .config import WorldConfig
from .graphs import FAMILIES, PAPER_SIZES, known_params
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
    n_rows: int  # trace rows written
    gini: float | None
    file: str  # relative to the grid directory
    sha256: str
    seconds: float = timing()
    reused: bool = False  # resume: kept after its SHA-256 matched the manifest


@result
class WorldGrid(ToDict):
    """Summary of ``ctwm world grid``: one cell per family x size x seed."""

    out: str
    manifest: str
    cells: tuple[GridCell, ...]
    seconds: float = timing()


def grid_configs(families: Sequence[str], sizes: Sequence[int], seeds: Sequence[int],
                 base: WorldConfig) -> list[WorldConfig]:
    """One resolved configuration per cell; a repeated family, size or seed counts once."""
    families, sizes, seeds = _unique(families), _unique(int(n) for n in sizes), _unique(int(s) for s in seeds)
    if not families or not sizes or not seeds:
        raise UsageError("the grid needs at least one family, one size and one seed",
                         params=("family", "size", "replicates"))  # the flags that give them
    for f in families:
        check_choice("family", f, FAMILIES)
    known = {k for f in families for k in known_params(f)}
    stray = sorted(set(base.graph_params) - known)
    if stray:
        raise UsageError(f"graph parameter(s) {', '.join(stray)} apply to none of the families {', '.join(families)}",
                         params=("graph_param",))
    return [
        dataclasses.replace(base, family=f, size=n, seed=s, run=None,
                            graph_params={k: v for k, v in base.graph_params.items() if k in known_params(f)},
                            ).resolved()
        for f, n, s in itertools.product(families, sizes, seeds)
    ]


def _unique(values) -> list:
    return list(dict.fromkeys(values))


def _cell_dir(cfg: WorldConfig) -> str:
    return f"family={cfg.family}/size={cfg.size}/seed={cfg.seed}"


def _key(c) -> tuple[str, int, int]:
    return (c.family, c.size, c.seed)


def _grid_cell(task: tuple[WorldConfig, str]) -> GridCell:
    cfg, root = task
    started = time.perf_counter()
    sim = simulate(cfg)
    d = Path(root) / _cell_dir(cfg)
    d.mkdir(parents=True, exist_ok=True)
    s = summarise(sim, d, trace_name=PART_FILE, with_manifest=False)
    return GridCell(family=cfg.family, size=cfg.size, seed=cfg.seed, run=cfg.run_id, n_rows=s.n_rows, gini=s.gini,
                    file=f"{_cell_dir(cfg)}/{PART_FILE}", sha256=s.sha256 or "",
                    seconds=time.perf_counter() - started)


def run_grid(out: str | Path, *, families: Sequence[str] = FAMILIES, sizes: Sequence[int] = PAPER_SIZES,
             seeds: Sequence[int] = (42, 43, 44), base: WorldConfig | None = None, jobs: int | None = None,
             overwrite: bool = False, resume: bool = False, progress: ProgressCallback | None = None) -> WorldGrid:
    """Run every family x size x seed cell; write the hive-partitioned dataset
    ``out/family=F/size=N/seed=S/part-0.parquet`` (run id ``F-N-S``) and, last, ``out/_manifest.json``."""
    base = base or WorldConfig()
    configs = grid_configs(families, sizes, seeds, base)
    jobs = resolve_jobs(jobs)
    header = _header(configs, base)
    with owned_dir(out, ours=GRID_FILES, overwrite=overwrite, resume=resume, resumable=True) as root:
        links = [_cell_dir(c) for c in configs if through_link(root, root / _cell_dir(c))]
        if links:
            raise InputError(f"out {str(root)!r}: {links[0]} is or passes through a symbolic link; a grid "
                             "never writes or deletes through a link out of its directory")
        cells = _verified_cells(root, header, configs) if resume else {}
        return _run_cells(root, header, configs, cells, jobs, progress)


def _run_cells(root: Path, header: dict[str, Any], configs: Sequence[WorldConfig],
               cells: dict[tuple[str, int, int], GridCell], jobs: int,
               progress: ProgressCallback | None) -> WorldGrid:
    todo = [c for c in configs if _key(c) not in cells]
    workers = min(jobs, len(todo))
    if todo:
        check_memory(f"{workers} cells at once (jobs)", workers * max(c.memory_estimate() for c in todo),
                     why="each worker holds one run")
    started = time.perf_counter()
    offset, total = len(cells), len(configs)
    try:
        run_tasks(_grid_cell, [(c, str(root)) for c in todo], jobs=jobs,
                  progress=(lambda d, t: progress(offset + d, total)) if progress else None,
                  on_result=lambda i, cell: cells.__setitem__(_key(cell), cell))
    except BaseException as exc:
        remove_temp_files(root)
        for c in todo:  # a part renamed into place whose result never arrived is not recorded: it goes
            if _key(c) not in cells:
                (root / _cell_dir(c) / PART_FILE).unlink(missing_ok=True)
                _remove_empty(root, _cell_dir(c))
        status = "interrupted" if isinstance(exc, KeyboardInterrupt) else "failed"
        _write_manifest(root, header, configs, cells, status)
        if isinstance(exc, OSError):  # a full disk, a lost mount: the data's fault, not ours
            raise InputError(f"out {str(root)!r}: cannot write ({exc.strerror or exc}); the finished cells are "
                             "recorded, resume completes the grid") from None
        raise
    manifest = _write_manifest(root, header, configs, cells, "complete")
    ordered = tuple(cells[_key(c)] for c in _canonical(configs))
    return WorldGrid(out=str(root), manifest=str(manifest), cells=ordered, seconds=time.perf_counter() - started)


def _canonical(configs: Sequence[WorldConfig]) -> list[WorldConfig]:
    return sorted(configs, key=lambda c: (FAMILIES.index(c.family), c.size, c.seed))


def _header(configs: Sequence[WorldConfig], base: WorldConfig) -> dict[str, Any]:
    """The manifest without its cells and status: what a resumed grid must match."""
    return manifest_doc("world grid", {
        "families": _unique(c.family for c in configs), "sizes": _unique(c.size for c in configs),
        "seeds": _unique(c.seed for c in configs),
        "shared": {k: v for k, v in configs[0].to_dict().items()
                   if k not in ("family", "size", "seed", "graph_params", "run")},
        "graph_params": jsonable(base.graph_params),
        "layout": f"family=F/size=N/seed=S/{PART_FILE}; run = F-N-S",
    })


def _write_manifest(root: Path, header: dict[str, Any], configs: Sequence[WorldConfig],
                    cells: dict[tuple[str, int, int], GridCell], status: str) -> Path:
    done = [(c, cells[_key(c)]) for c in _canonical(configs) if _key(c) in cells]
    path = root / GRID_MANIFEST_FILE
    write_json(path, {**header, "status": status, "cells": [
        {"family": g.family, "size": g.size, "seed": g.seed, "run": g.run, "n_rows": g.n_rows, "gini": g.gini,
         "file": g.file, "sha256": g.sha256, "repeat": c.command()} for c, g in done]})
    return path


def _verified_cells(root: Path, header: dict[str, Any],
                    configs: Sequence[WorldConfig]) -> dict[tuple[str, int, int], GridCell]:
    """Resume: the cells of the existing manifest whose part file still has the recorded SHA-256."""
    path = root / GRID_MANIFEST_FILE
    if not path.is_file():
        return {}  # parts without a manifest cannot be verified: every cell is run again
    old = _read_manifest(path)
    differ = [k for k in header if jsonable(old.get(k)) != jsonable(header[k])]
    if differ:
        raise UsageError(f"resume: {root} holds a grid of another configuration ({', '.join(differ)} differ); "
                         "pass overwrite to replace it", params=("overwrite",))
    wanted = {_key(c) for c in configs}
    out = {}
    for e in old["cells"]:
        key = (e["family"], e["size"], e["seed"])
        f = root / e["file"]
        if key in wanted and f.is_file() and not through_link(root, f) and sha256(f) == e["sha256"]:
            out[key] = GridCell(family=key[0], size=key[1], seed=key[2], run=e["run"], n_rows=e["n_rows"],
                                gini=e["gini"], file=e["file"], sha256=e["sha256"], seconds=0.0, reused=True)
    return out


_CELL_FIELDS = {"family": str, "size": int, "seed": int, "run": str, "n_rows": int, "gini": (int, float, type(None)),
                "file": str, "sha256": str}


def _read_manifest(path: Path) -> dict[str, Any]:
    """The grid manifest at ``path``, checked field by field: a corrupt or foreign one is an
    :class:`InputError` (exit 3) saying what is wrong, never a crash on a missing key."""
    def bad(why: str) -> InputError:
        return InputError(f"resume: {path}: {why}; pass overwrite to replace the grid", params=("overwrite",))

    try:
        old = json.loads(path.read_bytes())
    except OSError as exc:
        raise bad(f"cannot be read ({exc.strerror})") from None
    except (ValueError, RecursionError) as exc:
        raise bad(f"not valid JSON ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})") from None
    if not isinstance(old, dict):
        raise bad(f"not a JSON object (a {type(old).__name__})")
    if old.get("tool") != "ctwm" or old.get("command") != "world grid":
        raise bad(f"not a ctwm world grid manifest (tool {old.get('tool')!r}, command {old.get('command')!r})")
    cells = old.get("cells")
    if not isinstance(cells, list):
        raise bad("its cells are not a list")
    for i, e in enumerate(cells):
        if not isinstance(e, dict):
            raise bad(f"cell {i} is not an object")
        if "n_rows" not in e and "rows" in e:  # a manifest written before issue 24 named the count rows
            e["n_rows"] = e.pop("rows")
        for name, kind in _CELL_FIELDS.items():
            value = e.get(name)
            if not isinstance(value, kind) or isinstance(value, bool):
                raise bad(f"cell {i}: field {name!r} is missing or not a {getattr(kind, '__name__', 'number')}")
        rel = Path(e["file"])
        if rel.is_absolute() or ".." in rel.parts:
            raise bad(f"cell {i}: file {e['file']!r} is outside the grid")
    return old


def _remove_empty(root: Path, rel: str) -> None:
    with contextlib.suppress(OSError):  # stops at the first directory that is not empty
        for d in [Path(rel), *Path(rel).parents]:
            if d != Path("."):
                (root / d).rmdir()
