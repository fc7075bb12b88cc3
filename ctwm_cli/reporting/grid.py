"""The section of a ``ctwm world grid`` directory: the finite-size table (paper Table 1) with its figure and the
tail audit of every run side by side (paper Fig. 4), from ``finite_size_of_traces`` and ``audit_many`` as
``ctwm finite-size OUT --size-col size --group-by family`` and ``ctwm audit OUT --group-by run`` call them."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..common.errors import InputError
from ..diagnostics import finite_size_of_traces
from ..diagnostics.measures import concentration
from ..plots.finite_size import plot_finite_size
from ..tail import audit_many
from ..traces import item_counts
from ..traces.engine import ReadOptions
from ..traces.paths import scan_paths
from ..world.trace import GRID_MANIFEST_FILE
from .model import Block, Card, Figure, Section, Table
from .summary import audits_summary
from .svg import draw_svg
from .trace import audit_block, concentration_block, shown


def grid_manifest(path: str | Path) -> dict[str, Any] | None:
    """The grid manifest of a directory, or None when it is not a ``world grid`` output."""
    p = Path(path) / GRID_MANIFEST_FILE
    if not p.is_file():
        return None
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"{p}: not a readable grid manifest ({exc})") from None
    return doc if isinstance(doc, dict) and doc.get("command") == "world grid" else None


def _size(s: float) -> str:
    return f"{s:g}"


def _finite_table(fs) -> Table:
    sizes = sorted({s for f in fs.families for s in f.sizes})
    rows = []
    for f in fs.families:
        cells = dict(zip(f.sizes, zip(f.sigma, f.sigma_sd, f.n_runs, strict=True), strict=True))
        row: list[Any] = [f.family]
        for s in sizes:
            m, sd, n = cells.get(s, (None, None, 0))
            row.append(None if m is None else (f"{m:.3f} ± {sd:.2f}" if n > 1 and math.isfinite(sd) else f"{m:.3f}"))
        row += [f.slope, f.slope_se, f.r2, f.slope_raw]
        rows.append(tuple(row))
    logname = {"e": "ln", "10": "log10", "2": "log2"}[fs.log_base]
    return Table(caption=f"Finite-size trend of σ_top10 (mean ± sd over runs; OLS slope per {logname}(size); store "
                 f"capacity {', '.join(map(str, fs.store_capacity)) or 'unknown'} ({fs.capacity_source}))",
                 columns=("family", *(f"σ_{_size(s)}" for s in sizes), "slope", "slope se", "R²",
                          "raw slope (paper σ)"),
                 rows=tuple(rows))


def grid_section(path: str, read: ReadOptions, manifest: dict[str, Any], *, key: str, seed: int,
                 bootstrap: int = 1000, jobs: int | None = None,
                 stage: Callable[[str], None] = lambda _: None) -> Section:
    stage(f"{path}: finite-size trend")
    fs = finite_size_of_traces([path], read, size_col="size", group_by="family")
    stage(f"{path}: reading runs")
    counts = item_counts(scan_paths([path], read, group_by="run")[0], None)
    stage(f"{path}: tail audit of {len(counts)} runs (B = {bootstrap})")
    audits = audit_many(counts, bootstrap=bootstrap, seed=seed, jobs=jobs)
    measures = tuple(concentration(c) for c in counts)  # as ctwm concentration measures each run
    rising = [f.family for f in fs.families if math.isfinite(f.slope) and f.slope > 0]
    alt = (f"σ_top10 rises with size in {len(rising)} of {len(fs.families)} families"
           + (f" ({', '.join(rising)})" if rising else "") + "; slopes "
           + ", ".join(f"{f.family} {f.slope:.3f}" for f in fs.families) + ".")
    finite = Block(title="Finite-size trend (paper Table 1)", text=fs.statistic + ".", figures=(Figure(
        key=f"{key}-finite", title="σ_top10 against system size per family", alt=alt, table=_finite_table(fs),
        svg=draw_svg(lambda: plot_finite_size(dataclasses.replace(
            fs, families=tuple(shown(f, "family") for f in fs.families))), key=f"{key}-finite", alt=alt)),))
    tally: dict[str, int] = {}
    for a in audits:
        tally[a.verdict.verdict] = tally.get(a.verdict.verdict, 0) + 1
    words = ", ".join(f"{k} {n}" for k, n in sorted(tally.items()))
    shared = manifest.get("shared", {}) if isinstance(manifest.get("shared"), dict) else {}
    card = Card(headline=f"{len(counts)} runs: {words}", verdict=None, fields=(
        ("families", ", ".join(map(str, manifest.get("families", [])))),
        ("sizes", ", ".join(map(str, manifest.get("sizes", [])))),
        ("seeds", ", ".join(map(str, manifest.get("seeds", [])))),
        *((k, v) for k, v in shared.items() if not isinstance(v, (dict, list))),
        ("verdicts", words), ("finite-size slopes", ", ".join(f"{f.family} {f.slope:.3f}" for f in fs.families)),
        ("bootstrap B", bootstrap), ("seed", f"{seed} (each run's audit seed derived from it and the run id)"),
    ))
    return Section(kind="grid", source=path, title=f"World grid {Path(path).name or path}", card=card,
                   blocks=(finite, audit_block(audits, counts, f"{key}-a", ccdf_figures=0),
                           concentration_block(counts, f"{key}-c", "run", rows=measures)),
                   notes=("paper Fig. 3 (the retriever ladder) comes from `ctwm world ladder`, not from a grid",),
                   summary=audits_summary(audits, concentrations=measures, noun="runs"))
