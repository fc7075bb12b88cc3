"""The replay experiments: encodings (``ctwm replay``), policies (``compare``, paper Table 3), the 2x2
ablation (``ablation``, Table 4), each optionally over a τ sweep (Section 5.6, on the episodes)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..allocation.sweep import check_taus, parse_sweep
from ..common.errors import UsageError
from ..common.results import ToDict, result
from ..memory.plugins import is_policy_spec
from ..memory.policies import MEMORY_POLICIES
from ..memory.predictor import make_predictor
from ..memory.tokens import token_counter
from ..runtime.progress import ProgressCallback
from ..stats.paired import POWER, PairedDelta
from .agents import make_agent
from .metrics import ArmMetrics, ReferenceMetrics, arm_metrics, paired_deltas, reference_metrics, tail_steps
from .output import prepare_dir, write_outputs
from .recorded import read_episodes
from .runner import Arm, Episode, EpisodeLog, ReplayConfig, episode, run_episode


@result
class TauRow(ToDict):
    """One τ of a sweep, measured on the episodes."""

    tau: float
    encoding: str
    tokens_mean: float
    tail_error: float | None
    overall_error: float
    items_in_prompt: float  # core lines per step
    items_summarised: float  # tail-summary entries per step
    tail_items: float  # tail items per step (listed or counted)
    state_coverage: float | None
    transition_coverage: float | None


@result
class ReplayResult(ToDict):
    """A replay experiment: pooled and per-seed metrics per arm, paired deltas, τ sweep, files."""

    command: str
    config: ReplayConfig
    loop: str  # "open": every arm replays the same trajectories; "closed": each arm drives its own
    arms: tuple[ArmMetrics, ...]
    references: tuple[ReferenceMetrics, ...]  # oracle and counts on the same steps (closed loop: per arm)
    per_seed: tuple[ArmMetrics, ...]
    comparisons: tuple[PairedDelta, ...]
    tau_sweep: tuple[TauRow, ...]
    tokenizer: str
    predictor: str
    bootstrap: dict[str, Any]
    out: str | None
    files: dict[str, str]
    predictor_stats: dict[str, Any]
    agent_stats: dict[str, Any]
    matched_over_budget: dict[str, int]  # match_tokens arms: steps whose minimal prompt exceeded the match


def parse_taus(spec: str | Sequence[float] | None) -> tuple[float, ...]:
    """``"1.0"``, ``"0.5,1,2"`` or ``"START:STOP:N"`` (N evenly spaced, inclusive) -> τ values."""
    if spec is None:
        return (1.0,)
    if not isinstance(spec, str):
        return check_taus(list(spec), "tau")
    text = spec.strip()
    if ":" in text:
        return parse_sweep(text, "tau")
    try:
        values = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise UsageError(f"tau expects a number, a comma list or START:STOP:N, got {spec!r}",
                         params=("tau",)) from None
    return check_taus(values, "tau")


def check_arms(cfg: ReplayConfig, arms: Sequence[Arm]) -> list[Arm]:
    arms = [a.checked() for a in arms]
    names = [a.name for a in arms]
    if len(set(names)) != len(names):
        raise UsageError(f"the same arm is listed twice: {', '.join(names)}", params=("arms",))
    for a in arms:
        if a.match_tokens is None:
            continue
        if cfg.loop == "closed":
            raise UsageError("match_tokens needs open loop (the same steps for both arms); closed-loop arms each "
                             "drive their own trajectory", params=("match_tokens",))
        if not any(b.memory == a.match_tokens and b.encoding == a.encoding for b in arms):
            raise UsageError(f"match_tokens={a.match_tokens} needs a {a.match_tokens} arm with encoding {a.encoding}",
                             params=("match_tokens",))
    return arms


def _run_seed(cfg: ReplayConfig, ep: Episode, arms: Sequence[Arm], counter, predictor, agent) -> list[EpisodeLog]:
    """Every arm on one seed; matched arms after the arm whose per-step tokens they match."""
    logs: dict[int, EpisodeLog] = {}
    for i in sorted(range(len(arms)), key=lambda i: arms[i].match_tokens is not None):
        arm = arms[i]
        budgets = None
        if arm.match_tokens is not None:
            ref = next(j for j, b in enumerate(arms) if b.memory == arm.match_tokens and b.encoding == arm.encoding)
            budgets = logs[ref].tokens
        logs[i] = run_episode(ep, arm, cfg, counter=counter, predictor=predictor, agent=agent, budgets=budgets)
        log = logs[i]
        log.tail = tail_steps(log.states, ep.world.tid_dst[log.tids], ep.world.size, cfg.tail_rule)
    return [logs[i] for i in range(len(arms))]


def replay_logs(cfg: ReplayConfig, arms: Sequence[Arm], *, counter, predictor, agent,
                progress: ProgressCallback | None = None, done: int = 0, total: int | None = None
                ) -> tuple[dict[int, Episode], dict[tuple[int, int], EpisodeLog]]:
    """Every (checked) arm on every seed: the episodes and the logs keyed by (arm index, seed)."""
    episodes: dict[int, Episode] = {}
    logs: dict[tuple[int, int], EpisodeLog] = {}
    total = total or len(cfg.seeds) * len(arms)
    for k, s in enumerate(cfg.seeds):
        ep = episode(cfg, s)
        episodes[s] = ep
        for i, log in enumerate(_run_seed(cfg, ep, arms, counter, predictor, agent)):
            logs[(i, s)] = log
        if progress is not None:
            progress(done + (k + 1) * len(arms), total)
    return episodes, logs


def run_arms(cfg: ReplayConfig, arms: Sequence[Arm], comparisons: Sequence[tuple[int, int]], *, command: str,
             out: str | Path | None = None, overwrite: bool = False, seed: int | None = None,
             progress: ProgressCallback | None = None, manifest_extra: dict[str, Any] | None = None) -> ReplayResult:
    """Replay every arm on every seed's episode; metrics, reference rows, paired deltas ``(treatment,
    baseline)`` (indices into ``arms``) and, with several ctwm τ, the τ sweep. With ``out``, write the files.
    In open loop the tail steps are the seed's (the same for every arm); in closed loop each arm's own."""
    cfg = cfg.checked()
    arms = check_arms(cfg, arms)
    outdir = prepare_dir(out, overwrite) if out is not None else None
    counter = token_counter(cfg.tokenizer)
    predictor = make_predictor(cfg.predictor, cfg.predictor_params)
    agent = make_agent(cfg.agent, cfg.agent_params) if cfg.loop == "closed" else None
    episodes, logs = replay_logs(cfg, arms, counter=counter, predictor=predictor, agent=agent, progress=progress)
    by_arm = [[logs[(i, s)] for s in cfg.seeds] for i in range(len(arms))]
    pooled = tuple(arm_metrics(g) for g in by_arm)
    per_seed = tuple(arm_metrics([logs[(i, s)]], seed=s) for i in range(len(arms)) for s in cfg.seeds)
    if cfg.loop == "open":
        refs: tuple[ReferenceMetrics, ...] = reference_metrics(by_arm[0])
    else:
        refs = tuple(r for i, g in enumerate(by_arm) for r in reference_metrics(g, on=arms[i].name))
    rng = np.random.default_rng(seed)
    comps: list[PairedDelta] = []
    for ti, bi in comparisons:
        comps.extend(paired_deltas(by_arm[ti], by_arm[bi], None, replicates=cfg.bootstrap, block=cfg.block,
                                   level=cfg.level, rng=rng, resample=cfg.resampling, regret=cfg.loop == "closed"))
    files: dict[str, str] = {}
    boot = {"replicates": cfg.bootstrap, "block": cfg.block, "level": cfg.level, "seed": seed,
            "resample": cfg.resampling, "power": POWER, "method": _method(cfg)}
    if outdir is not None:
        manifest = {"config": cfg.to_dict(), "seed": seed, "loop": cfg.loop, "arms": [a.to_dict() for a in arms],
                    "tokenizer": {"name": counter.name, "package": counter.package},
                    "predictor": cfg.predictor, "episodes": _episodes_manifest(cfg, episodes),
                    "tail_states": TAIL_TEXT[cfg.tail_rule],
                    **(manifest_extra or {})}
        keys = [(i, s) for i in range(len(arms)) for s in cfg.seeds]
        files = write_outputs(outdir, command, [logs[k] for k in keys], [episodes[s] for _, s in keys],
                              [logs[k].tail for k in keys], manifest)
    over = {a.name: sum(g.matched_over_budget for g in by_arm[i]) for i, a in enumerate(arms) if a.match_tokens}
    return ReplayResult(command=command, config=cfg, loop=cfg.loop, arms=pooled, references=refs, per_seed=per_seed,
                        comparisons=tuple(comps), tau_sweep=_sweep(arms, pooled), tokenizer=counter.name,
                        predictor=cfg.predictor, bootstrap=boot, out=str(outdir) if outdir is not None else None,
                        files=files, predictor_stats=predictor.stats(),
                        agent_stats=agent.stats() if agent is not None else {}, matched_over_budget=over)


def _episodes_manifest(cfg: ReplayConfig, episodes: dict[int, Episode]) -> dict[str, Any]:
    """How to get each episode again: its ``ctwm world run``, or its run in the recorded file."""
    if cfg.episodes_from is not None:
        rec = read_episodes(cfg.episodes_from)
        return {str(s): {"episodes_from": rec.path, "run": rec.runs[s], "steps": int(rec.tids[s].size),
                         "n_states": rec.world.size, "n_transitions": rec.world.n_transitions} for s in cfg.seeds}
    return {str(s): {"world_run": cfg.world_config(s).resolved().command(), "n_states": episodes[s].world.size,
                     "n_transitions": episodes[s].world.n_transitions} for s in cfg.seeds}


TAIL_TEXT = {
    "current": "tail_on=current: a step is a tail step when its current state s_t is one of the floor(n/2) least "
               "visited of the n states visited at s_0..s_{T-1} (ties: smaller id); closed loop: of each run's own "
               "trajectory",
    "next": "tail_on=next (the paper's code): a step is a tail step when its next state s_{t+1} is one of the "
            "floor(n/2) least visited of the n states visited at s_0..s_T (ties: smaller id); closed loop: of each "
            "run's own trajectory",
}


def _method(cfg: ReplayConfig) -> str:
    """How the intervals were formed, in words (the JSON's ``bootstrap.method``)."""
    steps = ("circular block bootstrap over steps within each episode, " +
             ("block per metric by the Politis-White rule on the per-step difference"
              if cfg.block == "auto" else f"block {cfg.block}") + ", percentile interval")
    base = "cluster bootstrap over episodes, Student-t interval" if cfg.resampling == "episodes" else steps
    by_episode = cfg.resampling == "steps"
    tasks = "; task metrics: cluster bootstrap over episodes, Student-t interval" if by_episode else ""
    regret = "; closed loop: error metrics compared as regret (error - oracle on the arm's own steps)" \
        if cfg.loop == "closed" else ""
    return f"{base}{tasks}{regret}; mde at {POWER:.0%} power"


def _sweep(arms: Sequence[Arm], pooled: Sequence[ArmMetrics]) -> tuple[TauRow, ...]:
    ctwm = [(a, m) for a, m in zip(arms, pooled, strict=True) if a.memory == "ctwm" and a.match_tokens is None]
    if len({a.tau for a, _ in ctwm}) < 2:
        return ()
    rows = [TauRow(tau=a.tau, encoding=a.encoding, tokens_mean=m.tokens_mean, tail_error=m.tail_error,
                   overall_error=m.overall_error, items_in_prompt=m.items_injected,
                   items_summarised=m.items_summarised, tail_items=m.tail_items, state_coverage=m.state_coverage,
                   transition_coverage=m.transition_coverage) for a, m in ctwm]
    return tuple(sorted(rows, key=lambda r: (r.encoding, r.tau)))


def _arm_list(memory: str, encodings: Sequence[str], taus: Sequence[float], match: str | None = None) -> list[Arm]:
    if memory == "ctwm":
        return [Arm(memory=memory, encoding=e, tau=t, match_tokens=match) for e in encodings for t in taus]
    return [Arm(memory=memory, encoding=e) for e in encodings]


def replay_encodings(cfg: ReplayConfig, *, memory: str = "ctwm", taus: Sequence[float] = (1.0,),
                     **kw: Any) -> ReplayResult:
    """Verbose vs compact for one memory policy on the same episodes (``ctwm replay``)."""
    if memory not in MEMORY_POLICIES and not is_policy_spec(memory):
        raise UsageError(f"memory: {memory!r} is not a known policy (choose from: {', '.join(MEMORY_POLICIES)}, or "
                         "package.module:ClassName)", params=("memory",))
    taus = tuple(taus) if memory == "ctwm" else (1.0,)
    arms = []
    comps = []
    for t in taus:
        i = len(arms)
        arms += [Arm(memory=memory, encoding="verbose", tau=t if memory == "ctwm" else None),
                 Arm(memory=memory, encoding="compact", tau=t if memory == "ctwm" else None)]
        comps.append((i + 1, i))
    return run_arms(cfg, arms, comps, command="replay", **kw)


def replay_compare(cfg: ReplayConfig, *, memories: Sequence[str] = MEMORY_POLICIES, encoding: str = "compact",
                   baseline: str | None = "graph", taus: Sequence[float] = (1.0,), match_tokens: str | None = None,
                   **kw: Any) -> ReplayResult:
    """Memory policies on the same episodes (``ctwm replay compare``, paper Table 3); paired deltas
    of every policy against ``baseline``. ``match_tokens="graph"``: ctwm's budget at every step is
    what Graph Memory spent on it (so it never spends more; see :func:`run_episode`)."""
    mems = list(dict.fromkeys(memories))
    if not mems:
        raise UsageError("memories needs at least one policy", params=("memories",))
    for m in mems:
        if m not in MEMORY_POLICIES and not is_policy_spec(m):
            raise UsageError(f"memories: {m!r} is not a known policy (choose from: {', '.join(MEMORY_POLICIES)}, or "
                             "package.module:ClassName / path/to/file.py:ClassName)", params=("memories",))
    if baseline is not None and baseline not in mems:
        raise UsageError(f"baseline {baseline} is not among memories {','.join(mems)}",
                         params=("baseline", "memories"))
    if match_tokens is not None and ("ctwm" not in mems or match_tokens not in mems):
        raise UsageError(f"match_tokens={match_tokens} needs both ctwm and {match_tokens} among the memories",
                         params=("match_tokens",))
    arms: list[Arm] = []
    for m in mems:
        arms += _arm_list(m, [encoding], taus, match_tokens)
    comps = []
    if baseline is not None:
        b = next(i for i, a in enumerate(arms) if a.memory == baseline)
        comps = [(i, b) for i in range(len(arms)) if i != b]
    return run_arms(cfg, arms, comps, command="replay compare", **kw)


def replay_ablation(cfg: ReplayConfig, *, taus: Sequence[float] = (1.0,), **kw: Any) -> ReplayResult:
    """The 2x2 of paper Table 4: {verbose, compact} x {graph, ctwm}; paired deltas of every cell
    against graph/verbose, of ctwm against graph within each encoding (allocation effect) and of
    compact against verbose within each policy (encoding effect)."""
    arms = [Arm(memory="graph", encoding="verbose"), Arm(memory="graph", encoding="compact")]
    comps = [(1, 0)]
    for t in taus:
        i = len(arms)
        arms += [Arm(memory="ctwm", encoding="verbose", tau=t), Arm(memory="ctwm", encoding="compact", tau=t)]
        comps += [(i, 0), (i + 1, 0), (i + 1, 1), (i + 1, i)]
    return run_arms(cfg, arms, comps, command="replay ablation", **kw)
