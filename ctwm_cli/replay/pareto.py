"""``ctwm replay pareto``: tokens against answerable tail error per memory policy over a budget sweep.

Every budget replays the same episodes (open loop) with every policy, so the points are measured on
the same steps. Per point: mean prompt tokens per step and the answerable tail error (and, in closed
loop, tasks reached per 1,000 steps), each with a moving-block bootstrap interval
(:mod:`ctwm_cli.stats.paired`). When both ``graph`` and ``ctwm`` are swept in open loop, a third series
``ctwm[<=graph]`` runs CTWM with the matched budget rule (at every step its budget is what Graph
Memory spent on that step, or CTWM's minimal prompt if that is larger, counted in
``matched_over_budget``), and the paired deltas ``ctwm[<=graph] − graph`` at each budget answer
"is CTWM better at the same price?" directly.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..common.errors import UsageError
from ..common.results import ToDict, result
from ..memory.policies import MEMORY_POLICIES
from ..memory.predictor import make_predictor
from ..memory.tokens import token_counter
from ..runtime.progress import ProgressCallback
from ..stats.blocklength import politis_white_block
from ..stats.intervals import ConfidenceInterval, confidence_interval
from ..stats.paired import BlockResample, PairedDelta, ratio_interval
from .agents import make_agent
from .experiments import check_arms, replay_logs
from .metrics import ReferenceMetrics, arm_metrics, paired_deltas, reference_metrics
from .runner import Arm, ReplayConfig

__all__ = ["ParetoPoint", "ParetoResult", "parse_budgets", "replay_pareto"]

MAX_BUDGETS = 50


@result
class ParetoPoint(ToDict):
    """One policy at one budget."""

    arm: str
    memory: str
    tau: float | None
    matched: bool  # ctwm under the match_tokens=graph rule
    budget: int
    steps: int
    tokens_mean: float
    tokens_confidence_interval: ConfidenceInterval | None
    answerable_tail_error: float | None
    answerable_tail_error_confidence_interval: ConfidenceInterval | None
    answerable_overall_error: float | None
    evidence_in_prompt: float | None
    task_rate: float | None  # closed loop: tasks reached per 1,000 steps
    task_rate_confidence_interval: ConfidenceInterval | None
    matched_over_budget: int


@result
class ParetoResult(ToDict):
    """``ctwm replay pareto`` result."""

    config: ReplayConfig
    loop: str
    budgets: tuple[int, ...]
    points: tuple[ParetoPoint, ...]
    comparisons: tuple[PairedDelta, ...]  # per budget: every ctwm series - graph (group = the budget)
    references: tuple[ReferenceMetrics, ...]
    tokens_non_decreasing: dict[str, bool]  # per series: mean tokens never fall as the budget grows
    interval_status: str  # "formed" or why the intervals could not be formed
    bootstrap: dict[str, Any]
    finding: str


def parse_budgets(spec: str | Sequence[int]) -> tuple[int, ...]:
    """``"128:1024:6"`` (N evenly spaced, inclusive, rounded) or ``"128,256,512"`` -> budgets."""
    if isinstance(spec, str):
        text = spec.strip()
        try:
            if ":" in text:
                lo_s, hi_s, n_s = text.split(":")
                lo, hi, n = int(lo_s), int(hi_s), int(n_s)
                if n < 2 or lo >= hi:
                    raise UsageError(f"budget sweep needs START < STOP and N >= 2, got {spec!r}", params=("budget",))
                values = [round(v) for v in np.linspace(lo, hi, n)]
            else:
                values = [int(x) for x in text.split(",") if x.strip()]
        except ValueError:
            raise UsageError(f"budget expects START:STOP:N or a comma list of integers, got {spec!r}",
                             params=("budget",)) from None
    else:
        values = [int(x) for x in spec]
    out = tuple(sorted(set(values)))
    if not out or out[0] < 1:
        raise UsageError(f"budgets must be integers >= 1, got {spec!r}", params=("budget",))
    if len(out) > MAX_BUDGETS:
        raise UsageError(f"at most {MAX_BUDGETS} budgets, got {len(out)}", params=("budget",))
    return out


def _arms(memories: Sequence[str], encoding: str, taus: Sequence[float], closed: bool) -> list[Arm]:
    arms = []
    for m in memories:
        if m == "ctwm":
            arms += [Arm(memory=m, encoding=encoding, tau=t) for t in taus]
        else:
            arms.append(Arm(memory=m, encoding=encoding))
    if "graph" in memories and "ctwm" in memories and not closed:
        arms += [Arm(memory="ctwm", encoding=encoding, tau=t, match_tokens="graph") for t in taus]
    return arms


def _point(arm: Arm, logs: list, budget: int, resample: BlockResample, level: float) -> ParetoPoint:
    m = arm_metrics(logs)
    tok = np.concatenate([g.request_tokens for g in logs]).astype(np.float64)  # the whole request, as tokens_mean
    ones = np.ones(tok.size)
    wrong = ~np.concatenate([g.correct for g in logs])
    ans_tail = np.concatenate([g.transition_evidence & g.tail for g in logs])
    _, tlo, thi = ratio_interval(tok, ones, resample, level)
    _, elo, ehi = ratio_interval((wrong & ans_tail).astype(np.float64), ans_tail.astype(np.float64), resample, level)
    rate = rlo = rhi = None
    if logs[0].task_end_steps is not None:
        ends = np.concatenate([g.task_end_steps for g in logs])
        rate, rlo, rhi = (None if v is None else 1000 * v
                          for v in ratio_interval((ends > 0).astype(np.float64), ones, resample, level))
    return ParetoPoint(arm=arm.label, memory=arm.memory, tau=arm.tau, matched=arm.match_tokens is not None,
                       budget=budget, steps=m.steps, tokens_mean=m.tokens_mean,
                       tokens_confidence_interval=confidence_interval(tlo, thi, level),
                       answerable_tail_error=m.answerable_tail_error,
                       answerable_tail_error_confidence_interval=confidence_interval(elo, ehi, level),
                       answerable_overall_error=m.answerable_overall_error,
                       evidence_in_prompt=m.evidence_in_prompt, task_rate=rate,
                       task_rate_confidence_interval=confidence_interval(rlo, rhi, level),
                       matched_over_budget=sum(g.matched_over_budget for g in logs))


def _point_block(cfg: ReplayConfig, by_arm: Sequence[Sequence]) -> int:
    """The block of the one-arm intervals: ``cfg.block``, or (auto) the longest Politis-White block of
    any series' per-step tokens and answerable tail loss (one resample serves every point)."""
    if cfg.block != "auto":
        return int(cfg.block)
    best = 1
    for logs in by_arm:
        wrong = [(~g.correct & g.transition_evidence & g.tail).astype(np.float64) for g in logs]
        for pieces in ([g.request_tokens.astype(np.float64) for g in logs], wrong):
            best = max(best, politis_white_block(pieces).block)
    return best


def _finding(comps: Sequence[PairedDelta], monotone: dict[str, bool]) -> str:
    """The answer in words, from the matched deltas of answerable tail error (whatever it is)."""
    matched = [c for c in comps if c.metric in ("answerable_tail_error", "answerable_tail_error_regret",
                                                    "answerable_tail_error_oracle_regret")
               and "[<=graph]" in c.treatment]
    parts = []
    if matched:
        better = [c.group for c in matched if c.confidence_interval is not None and c.confidence_interval.high < 0]
        worse = [c.group for c in matched if c.confidence_interval is not None and c.confidence_interval.low > 0]
        tied = [c for c in matched if c.group not in better and c.group not in worse]
        bounds = ", ".join(c.group + ("" if c.mde is None else f" (no difference larger than ±{c.mde:.3g})")
                           for c in tied)
        parts.append("At equal cost (CTWM's budget per step = what Graph Memory spent), CTWM's answerable tail "
                     f"error is lower than Graph's at budget(s) {', '.join(better) or 'none'}, higher at "
                     f"{', '.join(worse) or 'none'}, and not distinguishable (CI covers 0, or no CI) at "
                     f"{bounds or 'none'}.")
    bad = [k for k, v in monotone.items() if not v]
    parts.append("Mean tokens grow with the budget for every series." if not bad else
                 f"Mean tokens fall somewhere as the budget grows for: {', '.join(bad)}.")
    return " ".join(parts)


def replay_pareto(cfg: ReplayConfig, *, budgets: Sequence[int], memories: Sequence[str] = ("graph", "ctwm"),
                  encoding: str = "compact", taus: Sequence[float] = (1.0,), seed: int | None = None,
                  progress: ProgressCallback | None = None) -> ParetoResult:
    """Sweep ``budgets`` for every policy of ``memories`` on the same episodes (see the module docstring)."""
    mems = list(dict.fromkeys(memories))
    for m in mems:
        if m not in MEMORY_POLICIES or m == "full":
            raise UsageError(f"memory {m!r} cannot be swept over budgets (choose from: flat, graph, ctwm, tiered)",
                             params=("memories",))
    budgets = parse_budgets(budgets)
    cfg = cfg.checked()
    arms = check_arms(cfg, _arms(mems, encoding, taus, cfg.loop == "closed"))
    counter = token_counter(cfg.tokenizer)
    predictor = make_predictor(cfg.predictor, cfg.predictor_params)
    agent = make_agent(cfg.agent, cfg.agent_params) if cfg.loop == "closed" else None
    rng = np.random.default_rng(seed)
    points: list[ParetoPoint] = []
    comps: list[PairedDelta] = []
    refs: tuple[ReferenceMetrics, ...] = ()
    status = "formed"
    total = len(budgets) * len(cfg.seeds) * len(arms)
    graph = next((i for i, a in enumerate(arms) if a.memory == "graph"), None)
    for j, b in enumerate(budgets):
        cb = dataclasses.replace(cfg, budget=b).checked()
        _, logs = replay_logs(cb, arms, counter=counter, predictor=predictor, agent=agent, progress=progress,
                              done=j * len(cfg.seeds) * len(arms), total=total)
        by_arm = [[logs[(i, s)] for s in cfg.seeds] for i in range(len(arms))]
        resample = BlockResample([g.tokens.size for g in by_arm[0]], _point_block(cfg, by_arm), cfg.bootstrap, rng)
        status = resample.status
        points += [_point(a, by_arm[i], b, resample, cfg.level) for i, a in enumerate(arms)]
        if not refs and cfg.loop == "open":
            refs = reference_metrics(by_arm[0])
        if graph is not None:
            for i, a in enumerate(arms):
                if a.memory == "ctwm":
                    got = paired_deltas(by_arm[i], by_arm[graph], None, replicates=cfg.bootstrap, block=cfg.block,
                                        level=cfg.level, rng=rng, resample=cfg.resampling, regret=cfg.loop == "closed",
                                        metrics=("tokens_mean", "answerable_tail_error", "tasks_per_episode"))
                    comps += [dataclasses.replace(d, group=str(b)) for d in got]
    monotone = {}
    for a in arms:
        toks = [p.tokens_mean for p in points if p.arm == a.label]
        monotone[a.label] = all(x <= y + 1e-9 for x, y in itertools.pairwise(toks))
    boot = {"replicates": cfg.bootstrap, "block": cfg.block, "level": cfg.level, "seed": seed,
            "method": "circular block bootstrap over steps within each episode, percentile interval; block 'auto': "
                      "per budget, the longest Politis-White block of any series' tokens and answerable tail loss"}
    return ParetoResult(config=cfg, loop=cfg.loop, budgets=budgets, points=tuple(points), comparisons=tuple(comps),
                        references=refs, tokens_non_decreasing=monotone, interval_status=status, bootstrap=boot,
                        finding=_finding(comps, monotone))
