"""``ctwm bench``: benchmark episodes (LongMemEval format, text games) and the Table 5 style report."""

from __future__ import annotations

import dataclasses
from enum import Enum
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from ..common.vocabulary import BENCH_K, DEFAULT_CORE, DEFAULT_MAX_CANDIDATES, DEFAULT_TAU, TOKENIZERS
from ..common.vocabulary import GAME_AGENTS as AGENTS
from ..common.vocabulary import LONGMEMEVAL_BUDGET as DEFAULT_BUDGET
from ..common.vocabulary import TEXTGAMES_BUDGET as TW_BUDGET
from .aliases import CONFIDENCE, aliased
from .option_groups import opt, option_group, param
from .options import Format, PlotOpt, SeedOpt, at_most, comma_list, output_flags
from .output import emit, fmt_num, message, progress_bar
from .registry import result
from .seeding import resolve_seed

if TYPE_CHECKING:
    from ..bench.longmemeval import LongMemEvalResult
    from ..bench.report import BenchReport
    from ..bench.textgames import TextGameResult
    from ..stats.intervals import ConfidenceInterval


Tokenizer = Enum("Tokenizer", {t: t for t in TOKENIZERS}, type=str)  # type: ignore[misc]
GameAgent = Enum("GameAgent", {a: a for a in AGENTS}, type=str)  # type: ignore[misc]

@dataclasses.dataclass(frozen=True)
class BenchOptions:
    """The options ``bench longmemeval`` and ``bench textworld`` share, as parsed."""

    k: int
    core: int
    tau: float
    max_candidates: int
    limit: int | None
    tokenizer: Any
    bootstrap: int
    level: float
    seed: int | None
    level_alias: float | None = None

    def pack(self) -> dict[str, Any]:
        """The packing and bootstrap keywords both library calls take."""
        return {"k": self.k, "core": self.core, "tau": self.tau, "max_candidates": self.max_candidates,
                "limit": self.limit, "tokenizer": self.tokenizer.value, "bootstrap": self.bootstrap,
                "level": aliased(self.level, self.level_alias, "--level", "--confidence")}


SHARED = [
    opt("k", int, ("--k",), "Graph Memory: items given a line at most (top-k).", BENCH_K),
    opt("core", int, ("--core", "-K"), "CTWM core size K (ranks 1..K may get their own line).", DEFAULT_CORE),
    opt("tau", float, ("--tau", "-t"), "CTWM exponent τ of b(r; τ) ∝ r^-τ.", DEFAULT_TAU),
    opt("max_candidates", int, ("--max-candidates",), "CTWM: ranked items M (core plus tail).",
        DEFAULT_MAX_CANDIDATES),
    opt("limit", int | None, ("--limit",), "Use only the first N questions / games.", None),
    opt("tokenizer", Tokenizer, ("--tokenizer",),
        "BPE tokenizer for prompt token counts (offline, tiktoken-identical).", Tokenizer["cl100k_base"]),
    opt("bootstrap", int, ("--bootstrap",), "Bootstrap replicates of the paired CIs (0: no intervals).", 1000,
        callback=at_most("ci_bootstrap")),
    *CONFIDENCE,
    param("seed", SeedOpt, None),
]
bench_options = option_group(SHARED, BenchOptions)
BootOpt = Annotated[int, typer.Option("--bootstrap", callback=at_most("ci_bootstrap"),
                                      help="Bootstrap replicates of the paired CIs (0: no intervals).")]

bench_app = typer.Typer(
    help=(
        "Benchmark episodes replayed under Graph Memory and CTWM with paired prompt-token counts: LongMemEval-format "
        "question sets (evidence recall, optional judged accuracy), TextWorld/ALFWorld games, and a Table 5 style "
        "report of every paired comparison."
    ),
    no_args_is_help=True,
)


def _pct(v: float | None) -> str:
    return "–" if v is None else f"{100 * v:+.2f}%"


def _ci(ci: ConfidenceInterval | None, pct: bool = True) -> str:
    if ci is None:
        return "–"
    f = _pct if pct else (lambda x: f"{x:+.3f}")
    return f"[{f(ci.low)}, {f(ci.high)}]"


def _render_lme(res: LongMemEvalResult, fmt: Format, seed: int) -> None:
    p = res.params
    t = Table(title=f"LongMemEval: {res.questions} questions from {res.source}; budget {p['budget']} tokens "
                    f"({res.tokenizer}); graph k={p['k']}; ctwm K={p['core']}, τ={p['tau']}, M={p['max_candidates']}"
                    + (f"; relaxed K={p['relax_core']}, τ={p['relax_tau']:g}" if p["relax"] else ""),
              title_justify="left",
              caption="recall: share of questions whose evidence turns/sessions have a line in the prompt (any/all); "
                      "questions without evidence are left out. " + res.accuracy_note + ".",
              caption_justify="left")
    cols = ["question type", "arm", "n", "tokens", "turn any", "turn all", "session any", "session all"]
    if res.accuracy_measured:
        cols.append("accuracy")
    for col in cols:
        t.add_column(col, justify="left" if col in ("question type", "arm") else "right",
                     no_wrap=col in ("question type", "arm"))
    last = None
    for s in res.summary:
        cells = [s.question_type if s.question_type != last else "", s.arm, str(s.questions), fmt_num(s.tokens_mean, 5),
                 fmt_num(s.turn_any, 3), fmt_num(s.turn_all, 3), fmt_num(s.session_any, 3), fmt_num(s.session_all, 3)]
        if res.accuracy_measured:
            cells.append(fmt_num(s.accuracy, 3))
        t.add_row(*cells)
        last = s.question_type
    c = Table(title=f"paired comparisons against {res.baseline} ({int(100 * res.bootstrap['level'])}% paired bootstrap "
                    f"over questions, B={res.bootstrap['replicates']}, seed={seed})", title_justify="left")
    ccols = ["arm", "question type", "token reduction [CI]", "Δ turn all [CI]", "Δ session all [CI]"]
    if res.accuracy_measured:
        ccols.append("Δ accuracy [CI]")
    for col in ccols:
        c.add_column(col, justify="left" if col in ("arm", "question type") else "right",
                     no_wrap=col in ("arm", "question type"))
    by = {(x.treatment, x.group, x.metric): x for x in res.comparisons}
    for (arm, qt, metric), x in by.items():
        if metric != "tokens" or qt not in ("all", "multi-session"):
            continue

        def delta(m: str, arm: str = arm, qt: str = qt) -> str:
            d = by.get((arm, qt, m))
            return "–" if d is None or d.delta is None else f"{d.delta:+.3f} {_ci(d.confidence_interval, pct=False)}"

        reduction = None if x.relative is None else -x.relative  # 1 - sum(treatment)/sum(baseline)
        rci = x.relative_confidence_interval
        cells = [arm, qt, f"{_pct(reduction)} {_ci(None if rci is None else rci.negated())}", delta("turn_all"),
                 delta("session_all")]
        if res.accuracy_measured:
            cells.append(delta("accuracy"))
        c.add_row(*cells)
    rows = [s.to_dict() for s in res.summary]
    emit("bench longmemeval", res.to_dict(), rows, fmt, seed=seed, tables=[t, c])


@bench_app.command("longmemeval")
@result("bench longmemeval", "ctwm_cli.bench.longmemeval.LongMemEvalResult")
@output_flags
@bench_options
def longmemeval(
    data: Annotated[str, typer.Argument(help="LongMemEval JSON file (the official format: a list of questions).")],
    memories: Annotated[list[str] | None, typer.Option(
        "--memory", help="Memory policies, a comma list or repeated: graph, ctwm [default: graph,ctwm].")] = None,
    budget: Annotated[int, typer.Option("--budget", "-B", help="Prompt budget in tokens (whole "
                                                               "prompt).")] = DEFAULT_BUDGET,
    relax: Annotated[bool, typer.Option("--relax/--no-relax", help="Also run ctwm-relaxed: larger core and lower τ on "
                                                                   "recall-critical questions (multi-session, "
                                                                   "temporal-reasoning, long-range cues).")] = True,
    relax_core: Annotated[int | None, typer.Option("--relax-core", help="Core size of ctwm-relaxed on recall-critical "
                                                                        "questions [default: 2K].")] = None,
    relax_tau: Annotated[float | None, typer.Option("--relax-tau", help="τ of ctwm-relaxed on recall-critical "
                                                                        "questions [default: τ/2].")] = None,
    base_url: Annotated[str | None, typer.Option("--base-url", help="OpenAI-compatible server that answers and judges "
                                                                    "each question (accuracy). Key from $CTWM_API_KEY "
                                                                    "or $OPENAI_API_KEY.")] = None,
    model: Annotated[str | None, typer.Option("--model", help="Model that answers (and judges, unless "
                                                              "--judge-model).")] = None,
    judge_model: Annotated[str | None, typer.Option("--judge-model", help="Model of the yes/no judge [default: "
                                                                          "--model].")] = None,
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds per endpoint request.")] = 60.0,
    retries: Annotated[int, typer.Option("--retries", help="Retries per endpoint request on transport errors.")] = 2,
    *,
    opts: BenchOptions,
    fmt: Format = Format.table,
) -> None:
    """Build every question's prompt from its haystack under each memory policy; report prompt tokens,
    evidence recall per question type and the paired token reduction against graph (Table 5 style).

    The Graph Memory baseline ranks the turns by lexical relevance (BM25 of the turn plus half the
    BM25 of its session) and gives the top --k a line while they fit; CTWM allocates the same
    ranking core/tail with b(r; τ). With --base-url and --model each prompt is also answered and
    judged (yes/no, per question type); without them accuracy is not measured.

    \b
    Examples:
      ctwm bench longmemeval longmemeval_s.json --seed 1
      ctwm bench longmemeval questions.json --limit 50 --budget 2048 --json > lme.json
    """
    from ..bench.longmemeval import run_longmemeval

    seed = resolve_seed(opts.seed)
    mems = comma_list(memories) if memories is not None else ["graph", "ctwm"]
    with progress_bar("longmemeval") as progress:
        res = run_longmemeval(data, memories=mems, budget=budget, relax=relax, relax_core=relax_core,
                              relax_tau=relax_tau, seed=seed, base_url=base_url, model=model, judge_model=judge_model,
                              timeout=timeout, retries=retries, progress=progress, **opts.pack())
    _render_lme(res, fmt, seed)


def _render_tw(res: TextGameResult, fmt: Format, seed: int) -> None:
    p = res.params
    t = Table(title=f"{res.label}: {len(res.games)} game(s), {res.steps} paired steps, agent {p['agent']}; budget "
                    f"{p['budget']} tokens ({res.tokenizer}); graph k={p['k']}; ctwm K={p['core']}, τ={p['tau']}",
              title_justify="left", caption=res.success_note + ".", caption_justify="left")
    for col in ("game", "steps", "won", "graph tokens/step", "ctwm tokens/step", "reduction"):
        t.add_column(col, justify="left" if col == "game" else "right")
    for g in res.games:
        t.add_row(g.game, str(g.steps), fmt_num(g.won), fmt_num(g.graph_tokens_mean, 5), fmt_num(g.ctwm_tokens_mean, 5),
                  _pct(g.reduction))
    t.add_row("all", str(res.steps), f"{res.success_graph}/{len(res.games)}", fmt_num(res.graph_tokens_mean, 5),
              fmt_num(res.ctwm_tokens_mean, 5), f"{_pct(res.reduction)} {_ci(res.reduction_confidence_interval)}")
    rows = [{k: v for k, v in g.to_dict().items() if k not in ("graph_tokens", "ctwm_tokens")} for g in res.games]
    emit("bench textworld", res.to_dict(), rows, fmt, seed=seed, tables=[t])


@bench_app.command("textworld")
@result("bench textworld", "ctwm_cli.bench.textgames.TextGameResult")
@output_flags
@bench_options
def textworld(
    games: Annotated[str, typer.Argument(help="A TextWorld/ALFWorld game file (.z8, .json, .tw-pddl) or a directory "
                                              "searched for them (e.g. $ALFWORLD_DATA/json_2.1.1/valid_seen).")],
    agent: Annotated[GameAgent, typer.Option("--agent", help="Action source: walkthrough (the game's solution), random "
                                                             "(admissible commands) or explore (random, then the "
                                                             "solution).")] = GameAgent["walkthrough"],  # type: ignore[valid-type]
    max_steps: Annotated[int, typer.Option("--max-steps", help="Steps per game at most.")] = 50,
    explore_steps: Annotated[int, typer.Option("--explore-steps", help="Random steps before the solution (--agent "
                                                                       "explore).")] = 5,
    label: Annotated[str | None, typer.Option("--label", help="Configuration name in the report (e.g. 'ALFWorld "
                                                              "short-walk').")] = None,
    budget: Annotated[int, typer.Option("--budget", "-B", help="Prompt budget in tokens (whole prompt).")] = TW_BUDGET,
    block: Annotated[int, typer.Option("--block", help="Block length (steps) of the moving-block bootstrap used when "
                                                       "there is a single game (several games: whole games are "
                                                       "resampled).")] = 5,
    *,
    opts: BenchOptions,
    fmt: Format = Format.table,
) -> None:
    """Play text games once and replay the same actions under Graph Memory and CTWM: prompt tokens per
    step, paired token reduction with a bootstrap CI over games, successes. Needs the optional extra
    (pip install 'ctwm[textworld]'; ALFWorld games: 'ctwm[alfworld]').

    \b
    Examples:
      ctwm bench textworld tw_games/ --seed 1
      ctwm bench textworld games/ --agent walkthrough --limit 5 --json
    """
    from ..bench.textgames import run_textgames

    seed = resolve_seed(opts.seed)
    with progress_bar("textworld") as progress:
        res = run_textgames(games, agent=agent.value, max_steps=max_steps, explore_steps=explore_steps,
                            budget=budget, block=block, seed=seed, label=label, progress=progress, **opts.pack())
    _render_tw(res, fmt, seed)


def _render_report(res: BenchReport, fmt: Format, seed: int | None) -> None:
    t = Table(title="Cross-benchmark token reduction: CTWM vs Graph Memory, paired (Table 5 style)",
              title_justify="left", caption="; ".join(res.notes) + ".", caption_justify="left")
    for col in ("configuration", "paired", "tokens counted", "graph tokens", "ctwm tokens", "token reduction", "CI",
                "quality",
                "ctwm - graph [CI]", "parity", "graph", "ctwm"):
        t.add_column(col, justify="left" if col in ("configuration", "parity", "quality") else "right")
    for r in res.results:
        q = "–" if r.quality_delta is None else f"{r.quality_delta:+.3f}" + (
            f" ({r.quality_interval_status})" if r.quality_confidence_interval is None else
            f" {_ci(r.quality_confidence_interval, pct=False)}")
        t.add_row(r.configuration, f"{r.n:,} {r.units}", (r.tokens_counted or "–").replace("_", " "),
                  fmt_num(r.baseline_tokens, 5), fmt_num(r.treatment_tokens, 5),
                  _pct(r.reduction), _ci(r.reduction_confidence_interval),
                  (r.quality_metric or "–").replace("_", " "), q,
                  r.parity_metric or "–", fmt_num(r.baseline_parity, 3), fmt_num(r.treatment_parity, 3))
    emit("bench report", res.to_dict(), [r.to_dict() for r in res.results], fmt, seed=seed, tables=[t])


@bench_app.command("report")
@result("bench report", "ctwm_cli.bench.report.BenchReport")
@output_flags
def report(
    inputs: Annotated[list[str] | None, typer.Argument(help="Saved JSON results (bench longmemeval / bench textworld / "
                                                            "replay compare --json), as FILE or LABEL=FILE.")] = None,
    synthetic: Annotated[int, typer.Option("--synthetic", help="Also run N Synthetic Graph World replications (graph "
                                                               "vs ctwm, seeds SEED..SEED+N-1).")] = 0,
    size: Annotated[int, typer.Option("--size", help="Synthetic replications: number of states |V|.")] = 100,
    steps: Annotated[int, typer.Option("--steps", help="Synthetic replications: steps per episode.")] = 1000,
    budget: Annotated[int, typer.Option("--budget", "-B", help="Synthetic replications: prompt budget in "
                                                               "tokens.")] = 512,
    bootstrap: BootOpt = 1000,
    seed: SeedOpt = None,
    plot: PlotOpt = None,
    fmt: Format = Format.table,
) -> None:
    """Collect paired CTWM-vs-Graph-Memory comparisons into one table: configuration, token reduction,
    CI, and a parity metric (coverage, recall or accuracy, success).

    \b
    Examples:
      ctwm bench report --synthetic --seed 1
      ctwm bench report lme.json tw.json --format markdown >> "$GITHUB_STEP_SUMMARY"
    """
    from ..bench.report import bench_report
    from ..plots import check_plot_path

    check_plot_path(plot)
    if synthetic:
        seed = resolve_seed(seed)
    with progress_bar("bench report") as progress:
        res = bench_report(inputs or [], synthetic=synthetic, synthetic_size=size, synthetic_steps=steps,
                           budget=budget, bootstrap=bootstrap, seed=seed, progress=progress)
    if plot:
        from ..plots import save_figure
        from ..plots.bench import plot_bench_report

        message(f"figure: {save_figure(plot_bench_report(res), plot)}")
    _render_report(res, fmt, seed if synthetic else None)


def register(app: typer.Typer) -> None:
    app.add_typer(bench_app, name="bench")
