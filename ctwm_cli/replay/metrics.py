"""Replay metrics and paired comparisons with block-bootstrap confidence intervals.

Per arm (pooled over the seeds' steps, and per seed):

* ``tokens_mean``, ``tokens_median``, ``tokens_p95``: exact tokens per step of the whole chat request a
  model receives: system prompt, user message (the memory prompt: header, memory lines, output
  contract) and the chat template (:meth:`~ctwm_cli.memory.tokens.TokenCounter.chat_overhead`);
  ``user_tokens_mean``, ``user_tokens_p95``: the user message alone (what the budget binds);
  ``tokens_counted`` says so (``whole_request``; closed loop's ``decision_tokens_counted``:
  ``user_message``). p95 and the median by linear interpolation, numpy's default;
* ``state_coverage``: of the steps at which the memory held a transition from ``s_t``, the share
  whose prompt shows one (as a line or a tail-summary entry); ``transition_coverage``: the same for
  an outcome of ``(s_t, a_t)``. Full History has 1/1 by construction. This is *prompt* coverage;
  ``store_state_coverage`` / ``store_transition_coverage`` are the paper's (its code's
  ``coverage_state`` / ``coverage_trans``): of the episode's distinct states ``s_0..s_{T-1}`` /
  transitions, the share its store still holds at the end (a state is held as an end of a held
  transition), mean over episodes. A store that never evicts holds 1 of the transitions;
* ``tail_error``: the error rate over steps whose current state ``s_t`` is a **tail state**: the
  ⌊n/2⌋ least visited of the n states visited at ``s_0 .. s_{T-1}`` of the episode (visit counts
  ascending, ties to the smaller state id) — in open loop the same set for every arm of a seed.
  That is ``tail_on="current"`` (the default, the paper's text: the current state's rarity). With
  ``tail_on="next"`` (the paper's code) a step is a tail step when its **next** state ``s_{t+1}`` is a
  tail state of the whole trajectory ``s_0 .. s_T`` (:func:`tail_steps`);
* ``overall_error``: the error rate over all steps. Loss ``1{ŝ_{t+1} != s_{t+1}}``.

**Errors that isolate memory.** A step is *answerable* when an outcome of its ``(s_t, a_t)`` was
observed earlier in the episode, so a memory could hold the evidence; on the other steps no memory
can, and the error measures only the reader's fallback guess. ``answerable_steps``,
``answerable_tail_error`` and ``answerable_overall_error`` are the errors over the answerable steps
(of the tail, of all); ``evidence_in_prompt`` is the share of answerable steps whose evidence (an
outcome of ``(s_t, a_t)``) reached the prompt as its own line or inside the tail summary (it equals
``transition_coverage``); ``majority_evidence_in_prompt`` is the graded version: the share of
answerable steps whose prompt shows the *most frequent* past outcome of ``(s_t, a_t)`` (the one
``counts`` predicts), so a prompt showing only a minority outcome does not count (``None`` for a
policy with its own store, whose entries are not transitions). Two **reference rows** on the same
steps bound what a memory can do:
``oracle`` predicts the argmax of the true ``P(s' | s_t, a_t)`` (ties: the smaller transition id);
``counts`` predicts the outcome of ``(s_t, a_t)`` seen most often so far (all past outcomes, no
budget; ties: the one seen first) and has no prediction on unanswerable steps.

**Closed loop** adds success: ``tasks_reached`` (targets reached), ``tasks_started`` and
``steps_per_task`` (mean steps of the reached tasks), and the cost of acting: ``decision_tokens_mean``
(tokens of the agent's decision prompt per step, beside ``tokens_mean`` of the prediction prompt); in
open loop they are ``None``.

**Regret.** Every error metric has a regret: the arm's error minus the ``oracle`` reference's error
*on the arm's own steps* (``*_oracle_regret``), and minus ``counts``'s (``*_regret``). In open loop
every arm has the same steps, so the reference cancels and a difference of regrets is exactly the
difference of errors. In closed loop each arm drives its own trajectory, and a raw error difference
mixes what the memory did with which steps the arm happened to walk into (Graph Memory with top-k = 1
walked into easier steps and scored a *lower* answerable tail error than Graph, significantly); a
difference of regrets holds each arm to its own ceiling. The ceiling is the oracle (the argmax of the
true ``P(s' | s_t, a_t)``), which predicts on every step: ``counts`` has no prediction on an
unanswerable step and is wrong there, so a regret against it was 94–96% the reader's guessing
accuracy on those steps. So closed-loop comparisons of error metrics are on oracle regret (metric
names ``*_oracle_regret``), paired by episode. What regret measures: how far below the best possible
prediction of the steps it walked into an arm's memory left the reader. What it does not: whether
the arm walked into easy or hard steps (compare ``tasks_per_episode`` for that), nor, on unanswerable
steps, anything a memory could have changed (read ``answerable_*`` for that).

**Paired comparisons** (treatment minus baseline) use :mod:`ctwm_cli.stats.paired`: the confidence
interval is a percentile interval of a moving-block bootstrap over steps, stratified by seed (each
replicate draws ``T // L`` blocks of ``L`` consecutive steps in each seed, the same blocks for both
arms; at least two blocks per episode, else the interval is reported as not formable). ``L`` is
chosen per metric from the data (``block="auto"``, the default): the Politis–White rule
(:mod:`ctwm_cli.stats.blocklength`) on the linearised per-step difference ``(n_T − r_T d_T)/d̄_T −
(n_B − r_B d_B)/d̄_B``, reported with its lag-1 autocorrelation; an integer fixes it. With
``resample="episodes"`` whole episodes are resampled instead (the cluster bootstrap; closed loop,
where step ``t`` of one arm and step ``t`` of the other are different steps). Task metrics are
always resampled by episode, their unit: ``tasks_per_episode`` (targets reached per episode) and
``steps_per_task``. Ratio metrics (error rates, coverage, steps per task) are recomputed as ratios of
the resampled sums. Each formed interval carries the minimum detectable effect at 80% power
(``mde``). Seeded: the same seed gives the same intervals.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from ..common import vocabulary
from ..common.errors import UsageError
from ..common.results import ToDict, result
from ..common.vocabulary import TAIL_ON
from ..memory.tokens import USER_MESSAGE, WHOLE_REQUEST
from ..stats.blocklength import politis_white_block
from ..stats.paired import BlockResample, EpisodeResample, PairedDelta, paired_delta

__all__ = ["ERROR_METRICS", "HEADLINE_METRIC", "METRICS", "REGRET", "RESAMPLES", "TAIL_ON", "ArmMetrics", "PairedDelta",
           "ReferenceMetrics", "arm_metrics", "paired_deltas", "reference_metrics", "tail_states", "tail_steps",
           "undetectable"]

METRICS = ("tokens_mean", "user_tokens_mean", "tail_error", "overall_error", "state_coverage", "transition_coverage",
           "answerable_tail_error", "answerable_overall_error", "evidence_in_prompt", "majority_evidence_in_prompt")
ERROR_METRICS = ("tail_error", "overall_error", "answerable_tail_error", "answerable_overall_error")
CLOSED_LOOP_METRICS = ("tasks_per_episode", "steps_per_task")
EPISODE_METRICS = CLOSED_LOOP_METRICS  # their unit is the episode: always resampled by episode
RESAMPLES = tuple(r for r in vocabulary.RESAMPLES if r != "auto")  # "auto" resolves to one of these
HEADLINE_METRIC = "answerable_tail_error"  # what a bare --min-effect X is about
#: The regret closed-loop comparisons are on: error minus the oracle's on the arm's own steps. The oracle is a
#: ceiling on every step; ``counts`` (``*_regret``) has no prediction on unanswerable steps, so a regret against it
#: was mostly the reader's guessing accuracy there, weighted by how many such steps each arm walked into.
REGRET = "_oracle_regret"
#: Which state decides whether a step is a tail step: s_t (ctwm, the paper's text) or s_{t+1} (the paper's code).


@result
class ArmMetrics(ToDict):
    """Metrics of one arm (one seed, or pooled over seeds when ``seed`` is None)."""

    arm: str
    memory: str
    encoding: str
    tau: float | None
    seed: int | None
    steps: int
    tokens_mean: float
    tokens_median: float
    tokens_p95: float
    state_coverage: float | None
    transition_coverage: float | None
    tail_error: float | None
    overall_error: float
    tail_steps: int
    answerable_steps: int
    answerable_tail_steps: int
    answerable_tail_error: float | None
    answerable_overall_error: float | None
    evidence_in_prompt: float | None
    items_injected: float  # lines of memory per step
    items_summarised: float  # tail-summary entries per step
    tail_items: float  # tail items per step (listed or counted)
    api_prompt_tokens: float | None  # endpoint predictor: API-reported prompt tokens per step
    decision_tokens_mean: float | None  # closed loop only: tokens of the agent's decision prompt per step (its user
    # message: decision_tokens_counted)
    tasks_started: int | None
    tasks_reached: int | None
    steps_per_task: float | None
    majority_evidence_in_prompt: float | None = None  # answerable steps whose prompt shows the most seen outcome
    user_tokens_mean: float | None = None  # the user message alone (tokens_* count the whole request)
    user_tokens_p95: float | None = None
    tokens_counted: str = WHOLE_REQUEST  # tokens_*: "whole_request" (system + user + chat template) or "user_message"
    tasks_per_episode: float | None = None  # closed loop: targets reached per episode
    decision_tokens_counted: str | None = None  # closed loop: "user_message" (the decision prompt alone)
    # the paper's coverage (its code's): share of the episode's distinct states / transitions its store holds at
    # the end, mean over episodes; state_coverage / transition_coverage are ctwm's prompt coverage
    store_state_coverage: float | None = None
    store_transition_coverage: float | None = None
    # error minus the counts (oracle) reference's error on this arm's own steps
    tail_error_regret: float | None = None
    overall_error_regret: float | None = None
    answerable_tail_error_regret: float | None = None
    answerable_overall_error_regret: float | None = None
    tail_error_oracle_regret: float | None = None
    overall_error_oracle_regret: float | None = None
    answerable_tail_error_oracle_regret: float | None = None
    answerable_overall_error_oracle_regret: float | None = None


@result
class ReferenceMetrics(ToDict):
    """``oracle`` or ``counts`` on the steps of one trajectory (``on``: the arm whose steps, in closed loop)."""

    name: str
    on: str | None
    steps: int
    tail_error: float | None
    overall_error: float
    answerable_steps: int
    answerable_tail_error: float | None
    answerable_overall_error: float | None


def tail_states(states: np.ndarray, n_states: int) -> np.ndarray:
    """Boolean mask over states: the ⌊n/2⌋ least visited of the n visited states (ties: smaller id)."""
    visits = np.bincount(np.asarray(states, dtype=np.int64), minlength=n_states)
    visited = np.flatnonzero(visits)
    order = visited[np.lexsort((visited, visits[visited]))]
    mask = np.zeros(n_states, dtype=bool)
    mask[order[: visited.size // 2]] = True
    return mask


def tail_steps(states: np.ndarray, next_states: np.ndarray, n_states: int, tail_on: str = "current") -> np.ndarray:
    """Boolean mask over steps: is step ``t`` a tail step?

    ``current``: ``s_t`` is one of the ⌊n/2⌋ least visited of the states visited at ``s_0 .. s_{T-1}``.
    ``next`` (the paper's code, whose tail error is taken on ``s_{t+1}``): ``s_{t+1}`` is one of the
    ⌊n/2⌋ least visited of the states visited at ``s_0 .. s_T`` (the code counts every state of the
    walk, the last one included). Ties go to the smaller state id in both (the code's go to the state
    first visited)."""
    states = np.asarray(states, dtype=np.int64)
    next_states = np.asarray(next_states, dtype=np.int64)
    if tail_on == "current":
        return tail_states(states, n_states)[states]
    if tail_on == "next":
        return tail_states(np.concatenate([states, next_states[-1:]]), n_states)[next_states]
    raise UsageError(f"tail_on must be one of {', '.join(TAIL_ON)}, got {tail_on!r}", params=("tail_on",))


def _ratio(num: float, den: float) -> float | None:
    return float(num / den) if den else None


def _mean_of(logs: Sequence, name: str) -> float | None:
    """Mean over episodes of a per-episode figure; None when an episode has none."""
    vals = [getattr(g, name, None) for g in logs]
    return None if any(v is None for v in vals) else float(np.mean(vals))


def _cat(logs: Sequence, name: str) -> np.ndarray:
    return np.concatenate([getattr(g, name) for g in logs])


def _tails(logs: Sequence, tails: Sequence[np.ndarray] | None) -> np.ndarray:
    return np.concatenate(list(tails) if tails is not None else [g.tail for g in logs])


def _request(logs: Sequence) -> tuple[np.ndarray, str]:
    """Per-step tokens of the whole request (``"whole_request"``), or of the user message when a log has no
    request count (``"user_message"``)."""
    if all(getattr(g, "request_tokens", None) is not None for g in logs):
        return _cat(logs, "request_tokens"), WHOLE_REQUEST
    return _cat(logs, "tokens"), USER_MESSAGE


def arm_metrics(logs: Sequence, tails: Sequence[np.ndarray] | None = None, *, seed: int | None = None) -> ArmMetrics:
    """Metrics of one arm over ``logs`` (one per seed) with the seeds' tail-step masks (default: each log's own)."""
    tok, counted = _request(logs)
    user = _cat(logs, "tokens")
    wrong = ~_cat(logs, "correct")
    tail = _tails(logs, tails)
    te, tc = _cat(logs, "transition_evidence"), _cat(logs, "transition_covered")
    arm = logs[0].arm
    api = None if logs[0].api_prompt_tokens is None else float(np.mean(_cat(logs, "api_prompt_tokens")))
    history = logs[0].history_tokens is not None
    closed = getattr(logs[0], "tasks_reached", None) is not None
    reached = sum(g.tasks_reached for g in logs) if closed else None
    mc = _cat(logs, "majority_covered") if all(getattr(g, "majority_covered", None) is not None for g in logs) \
        else None
    series = _series(logs, tails)
    regret = {f"{m}{kind}": _ratio(series[f"{m}{kind}"][0].sum(), series[f"{m}{kind}"][1].sum())
              for m in ERROR_METRICS for kind in ("_regret", "_oracle_regret")}
    return ArmMetrics(
        arm=arm.name, memory=arm.memory, encoding=arm.encoding, tau=arm.tau, seed=seed, steps=int(tok.size),
        tokens_mean=float(tok.mean()), tokens_median=float(np.median(tok)), tokens_p95=float(np.percentile(tok, 95)),
        state_coverage=_ratio(_cat(logs, "state_covered").sum(), _cat(logs, "state_evidence").sum()),
        transition_coverage=_ratio(tc.sum(), te.sum()),
        tail_error=_ratio(wrong[tail].sum(), tail.sum()), overall_error=float(wrong.mean()), tail_steps=int(tail.sum()),
        answerable_steps=int(te.sum()), answerable_tail_steps=int((te & tail).sum()),
        answerable_tail_error=_ratio((wrong & te & tail).sum(), (te & tail).sum()),
        answerable_overall_error=_ratio((wrong & te).sum(), te.sum()), evidence_in_prompt=_ratio(tc.sum(), te.sum()),
        items_injected=float(np.mean(np.concatenate([np.arange(g.tokens.size) for g in logs]))) if history
        else float(np.mean(_cat(logs, "n_injected"))),
        items_summarised=float(np.mean(_cat(logs, "n_summarised"))),
        tail_items=float(np.mean(_cat(logs, "tail_count"))), api_prompt_tokens=api,
        decision_tokens_mean=float(np.mean(_cat(logs, "decision_tokens"))) if closed else None,
        tasks_started=sum(g.tasks_started for g in logs) if closed else None, tasks_reached=reached,
        steps_per_task=_ratio(sum(sum(g.task_lengths) for g in logs), reached) if closed else None,
        majority_evidence_in_prompt=_ratio((mc & te).sum(), te.sum()) if mc is not None else None,
        tasks_per_episode=reached / len(logs) if closed else None,
        decision_tokens_counted=USER_MESSAGE if closed else None,
        store_state_coverage=_mean_of(logs, "store_state_coverage"),
        store_transition_coverage=_mean_of(logs, "store_transition_coverage"), user_tokens_mean=float(user.mean()),
        user_tokens_p95=float(np.percentile(user, 95)), tokens_counted=counted, **regret,
    )


def reference_metrics(logs: Sequence, tails: Sequence[np.ndarray] | None = None, *,
                      on: str | None = None) -> tuple[ReferenceMetrics, ReferenceMetrics]:
    """The ``oracle`` and ``counts`` rows on the steps of ``logs`` (see the module docstring)."""
    tail = _tails(logs, tails)
    te = _cat(logs, "transition_evidence")
    out = []
    for name in ("oracle", "counts"):
        wrong = ~_cat(logs, f"{name}_correct")
        out.append(ReferenceMetrics(
            name=name, on=on, steps=int(wrong.size), tail_error=_ratio(wrong[tail].sum(), tail.sum()),
            overall_error=float(wrong.mean()), answerable_steps=int(te.sum()),
            answerable_tail_error=_ratio((wrong & te & tail).sum(), (te & tail).sum()),
            answerable_overall_error=_ratio((wrong & te).sum(), te.sum())))
    return out[0], out[1]


def _series(logs: Sequence, tails: Sequence[np.ndarray] | None) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """metric -> (numerator, denominator) per step, seeds concatenated."""
    f = np.float64
    tok = _request(logs)[0].astype(f)
    wrong = ~_cat(logs, "correct")
    tail = _tails(logs, tails)
    te, tc = _cat(logs, "transition_evidence"), _cat(logs, "transition_covered")
    ones = np.ones(tok.size)
    out = {
        "tokens_mean": (tok, ones),
        "user_tokens_mean": (_cat(logs, "tokens").astype(f), ones),
        "tail_error": ((wrong & tail).astype(f), tail.astype(f)),
        "overall_error": (wrong.astype(f), ones),
        "state_coverage": (_cat(logs, "state_covered").astype(f), _cat(logs, "state_evidence").astype(f)),
        "transition_coverage": (tc.astype(f), te.astype(f)),
        "answerable_tail_error": ((wrong & te & tail).astype(f), (te & tail).astype(f)),
        "answerable_overall_error": ((wrong & te).astype(f), te.astype(f)),
        "evidence_in_prompt": (tc.astype(f), te.astype(f)),
    }
    if all(getattr(g, "majority_covered", None) is not None for g in logs):
        out["majority_evidence_in_prompt"] = (_cat(logs, "majority_covered").astype(f), te.astype(f))
    masks = {"tail_error": tail, "overall_error": ones.astype(bool), "answerable_tail_error": te & tail,
             "answerable_overall_error": te}
    for ref, kind in (("counts", "_regret"), ("oracle", "_oracle_regret")):
        loss = wrong.astype(f) - (~_cat(logs, f"{ref}_correct")).astype(f)
        for m, mask in masks.items():
            out[f"{m}{kind}"] = (np.where(mask, loss, 0.0), mask.astype(f))
    if getattr(logs[0], "tasks_reached", None) is not None:
        ends = _cat(logs, "task_end_steps").astype(f)  # at the step a task is reached: its length; else 0
        first = np.concatenate([np.eye(1, g.tokens.size, dtype=f)[0] for g in logs])  # 1 at each episode's step 0
        out["tasks_per_episode"] = ((ends > 0).astype(f), first)
        out["steps_per_task"] = (ends, (ends > 0).astype(f))
    return out


def _linearised(num: np.ndarray, den: np.ndarray) -> np.ndarray | None:
    """Per-step influence of the ratio Σ num / Σ den (None when Σ den = 0)."""
    total = den.sum()
    if not total:
        return None
    return (num - (num.sum() / total) * den) / (total / den.size)


def _split(x: np.ndarray, lengths: Sequence[int]) -> list[np.ndarray]:
    return np.split(x, np.cumsum(lengths)[:-1])


def paired_deltas(treat: Sequence, base: Sequence, tails: Sequence[np.ndarray] | None, *, replicates: int,
                  block: int | str, level: float, rng: np.random.Generator, metrics: Sequence[str] | None = None,
                  resample: str = "steps", regret: bool = False) -> list[PairedDelta]:
    """Treatment minus baseline per metric, with percentile CIs from a paired block bootstrap
    (:class:`ctwm_cli.stats.paired.BlockResample`; ``block="auto"``: per metric, the Politis–White rule)
    or, with ``resample="episodes"`` and for the task metrics, a cluster bootstrap over episodes;
    ``regret=True`` (closed loop): error metrics as regrets (``*_regret``); ``tails=None``: each log's
    own tail-step mask."""
    a, b = _series(treat, tails), _series(base, tails)
    lengths = [g.tokens.size for g in treat]
    if [g.tokens.size for g in base] != lengths:
        raise ValueError("paired arms must replay episodes of the same length")
    if resample not in RESAMPLES:
        raise ValueError(f"resample must be one of {', '.join(RESAMPLES)}, got {resample!r}")
    names = [m for m in (metrics or (*METRICS, *CLOSED_LOOP_METRICS)) if m in a and m in b]
    names = [f"{m}{REGRET}" if regret and m in ERROR_METRICS else m for m in names]
    tname, bname = treat[0].arm.name, base[0].arm.name
    blocks: dict[int, BlockResample] = {}
    clusters: EpisodeResample | None = None
    out = []
    for m in names:
        extra: dict = {}
        if resample == "episodes" or m in EPISODE_METRICS:
            if clusters is None:
                clusters = EpisodeResample(lengths, replicates, rng)
            res, unit, extra["resampling"] = clusters, "episode", "episodes"
        else:
            ua, ub = _linearised(*a[m]), _linearised(*b[m])
            chosen = politis_white_block(_split(ua - ub, lengths)) if ua is not None and ub is not None else None
            extra["lag1_autocorrelation"] = chosen.lag1_autocorrelation if chosen is not None else None
            if block == "auto" and chosen is not None:
                extra["block_capped"] = chosen.capped
            size = int(block) if block != "auto" else chosen.block if chosen is not None else 1
            if size not in blocks:
                blocks[size] = BlockResample(lengths, size, replicates, rng)
            res, unit, extra["resampling"], extra["block"] = blocks[size], "step", "steps", size
        d = paired_delta(a[m], b[m], res, level=level, treatment=tname, baseline=bname, metric=m,
                         units=len(lengths) if unit == "episode" else sum(lengths), unit=unit, **extra)
        if m.endswith("regret"):  # a regret near 0 makes a relative change meaningless
            d = dataclasses.replace(d, relative=None, relative_confidence_interval=None)
        out.append(d)
    return out


def undetectable(comparisons: Sequence[PairedDelta], metric: str, effect: float) -> list[PairedDelta]:
    """The comparisons of ``metric`` (or its regret) that cannot detect ``effect`` at 80% power: their
    minimum detectable effect is larger, or no interval was formed. Raises when none compares ``metric``."""
    got = [d for d in comparisons if d.metric in (metric, f"{metric}_regret", f"{metric}{REGRET}")]
    if not got:
        known = sorted({d.metric for d in comparisons})
        raise UsageError(f"min_effect: no comparison of {metric!r} in this run (metrics: {', '.join(known) or 'none'})",
                         params=("min_effect",))
    return [d for d in got if d.mde is None or d.mde > effect]
