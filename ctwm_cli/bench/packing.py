"""Lexical ranking and budgeted prompt packing of text memories, shared by the benchmark episodes.

A benchmark memory is a list of text items (a LongMemEval chat turn; a text-game fact or episodic
entry), each with a ``group`` (its session, or its kind). Both policies read the **same ranking**
of the items against the query (:func:`bm25_scores`), so their prompts differ only in how the
budget is spent:

``graph`` (Graph Memory baseline)
    The top ``k`` items in rank order, one line each, while they fit in the budget; the first item
    that does not fit ends the block (as :class:`ctwm_cli.memory.policies.GraphMemory` renders).
``ctwm`` (Core–Tail World Model)
    The best ``max_candidates`` items are the M ranked items. The token budget left after the fixed
    lines and the minimal tail line is split over the ``core`` ranks and one tail group by
    b(r; τ) with :func:`ctwm_cli.memory.core_tail.allocation_slots` (itself
    :func:`ctwm_cli.allocation.allocate`, largest remainder). A core item gets its line when its
    line fits in the slots of its rank plus those left unused by better ranks; otherwise it joins
    the tail. Unused core slots are not spent. The tail is one summary line: its item count, then
    its groups with their item counts (most items first, ties by best rank), listed while they fit
    in the tail's slots. Nothing is dropped silently.

**Token counts.** Every prompt line starts with a non-space character and ends in one ``"\\n"``
(item text is whitespace-normalised: runs of spaces and newlines become one space), so the count
of a prompt is the sum of its lines' counts (see :mod:`ctwm_cli.memory.tokens`); the tests check
this against a whole-prompt encoding.

**BM25** (k1 = 1.2, b = 0.75, Lucene idf ``ln(1 + (N - df + 0.5) / (df + 0.5))``), the same
constants as the ``flat`` memory policy, over lower-cased alphanumeric words minus a short stop
list, with a light plural stemmer; the query's distinct words count once.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..common.errors import UsageError
from ..common.results import ToDict, result
from ..memory.bm25 import bm25_scores as shared_bm25_scores
from ..memory.core_tail import allocation_slots
from ..memory.policies import check_policy_args
from ..memory.tokens import TokenCounter

BENCH_POLICIES = ("graph", "ctwm")
_WORD = re.compile(r"[a-z0-9]+")
STOPWORDS = frozenset(
    [
     "a", "an", "and", "are", "as", "at", "be", "but", "by", "did", "do", "does", "for", "from", "had", "has", "have",
     "how", "i", "i'm", "in", "is", "it", "its", "me", "my", "of", "on", "or", "so", "that", "the", "their", "them",
     "then", "there", "these", "they", "this", "to", "was", "we", "were", "what", "when", "where", "which", "who",
     "why", "will", "with", "you", "your", "can", "could", "would", "should", "about", "into", "than", "also", "just",
     "any", "our", "us",
    ]
)


def _stem(w: str) -> str:
    """A light plural stemmer: ``-ies`` -> ``-y``, a final ``s`` dropped (not ``-ss``, not short words)."""
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
        return w[:-1]
    return w


def words(text: str) -> list[str]:
    """Lower-cased alphanumeric words of ``text`` without stop words, lightly stemmed (plurals)."""
    return [_stem(w) for w in _WORD.findall(text.lower()) if w not in STOPWORDS]


def one_line(text: str) -> str:
    """``text`` with every run of whitespace replaced by one space, stripped."""
    return " ".join(text.split())


def bm25_scores(query: str | Sequence[str], docs: Sequence[Sequence[str]]) -> list[float]:
    """BM25 score of every document (a list of words) for ``query`` (text, or a list of words), with
    the one BM25 of the package (:mod:`ctwm_cli.memory.bm25`)."""
    q = set(words(query) if isinstance(query, str) else query)
    if not docs or not q:
        return [0.0] * len(docs)
    return shared_bm25_scores(q, docs)


def rank_order(scores: Sequence[float]) -> list[int]:
    """Indices by score, best first; ties to the smaller index (earlier item)."""
    return sorted(range(len(scores)), key=lambda i: (-scores[i], i))


@result
class PackedPrompt(ToDict):
    """A rendered prompt: its lines, exact token count, and where each ranked item went."""

    policy: str
    lines: tuple[str, ...]
    tokens: int
    included: tuple[int, ...]  # item indices with their own line, in prompt order
    included_rank: tuple[int, ...]  # their rank (1 = best)
    summarised_groups: tuple[str, ...]  # groups named in the tail summary
    tail_count: int  # items in the tail (ranked but without a line)
    core: int | None = None  # the core size used (ctwm)
    tau: float | None = None  # the τ used (ctwm)

    @property
    def text(self) -> str:
        return "".join(self.lines)


def item_line(rank: int, text: str) -> str:
    """The memory line of an item at ``rank`` (``text`` already one line)."""
    return f"rank {rank}: {text}\n"


def _check_lines(head: Sequence[str], foot: Sequence[str]) -> None:
    for ln in (*head, *foot):
        if not ln.endswith("\n") or not ln[:1].strip() or "\n" in ln[:-1]:
            raise ValueError(f"prompt lines must start with a non-space character and end in one newline: {ln!r}")


def pack_graph(texts: Sequence[str], order: Sequence[int], head: Sequence[str], foot: Sequence[str], *,
               budget: int, k: int, counter: TokenCounter) -> PackedPrompt:
    """The Graph Memory prompt: the top ``k`` of ``order`` while their lines fit in ``budget``."""
    _check_lines(head, foot)
    fixed = counter.lines(list(head)) + counter.lines(list(foot))
    room = budget - fixed
    if room < 0:
        raise UsageError(f"budget {budget} is smaller than the prompt's fixed lines ({fixed} tokens); raise budget",
                         params=("budget",))
    lines = list(head)
    inc, ranks = [], []
    for r, i in enumerate(order[:k], 1):
        ln = item_line(r, texts[i])
        n = counter.line(ln)
        if n > room:
            break
        room -= n
        lines.append(ln)
        inc.append(i)
        ranks.append(r)
    lines.extend(foot)
    return PackedPrompt(policy="graph", lines=tuple(lines), tokens=budget - room, included=tuple(inc),
                        included_rank=tuple(ranks), summarised_groups=(), tail_count=0)


TAIL_HEAD = "Tail summary: count={n};"
TAIL_NONE = " none"


def _tail_line(count: int, title: str, entries: Sequence[str]) -> str:
    body = ",".join(f" {e}" for e in entries) if entries else TAIL_NONE
    return f"{TAIL_HEAD.format(n=count)} {title}:{body}\n"


def pack_ctwm(texts: Sequence[str], groups: Sequence[str], order: Sequence[int], head: Sequence[str],
              foot: Sequence[str], *, budget: int, core: int, tau: float, max_candidates: int,
              counter: TokenCounter, tail_title: str = "sessions") -> PackedPrompt:
    """The CTWM prompt over the best ``max_candidates`` of ``order`` (see the module docstring)."""
    _check_lines(head, foot)
    cand = list(order[:max_candidates])
    m = len(cand)
    fixed = counter.lines(list(head)) + counter.lines(list(foot))
    min_tail = counter.line(_tail_line(m, tail_title, []))

    def room(extra: int) -> int:
        left = budget - fixed - extra
        if left < 0:
            raise UsageError(f"budget {budget} is smaller than the prompt's fixed lines ({fixed + extra} tokens, with "
                             "the minimal tail summary when there is a tail); raise budget", params=("budget",))
        return left

    if m > core:
        packed = _pack(texts, cand, core, tau, room(min_tail), counter)
    else:
        packed = _pack(texts, cand, core, tau, room(0), counter)
        if packed[3]:
            packed = _pack(texts, cand, core, tau, room(min_tail), counter)
    lines_core, inc, ranks, spilled, tail_slots, used = packed
    tail_pos = spilled + list(range(min(core, m), m))
    lines = [*head, *lines_core]
    tail_tokens = 0
    named: list[str] = []
    if tail_pos:
        by_group: dict[str, list[int]] = {}
        for p in sorted(tail_pos):
            by_group.setdefault(groups[cand[p]], []).append(p)
        ordered = sorted(by_group, key=lambda g: (-len(by_group[g]), by_group[g][0]))
        allowed = min_tail + tail_slots
        line = _tail_line(len(tail_pos), tail_title, [])
        tail_tokens = counter.line(line)
        for g in ordered:
            trial = _tail_line(len(tail_pos), tail_title, [*(f"{x} x{len(by_group[x])}" for x in named),
                                                            f"{g} x{len(by_group[g])}"])
            n = counter.line(trial)
            if n > allowed:
                break
            named.append(g)
            line, tail_tokens = trial, n
        lines.append(line)
    lines.extend(foot)
    return PackedPrompt(policy="ctwm", lines=tuple(lines), tokens=fixed + used + tail_tokens, included=tuple(inc),
                        included_rank=tuple(ranks), summarised_groups=tuple(named), tail_count=len(tail_pos),
                        core=core, tau=tau)


def _pack(texts, cand, core, tau, room, counter):
    m = len(cand)
    if not m:
        return [], [], [], [], 0, 0
    core_slots, tail_slots = allocation_slots(m, tau, core, room)
    lines: list[str] = []
    inc, ranks, spilled = [], [], []
    avail = used = 0
    for r in range(len(core_slots)):
        avail += core_slots[r]
        ln = item_line(r + 1, texts[cand[r]])
        n = counter.line(ln)
        if n <= avail:
            avail -= n
            used += n
            lines.append(ln)
            inc.append(cand[r])
            ranks.append(r + 1)
        else:
            spilled.append(r)
    return lines, inc, ranks, spilled, tail_slots, used


def check_pack_args(*, budget: int, k: int, core: int, tau: float, max_candidates: int) -> None:
    """Parameter checks shared by the benchmark commands (errors name the parameters)."""
    check_policy_args(budget=budget, k=k, core=core, tau=tau, max_candidates=max_candidates)
