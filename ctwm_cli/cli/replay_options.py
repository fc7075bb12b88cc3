"""The options of ``ctwm replay`` declared once (issue 43): :class:`ReplaySettings` (every replay command's), the
options of each command (:class:`EncodingsFlags`, :class:`CompareFlags`, :class:`ParetoFlags`,
:class:`FrozenFlags`), and the translation of the settings into a library :class:`ReplayConfig`
(:meth:`ReplaySettings.config`). Each field generates its flag, its check, its ``ctwm.toml`` key and its row
of ``docs/options.md``; a library caller uses the same names (``ReplaySettings.checked(steps=500).config(1)``).
"""

from __future__ import annotations

import dataclasses
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..common.errors import UsageError
from ..common.settings import SEED_HELP, Declared, in_range, option
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
from .aliases import CONFIDENCE_HELP
from .declared import declared_flags
from .options import PLOT_HELP, TAU_SPEC_HELP

if TYPE_CHECKING:
    from ..replay import ReplayConfig

AGENTS = REPLAY_AGENTS
OPEN_LOOP_EPISODES = 5  # the fewest the cluster bootstrap over episodes (the default resampling) forms on
CLOSED_LOOP_EPISODES = 30  # power 74% at 30, 87% at 40 (benchmarks/power_replay.py pool, issue 45); 30 kept for cost

BASE_URL_HELP = ("Endpoint predictor or agent: base URL (http/https) of an OpenAI-compatible server, e.g. "
                 "http://127.0.0.1:8080/v1. Key from $CTWM_API_KEY or $OPENAI_API_KEY.")
MODEL_HELP = "Endpoint predictor or agent: model name."
TIMEOUT_HELP = "Seconds per model request (endpoint predictor or agent)."
OUT_HELP = "Write trace.parquet, steps.parquet and manifest.json into this directory."
OVERWRITE_HELP = "Replace an existing replay in --out."
#: why a config may not set an option (``config=False``)
CONTACTS = "it contacts another machine, a model server"
WRITES = "it writes files"
RUNS_CODE = "it may name your own class (package.module:ClassName or file.py:ClassName), which runs that code"
EPISODES_HELP = (
    f"Episodes (seeds SEED, SEED+1, ...); every arm replays the same ones [default: {OPEN_LOOP_EPISODES} in open "
    "loop, the fewest whole-episode intervals form on; "
    f"{CLOSED_LOOP_EPISODES} in closed loop, where memory off is detected by tasks per episode in 74% [68, 78] of "
    "runs on the default world; 40 episodes detect it 87% [83, 90] of the time, 60 episodes 98% (measured on a pool "
    "of 240 episodes per arm: benchmarks/power_replay.py pool). Every interval prints the MDE this run can detect "
    "at 80% power, and benchmarks/power_replay.py measures power on your world].")


def parse_block(text: str) -> int | str:
    """``--block``: ``auto`` or a number of steps."""
    t = text.strip().lower()
    if t == "auto":
        return "auto"
    try:
        return int(t)
    except ValueError:
        raise UsageError(f"--block expects a number of steps or 'auto', got {text!r}") from None


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ReplaySettings(Declared):
    """The options every replay command shares, as checked (the library's :class:`ReplayConfig` is built from
    them by :meth:`config`)."""

    WHAT = "replay option"

    family: str = option("scale-free", flags=("--family",), choices=FAMILIES, help="Graph family of the world.")
    size: int = option(500, flags=("--size",), help="Number of states |V|.")
    agent: str = option(
        "random-walk", flags=("--agent",), choices=AGENTS,
        help="Who acts. Open loop (same trajectories for every arm, exact paired tokens): random-walk, semantic (as "
        "in ctwm world run). Closed loop (the agent acts from each arm's memory prompt, so each arm drives its own "
        "trajectory; success becomes a metric): reader (offline, goal-directed from the prompt), endpoint (an "
        "OpenAI-compatible model, --base-url/--model).")
    steps: int = option(2000, flags=("--steps",), help="Steps per episode.")
    seed: int | None = option(None, flags=("--seed",), minimum=0, help=SEED_HELP)
    episodes: int | None = option(None, flags=("--episodes",), deprecated=("--seeds",), check=in_range(lo=1),
                                  help=EPISODES_HELP)
    episodes_from: str | None = option(
        None, flags=("--episodes-from",), metavar="FILE", path=True,
        help="Replay your own recorded episodes instead (open loop): a JSON Lines file, one row per step with state, "
        "action, observation (the next state) and optionally run and step; every policy replays every episode.")
    budget: int = option(DEFAULT_BUDGET, flags=("--budget", "-B"),
                         help="Prompt budget in tokens (whole prompt); binds every policy except full.")
    k: int = option(DEFAULT_K, flags=("--k",), help="Items retrieved by flat and graph (top-k).")
    core: int = option(DEFAULT_CORE, flags=("--core", "-K"), help="CTWM core size K (ranks 1..K get their own line).")
    max_candidates: int = option(DEFAULT_MAX_CANDIDATES, flags=("--max-candidates",),
                                 help="Candidates ranked by graph and ctwm per step (M at most).")
    tau: list[str] | None = option(None, flags=("--tau", "-t"), show_default=False,  # noqa: RUF009
                                   help=f"CTWM exponent τ: {TAU_SPEC_HELP}; repeatable. [default: 1.0]")
    tokenizer: str = option("cl100k_base", flags=("--tokenizer",), choices=TOKENIZERS,
                            help="BPE tokenizer for prompt token counts (offline, tiktoken-identical ids).")
    predictor: str = option(
        "reader", flags=("--predictor",), choices=PREDICTORS,
        help="reader: deterministic, reads only the prompt text; endpoint: an OpenAI-compatible model; top1: the "
        "paper's code's check, the first hint's destination (not a model).")
    base_url: str | None = option(None, flags=("--base-url",), config=False, reason=CONTACTS, help=BASE_URL_HELP)
    model: str | None = option(None, flags=("--model",), help=MODEL_HELP)
    timeout: float = option(30.0, flags=("--timeout",), help=TIMEOUT_HELP)
    bootstrap: int = option(1000, flags=("--bootstrap",), limit="ci_bootstrap",
                            help="Bootstrap replicates for the paired CIs (0: no intervals).")
    block: int | str = option(
        "auto", flags=("--block",), parse=parse_block,
        help="Block length (steps) of the circular block bootstrap (--resample steps), or auto: per metric, the "
        "Politis-White rule on the per-step difference (reported with its lag-1 autocorrelation). At most half the "
        "steps.")
    resample: str = option(
        "auto", flags=("--resample",), choices=RESAMPLES,
        help="What the bootstrap resamples: steps (circular blocks within each episode), episodes (cluster bootstrap "
        "over whole episodes, Student-t interval; needs >= 5 episodes) or auto: episodes in closed loop and "
        "wherever there are >= 5 episodes, else steps. Task metrics are always resampled by episode.")
    min_effect: list[str] | None = option(  # noqa: RUF009
        None, flags=("--min-effect",), metavar="[METRIC=]X",
        help="X or METRIC=X (repeatable): exit 1 when a comparison cannot detect an effect of X at 80% power (its "
        "minimum detectable effect is larger, or no interval formed). A bare X is for answerable tail error (its "
        "regret in closed loop).")
    level: float = option(0.95, flags=("--confidence",), deprecated=("--level",), help=CONFIDENCE_HELP)
    out: str | None = option(None, flags=("--out", "-o"), config=False, reason=WRITES, help=OUT_HELP)
    overwrite: bool = option(False, flags=("--overwrite",), config=False, reason=WRITES, help=OVERWRITE_HELP)
    tiered: list[str] | None = option(  # noqa: RUF009
        None, flags=("--tiered",),
        help="Tiered policy parameter KEY=VALUE, repeatable (the section 7.1 ablation): write_filter=off, "
        "consolidation=off, attribution=off, reconcile=article, retrieval=hybrid, layered=on, working=0.5 "
        "retrieved=0.35 (budget split), period, max_episodes, idle, ...")
    plot: str | None = option(None, flags=("--plot",), config=False, reason="it writes a file", help=PLOT_HELP)
    verify_tokens: bool = option(False, flags=("--verify-tokens",),
                                 help="Also encode every whole prompt and check it against the per-line count "
                                 "(slower).")
    timings: bool = option(False, flags=("--timings",),
                           help="Print the wall-clock time and steps/s on stderr (never in the results).")
    # options after the paper's code (issue 30)
    tail_on: str | None = option(
        None, flags=("--tail-on",), choices=TAIL_ON,
        help="Which state makes a step a tail step: current (s_t, the paper's text: the current state's rarity) or "
        "next (s_{t+1}, the paper's code: its tail error is taken on s_{t+1}) [default: current].")
    flat_retrieval: str | None = option(
        None, flags=("--flat-retrieval",), choices=FLAT_RETRIEVALS,
        help="Flat Retrieval: bm25 (ctwm: the query is the state and action) or uniform (the paper's code: k stored "
        "transitions drawn at random) [default: bm25].")
    graph_retrieval: str | None = option(
        None, flags=("--graph-retrieval",), choices=GRAPH_RETRIEVALS,
        help="Graph Memory: tiers (ctwm: outcomes of (s_t, a_t), then of s_t, then neighbours) or recency (the "
        "paper's code: the latest transitions out of s_t, then entity co-occurrence) [default: tiers].")
    ctwm_store: str | None = option(
        None, flags=("--ctwm-store",), choices=CTWM_STORES,
        help="CTWM: ranked (ctwm: the candidate pool ranked, the budget split by b(r;tau)) or five-feature (the "
        "paper's code: a 200-entry store scored by five features, --core core lines out of the top 30%, 2 tail "
        "items drawn by rank^-tau) [default: ranked].")
    walk: str | None = option(
        None, flags=("--walk",), choices=WORLD_WALKS,
        help="Open-loop random walk: typed (ctwm: a uniform action, then its outcome) or uniform-neighbour (the "
        "paper's scaling script) [default: typed; world run --preset artifact: uniform-neighbour].")
    preset: str | None = option(
        None, flags=("--preset",), choices=WORLD_PRESETS,
        help="artifact: the paper's code's memory comparison (run_ctwm_comparison.py, random policy): the graphs "
        "and 1-3 actions of world run --preset artifact, walked as that script walks (--walk typed with uniform "
        "outcomes within an action), --tail-on next, --predictor top1, --flat-retrieval uniform, --graph-retrieval "
        "recency, --ctwm-store five-feature, and --size 100, --k 3, --core 3 where left at the default; an explicit "
        "option wins. Recorded in the manifest and the JSON config.")

    def related(self) -> None:
        # said in the flags' words: the prose's "episodes" is not the option
        if self.episodes_from is not None and self.episodes is not None:
            raise UsageError("--episodes-from replays the file's episodes; drop --episodes")
        uses = "endpoint" in (self.predictor, self.agent)
        if not uses and (self.base_url or self.model):
            raise UsageError("--base-url and --model apply to --predictor endpoint only, or to --agent endpoint")

    def config(self, seed: int) -> ReplayConfig:
        """The library's :class:`ReplayConfig` of these settings, episodes ``seed, seed + 1, ...``."""
        from ..memory.tiered_params import parse_tiered
        from ..plots import check_plot_path
        from ..replay import ReplayConfig

        episodes = self.episodes
        if episodes is None:
            episodes = CLOSED_LOOP_EPISODES if self.agent in ("reader", "endpoint") else OPEN_LOOP_EPISODES
        check_plot_path(self.plot)  # before any work
        endpoint = {"base_url": self.base_url, "model": self.model, "timeout": self.timeout}
        cfg = ReplayConfig(family=self.family, size=self.size, agent=self.agent,
                           agent_params=endpoint if self.agent == "endpoint" else {}, steps=self.steps,
                           seeds=tuple(seed + i for i in range(episodes)), budget=self.budget, k=self.k,
                           core=self.core, max_candidates=self.max_candidates, tokenizer=self.tokenizer,
                           predictor=self.predictor,
                           predictor_params=endpoint if self.predictor == "endpoint" else {},
                           bootstrap=self.bootstrap, block=self.block, resample=self.resample, level=self.level,
                           verify_tokens=self.verify_tokens, tiered=parse_tiered(self.tiered))
        artifact = {k: getattr(self, k) for k in ("tail_on", "flat_retrieval", "graph_retrieval", "ctwm_store",
                                                  "walk", "preset") if getattr(self, k) is not None}
        cfg = dataclasses.replace(cfg, **artifact, episodes_from=self.episodes_from)
        return cfg.checked() if self.episodes_from is not None else cfg  # the file's episodes become the seeds


def build_config(o: ReplaySettings, seed: int) -> ReplayConfig:
    """``o.config(seed)`` (the name the replay benchmarks call)."""
    return o.config(seed)


COMPARE_MEMORIES = "full,flat,graph,ctwm,none"


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class EncodingsFlags(Declared):
    """``ctwm replay`` without a subcommand: the memory policy whose encodings are compared."""

    WHAT = "replay option"

    memory: str = option("ctwm", flags=("--memory",), choices=MEMORY_POLICIES,
                         help="Memory policy whose encodings are compared.")


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class CompareFlags(Declared):
    """The options of ``ctwm replay compare``."""

    WHAT = "replay compare option"

    memories: list[str] | None = option(  # noqa: RUF009
        None, flags=("--memory",), config=False, reason=RUNS_CODE,
        help="Memory policies, a comma list or repeated (full, flat, graph, ctwm, tiered, none: no memory, the floor "
        "row), or your own class: package.module:ClassName or path/to/file.py:ClassName (runs that code; see "
        f"ctwm_cli.memory.MemoryPolicy) [default: {COMPARE_MEMORIES}].")
    encoding: str = option("compact", flags=("--encoding",), choices=ENCODINGS,
                           help="Prompt encoding of every policy.")
    baseline: str | None = option(
        None, flags=("--baseline",),
        help="Policy the paired deltas are taken against ('none' for no deltas) [default: graph if listed, else the "
        "first policy listed; none when only one policy is listed].")
    match_tokens: str | None = option(
        None, flags=("--match-tokens",),
        help="graph: at every step ctwm's budget is what Graph Memory spent on that step (comparison at equal cost; "
        "open loop only).")


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ParetoFlags(Declared):
    """The options of ``ctwm replay pareto`` (its --budget is a sweep, its --plot the Pareto figure)."""

    WHAT = "replay pareto option"

    memories: list[str] | None = option(None, flags=("--memory",), config=False, reason=RUNS_CODE,  # noqa: RUF009
                                        help="Memory policies to sweep, a comma list or repeated [default: "
                                        "graph,ctwm].")
    budget: str = option("128:1024:6", flags=("--budget", "-B"),
                         help="Budgets swept: START:STOP:N (N evenly spaced, inclusive) or a comma list.")
    encoding: str = option("compact", flags=("--encoding",), choices=ENCODINGS,
                           help="Prompt encoding of every policy.")
    plot: str | None = option(None, flags=("--plot",), config=False, reason="it writes a file",
                              help="Also write the Pareto figure (.png, .svg or .pdf).")


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class FrozenFlags(Declared):
    """The options of ``ctwm replay frozen``."""

    WHAT = "replay frozen option"

    encoding: str = option("compact", flags=("--encoding",), choices=ENCODINGS,
                           help="Encoding to replay the recorded trajectories under.")
    run: list[str] | None = option(None, flags=("--run",),  # noqa: RUF009
                                   help="Recorded run id to replay (repeatable) [default: all].")
    predictor: str | None = option(None, flags=("--predictor",), choices=PREDICTORS,
                                   help="Predictor of the replay [default: the recorded one].")
    base_url: str | None = option(None, flags=("--base-url",), config=False, reason=CONTACTS, help=BASE_URL_HELP)
    model: str | None = option(None, flags=("--model",), help=MODEL_HELP)
    timeout: float = option(30.0, flags=("--timeout",), help=TIMEOUT_HELP)
    out: str | None = option(None, flags=("--out", "-o"), config=False, reason=WRITES, help=OUT_HELP)
    overwrite: bool = option(False, flags=("--overwrite",), config=False, reason=WRITES, help=OVERWRITE_HELP)

    def related(self) -> None:
        if self.predictor != "endpoint" and (self.base_url or self.model):
            raise UsageError("--base-url, --model and --timeout apply to --predictor endpoint only")


#: adds :class:`ReplaySettings` to a command, which receives them checked as ``opts: ReplaySettings``
replay_options = declared_flags(ReplaySettings, name="opts")


def timed(o: ReplaySettings, label: str, steps: int, fn: Callable[[], Any]) -> Any:
    started = time.perf_counter()
    res = fn()
    if o.timings:
        sec = time.perf_counter() - started
        print(f"{label}: {steps:,} steps in {sec:.2f} s ({steps / sec:,.0f} steps/s)", file=sys.stderr)
    return res
