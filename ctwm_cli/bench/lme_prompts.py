"""The prompts of LongMemEval questions per memory arm (:mod:`ctwm_cli.bench.longmemeval` runs them), and
the evidence recall of a prompt.

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
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..common.results import ToDict, result
from .lme_format import Question
from .packing import PackedPrompt, bm25_scores, one_line, pack_ctwm, pack_graph, rank_order, words

__all__ = [
    "RECALL_METRICS", "RELAX_CUES", "RELAX_TYPES", "SESSION_WEIGHT", "ArmSpec", "Recall", "build_prompt",
    "evidence_recall", "rank_turns", "recall_critical", "turn_items",
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


def recall_critical(q: Question) -> bool:
    """Whether the question asks for long-range or multi-session recall (see the module docstring)."""
    return q.question_type in RELAX_TYPES or bool(_CUES.search(q.question.lower()))


def turn_items(q: Question) -> tuple[list[str], list[str], list[tuple[int, int]]]:
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
    texts, groups, _pos = items if items is not None else turn_items(q)
    order = rank_order(scores if scores is not None else rank_turns(q))
    if arm.policy == "graph":
        return pack_graph(texts, order, header(q, "graph"), footer("graph"), budget=budget, k=k, counter=counter)
    c, t = (relax_core, relax_tau) if arm.relaxed and recall_critical(q) else (core, tau)
    return pack_ctwm(texts, groups, order, header(q, "ctwm"), footer("ctwm"), budget=budget, core=c, tau=t,
                     max_candidates=max(max_candidates, c), counter=counter, tail_title="sessions")
