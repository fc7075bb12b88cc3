"""Prompt encodings of retrieved memories: ``verbose`` and ``compact`` (paper Appendix C).

Both encodings serialise the same evidence; they differ only in how much text each piece costs.
A prompt is a list of lines, each ending in ``"\\n"`` (see :mod:`ctwm_cli.memory.tokens`):

* a **header**: the task line, the current state, the action, and the title of the memory block;
* **memory lines**: one per injected item — ``rank r: s12 -> a2 -> s40; hint=x3`` (compact) or
  ``- s12 (dusty library) -> a2 (pickup key) -> s40 (quiet hall); rank 1, score 3.25, count 3,
  degree 4, source step 41`` (verbose: scores, degrees and provenance), or one per past step for
  Full History (``step 41: s12 -> a2 -> s40``);
* for CTWM, a **tail summary** line: ``Tail summary: count=N; dominant transitions: ...; rare
  exceptions: ...`` (compact entries ``s3 -> a1 -> s9 x4``; verbose entries carry place names and
  ``seen 4 times``; ``none`` when a list is empty), and the budget rule;
* the **output contract**: ``Output: next-state=<state id>; confidence=<low|medium|high>;
  evidence-rank=<rank or tail>.``

**Fragments.** Memory lines and the tail line are built from fragments that meet only where a
non-space character is followed by a space and a non-space character (``rank 1:`` + `` s12 -> a2
-> s40;`` + `` hint=x3``), or where a letter or digit is followed by the final newline. Neither
pre-tokeniser (cl100k, o200k) lets a piece cross such a boundary, so a line's token count is the
sum of its fragments' counts, which :meth:`~ctwm_cli.memory.tokens.TokenCounter.fragments` caches.

States are written ``s<id>`` and actions ``a<index within the state>`` in both encodings (the
verbose one adds place names, payloads and action names in parentheses), so a reader of the prompt
can tell states apart. The compact encoding of a given retrieval is never longer than the verbose
one: every verbose piece holds the compact piece's information plus annotations.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

from ..common.errors import UsageError
from ..common.vocabulary import ENCODINGS

TASK = "Task: predict the next structured state after the current action.\n"
OUTPUT = "Output: next-state=<state id>; confidence=<low|medium|high>; evidence-rank=<rank or tail>.\n"
BUDGET_RULE = "Budget rule: use core memories first; use tail summary only to break ties or cover rare states.\n"
VERBOSE_INSTRUCTION = "Instruction: use all retrieved transitions and scores to predict the next state.\n"

#: Block kinds: ``ranked`` (flat, graph), ``core`` (ctwm), ``history`` (full).
KINDS = ("ranked", "core", "history")


class Encoding(ABC):
    """Base class; ``world`` gives the names the verbose encoding shows."""

    name = "encoding"

    def __init__(self, world):
        self.world = world
        self.src = world.tid_src.tolist()
        self.act = world.tid_local.tolist()
        self.dst = world.tid_dst.tolist()

    @abstractmethod
    def header(self, state: int, action: int, kind: str) -> list[str]:
        ...

    @abstractmethod
    def footer(self, kind: str) -> list[str]:
        ...

    @abstractmethod
    def item_parts(self, rank: int, tid: int, score: float, count: int, degree: int, last: int) -> list[str]:
        ...

    def item(self, rank: int, tid: int, score: float, count: int, degree: int, last: int) -> str:
        """The memory line of item ``tid`` at retrieval rank ``rank``."""
        return "".join(self.item_parts(rank, tid, score, count, degree, last))

    @abstractmethod
    def history(self, step: int, tid: int) -> str:
        ...

    @abstractmethod
    def tail_entry(self, tid: int, count: int) -> str:
        ...

    TAIL_HEAD = "Tail summary: count={n};"
    NONE = "none"

    def tail_parts(self, count: int, dominant: list[str], rare: list[str]) -> list[str]:
        """Fragments of the tail-summary line (see the module docstring on fragment boundaries)."""
        out = [self.TAIL_HEAD.format(n=count), " dominant transitions:"]
        out += [f" {e}," for e in dominant[:-1]]
        out.append(f" {dominant[-1]};" if dominant else f" {self.NONE};")
        out.append(" rare exceptions:")
        out += [f" {e}," for e in rare[:-1]]
        out.append(f" {rare[-1]}" if rare else f" {self.NONE}")
        out.append("\n")
        return out

    def tail(self, count: int, dominant: list[str], rare: list[str]) -> str:
        """The tail-summary line: item count, dominant transitions, rare exceptions."""
        return "".join(self.tail_parts(count, dominant, rare))


class Compact(Encoding):
    """Rank order, ids only, a count hint; the tail as a short typed summary."""

    name = "compact"
    TITLES: ClassVar[dict[str, str]] = {"ranked": "Memories, ranked by retrieval order:\n",
              "core": "Core memories, ranked by retrieval order:\n",
              "history": "History, oldest first:\n"}

    def header(self, state: int, action: int, kind: str) -> list[str]:
        return [TASK, f"Current state: s{state}\n", f"Action: a{action}\n", self.TITLES[kind]]

    def footer(self, kind: str) -> list[str]:
        return [BUDGET_RULE, OUTPUT] if kind == "core" else [OUTPUT]

    def item_parts(self, rank: int, tid: int, score: float, count: int, degree: int, last: int) -> list[str]:
        return [f"rank {rank}:", f" s{self.src[tid]} -> a{self.act[tid]} -> s{self.dst[tid]};", f" hint=x{count}", "\n"]

    def history(self, step: int, tid: int) -> str:
        return f"step {step}: s{self.src[tid]} -> a{self.act[tid]} -> s{self.dst[tid]}\n"

    def tail_entry(self, tid: int, count: int) -> str:
        return f"s{self.src[tid]} -> a{self.act[tid]} -> s{self.dst[tid]} x{count}"



class Verbose(Encoding):
    """Names, payloads, scores, degrees and provenance (the auditing form of Appendix C)."""

    name = "verbose"
    TITLES: ClassVar[dict[str, str]] = {"ranked": "Retrieved items, with scores and provenance:\n",
              "core": "Core memories, ranked by retrieval order, with scores and provenance:\n",
              "history": "Observation history, oldest first:\n"}

    def __init__(self, world):
        super().__init__(world)
        self.places = list(world.places)
        labels = []
        for name in world.action_names:
            tail = name.rsplit(" -", 1)[-1]  # "pickup-> key"
            labels.append(tail.replace("-> ", " ", 1))
        self.action_label = labels
        self.tid_action = world.tid_action.tolist()

    def _s(self, v: int) -> str:
        return f"s{v} ({self.places[v]})"

    def _t(self, tid: int) -> str:
        return (f"{self._s(self.src[tid])} -> a{self.act[tid]} ({self.action_label[self.tid_action[tid]]}) -> "
                f"{self._s(self.dst[tid])}")

    def header(self, state: int, action: int, kind: str) -> list[str]:
        w = self.world
        g = int(w.act_ptr[state]) + action
        st = (f"Current state: s{state} ({w.places[state]}; entities: {', '.join(w.entities[state])}; "
              f"relations: {'; '.join(w.relations[state])}; constraints: {'; '.join(w.constraints[state])})\n")
        return [TASK, st, f"Action: a{action} ({w.action_names[g]})\n", self.TITLES[kind]]

    def footer(self, kind: str) -> list[str]:
        return [VERBOSE_INSTRUCTION, BUDGET_RULE, OUTPUT] if kind == "core" else [VERBOSE_INSTRUCTION, OUTPUT]

    def item_parts(self, rank: int, tid: int, score: float, count: int, degree: int, last: int) -> list[str]:
        return [f"- {self._t(tid)};", f" rank {rank},", f" score {score:.2f},", f" count {count},",
                f" degree {degree},", f" source step {last}", "\n"]

    def history(self, step: int, tid: int) -> str:
        return f"step {step}: {self._t(tid)}\n"

    def tail_entry(self, tid: int, count: int) -> str:
        return f"{self._t(tid)} seen {count} times"

    TAIL_HEAD = "Tail summary (items ranked below the core, not shown one by one): count={n} items;"
    NONE = "none listed"


def make_encoding(name: str, world) -> Encoding:
    """The encoding called ``name`` (``verbose`` or ``compact``) for ``world``."""
    if name == "compact":
        return Compact(world)
    if name == "verbose":
        return Verbose(world)
    raise UsageError(f"unknown encoding {name!r} (choose from: {', '.join(ENCODINGS)})", params=("encoding",))
