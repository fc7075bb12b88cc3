"""``ctwm replay``: memory policies and prompt encodings on Synthetic Graph World episodes.

The options every replay command shares are declared once in :mod:`.replay_options`; each command
here adds only its own and renders the library's result.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from ..common.errors import CheckFailed, UsageError
from .options import Format, comma_list, output_flags, tau_values
from .output import emit, fmt_num, message, progress_bar
from .registry import result
from .declared import declared_flags
from .replay_options import (
    COMPARE_MEMORIES,
    CompareFlags,
    EncodingsFlags,
    FrozenFlags,
    ParetoFlags,
    ReplaySettings,
    replay_options,
    timed,
)
from .replay_tables import arms_table, ci_text, deltas_table
from .seeding import resolve_seed

if TYPE_CHECKING:
    from ..replay import ReplayResult

def default_baseline(memories: list[str]) -> str | None:
    """``replay compare``'s baseline when --baseline is not given: graph if listed, else the first policy
    listed; none (no deltas) when only one policy is listed, so ``--memory tiered`` alone runs."""
    if "graph" in memories:
        return "graph"
    return memories[0] if len(memories) > 1 else None


def check_min_effect(res: ReplayResult, specs: list[str] | None) -> None:
    """``--min-effect [METRIC=]X``: exit 1 naming the comparisons that cannot detect X at 80% power."""
    from ..replay.metrics import HEADLINE_METRIC, undetectable

    bad = []
    for spec in specs or []:
        metric, _, value = spec.rpartition("=")
        metric = metric.strip() or HEADLINE_METRIC
        try:
            effect = float(value)
        except ValueError:
            raise UsageError(f"--min-effect expects X or METRIC=X, got {spec!r}") from None
        if not effect > 0:
            raise UsageError(f"--min-effect must be > 0, got {spec!r}")
        bad += [f"{d.treatment} - {d.baseline} on {d.metric}: "
                + (f"MDE {d.mde:.4g} > {effect:g}" if d.mde is not None else f"no interval ({d.interval_status})")
                for d in undetectable(res.comparisons, metric, effect)]
    if bad:
        raise CheckFailed(f"this run cannot detect the effect asked for at 80% power: {'; '.join(bad)}")


def _render(res: ReplayResult, fmt: Format, seed: int, title: str, plot: str | None = None) -> None:
    tables: list[Any] = [arms_table(res, title)]
    if res.comparisons:
        tables.append(deltas_table(res, seed))
    if res.tau_sweep:
        s = Table(title="τ sweep (ctwm, measured on the episodes)", title_justify="left")
        for col in ("encoding", "tau", "tokens/step", "tail error", "overall error", "core lines", "tail listed",
                    "tail items", "coverage"):
            s.add_column(col, justify="left" if col == "encoding" else "right")
        for r in res.tau_sweep:
            s.add_row(r.encoding, fmt_num(r.tau, 4), fmt_num(r.tokens_mean, 5), fmt_num(r.tail_error, 3),
                      fmt_num(r.overall_error, 3), fmt_num(r.items_in_prompt, 3), fmt_num(r.items_summarised, 3),
                      fmt_num(r.tail_items, 3), f"{fmt_num(r.state_coverage, 3)}/{fmt_num(r.transition_coverage, 3)}")
        tables.append(s)
    for arm, n in res.matched_over_budget.items():
        tables.append(f"{arm}: budget per step = what graph spent; at {n:,} step(s) ctwm's minimal prompt was larger "
                      "and was used instead")
    if res.out:
        tables.append(f"wrote {res.out}: {', '.join(res.files)}, manifest.json")
    if plot:
        from ..plots import save_figure
        from ..plots.replay import plot_replay

        message(f"figure: {save_figure(plot_replay(res), plot)}")
    emit(res.command, res.to_dict(), [a.to_dict() for a in res.arms], fmt, seed=seed, tables=tables)


replay_app = typer.Typer(
    help=(
        "Memory policies (full, flat, graph, ctwm, tiered) and prompt encodings (verbose, compact) replayed on the "
        "same Synthetic Graph World episodes: prompt tokens, coverage, tail error, answerable error with oracle/counts "
        "reference rows, paired deltas with bootstrap CIs; open loop (default) or closed loop "
        "(--agent reader|endpoint). "
        "Without a subcommand: compare the encodings of one memory policy."
    ),
    invoke_without_command=True,
)


@replay_app.callback()
@result("replay", "ctwm_cli.replay.ReplayResult")
@output_flags
@replay_options
@declared_flags(EncodingsFlags, name="flags")
def replay(
    ctx: typer.Context,
    *,
    flags: EncodingsFlags,
    opts: ReplaySettings,
    fmt: Format = Format.table,
) -> None:
    """Compare the verbose and compact encodings of one memory policy on the same episodes.

    Reports prompt tokens per step (mean, median, p95), coverage, tail and overall error, answerable
    error per encoding, and compact - verbose paired deltas with block-bootstrap CIs. Subcommands:
    compare (policies, Table 3), ablation (Table 4), pareto (budget sweep), frozen (Theorem A.7).

    \b
    Examples:
      ctwm replay --memory ctwm --steps 1000 --episodes 2 --seed 1
      ctwm replay --agent reader --out run/ --seed 1 && ctwm replay frozen run/ --encoding verbose
    """
    if ctx.invoked_subcommand is not None:
        return
    from ..replay import parse_taus, replay_encodings

    memory = flags.memory
    taus = parse_taus(tau_values(opts.tau) or None)
    if memory != "ctwm" and taus != (1.0,):
        raise UsageError("--tau applies to --memory ctwm only")
    seed = resolve_seed(opts.seed)
    cfg = opts.config(seed)
    n = len(cfg.seeds) * 2 * len(taus)
    with progress_bar("replay", total=n) as progress:
        res = timed(opts, "replay", n * cfg.steps, lambda: replay_encodings(
            cfg, memory=memory, taus=taus, out=opts.out, overwrite=opts.overwrite, seed=seed, progress=progress))
    _render(res, fmt, seed, f"encodings of {memory}", opts.plot)
    check_min_effect(res, opts.min_effect)


@replay_app.command("compare")
@result("replay compare", "ctwm_cli.replay.ReplayResult")
@output_flags
@replay_options
@declared_flags(CompareFlags, name="flags")
def compare(*, flags: CompareFlags, opts: ReplaySettings, fmt: Format = Format.table) -> None:
    """Memory policies on the same episodes, in the layout of the paper's Table 3.

    Tokens per step, coverage, tail and overall error, answerable error and evidence in prompt per
    policy, the oracle and counts reference rows (none: the floor), and the paired deltas of every
    policy against --baseline with bootstrap CIs and their MDE at 80% power (closed loop: on regret,
    each arm's error minus the oracle's on its own steps: how far its memory left the reader below the
    best possible prediction of the steps it walked into; not whether those steps were easy). A --tau
    sweep runs ctwm once per τ.

    \b
    Examples:
      ctwm replay compare --seed 1
      ctwm replay compare --memory graph,ctwm --match-tokens graph --seed 1 --json
      ctwm replay compare --agent reader --memory graph,ctwm --seed 1
      ctwm replay compare --memory graph,ctwm --min-effect 0.02 --seed 1   # exit 1 if 0.02 is undetectable
    """
    from ..replay import parse_taus, replay_compare

    mems = comma_list(flags.memories if flags.memories is not None else COMPARE_MEMORIES)
    taus = parse_taus(tau_values(opts.tau) or None)
    if "ctwm" not in mems and taus != (1.0,):
        raise UsageError("--tau applies to ctwm, which is not among --memory")
    seed = resolve_seed(opts.seed)
    cfg = opts.config(seed)
    baseline = flags.baseline
    base = default_baseline(mems) if baseline is None else (
        None if baseline.strip().lower() == "none" else baseline.strip())
    n = len(cfg.seeds) * sum(len(taus) if m == "ctwm" else 1 for m in set(mems))
    with progress_bar("replay compare", total=n) as progress:
        res = timed(opts, "replay compare", n * cfg.steps, lambda: replay_compare(
            cfg, memories=mems, encoding=flags.encoding, baseline=base, taus=taus, match_tokens=flags.match_tokens,
            out=opts.out, overwrite=opts.overwrite, seed=seed, progress=progress))
    _render(res, fmt, seed, "memory policies", opts.plot)
    check_min_effect(res, opts.min_effect)


@replay_app.command("ablation")
@result("replay ablation", "ctwm_cli.replay.ReplayResult")
@output_flags
@replay_options
def ablation(*, opts: ReplaySettings, fmt: Format = Format.table) -> None:
    """The encoding x allocation ablation of the paper's Table 4: {verbose, compact} x {graph, ctwm}.

    Paired deltas: every cell against graph/verbose, ctwm against graph within compact (allocation
    effect), compact against verbose within ctwm (encoding effect).

    \b
    Examples:
      ctwm replay ablation --steps 1000 --seed 1
    """
    from ..replay import parse_taus, replay_ablation

    seed = resolve_seed(opts.seed)
    taus = parse_taus(tau_values(opts.tau) or None)
    cfg = opts.config(seed)
    n = len(cfg.seeds) * (2 + 2 * len(taus))
    with progress_bar("replay ablation", total=n) as progress:
        res = timed(opts, "replay ablation", n * cfg.steps, lambda: replay_ablation(
            cfg, taus=taus, out=opts.out, overwrite=opts.overwrite, seed=seed, progress=progress))
    _render(res, fmt, seed, "encoding x allocation ablation", opts.plot)
    check_min_effect(res, opts.min_effect)


@replay_app.command("pareto")
@result("replay pareto", "ctwm_cli.replay.pareto.ParetoResult")
@output_flags
@declared_flags(ReplaySettings, name="opts", without=("out", "overwrite"))
@declared_flags(ParetoFlags, name="flags")
def pareto(*, flags: ParetoFlags, opts: ReplaySettings, fmt: Format = Format.table) -> None:
    """Tokens against answerable tail error per policy over a budget sweep, with CIs.

    With graph and ctwm in open loop a third series ctwm[<=graph] spends at every step what Graph
    Memory spent, and its paired deltas against graph answer "is CTWM better at the same price?".

    \b
    Examples:
      ctwm replay pareto --memory graph,ctwm --budget 128:1024:6 --seed 1
      ctwm replay pareto --budget 128,512 --tau 0.5,1 --plot pareto.png --json
    """
    from ..plots import check_plot_path
    from ..replay import parse_taus, replay_pareto

    plot = flags.plot
    check_plot_path(plot)
    seed = resolve_seed(opts.seed)
    cfg = opts.config(seed)
    mems = comma_list(flags.memories) if flags.memories is not None else ["graph", "ctwm"]
    taus = parse_taus(tau_values(opts.tau) or None)
    with progress_bar("replay pareto") as progress:
        res = replay_pareto(cfg, budgets=flags.budget, memories=mems, encoding=flags.encoding, taus=taus,
                            seed=seed, progress=progress)
    t = Table(title=f"Pareto ({res.loop} loop): {cfg.family}, |V|={cfg.size}, {len(cfg.seeds)} x {cfg.steps:,} steps, "
                    f"{int(100 * cfg.level)}% block-bootstrap CIs (B={cfg.bootstrap}, block {res.bootstrap['block']}, "
                    f"seed={seed})",
              title_justify="left", caption=res.finding, caption_justify="left")
    cols = ["series", "budget", "tokens/step [CI]", "ans. tail err [CI]", "evidence"]
    if res.loop == "closed":
        cols.append("tasks/1k steps [CI]")
    for col in cols:
        t.add_column(col, justify="left" if col == "series" else "right", no_wrap=col == "series")
    for p in res.points:
        row = [p.arm, str(p.budget), f"{fmt_num(p.tokens_mean, 5)} {ci_text(p.tokens_confidence_interval, 4)}",
               f"{fmt_num(p.answerable_tail_error, 3)} "
               f"{ci_text(p.answerable_tail_error_confidence_interval)}",
               fmt_num(p.evidence_in_prompt, 3)]
        if res.loop == "closed":
            row.append(f"{fmt_num(p.task_rate, 3)} {ci_text(p.task_rate_confidence_interval)}")
        t.add_row(*row)
    tables: list[Any] = [t]
    if plot:
        from ..plots import save_figure
        from ..plots.pareto import plot_pareto

        tables.append(f"figure: {save_figure(plot_pareto(res), plot)}")
    emit("replay pareto", res.to_dict(), [p.to_dict() for p in res.points], fmt, seed=seed, tables=tables)
    check_min_effect(res, opts.min_effect)


@replay_app.command("frozen")
@result("replay frozen", "ctwm_cli.replay.FrozenReplay")
@output_flags
@declared_flags(FrozenFlags, name="flags")
def frozen(
    run_dir: Annotated[str, typer.Argument(
        help="Directory written by ctwm replay ... --out (manifest.json, steps.parquet).")],
    *,
    flags: FrozenFlags,
    fmt: Format = Format.table,
) -> None:
    """Theorem A.7: replay recorded state-action trajectories under another encoding.

    Checks that the retrieval map returns the recorded item ids at every step and reports the
    replay loss (tail and overall error) beside the live loss, and, when the live run under the
    replay encoding is recorded too, the trajectory term (zero in open loop, not in closed loop).
    Exit code 1 if any retrieval differs.

    \b
    Examples:
      ctwm replay compare --steps 2000 --seed 1 --out replay_run/ && ctwm replay frozen replay_run/
      ctwm replay frozen replay_run/ --encoding verbose --run scale-free-500-1 --json
    """
    from ..replay import frozen_replay

    f = flags
    params = {"base_url": f.base_url, "model": f.model, "timeout": f.timeout} if f.predictor == "endpoint" else None
    res = frozen_replay(run_dir, f.encoding, runs=f.run, predictor=f.predictor, predictor_params=params, out=f.out,
                        overwrite=f.overwrite)
    t = Table(title=f"frozen replay of {res.run_dir} under {res.encoding} ({res.tokenizer}, predictor {res.predictor})",
              title_justify="left",
              caption="same ρ = the retrieval map returned the recorded item ids at every step; errors are live "
                      "(recorded) vs replay on the recorded trajectory; trajectory term = live error under the replay "
                      "encoding - replay error (Theorem A.7).", caption_justify="left")
    for col in ("run", "live enc", "same ρ", "live tail err", "replay tail err", "Δ tail", "live err", "replay err",
                "live tokens", "replay tokens", "trajectory term"):
        t.add_column(col, justify="left" if col in ("run", "live enc") else "right", no_wrap=True)
    for r in res.results:
        t.add_row(r.run, r.live_encoding, "yes" if r.retrieval_identical else f"no ({r.mismatched_steps} steps)",
                  fmt_num(r.live_tail_error, 4), fmt_num(r.replay_tail_error, 4), fmt_num(r.tail_error_difference, 3),
                  fmt_num(r.live_overall_error, 4), fmt_num(r.replay_overall_error, 4), fmt_num(r.live_tokens_mean, 5),
                  fmt_num(r.replay_tokens_mean, 5), fmt_num(r.trajectory_term, 3))
    tables: list[Any] = [t]
    if res.trajectory_terms:
        tt = Table(title="trajectory term over episodes (mean, Student-t interval over episodes)", title_justify="left")
        for col in ("memory", "live enc", "episodes", "trajectory term [CI]", "tail term [CI]", "interval"):
            tt.add_column(col, justify="left" if col in ("memory", "live enc", "interval") else "right")
        for g in res.trajectory_terms:
            tt.add_row(g.memory if g.tau is None else f"{g.memory}(tau={g.tau:g})", g.live_encoding, str(g.episodes),
                       f"{fmt_num(g.mean, 3)} {ci_text(g.confidence_interval)}",
                       f"{fmt_num(g.tail_mean, 3)} {ci_text(g.tail_confidence_interval)}", g.interval_status)
        tables.append(tt)
    if res.out:
        tables.append(f"wrote {res.out}: {', '.join(res.files)}, manifest.json")
    emit("replay frozen", res.to_dict(), [r.to_dict() for r in res.results], fmt, tables=tables)
    if not res.all_identical:
        bad = [r.run for r in res.results if not r.retrieval_identical]
        raise CheckFailed(f"retrieval differs from the recording in run(s) {', '.join(bad)}")


def register(app: typer.Typer) -> None:
    app.add_typer(replay_app, name="replay")
