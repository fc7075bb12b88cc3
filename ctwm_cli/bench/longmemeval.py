"""LongMemEval episodes (Wu et al., 2024): the official file format, prompts per memory policy,
evidence recall, paired token reduction and (with an endpoint) judged accuracy.

**Format.** The official JSON list of questions, checked field by field in
:mod:`ctwm_cli.bench.lme_format` (:func:`load_longmemeval` names the path of the first bad field).

**Prompts.** Per question, every haystack turn is a memory item, written
``[<date>; <session id>] <role>: <content>`` (whitespace-normalised). The ranking is lexical and
shared by every policy: score = BM25(question, turn) / max + 0.5 · BM25(question, session) / max
(turn relevance plus the relevance of its session, each scaled to [0, 1] within the question's
haystack; ties to the earlier turn). ``graph`` and ``ctwm`` render it as described in
:mod:`ctwm_cli.bench.packing`; the header holds the task, the current date and the question,
the footer the answer instruction.

**Evidence recall** (per question, per policy). Evidence turns are the turns with ``has_answer``
true; evidence sessions are the ``answer_session_ids`` present in the haystack. A turn is
*recalled* when it has its own line in the prompt (a tail summary names only sessions, so it
recalls no turn); a session is recalled when at least one of its turns has a line. ``any``: at
least one evidence item recalled; ``all``: every one. Questions without evidence of a level
(abstention questions, files without ``has_answer``) are left out of that level's mean.

**Query-aware relaxation** (paper Appendix B: aggressive core–tail budgeting misses multi-session
evidence). A question is *recall-critical* when its type is ``multi-session`` or
``temporal-reasoning`` or its text matches a long-range cue (:data:`RELAX_CUES`, e.g. "how many",
"in total", "first", "ago"). The ``ctwm-relaxed`` arm uses ``relax_core`` (default 2K) and
``relax_tau`` (default τ/2) on recall-critical questions and plain CTWM on the others; it is
reported beside ``ctwm`` so its effect on multi-session recall and on tokens is visible.

**Paired comparisons.** Every arm reads the same questions with the same tokenizer. Token
reduction = 1 − Σ tokens(treatment) / Σ tokens(baseline); recall and accuracy deltas are treatment
minus baseline. Intervals: percentile intervals of a paired bootstrap over questions (the same
resampled questions for both arms), seeded.

**Accuracy** (only with an endpoint): the model answers each prompt; a judge call (same endpoint,
``judge_model`` or the same model) gets a yes/no prompt per question type (:data:`JUDGE_RULES`;
the official protocol's shape, our own wording) and the answer counts as correct on "yes".
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..checks import check_range
from ..errors import UsageError
from ..llm import ChatClient, check_timeout
from ..memory.tokens import DEFAULT_TOKENIZER, TOKENIZERS, USER_MESSAGE, token_counter
from ..progress import ProgressCallback
from ..paired import IndexResample, PairedDelta, paired_delta
from ..results import ToDict, result
from .lme_format import QUESTION_TYPES, Question, Session, Turn, load_longmemeval, parse_longmemeval
from .packing import (
    BENCH_POLICIES, PackedPrompt, bm25_scores, check_pack_args, one_line, pack_ctwm, pack_graph, rank_order, words,
)
from ..vocabulary import BENCH_K as DEFAULT_K
from ..vocabulary import DEFAULT_CORE, DEFAULT_MAX_CANDIDATES, DEFAULT_TAU
from ..vocabulary import LONGMEMEVAL_BUDGET as DEFAULT_BUDGET

__all__ = [  # the file format lives in lme_format; its names stay importable from here
    "QUESTION_TYPES", "ArmSpec", "ArmSummary", "LongMemEvalResult", "Question", "QuestionOutcome", "Recall", "Session",
    "Turn", "build_prompt", "evidence_recall", "judge_prompt", "load_longmemeval", "parse_longmemeval",
    "parse_verdict", "recall_critical", "run_longmemeval",
]

RELAX_TYPES = ("multi-session", "temporal-reasoning")
RELAX_CUES = ("how many", "how much", "in total", "total", "altogether", "combined", "across", "all the", "every",
              "first", "last time", "before", "after", "ago", "how long", "earlier", "most recent", "order",
              "average", "sum of")
_CUES = re.compile(r"\b(" + "|".join(re.escape(c) for c in RELAX_CUES) + r")\b")
RECALL_METRICS = ("turn_any", "turn_all", "session_any", "session_all")
SESSION_WEIGHT = 0.5

TASK = "Task: answer the user's question from the chat history below.\n"
TITLE = {"graph": "Memories, ranked by relevance:\n", "ctwm": "Core memories, ranked by relevance:\n"}
BUDGET_RULE = "Budget rule: use core memories first; use the tail summary only to know what else was said.\n"
OUTPUT = "Output: a short answer; if the history does not hold it, say that you do not know.\n"


# ----------------------------------------------------------------------------------------- data
def recall_critical(q: Question) -> bool:
    """Whether the question asks for long-range or multi-session recall (see the module docstring)."""
    return q.question_type in RELAX_TYPES or bool(_CUES.search(q.question.lower()))


def _items(q: Question) -> tuple[list[str], list[str], list[tuple[int, int]]]:
    texts, groups, pos = [], [], []
    for j, s in enumerate(q.sessions):
        for t, turn in enumerate(s.turns):
            head = f"[{one_line(s.date)}; {one_line(s.session_id)}]"
            texts.append(f"{head} {one_line(turn.role)}: {one_line(turn.content)}")
            groups.append(one_line(s.session_id) or f"session-{j}")
            pos.append((j, t))
    return texts, groups, pos


def rank_turns(q: Question) -> list[float]:
    """The shared lexical score of every haystack turn, in haystack order (see the module docstring)."""
    qw = words(q.question)
    turn_docs = [words(t.content) for s in q.sessions for t in s.turns]
    sess_docs = [[w for t in s.turns for w in words(t.content)] for s in q.sessions]
    ts = bm25_scores(qw, turn_docs)
    ss = bm25_scores(qw, sess_docs)
    tmax = max(ts, default=0.0) or 1.0
    smax = max(ss, default=0.0) or 1.0
    out = []
    i = 0
    for j, s in enumerate(q.sessions):
        for _ in s.turns:
            out.append(ts[i] / tmax + SESSION_WEIGHT * ss[j] / smax)
            i += 1
    return out


def header(q: Question, policy: str) -> list[str]:
    return [TASK, f"Current date: {one_line(q.question_date) or 'unknown'}\n",
            f"Question: {one_line(q.question) or '(empty)'}\n", TITLE[policy]]


def footer(policy: str) -> list[str]:
    return [BUDGET_RULE, OUTPUT] if policy == "ctwm" else [OUTPUT]


@result
class Recall(ToDict):
    """Evidence recall of one prompt (``None``: no evidence of that level)."""

    evidence_turns: int
    evidence_sessions: int
    turns_recalled: int
    sessions_recalled: int
    turn_any: bool | None
    turn_all: bool | None
    session_any: bool | None
    session_all: bool | None


def evidence_recall(q: Question, included: Sequence[tuple[int, int]]) -> Recall:
    """Recall of ``q``'s evidence by a prompt holding the turns ``included`` ((session, turn) pairs)."""
    ev_turns = {(j, t) for j, s in enumerate(q.sessions) for t, turn in enumerate(s.turns) if turn.has_answer}
    present = {s.session_id for s in q.sessions}
    ev_sess = {a for a in q.answer_session_ids if a in present}
    inc = set(included)
    inc_sess = {q.sessions[j].session_id for j, _ in inc}
    nt = len(ev_turns & inc)
    ns = len(ev_sess & inc_sess)
    return Recall(evidence_turns=len(ev_turns), evidence_sessions=len(ev_sess), turns_recalled=nt,
                  sessions_recalled=ns,
                  turn_any=(nt > 0) if ev_turns else None, turn_all=(nt == len(ev_turns)) if ev_turns else None,
                  session_any=(ns > 0) if ev_sess else None, session_all=(ns == len(ev_sess)) if ev_sess else None)


@result
class ArmSpec(ToDict):
    """One memory arm: policy and its parameters (``relaxed``: query-aware relaxation on)."""

    name: str
    policy: str
    relaxed: bool = False


def build_prompt(q: Question, arm: ArmSpec, *, budget: int, k: int, core: int, tau: float, max_candidates: int,
                 relax_core: int, relax_tau: float, counter, scores: list[float] | None = None,
                 items: tuple | None = None) -> PackedPrompt:
    """The prompt of question ``q`` under ``arm``."""
    texts, groups, _pos = items if items is not None else _items(q)
    order = rank_order(scores if scores is not None else rank_turns(q))
    if arm.policy == "graph":
        return pack_graph(texts, order, header(q, "graph"), footer("graph"), budget=budget, k=k, counter=counter)
    c, t = (relax_core, relax_tau) if arm.relaxed and recall_critical(q) else (core, tau)
    return pack_ctwm(texts, groups, order, header(q, "ctwm"), footer("ctwm"), budget=budget, core=c, tau=t,
                     max_candidates=max(max_candidates, c), counter=counter, tail_title="sessions")


# ------------------------------------------------------------------------------------- judge
JUDGE_RULES = {
    "default": "Say yes if the response gives the correct answer or something equivalent to it; say no if it gives "
               "a different answer or only part of the answer.",
    "temporal-reasoning": "Say yes if the response gives the correct answer or something equivalent to it; an error "
                          "of one in a count of days, weeks or months is still correct. Say no otherwise.",
    "knowledge-update": "Say yes if the response gives the updated (most recent) answer, even when it also mentions "
                        "older information as superseded; say no if it gives only the outdated answer.",
    "single-session-preference": "The correct answer describes what a good personalised response should do. Say yes "
                                 "if the response follows it and uses the user's own information; say no otherwise.",
    "abstention": "The chat history does not hold the answer to this question. Say yes if the response says it "
                  "cannot answer or that the information is missing; say no if it states an answer.",
}
JUDGE_TEMPLATE = ("You grade answers to questions about a user's past conversations.\n{rule}\n\nQuestion: {question}\n"
                  "Correct answer: {answer}\nResponse: {response}\n\nIs the response correct? Answer yes or no only.")
ANSWER_SYSTEM = ("You are a chat assistant with memories of your past conversations with the user. Answer the "
                 "user's question briefly from those memories.")
_YESNO = re.compile(r"\b(yes|no)\b")


def judge_prompt(q: Question, response: str) -> str:
    """The yes/no judge prompt for ``response`` to ``q`` (rule by question type; ``_abs``: abstention)."""
    rule = JUDGE_RULES["abstention"] if q.abstention else JUDGE_RULES.get(q.question_type, JUDGE_RULES["default"])
    return JUDGE_TEMPLATE.format(rule=rule, question=q.question, answer=q.answer, response=response)


def parse_verdict(text: str) -> bool:
    """``True`` when the judge's first yes/no word is "yes" (no yes/no word: ``False``)."""
    m = _YESNO.search(text.lower())
    return bool(m and m.group(1) == "yes")


# ------------------------------------------------------------------------------------- results
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
        items = _items(q)
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
