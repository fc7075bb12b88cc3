"""``ctwm replay``: memory policies and prompt encodings on Synthetic Graph World episodes."""

from __future__ import annotations

import secrets
from enum import Enum
from typing import Annotated, Any

import typer
from rich.table import Table

from ..errors import CheckFailed, UsageError
from ..memory.encodings import ENCODINGS
from ..memory.policies import DEFAULT_BUDGET, DEFAULT_CORE, DEFAULT_K, DEFAULT_MAX_CANDIDATES, MEMORY_POLICIES
from ..memory.predictor import PREDICTORS
from ..memory.tokens import TOKENIZERS
from ..replay import ReplayConfig, ReplayResult, frozen_replay, parse_taus, replay_ablation, replay_compare, replay_encodings
from ..replay.runner import AGENTS
from ..world.graphs import FAMILIES
from .options import Format, FormatOpt, JsonOpt, SeedOpt, resolve_format
from .output import announce_seed, emit, fmt_num, progress_bar

Family = Enum("Family", {f: f for f in FAMILIES}, type=str)  # type: ignore[misc]
Agent = Enum("Agent", {a: a for a in AGENTS}, type=str)  # type: ignore[misc]
Memory = Enum("Memory", {m: m for m in MEMORY_POLICIES}, type=str)  # type: ignore[misc]
EncodingName = Enum("EncodingName", {e: e for e in ENCODINGS}, type=str)  # type: ignore[misc]
Tokenizer = Enum("Tokenizer", {t: t for t in TOKENIZERS}, type=str)  # type: ignore[misc]
PredictorName = Enum("PredictorName", {p: p for p in PREDICTORS}, type=str)  # type: ignore[misc]

FamilyOpt = Annotated[Family, typer.Option("--family", help="Graph family of the world.")]  # type: ignore[valid-type]
SizeOpt = Annotated[int, typer.Option("--size", help="Number of states |V|.")]
AgentOpt = Annotated[Agent, typer.Option("--agent", help="Agent policy that generates the episodes (as in ctwm world run).")]  # type: ignore[valid-type]
StepsOpt = Annotated[int, typer.Option("--steps", help="Steps per episode.")]
SeedsOpt = Annotated[int, typer.Option("--seeds", help="Episodes (seeds SEED, SEED+1, ...); every arm replays the same ones.")]
BudgetOpt = Annotated[int, typer.Option("--budget", "-B", help="Prompt budget in tokens (whole prompt); binds every policy except full.")]
KOpt = Annotated[int, typer.Option("--k", help="Items retrieved by flat and graph (top-k).")]
CoreOpt = Annotated[int, typer.Option("--core", "-K", help="CTWM core size K (ranks 1..K get their own line).")]
CandOpt = Annotated[int, typer.Option("--max-candidates", help="Candidates ranked by graph and ctwm per step (M at most).")]
TauOpt = Annotated[str, typer.Option("--tau", "-t", help="CTWM exponent τ: a number, a comma list (0.5,1,2) or a sweep START:STOP:N (e.g. 0.25:2:7).")]
TokOpt = Annotated[Tokenizer, typer.Option("--tokenizer", help="BPE tokenizer for prompt token counts (offline, tiktoken-identical ids).")]  # type: ignore[valid-type]
PredOpt = Annotated[PredictorName, typer.Option("--predictor", help="reader: deterministic, reads only the prompt text; endpoint: an OpenAI-compatible model.")]  # type: ignore[valid-type]
BaseUrlOpt = Annotated[str | None, typer.Option("--base-url", help="Endpoint predictor: base URL of an OpenAI-compatible server. Key from $CTWM_API_KEY or $OPENAI_API_KEY.")]
ModelOpt = Annotated[str | None, typer.Option("--model", help="Endpoint predictor: model name.")]
BootOpt = Annotated[int, typer.Option("--bootstrap", help="Bootstrap replicates for the paired CIs (0: no intervals).")]
BlockOpt = Annotated[int, typer.Option("--block", help="Block length (steps) of the moving-block bootstrap.")]
LevelOpt = Annotated[float, typer.Option("--level", help="Confidence level of the intervals.")]
OutOpt = Annotated[str | None, typer.Option("--out", "-o", help="Write trace.parquet, steps.parquet and manifest.json into this directory.")]
OverwriteOpt = Annotated[bool, typer.Option("--overwrite", help="Replace an existing replay in --out.")]
VerifyOpt = Annotated[bool, typer.Option("--verify-tokens", help="Also encode every whole prompt and check it against the per-line count (slower).")]

replay_app = typer.Typer(
    help=(
        "Memory policies (full, flat, graph, ctwm, tiered) and prompt encodings (verbose, compact) replayed on the same "
        "Synthetic Graph World episodes: prompt tokens, coverage, tail error, paired deltas with bootstrap CIs. "
        "Without a subcommand: compare the encodings of one memory policy."
    ),
    invoke_without_command=True,
)


def _seed(seed: int | None) -> int:
    if seed is None:
        seed = secrets.randbits(31)
        announce_seed(seed)
    return seed


def _config(family, size, agent, steps, seed, seeds, budget, k, core, max_candidates, tokenizer, predictor, base_url,
            model, bootstrap, block, level, verify) -> ReplayConfig:
    if seeds < 1:
        raise UsageError(f"--seeds must be >= 1, got {seeds}")
    params: dict[str, Any] = {}
    if predictor.value == "endpoint":
        params = {"base_url": base_url, "model": model}
    elif base_url or model:
        raise UsageError("--base-url and --model apply to --predictor endpoint only")
    return ReplayConfig(family=family.value, size=size, agent=agent.value, steps=steps,
                        seeds=tuple(seed + i for i in range(seeds)), budget=budget, k=k, core=core,
                        max_candidates=max_candidates, tokenizer=tokenizer.value, predictor=predictor.value,
                        predictor_params=params, bootstrap=bootstrap, block=block, level=level, verify_tokens=verify)


METRIC_LABELS = {"tokens_mean": "tokens/step", "tail_error": "tail error", "overall_error": "overall error",
                 "state_coverage": "state cov.", "transition_coverage": "transition cov."}


def _ci(lo, hi, digits: int = 3) -> str:
    return "–" if lo is None else f"[{fmt_num(lo, digits)}, {fmt_num(hi, digits)}]"


def _pct(v) -> str:
    return "–" if v is None else f"{100 * v:+.1f}%"


def _render(res: ReplayResult, fmt: Format, seed: int, title: str) -> None:
    cfg = res.config
    t = Table(title=f"{title}: {cfg.family}, |V|={cfg.size}, {cfg.agent}, {len(cfg.seeds)} x {cfg.steps:,} steps, "
                    f"budget {cfg.budget} tokens ({res.tokenizer}), predictor {res.predictor}", title_justify="left",
              caption="tokens: whole prompt per step; coverage: state/transition (evidence held by the memory that "
                      "reached the prompt); tail error: steps at the least-visited half of the visited states.",
              caption_justify="left")
    for col in ("method", "tokens/step", "median", "p95", "coverage", "tail error", "overall error", "lines", "tail items"):
        t.add_column(col, justify="left" if col == "method" else "right", no_wrap=col == "method")
    for a in res.arms:
        cov = f"{fmt_num(a.state_coverage, 3)}/{fmt_num(a.transition_coverage, 3)}"
        t.add_row(a.arm, fmt_num(a.tokens_mean, 5), fmt_num(a.tokens_median, 5), fmt_num(a.tokens_p95, 5), cov,
                  fmt_num(a.tail_error, 3), fmt_num(a.overall_error, 3), fmt_num(a.items_injected, 3),
                  fmt_num(a.tail_items, 3))
    tables: list[Any] = [t]
    if res.comparisons:
        c = Table(title=f"paired deltas (treatment - baseline), {int(100 * cfg.level)}% block-bootstrap CIs "
                        f"(B={cfg.bootstrap}, block={cfg.block}, seed={seed})", title_justify="left")
        for col in ("treatment - baseline", "metric", "treatment", "baseline", "delta [CI]", "relative [CI]"):
            c.add_column(col, justify="left" if col in ("treatment - baseline", "metric") else "right")
        last = None
        for d in res.comparisons:
            pair = f"{d.treatment} - {d.baseline}"
            rel = "–" if d.relative is None else _pct(d.relative) + (
                "" if d.relative_ci_low is None else f" [{_pct(d.relative_ci_low)}, {_pct(d.relative_ci_high)}]")
            delta = fmt_num(d.delta, 3) + ("" if d.ci_low is None else f" {_ci(d.ci_low, d.ci_high)}")
            c.add_row(pair if pair != last else "", METRIC_LABELS.get(d.metric, d.metric),
                      fmt_num(d.treatment_value, 4), fmt_num(d.baseline_value, 4), delta, rel)
            last = pair
        tables.append(c)
    if res.tau_sweep:
        s = Table(title="τ sweep (ctwm, measured on the episodes)", title_justify="left")
        for col in ("encoding", "tau", "tokens/step", "tail error", "overall error", "core lines", "tail listed", "tail items", "coverage"):
            s.add_column(col, justify="left" if col == "encoding" else "right")
        for r in res.tau_sweep:
            s.add_row(r.encoding, fmt_num(r.tau, 4), fmt_num(r.tokens_mean, 5), fmt_num(r.tail_error, 3),
                      fmt_num(r.overall_error, 3), fmt_num(r.items_in_prompt, 3), fmt_num(r.items_summarised, 3),
                      fmt_num(r.tail_items, 3), f"{fmt_num(r.state_coverage, 3)}/{fmt_num(r.transition_coverage, 3)}")
        tables.append(s)
    if res.out:
        tables.append(f"wrote {res.out}: {', '.join(res.files)}, manifest.json")
    emit(res.command, res.to_dict(), [a.to_dict() for a in res.arms], fmt, seed=seed, tables=tables)


@replay_app.callback()
def replay(
    ctx: typer.Context,
    memory: Annotated[Memory, typer.Option("--memory", help="Memory policy whose encodings are compared.")] = Memory["ctwm"],  # type: ignore[valid-type]
    family: FamilyOpt = Family["scale-free"],
    size: SizeOpt = 500,
    agent: AgentOpt = Agent["random-walk"],
    steps: StepsOpt = 2000,
    seed: SeedOpt = None,
    seeds: SeedsOpt = 3,
    budget: BudgetOpt = DEFAULT_BUDGET,
    k: KOpt = DEFAULT_K,
    core: CoreOpt = DEFAULT_CORE,
    max_candidates: CandOpt = DEFAULT_MAX_CANDIDATES,
    tau: TauOpt = "1.0",
    tokenizer: TokOpt = Tokenizer["cl100k_base"],
    predictor: PredOpt = PredictorName["reader"],
    base_url: BaseUrlOpt = None,
    model: ModelOpt = None,
    bootstrap: BootOpt = 1000,
    block: BlockOpt = 50,
    level: LevelOpt = 0.95,
    out: OutOpt = None,
    overwrite: OverwriteOpt = False,
    verify_tokens: VerifyOpt = False,
    fmt: FormatOpt = Format.table,
    as_json: JsonOpt = False,
) -> None:
    """Compare the verbose and compact encodings of one memory policy on the same episodes.

    Reports prompt tokens per step (mean, median, p95), coverage, tail and overall error per
    encoding, and compact - verbose paired deltas with block-bootstrap CIs. Subcommands:
    compare (policies, Table 3), ablation (Table 4), frozen (Theorem A.7).
    """
    if ctx.invoked_subcommand is not None:
        return
    fmt = resolve_format(fmt, as_json)
    taus = parse_taus(tau)
    if memory.value != "ctwm" and taus != (1.0,):
        raise UsageError("--tau applies to --memory ctwm only")
    seed = _seed(seed)
    cfg = _config(family, size, agent, steps, seed, seeds, budget, k, core, max_candidates, tokenizer, predictor,
                  base_url, model, bootstrap, block, level, verify_tokens)
    with progress_bar("replay", total=len(cfg.seeds) * 2 * len(taus)) as progress:
        res = replay_encodings(cfg, memory=memory.value, taus=taus, out=out, overwrite=overwrite, seed=seed,
                               progress=progress)
    _render(res, fmt, seed, f"encodings of {memory.value}")


@replay_app.command("compare")
def compare(
    memory: Annotated[str, typer.Option("--memory", help="Comma list of memory policies (full, flat, graph, ctwm, tiered).")] = "full,flat,graph,ctwm",
    encoding: Annotated[EncodingName, typer.Option("--encoding", help="Prompt encoding of every policy.")] = EncodingName["compact"],  # type: ignore[valid-type]
    baseline: Annotated[str, typer.Option("--baseline", help="Policy the paired deltas are taken against ('none' for no deltas).")] = "graph",
    family: FamilyOpt = Family["scale-free"],
    size: SizeOpt = 500,
    agent: AgentOpt = Agent["random-walk"],
    steps: StepsOpt = 2000,
    seed: SeedOpt = None,
    seeds: SeedsOpt = 3,
    budget: BudgetOpt = DEFAULT_BUDGET,
    k: KOpt = DEFAULT_K,
    core: CoreOpt = DEFAULT_CORE,
    max_candidates: CandOpt = DEFAULT_MAX_CANDIDATES,
    tau: TauOpt = "1.0",
    tokenizer: TokOpt = Tokenizer["cl100k_base"],
    predictor: PredOpt = PredictorName["reader"],
    base_url: BaseUrlOpt = None,
    model: ModelOpt = None,
    bootstrap: BootOpt = 1000,
    block: BlockOpt = 50,
    level: LevelOpt = 0.95,
    out: OutOpt = None,
    overwrite: OverwriteOpt = False,
    verify_tokens: VerifyOpt = False,
    fmt: FormatOpt = Format.table,
    as_json: JsonOpt = False,
) -> None:
    """Memory policies on the same episodes, in the layout of the paper's Table 3.

    Tokens per step, state/transition coverage, tail error and overall error per policy, and the
    paired deltas of every policy against --baseline with block-bootstrap CIs. A --tau sweep runs
    ctwm once per τ and adds the τ table (Section 5.6).
    """
    fmt = resolve_format(fmt, as_json)
    mems = [m.strip() for m in memory.split(",") if m.strip()]
    taus = parse_taus(tau)
    if "ctwm" not in mems and taus != (1.0,):
        raise UsageError("--tau applies to ctwm, which is not among --memory")
    seed = _seed(seed)
    cfg = _config(family, size, agent, steps, seed, seeds, budget, k, core, max_candidates, tokenizer, predictor,
                  base_url, model, bootstrap, block, level, verify_tokens)
    base = None if baseline.strip().lower() == "none" else baseline.strip()
    n_arms = sum(len(taus) if m == "ctwm" else 1 for m in set(mems))
    with progress_bar("replay compare", total=len(cfg.seeds) * n_arms) as progress:
        res = replay_compare(cfg, memories=mems, encoding=encoding.value, baseline=base, taus=taus, out=out,
                             overwrite=overwrite, seed=seed, progress=progress)
    _render(res, fmt, seed, "memory policies")


@replay_app.command("ablation")
def ablation(
    family: FamilyOpt = Family["scale-free"],
    size: SizeOpt = 500,
    agent: AgentOpt = Agent["random-walk"],
    steps: StepsOpt = 2000,
    seed: SeedOpt = None,
    seeds: SeedsOpt = 3,
    budget: BudgetOpt = DEFAULT_BUDGET,
    k: KOpt = DEFAULT_K,
    core: CoreOpt = DEFAULT_CORE,
    max_candidates: CandOpt = DEFAULT_MAX_CANDIDATES,
    tau: TauOpt = "1.0",
    tokenizer: TokOpt = Tokenizer["cl100k_base"],
    predictor: PredOpt = PredictorName["reader"],
    base_url: BaseUrlOpt = None,
    model: ModelOpt = None,
    bootstrap: BootOpt = 1000,
    block: BlockOpt = 50,
    level: LevelOpt = 0.95,
    out: OutOpt = None,
    overwrite: OverwriteOpt = False,
    verify_tokens: VerifyOpt = False,
    fmt: FormatOpt = Format.table,
    as_json: JsonOpt = False,
) -> None:
    """The encoding x allocation ablation of the paper's Table 4: {verbose, compact} x {graph, ctwm}.

    Paired deltas: every cell against graph/verbose, ctwm against graph within compact (allocation
    effect), compact against verbose within ctwm (encoding effect).
    """
    fmt = resolve_format(fmt, as_json)
    seed = _seed(seed)
    taus = parse_taus(tau)
    cfg = _config(family, size, agent, steps, seed, seeds, budget, k, core, max_candidates, tokenizer, predictor,
                  base_url, model, bootstrap, block, level, verify_tokens)
    with progress_bar("replay ablation", total=len(cfg.seeds) * (2 + 2 * len(taus))) as progress:
        res = replay_ablation(cfg, taus=taus, out=out, overwrite=overwrite, seed=seed, progress=progress)
    _render(res, fmt, seed, "encoding x allocation ablation")


@replay_app.command("frozen")
def frozen(
    run_dir: Annotated[str, typer.Argument(help="Directory written by ctwm replay ... --out (manifest.json, steps.parquet).")],
    encoding: Annotated[EncodingName, typer.Option("--encoding", help="Encoding to replay the recorded trajectories under.")] = EncodingName["compact"],  # type: ignore[valid-type]
    run: Annotated[list[str] | None, typer.Option("--run", help="Recorded run id to replay (repeatable) [default: all].")] = None,
    predictor: Annotated[PredictorName | None, typer.Option("--predictor", help="Predictor of the replay [default: the recorded one].")] = None,  # type: ignore[valid-type]
    base_url: BaseUrlOpt = None,
    model: ModelOpt = None,
    out: OutOpt = None,
    overwrite: OverwriteOpt = False,
    fmt: FormatOpt = Format.table,
    as_json: JsonOpt = False,
) -> None:
    """Theorem A.7: replay recorded state-action trajectories under another encoding.

    Checks that the retrieval map returns the recorded item ids at every step and reports the
    replay loss (tail and overall error) beside the live loss. Exit code 1 if any retrieval differs.
    """
    fmt = resolve_format(fmt, as_json)
    params = None
    if predictor is not None and predictor.value == "endpoint":
        params = {"base_url": base_url, "model": model}
    elif base_url or model:
        raise UsageError("--base-url and --model apply to --predictor endpoint only")
    res = frozen_replay(run_dir, encoding.value, runs=run, predictor=predictor.value if predictor else None,
                        predictor_params=params, out=out, overwrite=overwrite)
    t = Table(title=f"frozen replay of {res.run_dir} under {res.encoding} ({res.tokenizer}, predictor {res.predictor})",
              title_justify="left",
              caption="same ρ = the retrieval map returned the recorded item ids at every step; "
                      "errors are live (recorded) vs replay on the recorded trajectory.", caption_justify="left")
    for col in ("run", "live enc", "same ρ", "live tail err", "replay tail err", "Δ tail", "live err", "replay err",
                "live tokens", "replay tokens"):
        t.add_column(col, justify="left" if col in ("run", "live enc") else "right", no_wrap=True)
    for r in res.rows:
        t.add_row(r.run, r.live_encoding, "yes" if r.retrieval_identical else f"no ({r.mismatched_steps} steps)",
                  fmt_num(r.live_tail_error, 4), fmt_num(r.replay_tail_error, 4), fmt_num(r.tail_error_difference, 3),
                  fmt_num(r.live_overall_error, 4), fmt_num(r.replay_overall_error, 4), fmt_num(r.live_tokens_mean, 5),
                  fmt_num(r.replay_tokens_mean, 5))
    tables: list[Any] = [t]
    if res.out:
        tables.append(f"wrote {res.out}: {', '.join(res.files)}, manifest.json")
    emit("replay frozen", res.to_dict(), [r.to_dict() for r in res.rows], fmt, tables=tables)
    if not res.all_identical:
        bad = [r.run for r in res.rows if not r.retrieval_identical]
        raise CheckFailed(f"retrieval differs from the recording in run(s) {', '.join(bad)}")


def register(app: typer.Typer) -> None:
    app.add_typer(replay_app, name="replay")
