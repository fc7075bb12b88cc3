"""``ctwm world``: run the Synthetic Graph World (one run, the grid, the retriever ladder)."""

from __future__ import annotations

import dataclasses

import typer
from rich.table import Table

from ..common.errors import UsageError
from ..common.vocabulary import ALL_RETRIEVERS, PAPER_SIZES, RETRIEVERS
from ..common.vocabulary import GRAPH_FAMILIES as FAMILIES
from .declared import declared_flags
from .options import Format, choice_list, comma_list, output_flags
from .output import emit, fmt_num, message, progress_bar
from .registry import result
from .seeding import resolve_seed
from .world_options import (
    GridFlags,
    GridRun,
    LadderFlags,
    LadderRun,
    RunFlags,
    WorldSettings,
    world_options,
    world_options_no_writes,
)

world_app = typer.Typer(
    help=(
        "Synthetic Graph World: graph families, agent policies and the retriever ladder, each run writing "
        "a trace that ctwm audit reads."
    ),
    no_args_is_help=True,
)


@world_app.command("run")
@result("world run", "ctwm_cli.world.run.WorldRun")
@output_flags
@world_options
@declared_flags(RunFlags, name="flags")
def run(*, flags: RunFlags, opts: WorldSettings, fmt: Format = Format.table) -> None:
    """Run one agent in one world and write its trace (DIR/trace.parquet) and manifest (DIR/manifest.json).

    \b
    Examples:
      ctwm world run --out run_sf/ --family scale-free --size 500 --steps 20000 --seed 1
      ctwm world run --out run_sem/ --policy semantic --retriever state-uniform --seed 2 --json
      ctwm world run --out run_art/ --preset artifact --family modular --size 100 --seed 42
    """
    from ..world import run_world

    f = flags
    seed = resolve_seed(f.seed)
    cfg = opts.config(family=f.family, size=f.size, retriever=f.retriever, seed=seed)
    if f.run:
        cfg = dataclasses.replace(cfg, run=f.run)
    res = run_world(cfg, f.out, overwrite=f.overwrite)
    row = res.to_dict()
    t = Table(title=f"world run {res.run}", title_justify="left", show_header=False)
    t.add_column("field", style="bold")
    t.add_column("value", overflow="fold")
    for key, value in row.items():
        shown = (fmt_num(value) if not isinstance(value, dict)
                 else ", ".join(f"{a}: {fmt_num(b)}" for a, b in value.items()))
        t.add_row(key, shown or "–")
    emit("world run", row, [row], fmt, seed=seed, tables=[t])
    message(f"time: {res.steps_per_second:,.0f} steps/s")  # stderr only: results hold no wall-clock values


@world_app.command("grid")
@result("world grid", "ctwm_cli.world.grid.WorldGrid")
@output_flags
@declared_flags(GridRun, name="how")
@world_options
@declared_flags(GridFlags, name="flags")
def grid(*, flags: GridFlags, opts: WorldSettings, how: GridRun, fmt: Format = Format.table) -> None:
    """Run families x sizes x seeds (default 6 x 3 x 3 = 54 cells) in parallel; run id F-N-S.

    Feeds `ctwm finite-size OUT --size-col size --group-by family` and `ctwm audit OUT --group-by run`.

    \b
    Examples:
      ctwm world grid --out grid_out/ --steps 20000 --replicates 3 --seed 1
      ctwm world grid --out small/ --family uniform --family scale-free --size 100 --replicates 1
      ctwm world grid --out art/ --preset artifact --seed 42
    """
    from ..world import run_grid

    f, resume = flags, how.resume
    if resume and f.seed is None:
        raise UsageError("--resume needs the --seed of the grid it completes (its _manifest.json lists the seeds)")
    seed = resolve_seed(f.seed)
    fams = choice_list(f.family, FAMILIES, "--family") or list(FAMILIES)
    sizes = _sizes(f.size)
    base = opts.config(family=fams[0], size=0, retriever=f.retriever, seed=seed)
    seeds = [seed + i for i in range(f.replicates)]
    total = len(set(fams)) * len(set(sizes or PAPER_SIZES)) * f.replicates
    with progress_bar("world grid", total=total) as progress:
        res = run_grid(f.out, families=fams, sizes=sizes or list(PAPER_SIZES), seeds=seeds, base=base, jobs=how.jobs,
                       overwrite=how.overwrite, resume=resume, progress=progress)
    rows = [c.to_dict() for c in res.cells]
    t = Table(title=f"world grid -> {res.out} ({len(rows)} cells; manifest {res.manifest})", title_justify="left")
    for col in ("family", "size", "seed", "rows", "gini", *(("cell",) if resume else ())):
        t.add_column(col, justify="left" if col in ("family", "cell") else "right")
    for c in res.cells:
        t.add_row(c.family, str(c.size), str(c.seed), fmt_num(c.n_rows), fmt_num(c.gini),
                  *(("kept" if c.reused else "run",) if resume else ()))
    kept = sum(c.reused for c in res.cells)
    headline = (f"resume: {kept:,} of {len(res.cells):,} cells kept (file SHA-256 matched the manifest), "
                f"{len(res.cells) - kept:,} run") if resume else None
    emit("world grid", res.to_dict(), rows, fmt, seed=seed, tables=[t], headline=headline)
    message(f"time: {res.seconds:.1f} s")  # stderr only: results hold no wall-clock values


@world_app.command("ladder")
@result("world ladder", "ctwm_cli.world.ladder.Ladder")
@output_flags
@declared_flags(LadderRun, name="how")
@world_options_no_writes
@declared_flags(LadderFlags, name="flags")
def ladder(*, flags: LadderFlags, opts: WorldSettings, how: LadderRun, fmt: Format = Format.table) -> None:
    """Gini and other concentration numbers per retriever per family (the retriever ladder, paper Fig. 3).

    Counts are memory accesses per transition (retrieve + write events); gini_retrieve counts retrieve
    events only. Each family uses one world and seed for all retrievers.

    \b
    Examples:
      ctwm world ladder --size 500 --steps 20000 --seed 1
      ctwm world ladder --family scale-free --retriever state-frequency --retriever none --json
      ctwm world ladder --steps 20000 --seed 1 --plot ladder.png
      ctwm world ladder --preset artifact --size 100 --seed 42 --retriever state-frequency --retriever state-uniform
    """
    from ..plots import check_plot_path
    from ..world import run_ladder

    f, plot, size = flags, how.plot, flags.size
    check_plot_path(plot)
    seed = resolve_seed(f.seed)
    fams = choice_list(f.family, FAMILIES, "--family") or list(FAMILIES)
    rets = choice_list(f.retriever, ALL_RETRIEVERS, "--retriever") or list(RETRIEVERS)
    if opts.tau is not None and "state-tau" not in rets:
        raise UsageError("--tau applies to the state-tau rung: add --retriever state-tau")
    base = opts.config(family=fams[0], size=size, retriever="state-frequency", seed=seed)
    with progress_bar("world ladder", total=len(fams)) as progress:
        res = run_ladder(families=fams, retrievers=rets, base=base, jobs=how.jobs, progress=progress)
    rows = [r.to_dict() for r in res.results]
    t = Table(
        title=f"retriever ladder: {res.policy}, |V|={size}, {res.steps:,} steps, k={res.k}, "
        f"capacity={res.capacity}, seed={seed}" + (f", preset {res.preset}" if res.preset else "")
        + (f", store {res.store} for every rung" if res.store else ""),
        title_justify="left",
        caption="gini: over retrieve+write counts per transition; /SF: ratio to state-frequency; "
        "gini ret: retrieve events only; top10: share of the top decile of items.",
        caption_justify="left",
    )
    for col in ("family", "retriever", "gini", "/SF", "gini ret", "top10", "max/med", "skew", "items"):
        text = col in ("family", "retriever")
        t.add_column(col, justify="left" if text else "right", no_wrap=text)
    for r in res.results:
        t.add_row(r.family, r.retriever, fmt_num(r.gini, 3), fmt_num(r.gini_vs_state_frequency, 3),
                  fmt_num(r.gini_retrieve, 3), fmt_num(r.top10_share, 3), fmt_num(r.max_over_median, 3),
                  fmt_num(r.skewness, 3), fmt_num(r.n_items))
    if plot:
        from ..plots import save_figure
        from ..plots.ladder import plot_ladder

        message(f"figure: {save_figure(plot_ladder(res), plot)}")
    emit("world ladder", res.to_dict(), rows, fmt, seed=seed, tables=[t])


def _sizes(values: list[str] | None) -> list[int] | None:
    """``--size`` of the grid: integers, commas and repeats alike (None when not given)."""
    out = []
    for v in comma_list(values):
        try:
            out.append(int(v))
        except ValueError:
            raise UsageError(f"--size expects integers, got {v!r}") from None
    return out or None


def register(app: typer.Typer) -> None:
    app.add_typer(world_app, name="world")
