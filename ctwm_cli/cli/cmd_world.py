"""``ctwm world``: run the Synthetic Graph World (one run, the grid, the retriever ladder)."""

from __future__ import annotations

import dataclasses
from enum import Enum
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from ..errors import UsageError
from ..vocabulary import (
    ALL_RETRIEVERS, EVICTION_RULES, PAPER_SIZES, RETRIEVERS, WORLD_ORDERS, WORLD_PRESETS, WORLD_WALKS,
)
from ..vocabulary import GRAPH_FAMILIES as FAMILIES
from ..vocabulary import WORLD_POLICIES as POLICIES
from .options import FormatOpt, Format, JobsOpt, JsonOpt, PlotOpt, SeedOpt, resolve_format
from .output import emit, fmt_num, message, progress_bar
from .seeding import resolve_seed

if TYPE_CHECKING:
    from ..world import WorldConfig

world_app = typer.Typer(
    help=(
        "Synthetic Graph World: graph families, agent policies and the retriever ladder, each run writing "
        "a trace that ctwm audit reads."
    ),
    no_args_is_help=True,
)

Family = Enum("Family", {f: f for f in FAMILIES}, type=str)  # type: ignore[misc]
PolicyName = Enum("PolicyName", {p: p for p in POLICIES}, type=str)  # type: ignore[misc]
RetrieverName = Enum("RetrieverName", {r: r for r in ALL_RETRIEVERS}, type=str)  # type: ignore[misc]
Walk = Enum("Walk", {r: r for r in WORLD_WALKS}, type=str)  # type: ignore[misc]
Order = Enum("Order", {r: r for r in WORLD_ORDERS}, type=str)  # type: ignore[misc]
Store = Enum("Store", {r: r for r in EVICTION_RULES}, type=str)  # type: ignore[misc]
Preset = Enum("Preset", {r: r for r in WORLD_PRESETS}, type=str)  # type: ignore[misc]

WalkOpt = Annotated[Walk | None, typer.Option(  # type: ignore[valid-type]
    "--walk", help="Random-walk step. typed [default]: a uniform action, then its Dirichlet outcome distribution "
    "(ctwm's reading of the paper's typed stochastic actions). uniform-neighbour: the next state uniform over the "
    "neighbours, the action fixed by the neighbour (the paper's code).")]
OrderOpt = Annotated[Order | None, typer.Option(  # type: ignore[valid-type]
    "--order", help="retrieve-first [default]: retrieval for s_t sees e_0..e_{t-1} only (no leak). write-first: "
    "e_t is written, then retrieved for s_t (the paper's Section 3 wording and its code). Random walk only.")]
StoreOpt = Annotated[Store | None, typer.Option(  # type: ignore[valid-type]
    "--store", help="Store eviction rule for every retriever (ladder: every rung) [default: the retriever's own: "
    "LFU for state-frequency/state-tau, random replacement otherwise]. lfu: the paper's code's one store; "
    "random: random replacement (ctwm's 'uniform reservoir'); reservoir: Algorithm R, a uniform sample of the "
    "arrivals.")]
TauOpt = Annotated[float | None, typer.Option(
    "--tau", help="state-tau retriever: k of the top 10 state-mates drawn with weights rank^-tau (the paper's "
    "code's tau sweep, acting on the trace) [default: 1.0].")]
PresetOpt = Annotated[Preset | None, typer.Option(  # type: ignore[valid-type]
    "--preset", help="artifact: every choice of the paper's public code (uniform-neighbour walk, write-first, one "
    "LFU store, absolute block probabilities p_in .15/p_out .01, BA m = min(3, part/30), exponential scale 6, "
    "one-way ring repair, 1-3 actions); explicit options win. Recorded in every manifest.")]

StepsOpt = Annotated[int, typer.Option("--steps", help="Agent steps per run.")]
KOpt = Annotated[int, typer.Option("--k", help="Items retrieved per step (top-k).")]
CapacityOpt = Annotated[int, typer.Option("--capacity", help="Memory store capacity (transitions).")]
GraphParamOpt = Annotated[
    list[str] | None,
    typer.Option("--graph-param", help="Graph family parameter KEY=VALUE (degree, mean_degree, m, blocks, mixing, "
                 "bridges). Repeatable."),
]
WorldParamOpt = Annotated[
    list[str] | None,
    typer.Option("--world-param", help="World parameter KEY=VALUE (actions_min, actions_max, concentration, "
                 "regions). Repeatable."),
]
PolicyParamOpt = Annotated[
    list[str] | None,
    typer.Option("--policy-param", help="Policy parameter KEY=VALUE (semantic: epsilon, zipf, memory_weight, "
                 "revisit_penalty, max_task_steps; endpoint: timeout, retries, api_key_env, zipf, max_task_steps). "
                 "Repeatable."),
]
BaseUrlOpt = Annotated[str | None, typer.Option(
    "--base-url", help="Endpoint policy: base URL of an OpenAI-compatible server (e.g. http://127.0.0.1:8000/v1). "
    "Key from $CTWM_API_KEY or $OPENAI_API_KEY.")]
ModelOpt = Annotated[str | None, typer.Option("--model", help="Endpoint policy: model name.")]
WritesOpt = Annotated[bool, typer.Option("--writes/--no-writes",
                                         help="Also record one write event per step in the trace.")]
OverwriteOpt = Annotated[bool, typer.Option(
    "--overwrite", help="Replace an existing trace or grid in --out (deletes only its files).")]
ResumeOpt = Annotated[bool, typer.Option(
    "--resume", help="Complete an interrupted grid in --out with the same options: cells whose file matches the "
    "manifest's SHA-256 are kept, the rest are run.")]
PolicyOpt = Annotated[PolicyName, typer.Option("--policy", help="Agent policy.")]  # type: ignore[valid-type]
RetrieverOpt = Annotated[RetrieverName, typer.Option("--retriever", help="Retriever (ladder rung).")]  # type: ignore[valid-type]


def _value(text: str) -> Any:
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def _pairs(specs: list[str] | None, option: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for spec in specs or []:
        key, sep, value = spec.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise UsageError(f"{option} expects KEY=VALUE, got {spec!r}")
        out[key.strip()] = _value(value.strip())
    return out


def _base(family: str, size: int, policy: str, retriever: str, steps: int, seed: int, k: int, capacity: int,
          graph_param, world_param, policy_param, base_url, model, writes: bool = True, *, walk=None, order=None,
          store=None, tau=None, preset=None) -> WorldConfig:
    pp = _pairs(policy_param, "--policy-param")
    if base_url is not None:
        pp["base_url"] = base_url
    if model is not None:
        pp["model"] = model
    if (base_url or model) and policy != "endpoint":
        raise UsageError("--base-url and --model apply to --policy endpoint only")
    from ..world import WorldConfig  # the library loads when a command runs, never for --help

    return WorldConfig(
        family=family, size=size, policy=policy, retriever=retriever, steps=steps, seed=seed, k=k,
        capacity=capacity, graph_params=_pairs(graph_param, "--graph-param"),
        world_params=_pairs(world_param, "--world-param"), policy_params=pp, writes=writes,
        walk=walk.value if walk else None, order=order.value if order else None,
        store=store.value if store else None, tau=tau, preset=preset.value if preset else None,
    )


@world_app.command("run")
def run(
    out: Annotated[str, typer.Option("--out", "-o", help="Directory to write trace.parquet and manifest.json into.")],
    family: Annotated[Family, typer.Option("--family", help="Graph family.")] = Family["scale-free"],  # type: ignore[valid-type]
    size: Annotated[int, typer.Option("--size", help="Number of states |V|.")] = 500,
    policy: PolicyOpt = PolicyName["random-walk"],
    retriever: RetrieverOpt = RetrieverName["state-frequency"],
    steps: StepsOpt = 100_000,
    seed: SeedOpt = None,
    k: KOpt = 3,
    capacity: CapacityOpt = 200,
    graph_param: GraphParamOpt = None,
    world_param: WorldParamOpt = None,
    policy_param: PolicyParamOpt = None,
    base_url: BaseUrlOpt = None,
    model: ModelOpt = None,
    writes: WritesOpt = True,
    walk: WalkOpt = None,
    order: OrderOpt = None,
    store: StoreOpt = None,
    tau: TauOpt = None,
    preset: PresetOpt = None,
    run_id: Annotated[str | None,
                      typer.Option("--run", help="Run id in the trace [default: FAMILY-SIZE-SEED].")] = None,
    overwrite: OverwriteOpt = False,
    fmt: FormatOpt = Format.table,
    as_json: JsonOpt = False,
) -> None:
    """Run one agent in one world and write its trace (DIR/trace.parquet) and manifest (DIR/manifest.json).

    \b
    Examples:
      ctwm world run --out run_sf/ --family scale-free --size 500 --steps 20000 --seed 1
      ctwm world run --out run_sem/ --policy semantic --retriever state-uniform --seed 2 --json
      ctwm world run --out run_art/ --preset artifact --family modular --size 100 --seed 42
    """
    from ..world import run_world

    fmt = resolve_format(fmt, as_json)
    seed = resolve_seed(seed)
    cfg = _base(family.value, size, policy.value, retriever.value, steps, seed, k, capacity, graph_param,
                world_param, policy_param, base_url, model, writes, walk=walk, order=order, store=store, tau=tau,
                preset=preset)
    if run_id:
        cfg = dataclasses.replace(cfg, run=run_id)
    res = run_world(cfg, out, overwrite=overwrite)
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
def grid(
    out: Annotated[str, typer.Option("--out", "-o", help="Directory of the hive-partitioned dataset "
                                     "OUT/family=F/size=N/seed=S/part-0.parquet (manifest: OUT/_manifest.json).")],
    families: Annotated[list[Family] | None,  # type: ignore[valid-type]
                        typer.Option("--family", help="Graph family; repeatable [default: all six].")] = None,
    sizes: Annotated[list[int] | None,
                     typer.Option("--size", help="Graph size; repeatable [default: 100, 500, 1000].")] = None,
    replicates: Annotated[int, typer.Option("--replicates", help="Seeds per family and size: SEED, SEED+1, ...")] = 3,
    seed: SeedOpt = None,
    policy: PolicyOpt = PolicyName["random-walk"],
    retriever: RetrieverOpt = RetrieverName["state-frequency"],
    steps: StepsOpt = 100_000,
    k: KOpt = 3,
    capacity: CapacityOpt = 200,
    graph_param: GraphParamOpt = None,
    world_param: WorldParamOpt = None,
    policy_param: PolicyParamOpt = None,
    base_url: BaseUrlOpt = None,
    model: ModelOpt = None,
    writes: WritesOpt = True,
    walk: WalkOpt = None,
    order: OrderOpt = None,
    store: StoreOpt = None,
    tau: TauOpt = None,
    preset: PresetOpt = None,
    jobs: JobsOpt = None,
    overwrite: OverwriteOpt = False,
    resume: ResumeOpt = False,
    fmt: FormatOpt = Format.table,
    as_json: JsonOpt = False,
) -> None:
    """Run families x sizes x seeds (default 6 x 3 x 3 = 54 cells) in parallel; run id F-N-S.

    Feeds `ctwm finite-size OUT --size-col size --group-by family` and `ctwm audit OUT --group-by run`.

    \b
    Examples:
      ctwm world grid --out grid_out/ --steps 20000 --replicates 3 --seed 1
      ctwm world grid --out small/ --family uniform --family scale-free --size 100 --replicates 1
      ctwm world grid --out art/ --preset artifact --seed 42
    """
    from ..world import run_grid

    fmt = resolve_format(fmt, as_json)
    if replicates < 1:
        raise UsageError(f"--replicates must be >= 1, got {replicates}")
    if resume and seed is None:
        raise UsageError("--resume needs the --seed of the grid it completes (its _manifest.json lists the seeds)")
    seed = resolve_seed(seed)
    fams = [f.value for f in families] if families else list(FAMILIES)
    base = _base(fams[0], 0, policy.value, retriever.value, steps, seed, k, capacity, graph_param, world_param,
                 policy_param, base_url, model, writes, walk=walk, order=order, store=store, tau=tau, preset=preset)
    seeds = [seed + i for i in range(replicates)]
    total = len(set(fams)) * len(set(sizes or PAPER_SIZES)) * replicates
    with progress_bar("world grid", total=total) as progress:
        res = run_grid(out, families=fams, sizes=sizes or list(PAPER_SIZES), seeds=seeds, base=base, jobs=jobs,
                       overwrite=overwrite, resume=resume, progress=progress)
    rows = [c.to_dict() for c in res.cells]
    t = Table(title=f"world grid -> {res.out} ({len(rows)} cells; manifest {res.manifest})", title_justify="left")
    for col in ("family", "size", "seed", "rows", "gini"):
        t.add_column(col, justify="left" if col == "family" else "right")
    for c in res.cells:
        t.add_row(c.family, str(c.size), str(c.seed), fmt_num(c.rows), fmt_num(c.gini))
    emit("world grid", res.to_dict(), rows, fmt, seed=seed, tables=[t])
    message(f"time: {res.seconds:.1f} s")  # stderr only: results hold no wall-clock values


@world_app.command("ladder")
def ladder(
    families: Annotated[list[Family] | None,  # type: ignore[valid-type]
                        typer.Option("--family", help="Graph family; repeatable [default: all six].")] = None,
    retrievers: Annotated[list[RetrieverName] | None,  # type: ignore[valid-type]
                          typer.Option("--retriever", help="Retriever; repeatable [default: the four rungs "
                                       "uniform-frequency, state-frequency, state-uniform, none].")] = None,
    size: Annotated[int, typer.Option("--size", help="Number of states |V|.")] = 500,
    steps: StepsOpt = 100_000,
    seed: SeedOpt = None,
    policy: PolicyOpt = PolicyName["random-walk"],
    k: KOpt = 3,
    capacity: CapacityOpt = 200,
    graph_param: GraphParamOpt = None,
    world_param: WorldParamOpt = None,
    policy_param: PolicyParamOpt = None,
    base_url: BaseUrlOpt = None,
    model: ModelOpt = None,
    walk: WalkOpt = None,
    order: OrderOpt = None,
    store: StoreOpt = None,
    tau: TauOpt = None,
    preset: PresetOpt = None,
    jobs: JobsOpt = None,
    plot: PlotOpt = None,
    fmt: FormatOpt = Format.table,
    as_json: JsonOpt = False,
) -> None:
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

    fmt = resolve_format(fmt, as_json)
    check_plot_path(plot)
    seed = resolve_seed(seed)
    fams = [f.value for f in families] if families else list(FAMILIES)
    rets = [r.value for r in retrievers] if retrievers else list(RETRIEVERS)
    if tau is not None and "state-tau" not in rets:
        raise UsageError("--tau applies to the state-tau rung: add --retriever state-tau")
    base = _base(fams[0], size, policy.value, "state-frequency", steps, seed, k, capacity, graph_param, world_param,
                 policy_param, base_url, model, walk=walk, order=order, store=store, tau=tau, preset=preset)
    with progress_bar("world ladder", total=len(fams)) as progress:
        res = run_ladder(families=fams, retrievers=rets, base=base, jobs=jobs, progress=progress)
    rows = [r.to_dict() for r in res.rows]
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
    for r in res.rows:
        t.add_row(r.family, r.retriever, fmt_num(r.gini, 3), fmt_num(r.gini_vs_state_frequency, 3),
                  fmt_num(r.gini_retrieve, 3), fmt_num(r.top10_share, 3), fmt_num(r.max_over_median, 3),
                  fmt_num(r.skew, 3), fmt_num(r.n_items))
    if plot:
        from ..plots import save_figure
        from ..plots.ladder import plot_ladder

        message(f"figure: {save_figure(plot_ladder(res), plot)}")
    emit("world ladder", res.to_dict(), rows, fmt, seed=seed, tables=[t])


def register(app: typer.Typer) -> None:
    app.add_typer(world_app, name="world")
