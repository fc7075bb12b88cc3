"""The options every ``ctwm replay`` command shares, declared once (:data:`SHARED`), and the decorator
:func:`replay_options` that adds them to a command's signature and hands the command one
:class:`ReplayOptions`; plus the translation of those options into a library :class:`ReplayConfig`.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ..common.errors import UsageError
from ..common.vocabulary import (
    CTWM_STORES,
    DEFAULT_BUDGET,
    DEFAULT_CORE,
    DEFAULT_K,
    DEFAULT_MAX_CANDIDATES,
    ENCODINGS,
    FLAT_RETRIEVALS,
    GRAPH_RETRIEVALS,
    MEMORY_POLICIES,
    PREDICTORS,
    REPLAY_AGENTS,
    RESAMPLES,
    TAIL_ON,
    TOKENIZERS,
    WORLD_PRESETS,
    WORLD_WALKS,
)
from ..common.vocabulary import GRAPH_FAMILIES as FAMILIES
from .aliases import CONFIDENCE, aliased
from .option_groups import choice, opt, option_group, param
from .options import TAU_SPEC_HELP, PlotOpt, SeedOpt, at_most
from .output import message

if TYPE_CHECKING:
    from ..replay import ReplayConfig

AGENTS = REPLAY_AGENTS
Family = choice("Family", FAMILIES)
Agent = choice("Agent", AGENTS)
Memory = choice("Memory", MEMORY_POLICIES)
EncodingName = choice("EncodingName", ENCODINGS)
Tokenizer = choice("Tokenizer", TOKENIZERS)
PredictorName = choice("PredictorName", PREDICTORS)
Resample = choice("Resample", RESAMPLES)
TailOn = choice("TailOn", TAIL_ON)
FlatRetrieval = choice("FlatRetrieval", FLAT_RETRIEVALS)
GraphRetrieval = choice("GraphRetrieval", GRAPH_RETRIEVALS)
CtwmStore = choice("CtwmStore", CTWM_STORES)
ReplayWalk = choice("ReplayWalk", WORLD_WALKS)
ReplayPreset = choice("ReplayPreset", WORLD_PRESETS)
OPEN_LOOP_EPISODES = 5  # the fewest the cluster bootstrap over episodes (the default resampling) forms on
CLOSED_LOOP_EPISODES = 30  # power 74% at 30, 87% at 40 (benchmarks/power_replay.py pool, issue 45); 30 kept for cost

BaseUrlOpt = Annotated[str | None, typer.Option(
    "--base-url", help="Endpoint predictor or agent: base URL (http/https) of an OpenAI-compatible server, e.g. "
    "http://127.0.0.1:8080/v1. Key from $CTWM_API_KEY or $OPENAI_API_KEY.")]
ModelOpt = Annotated[str | None, typer.Option("--model", help="Endpoint predictor or agent: model name.")]
TimeoutOpt = Annotated[float, typer.Option(
    "--timeout", help="Seconds per model request (endpoint predictor or agent).")]
OutOpt = Annotated[str | None, typer.Option(
    "--out", "-o", help="Write trace.parquet, steps.parquet and manifest.json into this directory.")]
OverwriteOpt = Annotated[bool, typer.Option("--overwrite", help="Replace an existing replay in --out.")]
EncodingOpt = Annotated[EncodingName, typer.Option(  # type: ignore[valid-type]
    "--encoding", help="Prompt encoding of every policy.")]
TimingsOpt = Annotated[bool, typer.Option(
    "--timings", help="Print the wall-clock time and steps/s on stderr (never in the results).")]


@dataclasses.dataclass(frozen=True)
class ReplayOptions:
    """The shared options of the replay commands, as parsed."""

    family: Any
    size: int
    agent: Any
    steps: int
    seed: int | None
    episodes: int
    seeds: int | None
    budget: int
    k: int
    core: int
    max_candidates: int
    tau: list[str] | None
    tokenizer: Any
    predictor: Any
    base_url: str | None
    model: str | None
    timeout: float
    bootstrap: int
    block: str
    resample: Any
    min_effect: list[str] | None
    level: float
    out: str | None
    overwrite: bool
    verify_tokens: bool
    tiered: list[str] | None
    plot: str | None
    timings: bool
    level_alias: float | None = None
    tail_on: Any = None  # options after the paper's code (issue 30)
    flat_retrieval: Any = None
    graph_retrieval: Any = None
    ctwm_store: Any = None
    walk: Any = None
    preset: Any = None
    episodes_from: str | None = None


SHARED = [
    opt("family", Family, ("--family",), "Graph family of the world.", Family["scale-free"]),
    opt("size", int, ("--size",), "Number of states |V|.", 500),
    opt("agent", Agent, ("--agent",),
         "Who acts. Open loop (same trajectories for every arm, exact paired tokens): random-walk, semantic (as in "
         "ctwm world run). Closed loop (the agent acts from each arm's memory prompt, so each arm drives its own "
         "trajectory; success becomes a metric): reader (offline, goal-directed from the prompt), endpoint (an "
         "OpenAI-compatible model, --base-url/--model).", Agent["random-walk"]),
    opt("steps", int, ("--steps",), "Steps per episode.", 2000),
    param("seed", SeedOpt, None),
    opt("episodes", int | None, ("--episodes",),
         "Episodes (seeds SEED, SEED+1, ...); every arm replays the same ones [default: "
         f"{OPEN_LOOP_EPISODES} in open loop, the fewest whole-episode intervals form on; {CLOSED_LOOP_EPISODES} in "
         "closed loop, where memory off is detected by tasks per episode in 74% [68, 78] of runs on the default "
         "world; 40 episodes detect it 87% [83, 90] of the time, 60 episodes 98% (measured on a pool of 240 "
         "episodes per arm: benchmarks/power_replay.py pool). Every interval prints the MDE this run can detect at "
         "80% power, and benchmarks/power_replay.py measures power on your world].", None),
    opt("seeds", int | None, ("--seeds",), "Deprecated alias of --episodes.", None, hidden=True),
    opt("episodes_from", str | None, ("--episodes-from",),
         "Replay your own recorded episodes instead (open loop): a JSON Lines file, one row per step with state, "
         "action, observation (the next state) and optionally run and step; every policy replays every episode.",
         None, metavar="FILE"),
    opt("budget", int, ("--budget", "-B"), "Prompt budget in tokens (whole prompt); binds every policy except full.",
         DEFAULT_BUDGET),
    opt("k", int, ("--k",), "Items retrieved by flat and graph (top-k).", DEFAULT_K),
    opt("core", int, ("--core", "-K"), "CTWM core size K (ranks 1..K get their own line).", DEFAULT_CORE),
    opt("max_candidates", int, ("--max-candidates",), "Candidates ranked by graph and ctwm per step (M at most).",
         DEFAULT_MAX_CANDIDATES),
    opt("tau", list[str] | None, ("--tau", "-t"), f"CTWM exponent τ: {TAU_SPEC_HELP}; repeatable. [default: 1.0]",
        None, show_default=False),
    opt("tokenizer", Tokenizer, ("--tokenizer",),
         "BPE tokenizer for prompt token counts (offline, tiktoken-identical ids).", Tokenizer["cl100k_base"]),
    opt("predictor", PredictorName, ("--predictor",),
         "reader: deterministic, reads only the prompt text; endpoint: an OpenAI-compatible model; top1: the "
         "paper's code's check, the first hint's destination (not a model).",
         PredictorName["reader"]),
    param("base_url", BaseUrlOpt, None),
    param("model", ModelOpt, None),
    param("timeout", TimeoutOpt, 30.0),
    opt("bootstrap", int, ("--bootstrap",), "Bootstrap replicates for the paired CIs (0: no intervals).", 1000,
         callback=at_most("ci_bootstrap")),
    opt("block", str, ("--block",),
         "Block length (steps) of the circular block bootstrap (--resample steps), or auto: per metric, the "
         "Politis-White rule on the per-step difference (reported with its lag-1 autocorrelation). At most half the "
         "steps.", "auto"),
    opt("resample", Resample, ("--resample",),
         "What the bootstrap resamples: steps (circular blocks within each episode), episodes (cluster bootstrap "
         "over whole episodes, Student-t interval; needs >= 5 episodes) or auto: episodes in closed loop and "
         "wherever there are >= 5 episodes, else steps. Task metrics are always resampled by episode.",
         Resample["auto"]),
    opt("min_effect", list[str] | None, ("--min-effect",),
         "X or METRIC=X (repeatable): exit 1 when a comparison cannot detect an effect of X at 80% power (its minimum "
         "detectable effect is larger, or no interval formed). A bare X is for answerable tail error (its regret in "
         "closed loop).", None, metavar="[METRIC=]X"),
    *CONFIDENCE,
    param("out", OutOpt, None),
    param("overwrite", OverwriteOpt, False),
    opt("tiered", list[str] | None, ("--tiered",),
         "Tiered policy parameter KEY=VALUE, repeatable (the section 7.1 ablation): write_filter=off, "
         "consolidation=off, attribution=off, reconcile=article, retrieval=hybrid, layered=on, working=0.5 "
         "retrieved=0.35 (budget split), period, max_episodes, idle, ...", None),
    param("plot", PlotOpt, None),
    opt("verify_tokens", bool, ("--verify-tokens",),
         "Also encode every whole prompt and check it against the per-line count (slower).", False),
    param("timings", TimingsOpt, False),
    opt("tail_on", TailOn | None, ("--tail-on",),
        "Which state makes a step a tail step: current (s_t, the paper's text: the current state's rarity) or next "
        "(s_{t+1}, the paper's code: its tail error is taken on s_{t+1}) [default: current].", None),
    opt("flat_retrieval", FlatRetrieval | None, ("--flat-retrieval",),
        "Flat Retrieval: bm25 (ctwm: the query is the state and action) or uniform (the paper's code: k stored "
        "transitions drawn at random) [default: bm25].", None),
    opt("graph_retrieval", GraphRetrieval | None, ("--graph-retrieval",),
        "Graph Memory: tiers (ctwm: outcomes of (s_t, a_t), then of s_t, then neighbours) or recency (the paper's "
        "code: the latest transitions out of s_t, then entity co-occurrence) [default: tiers].", None),
    opt("ctwm_store", CtwmStore | None, ("--ctwm-store",),
        "CTWM: ranked (ctwm: the candidate pool ranked, the budget split by b(r;tau)) or five-feature (the paper's "
        "code: a 200-entry store scored by five features, --core core lines out of the top 30%, 2 tail items "
        "drawn by rank^-tau) [default: ranked].", None),
    opt("walk", ReplayWalk | None, ("--walk",),
        "Open-loop random walk: typed (ctwm: a uniform action, then its outcome) or uniform-neighbour (the paper's "
        "scaling script) [default: typed; world run --preset artifact: uniform-neighbour].", None),
    opt("preset", ReplayPreset | None, ("--preset",),
        "artifact: the paper's code's memory comparison (run_ctwm_comparison.py, random policy): the graphs and "
        "1-3 actions of world run --preset artifact, walked as that script walks (--walk typed with uniform outcomes "
        "within an action), --tail-on next, --predictor top1, --flat-retrieval uniform, --graph-retrieval recency, "
        "--ctwm-store five-feature, and --size 100, --k 3, --core 3 where left at the default; an explicit option "
        "wins. Recorded in the manifest and the JSON config.", None),
]
SHARED_NAMES = [p.name for p in SHARED]


#: adds :data:`SHARED` to a command's signature; the command receives them as ``opts: ReplayOptions``
replay_options = option_group(SHARED, ReplayOptions)
#: the same without --out/--overwrite, for commands that write no run directory
replay_options_no_out = option_group(SHARED, ReplayOptions, without=("out", "overwrite"))


def build_config(o: ReplayOptions, seed: int) -> ReplayConfig:
    from ..memory.tiered_params import parse_tiered
    from ..plots import check_plot_path
    from ..replay import ReplayConfig

    episodes, flag = o.episodes, "--episodes"
    if episodes is None:
        episodes = CLOSED_LOOP_EPISODES if o.agent.value in ("reader", "endpoint") else OPEN_LOOP_EPISODES
    check_plot_path(o.plot)  # before any work
    if o.seeds is not None:
        message("warning: --seeds is deprecated; use --episodes")
        episodes, flag = o.seeds, "--seeds"
    if episodes < 1:
        raise UsageError(f"{flag} must be >= 1, got {episodes}")
    if o.episodes_from is not None and (o.episodes is not None or o.seeds is not None):
        raise UsageError("--episodes-from replays the file's episodes; drop --episodes")
    endpoint = {"base_url": o.base_url, "model": o.model, "timeout": o.timeout}
    uses = o.predictor.value == "endpoint" or o.agent.value == "endpoint"
    if not uses and (o.base_url or o.model):
        raise UsageError("--base-url and --model apply to --predictor endpoint only, or to --agent endpoint")
    cfg = ReplayConfig(family=o.family.value, size=o.size, agent=o.agent.value,
                        agent_params=endpoint if o.agent.value == "endpoint" else {}, steps=o.steps,
                        seeds=tuple(seed + i for i in range(episodes)), budget=o.budget, k=o.k, core=o.core,
                        max_candidates=o.max_candidates, tokenizer=o.tokenizer.value, predictor=o.predictor.value,
                        predictor_params=endpoint if o.predictor.value == "endpoint" else {}, bootstrap=o.bootstrap,
                        block=parse_block(o.block), resample=o.resample.value,
                        level=aliased(o.level, o.level_alias, "--level", "--confidence"),
                        verify_tokens=o.verify_tokens, tiered=parse_tiered(o.tiered))
    artifact = {k: getattr(o, k).value for k in ("tail_on", "flat_retrieval", "graph_retrieval", "ctwm_store", "walk",
                                                 "preset") if getattr(o, k) is not None}
    cfg = dataclasses.replace(cfg, **artifact, episodes_from=o.episodes_from)
    return cfg.checked() if o.episodes_from is not None else cfg  # the file's episodes become the seeds


def parse_block(text: str) -> int | str:
    """``--block``: ``auto`` or a number of steps."""
    t = text.strip().lower()
    if t == "auto":
        return "auto"
    try:
        return int(t)
    except ValueError:
        raise UsageError(f"--block expects a number of steps or 'auto', got {text!r}") from None


def timed(o: ReplayOptions, label: str, steps: int, fn: Callable[[], Any]) -> Any:
    started = time.perf_counter()
    res = fn()
    if o.timings:
        sec = time.perf_counter() - started
        print(f"{label}: {steps:,} steps in {sec:.2f} s ({steps / sec:,.0f} steps/s)", file=sys.stderr)
    return res
