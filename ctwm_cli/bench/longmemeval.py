"""LongMemEval episodes (Wu et al., 2024): ``ctwm bench longmemeval`` runs every memory arm on the
questions of a file and pairs them: evidence recall, paired token reduction and (with an endpoint) judged
accuracy. The prompts and the evidence recall are in :mod:`ctwm_cli.bench.lme_prompts`, the judge in
:mod:`ctwm_cli.bench.lme_judge`.

**Format.** The official JSON list of questions, checked field by field in
:mod:`ctwm_cli.bench.lme_format` (:func:`load_longmemeval` names the path of the first bad field).

**Paired comparisons.** Every arm reads the same questions with the same tokenizer. Token
reduction = 1 − Σ tokens(treatment) / Σ tokens(baseline); recall and accuracy deltas are treatment
minus baseline. Intervals: percentile intervals of a paired bootstrap over questions (the same
resampled questions for both arms), seeded.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..common.checks import check_range
from ..common.errors import UsageError
from ..common.results import ToDict, result
from ..common.vocabulary import BENCH_K as DEFAULT_K
from ..common.vocabulary import DEFAULT_CORE, DEFAULT_MAX_CANDIDATES, DEFAULT_TAU
from ..common.vocabulary import LONGMEMEVAL_BUDGET as DEFAULT_BUDGET
from ..memory.tokens import DEFAULT_TOKENIZER, TOKENIZERS, USER_MESSAGE, token_counter
from ..models.llm import ChatClient, check_timeout
from ..runtime.progress import ProgressCallback
from ..stats.paired import IndexResample, PairedDelta, paired_delta
from .lme_format import QUESTION_TYPES, Question, Session, Turn, load_longmemeval, parse_longmemeval
from .lme_judge import ANSWER_SYSTEM, judge_prompt, parse_verdict
from .lme_prompts import (
    RECALL_METRICS,
    RELAX_CUES,
    RELAX_TYPES,
    SESSION_WEIGHT,
    ArmSpec,
    Recall,
    build_prompt,
    evidence_recall,
    rank_turns,
    recall_critical,
    turn_items,
)
from .packing import BENCH_POLICIES, check_pack_args

__all__ = [  # the file format lives in lme_format; its names stay importable from here
    "QUESTION_TYPES", "ArmSummary", "LongMemEvalResult", "Question", "QuestionOutcome", "Session", "Turn",
    "load_longmemeval", "parse_longmemeval", "run_longmemeval",
]


@result
class QuestionOutcome(ToDict):
    """One question under one arm."""

    question_id: str
    question_type: str
    abstention: bool
    recall_critical: bool
    arm: str
    tokens: int
    lines: int
    tail_count: int
    recall: Recall
    response: str | None = None
    correct: bool | None = None


@result
class ArmSummary(ToDict):
    """One arm over one question type (``all``: every question)."""

    arm: str
    question_type: str
    questions: int
    tokens_mean: float
    turn_any: float | None
    turn_all: float | None
    session_any: float | None
    session_all: float | None
    accuracy: float | None


@result
class LongMemEvalResult(ToDict):
    """``ctwm bench longmemeval``: per-arm summaries, paired comparisons and per-question outcomes."""

    source: str
    questions: int
    question_types: dict[str, int]
    arms: tuple[ArmSpec, ...]
    baseline: str
    params: dict[str, Any]
    tokenizer: str
    summary: tuple[ArmSummary, ...]
    comparisons: tuple[PairedDelta, ...]  # tokens: relative = sum(t)/sum(b) - 1; recall, accuracy: delta of means
    outcomes: tuple[QuestionOutcome, ...]
    accuracy_measured: bool
    accuracy_note: str
    bootstrap: dict[str, Any]
    endpoint_stats: dict[str, Any]
    tokens_counted: str = USER_MESSAGE  # every token figure: the prompt (user message) alone, no system/template


def parse_memories(spec: str | Sequence[str]) -> tuple[str, ...]:
    names = [x.strip() for x in (spec.split(",") if isinstance(spec, str) else spec) if x.strip()]
    if not names:
        raise UsageError("memories needs at least one policy", params=("memories",))
    for n in names:
        if n not in BENCH_POLICIES:
            raise UsageError(f"unknown memory policy {n!r} for benchmark episodes "
                             f"(choose from: {', '.join(BENCH_POLICIES)})", params=("memories",))
    return tuple(dict.fromkeys(names))


def check_bench_args(*, budget: int, k: int, core: int, tau: float, max_candidates: int, relax_core: int | None,
                     relax_tau: float | None, tokenizer: str, bootstrap: int, level: float) -> tuple[int, float]:
    """Shared checks; returns the resolved ``(relax_core, relax_tau)``."""
    from ..allocation.rank import check_tau

    check_pack_args(budget=budget, k=k, core=core, tau=tau, max_candidates=max_candidates)
    rc = 2 * core if relax_core is None else relax_core
    rt = tau / 2 if relax_tau is None else relax_tau
    check_range("relax_core", rc, lo=1)
    check_tau(rt, "relax_tau")
    if tokenizer not in TOKENIZERS:
        raise UsageError(f"unknown tokenizer {tokenizer!r} (choose from: {', '.join(TOKENIZERS)})",
                         params=("tokenizer",))
    check_range("bootstrap", bootstrap, lo=0)
    check_range("level", level, lo=0, hi=1, lo_open=True, hi_open=True)
    return rc, float(rt)


def _arms(memories: Sequence[str], relax: bool) -> list[ArmSpec]:
    arms = [ArmSpec(name=m, policy=m) for m in memories]
    if relax and "ctwm" in memories:
        arms.append(ArmSpec(name="ctwm-relaxed", policy="ctwm", relaxed=True))
    return arms


def run_longmemeval(data: str | Path | Sequence[Question], *, memories: Sequence[str] = BENCH_POLICIES,
                    budget: int = DEFAULT_BUDGET, k: int = DEFAULT_K, core: int = DEFAULT_CORE,
                    tau: float = DEFAULT_TAU,
                    max_candidates: int = DEFAULT_MAX_CANDIDATES, relax: bool = True, relax_core: int | None = None,
                    relax_tau: float | None = None, tokenizer: str = DEFAULT_TOKENIZER, bootstrap: int = 1000,
                    level: float = 0.95, seed: int | None = None, limit: int | None = None,
                    base_url: str | None = None, model: str | None = None, judge_model: str | None = None,
                    timeout: float = 60.0, retries: int = 2,
                    progress: ProgressCallback | None = None) -> LongMemEvalResult:
    """Prompts, evidence recall, paired token reduction (and judged accuracy with ``base_url``/``model``)
    of every memory arm on the questions of ``data`` (a file or loaded questions)."""
    mems = parse_memories(memories)
    rc, rt = check_bench_args(budget=budget, k=k, core=core, tau=tau, max_candidates=max_candidates,
                              relax_core=relax_core, relax_tau=relax_tau, tokenizer=tokenizer, bootstrap=bootstrap,
                              level=level)
    if limit is not None:
        check_range("limit", limit, lo=1)
    if (base_url is None) != (model is None):
        raise UsageError("accuracy needs both base_url and model", params=("base_url", "model"))
    check_timeout(timeout)
    if isinstance(data, (str, Path)):
        source = str(data)
        questions = load_longmemeval(data)
    else:
        source = "<questions>"
        questions = list(data)
    if limit is not None:
        questions = questions[:limit]
    arms = _arms(mems, relax)
    baseline = "graph" if "graph" in mems else arms[0].name
    counter = token_counter(tokenizer)
    answerer = judge = None
    if base_url is not None:
        answerer = ChatClient(base_url=base_url, model=model, timeout=timeout, retries=retries)
        judge = ChatClient(base_url=base_url, model=judge_model or model, timeout=timeout, retries=retries)
    outcomes: list[QuestionOutcome] = []
    total = len(questions) * len(arms)
    done = 0
    for q in questions:
        items = turn_items(q)
        scores = rank_turns(q)
        crit = recall_critical(q)
        for arm in arms:
            p = build_prompt(q, arm, budget=budget, k=k, core=core, tau=tau, max_candidates=max_candidates,
                             relax_core=rc, relax_tau=rt, counter=counter, scores=scores, items=items)
            rec = evidence_recall(q, [items[2][i] for i in p.included])
            response = correct = None
            if answerer is not None:
                response = answerer.complete([{"role": "system", "content": ANSWER_SYSTEM},
                                              {"role": "user", "content": p.text}])
                verdict = judge.complete([{"role": "user", "content": judge_prompt(q, response)}])
                correct = parse_verdict(verdict)
            outcomes.append(QuestionOutcome(question_id=q.question_id, question_type=q.question_type,
                                            abstention=q.abstention, recall_critical=crit, arm=arm.name,
                                            tokens=p.tokens, lines=len(p.included), tail_count=p.tail_count,
                                            recall=rec, response=response, correct=correct))
            done += 1
            if progress is not None:
                progress(done, total)
    measured = answerer is not None
    rng = np.random.default_rng(seed)
    summary, comps = _summaries(questions, arms, outcomes, baseline, bootstrap, level, rng, measured)
    types: dict[str, int] = {}
    for q in questions:
        types[q.question_type] = types.get(q.question_type, 0) + 1
    note = (f"judged by {judge_model or model} at {base_url}" if measured else
            "accuracy was not measured (no endpoint: pass --base-url and --model to answer and judge each question)")
    stats = {} if not measured else {"answer_calls": answerer.calls, "judge_calls": judge.calls,
                                     "api_prompt_tokens": answerer.prompt_tokens}
    params = {"budget": budget, "k": k, "core": core, "tau": tau, "max_candidates": max_candidates, "relax": relax,
              "relax_core": rc, "relax_tau": rt, "session_weight": SESSION_WEIGHT,
              "relax_types": list(RELAX_TYPES), "relax_cues": list(RELAX_CUES)}
    return LongMemEvalResult(
        source=source, questions=len(questions), question_types=types, arms=tuple(arms), baseline=baseline,
        params=params, tokenizer=counter.name, summary=summary, comparisons=comps, outcomes=tuple(outcomes),
        accuracy_measured=measured, accuracy_note=note,
        bootstrap={"replicates": bootstrap, "level": level, "seed": seed,
                   "method": "paired bootstrap over questions, percentile interval"},
        endpoint_stats=stats)


def _mean(xs: Sequence[Any]) -> float | None:
    v = [float(x) for x in xs if x is not None]
    return sum(v) / len(v) if v else None


def _summaries(questions, arms, outcomes, baseline, replicates, level, rng, measured):
    by = {(o.arm, o.question_id): o for o in outcomes}
    present = {q.question_type for q in questions}
    types = ["all", *(t for t in QUESTION_TYPES if t in present), *sorted(present - set(QUESTION_TYPES))]
    summary = []
    comps = []
    for qt in types:
        qs = [q for q in questions if qt == "all" or q.question_type == qt]
        ids = [q.question_id for q in qs]
        for arm in arms:
            os_ = [by[(arm.name, i)] for i in ids]
            summary.append(ArmSummary(
                arm=arm.name, question_type=qt, questions=len(os_), tokens_mean=float(np.mean([o.tokens for o in os_])),
                **{m: _mean([getattr(o.recall, m) for o in os_]) for m in RECALL_METRICS},
                accuracy=_mean([o.correct for o in os_]) if measured else None))
        # one resample of the questions of this type, shared by every arm and metric
        resample = IndexResample(len(ids), replicates, rng)
        base = [by[(baseline, i)] for i in ids]
        metrics = [*RECALL_METRICS, *(["accuracy"] if measured else [])]
        for arm in arms:
            if arm.name == baseline:
                continue
            treat = [by[(arm.name, i)] for i in ids]
            t = np.array([o.tokens for o in treat], dtype=np.float64)
            b = np.array([o.tokens for o in base], dtype=np.float64)
            ones = np.ones(t.size)
            comps.append(paired_delta((t, ones), (b, ones), resample, level=level, treatment=arm.name,
                                      baseline=baseline, metric="tokens", group=qt))
            for m in metrics:
                tv, bv = _values(treat, m), _values(base, m)
                ok = np.isfinite(tv) & np.isfinite(bv)  # the same questions have evidence under both arms
                w = ok.astype(np.float64)
                comps.append(paired_delta((np.where(ok, tv, 0.0), w), (np.where(ok, bv, 0.0), w), resample,
                                          level=level, treatment=arm.name, baseline=baseline, metric=m, group=qt,
                                          units=int(ok.sum())))
    return tuple(summary), tuple(comps)


def _values(outs, metric) -> np.ndarray:
    if metric == "accuracy":
        return np.array([np.nan if o.correct is None else float(o.correct) for o in outs])
    return np.array([np.nan if getattr(o.recall, metric) is None else float(getattr(o.recall, metric)) for o in outs])
