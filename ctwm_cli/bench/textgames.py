"""Text-game episodes (TextWorld, ALFWorld) replayed under Graph Memory and CTWM.

Needs the optional ``textworld`` package (``pip install 'ctwm[textworld]'``; ALFWorld games also
need its PDDL backend, ``pip install 'ctwm[alfworld]'``). Nothing here imports it until a game is
made or played.

**Episode.** A game is played once by an action source — ``walkthrough`` (the game's own
solution, ``policy_commands`` at the start), ``random`` (a seeded uniform choice among the
admissible commands) or ``explore`` (``explore_steps`` random commands, then the game's current
solution) — for at most ``max_steps`` steps. The episode records, at every step, the observation
before the action, the action, the feedback after it and the game's facts.

**Memory from observations** (AriGraph-style): a *semantic* part, the facts whose arguments have
all been mentioned in an observation so far (``in(old key, antique trunk)``; a fact that stops
holding leaves the memory, so updates overwrite), and an *episodic* part, one entry per past step
(``step 3: open antique trunk -> You open the antique trunk, revealing an old key.``, the feedback
cut to :data:`EPISODE_WORDS` words).

**Paired replay.** The same episode is replayed under ``graph`` and ``ctwm``: at step t the memory
holds what was observed before the action, the items are ranked by BM25 against the current
observation and the action (shared ranking, :mod:`ctwm_cli.bench.packing`), and the prompt asks
for the next observation. Because the action sequence is fixed, the prompts pair step by step
and success is the same under both arms (a per-arm success needs a model that acts on each arm's
prompt; not implemented). Token reduction = 1 − Σ tokens(ctwm) / Σ tokens(graph) over all steps,
with a percentile CI from a paired bootstrap over games (whole episodes resampled); with a single
game, a moving-block bootstrap over its steps (:func:`ctwm_cli.replay.metrics.block_starts`).

**ALFWorld.** ALFWorld games are TextWorld PDDL games (``game.tw-pddl`` files under
``$ALFWORLD_DATA/json_2.1.1/<split>/<task>/<trial>/``). :func:`discover_games` accepts a game
file or a directory and collects every ``*.tw-pddl``, ``*.z8`` and ``*.json`` game below it
(sorted), so ``ctwm bench textworld $ALFWORLD_DATA/json_2.1.1/valid_seen --limit 20`` plays the
first 20 ALFWorld games through the same runner (TextWorld's PDDL backend; its walkthrough is the
planner's plan). When the ``alfworld`` package is installed its ``AlfredDemangler`` wrapper names
objects as ALFWorld does ("apple 1"); without it the PDDL object ids appear in the text.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..common.checks import check_range
from ..common.errors import InputError, UsageError
from ..common.results import ToDict, result
from ..common.vocabulary import BENCH_K as DEFAULT_K
from ..common.vocabulary import DEFAULT_CORE, DEFAULT_MAX_CANDIDATES, DEFAULT_TAU
from ..common.vocabulary import GAME_AGENTS as AGENTS
from ..common.vocabulary import TEXTGAMES_BUDGET as DEFAULT_BUDGET
from ..memory.tokens import DEFAULT_TOKENIZER, TOKENIZERS, USER_MESSAGE, token_counter
from ..runtime.progress import ProgressCallback
from ..stats.intervals import ConfidenceInterval
from ..stats.paired import BlockResample, IndexResample, paired_delta
from .packing import PackedPrompt, bm25_scores, check_pack_args, one_line, pack_ctwm, pack_graph, rank_order, words

EXTRA = "textworld"
PYPROJECT_EXTRAS = {"textworld": ["textworld>=1.6"], "alfworld": ["textworld[pddl]>=1.6"]}
GAME_SUFFIXES = (".tw-pddl", ".z8", ".json")
EPISODE_WORDS = 24
OBSERVATION_WORDS = 60
TASK = "Task: predict the next observation after the action.\n"
TITLE = {"graph": "Memories, ranked by relevance:\n", "ctwm": "Core memories, ranked by relevance:\n"}
BUDGET_RULE = "Budget rule: use core memories first; use the tail summary only to break ties.\n"
OUTPUT = "Output: next observation in one sentence; evidence-rank=<rank or tail>.\n"
_PROMPT_NOISE = re.compile(r"^>\s*$|^\s*>\s", re.M)
_STATUS = re.compile(r"(-= [^=\n]+ =-)\s*-?\d+/\d+")  # the z-machine status bar: room, score/moves


def textworld_module():
    """The ``textworld`` package, or :class:`UsageError` saying how to install it."""
    try:
        import textworld
    except ImportError:
        raise UsageError("text games need the optional 'textworld' package: pip install 'ctwm[textworld]' "
                         "(ALFWorld games: 'ctwm[alfworld]')", params=()) from None
    return textworld


# ------------------------------------------------------------------------------------ games
def make_games(out_dir: str | Path, *, n: int = 1, seed: int | None = None, rooms: int = 3, objects: int = 6,
               quest_length: int = 3) -> list[Path]:
    """Generate ``n`` small TextWorld games (``.z8``) into ``out_dir`` (the same as ``tw-make custom``);
    game i uses the i-th child seed of ``seed``."""
    tw = textworld_module()
    from textworld.generator import compile_game, make_game

    for name, v in (("n", n), ("rooms", rooms), ("objects", objects), ("quest_length", quest_length)):
        check_range(name, v, lo=1)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    seeds = np.random.SeedSequence(seed).spawn(n)
    paths = []
    for i, ss in enumerate(seeds):
        opts = tw.GameOptions()
        opts.seeds = int(ss.generate_state(1)[0] % (2**31))
        opts.nb_rooms, opts.nb_objects, opts.quest_length = rooms, objects, quest_length
        opts.path = str(out / f"game_{i:02d}.z8")
        opts.force_recompile = True
        paths.append(Path(compile_game(make_game(opts), opts)))
    return paths


def discover_games(path: str | Path, *, limit: int | None = None) -> list[Path]:
    """Game files at ``path``: the file itself, or every ``*.tw-pddl``/``*.z8``/``*.json`` game below
    a directory (sorted; a ``.json`` counts only when no ``.z8`` of the same name sits beside it)."""
    p = Path(path)
    if p.is_file():
        if not p.name.endswith(GAME_SUFFIXES):
            raise InputError(f"{path}: not a game file (expected {', '.join(GAME_SUFFIXES)})")
        return [p]
    if not p.is_dir():
        raise InputError(f"{path}: no such file or directory")
    found = []
    for f in sorted(p.rglob("*")):
        if not f.is_file() or not f.name.endswith(GAME_SUFFIXES):
            continue
        if f.suffix == ".json" and (f.with_suffix(".z8").exists() or f.name.startswith(("traj_data", "manifest"))):
            continue
        found.append(f)
    if not found:
        raise InputError(f"{path}: no game files ({', '.join(GAME_SUFFIXES)}) found")
    return found[:limit] if limit else found


@result
class GameStep(ToDict):
    observation: str  # what the agent saw before the action (one line)
    action: str
    feedback: str  # what the game answered (one line)
    facts: tuple[str, ...]  # the game's facts before the action
    score: float


@result
class GameEpisode(ToDict):
    game: str
    agent: str
    objective: str
    steps: tuple[GameStep, ...]
    won: bool
    lost: bool
    score: float
    max_score: float | None


def _wrappers(game: str | Path) -> list:
    """ALFWorld games: ALFWorld's own demangler (object ids -> "apple 1") when ``alfworld`` is installed."""
    if not str(game).endswith(".tw-pddl"):
        return []
    try:
        from alfworld.agents.environment.alfred_tw_env import AlfredDemangler
    except ImportError:
        return []
    return [AlfredDemangler()]  # a textworld Wrapper instance; textworld.start calls it on the env


def _clean(text: str | None) -> str:
    return one_line(_STATUS.sub(r"\1", _PROMPT_NOISE.sub(" ", text or "")))


def _fact(f) -> str:
    return f"{f.name}({', '.join(a.name for a in f.arguments)})"


def play_game(game: str | Path, *, agent: str = "walkthrough", max_steps: int = 50, explore_steps: int = 5,
              seed: int | None = None) -> GameEpisode:
    """Play ``game`` once with the action source ``agent`` (see the module docstring)."""
    tw = textworld_module()
    if agent not in AGENTS:
        raise UsageError(f"unknown agent {agent!r} (choose from: {', '.join(AGENTS)})", params=("agent",))
    check_range("max_steps", max_steps, lo=1)
    rng = np.random.default_rng(seed)
    infos = tw.EnvInfos(admissible_commands=True, policy_commands=True, facts=True, won=True, lost=True,
                        objective=True, score=True, max_score=True, feedback=True)
    # jericho warns that TextWorld's own games are "not fully supported" (its score and move detection
    # is off; TextWorld tracks them itself): expected, so silenced here only
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"Game .* is not fully supported")
        try:
            env = tw.start(str(game), request_infos=infos, wrappers=_wrappers(game))
            gs = env.reset()
        except (OSError, ValueError, NotImplementedError) as exc:
            raise InputError(f"{game}: cannot start the game ({exc})") from None
    try:
        plan = list(gs.get("policy_commands") or [])
        if agent == "walkthrough" and not plan:
            raise InputError(f"{game}: the game has no walkthrough (policy_commands); use agent random",
                             params=("agent",))
        observation = _clean(gs.get("feedback") or gs.get("description"))
        steps: list[GameStep] = []
        done = False
        while not done and len(steps) < max_steps:
            t = len(steps)
            if agent == "walkthrough":
                if t >= len(plan):
                    break
                action = plan[t]
            elif agent == "random" or t < explore_steps:
                cmds = sorted(gs.get("admissible_commands") or [])
                if not cmds:
                    break
                action = cmds[int(rng.integers(len(cmds)))]
            else:
                cur = list(gs.get("policy_commands") or [])
                if not cur:
                    break
                action = cur[0]
            facts = tuple(_fact(f) for f in (gs.get("facts") or []))
            gs, score, done = env.step(action)
            feedback = _clean(gs.get("feedback"))
            steps.append(GameStep(observation=observation, action=action, feedback=feedback, facts=facts,
                                  score=float(score or 0)))
            observation = feedback
        return GameEpisode(game=str(game), agent=agent, objective=_clean(gs.get("objective")), steps=tuple(steps),
                           won=bool(gs.get("won")), lost=bool(gs.get("lost")), score=float(gs.get("score") or 0),
                           max_score=None if gs.get("max_score") is None else float(gs.get("max_score")))
    finally:
        env.close()


# ----------------------------------------------------------------------------------- memory
def _cut(text: str, n: int) -> str:
    w = text.split()
    return " ".join(w[:n]) + (" ..." if len(w) > n else "")


def memory_items(ep: GameEpisode, t: int) -> tuple[list[str], list[str]]:
    """The memory before step ``t``: semantic facts about mentioned entities (current values), then
    one episodic entry per past step. Returns ``(texts, groups)`` (groups: ``fact``/``step``)."""
    seen_text = " ".join([ep.steps[0].observation] + [f"{s.action} {s.feedback}" for s in ep.steps[:t]]).lower()
    facts = ep.steps[t].facts if t < len(ep.steps) else ()
    texts, groups = [], []
    for f in facts:
        args = f[f.index("(") + 1:-1].split(", ") if "(" in f else []
        names = [a.split(":")[0].strip() for a in args]
        if names and all(n == "P" or n.lower() in seen_text for n in names):
            texts.append(f"fact: {f}")
            groups.append("fact")
    for i, s in enumerate(ep.steps[:t]):
        texts.append(f"step {i}: {s.action} -> {_cut(s.feedback, EPISODE_WORDS) or '(no feedback)'}")
        groups.append("step")
    return texts, groups


def step_prompts(ep: GameEpisode, t: int, *, budget: int, k: int, core: int, tau: float, max_candidates: int,
                 counter) -> tuple[PackedPrompt, PackedPrompt]:
    """The (graph, ctwm) prompts of step ``t``."""
    s = ep.steps[t]
    texts, groups = memory_items(ep, t)
    order = rank_order(bm25_scores(words(f"{s.observation} {s.action}"), [words(x) for x in texts]))
    head = [TASK]
    if ep.objective:
        head.append(f"Objective: {_cut(ep.objective, OBSERVATION_WORDS)}\n")
    head += [f"Current observation: {_cut(s.observation, OBSERVATION_WORDS) or '(none)'}\n", f"Action: {s.action}\n"]
    g = pack_graph(texts, order, [*head, TITLE["graph"]], [OUTPUT], budget=budget, k=k, counter=counter)
    c = pack_ctwm(texts, groups, order, [*head, TITLE["ctwm"]], [BUDGET_RULE, OUTPUT], budget=budget, core=core,
                  tau=tau, max_candidates=max_candidates, counter=counter, tail_title="kinds")
    return g, c


# ----------------------------------------------------------------------------------- results
@result
class GameRow(ToDict):
    """One game: its episode summary and the per-step tokens of each arm."""

    game: str
    agent: str
    steps: int
    won: bool
    score: float
    max_score: float | None
    graph_tokens: tuple[int, ...]
    ctwm_tokens: tuple[int, ...]
    graph_tokens_mean: float
    ctwm_tokens_mean: float
    reduction: float | None


@result
class TextGameResult(ToDict):
    """``ctwm bench textworld``: paired Graph Memory vs CTWM tokens on text-game episodes."""

    source: str
    label: str
    games: tuple[GameRow, ...]
    steps: int
    params: dict[str, Any]
    tokenizer: str
    graph_tokens_mean: float
    ctwm_tokens_mean: float
    reduction: float | None
    reduction_confidence_interval: ConfidenceInterval | None  # None unless formed
    success_graph: int
    success_ctwm: int
    success_note: str
    bootstrap: dict[str, Any]
    tokens_counted: str = USER_MESSAGE  # every token figure: the prompt (user message) alone, no system/template


def run_textgames(games: str | Path | Sequence[str | Path], *, agent: str = "walkthrough", max_steps: int = 50,
                  explore_steps: int = 5, limit: int | None = None, budget: int = DEFAULT_BUDGET, k: int = DEFAULT_K,
                  core: int = DEFAULT_CORE, tau: float = DEFAULT_TAU, max_candidates: int = DEFAULT_MAX_CANDIDATES,
                  tokenizer: str = DEFAULT_TOKENIZER, bootstrap: int = 1000, block: int = 5, level: float = 0.95,
                  seed: int | None = None, label: str | None = None,
                  progress: ProgressCallback | None = None) -> TextGameResult:
    """Play every game once and replay its actions under graph and ctwm (see the module docstring)."""
    check_pack_args(budget=budget, k=k, core=core, tau=tau, max_candidates=max_candidates)
    if tokenizer not in TOKENIZERS:
        raise UsageError(f"unknown tokenizer {tokenizer!r} (choose from: {', '.join(TOKENIZERS)})",
                         params=("tokenizer",))
    check_range("bootstrap", bootstrap, lo=0)
    check_range("block", block, lo=1)
    check_range("level", level, lo=0, hi=1, lo_open=True, hi_open=True)
    if limit is not None:
        check_range("limit", limit, lo=1)
    textworld_module()
    if isinstance(games, (str, Path)):
        source = str(games)
        files = discover_games(games, limit=limit)
    else:
        files = [Path(g) for g in games][:limit] if limit else [Path(g) for g in games]
        source = ", ".join(str(f) for f in files)
    counter = token_counter(tokenizer)
    rng = np.random.default_rng(seed)
    play_seeds = rng.spawn(len(files))
    rows: list[GameRow] = []
    for i, f in enumerate(files):
        ep = play_game(f, agent=agent, max_steps=max_steps, explore_steps=explore_steps,
                       seed=int(play_seeds[i].integers(2**31)))
        gt, ct = [], []
        for t in range(len(ep.steps)):
            g, c = step_prompts(ep, t, budget=budget, k=k, core=core, tau=tau, max_candidates=max_candidates,
                                counter=counter)
            gt.append(g.tokens)
            ct.append(c.tokens)
        red = 1 - sum(ct) / sum(gt) if gt else None
        rows.append(GameRow(game=str(f), agent=agent, steps=len(gt), won=ep.won, score=ep.score,
                            max_score=ep.max_score, graph_tokens=tuple(gt), ctwm_tokens=tuple(ct),
                            graph_tokens_mean=float(np.mean(gt)) if gt else float("nan"),
                            ctwm_tokens_mean=float(np.mean(ct)) if ct else float("nan"), reduction=red))
        if progress is not None:
            progress(i + 1, len(files))
    played = [r for r in rows if r.steps]
    if not played:
        raise InputError(f"{source}: no game produced a single step")
    g_all = np.concatenate([np.asarray(r.graph_tokens, dtype=np.float64) for r in played])
    c_all = np.concatenate([np.asarray(r.ctwm_tokens, dtype=np.float64) for r in played])
    red = float(1 - c_all.sum() / g_all.sum())
    if len(played) > 1:  # whole games resampled: the paired unit is the episode
        gs_ = np.array([sum(r.graph_tokens) for r in played], dtype=np.float64)
        cs_ = np.array([sum(r.ctwm_tokens) for r in played], dtype=np.float64)
        resample: Any = IndexResample(len(played), bootstrap, rng)
        d = paired_delta((cs_, np.ones(cs_.size)), (gs_, np.ones(gs_.size)), resample, level=level,
                         treatment="ctwm", baseline="graph", metric="tokens")
        method = "paired bootstrap over games (whole episodes resampled), percentile interval"
    else:
        resample = BlockResample([played[0].steps], block, bootstrap, rng)
        d = paired_delta((c_all, np.ones(c_all.size)), (g_all, np.ones(g_all.size)), resample, level=level,
                         treatment="ctwm", baseline="graph", metric="tokens")
        method = "circular block bootstrap over the steps of the one game, percentile interval"
    # reduction = 1 - sum(ctwm)/sum(graph) = -relative, so its interval is the relative one negated
    rci = d.relative_confidence_interval
    method = method if d.interval_status == "formed" else d.interval_status
    wins = sum(r.won for r in rows)
    return TextGameResult(
        source=source, label=label or f"TextWorld {agent}", games=tuple(rows), steps=int(g_all.size),
        params={"agent": agent, "max_steps": max_steps, "explore_steps": explore_steps, "budget": budget, "k": k,
                "core": core, "tau": tau, "max_candidates": max_candidates, "episode_words": EPISODE_WORDS},
        tokenizer=counter.name, graph_tokens_mean=float(g_all.mean()), ctwm_tokens_mean=float(c_all.mean()),
        reduction=red, reduction_confidence_interval=None if rci is None else rci.negated(), success_graph=wins,
        success_ctwm=wins,
        success_note="the same action sequence is replayed under both memories, so success is equal by construction",
        bootstrap={"replicates": bootstrap, "block": block, "level": level, "seed": seed,
                   "method": method},)
