"""Retrieval queries of a trace, what each returned, and what users ask of them.

* A **query** is one ``search`` row. A ``retrieve`` row belongs to the latest ``search`` row at its step
  whose scope (``run``: the search's filter) contains the hit's own scope
  (:func:`~ctwm_cli.traces.scopekeys.contains`: ``user_id=alice`` contains
  ``agent_id=planner&user_id=alice``; a namespace prefix contains its namespaces). So one Mem0 search
  filtered by user, or one LangGraph search over a namespace prefix, is one query however many scopes
  its hits carry. A trace without ``search`` rows has one query per ``(run, step)`` with ``retrieve``
  rows.
* **stale ranked above current**: a query whose results hold a stale memory (superseded, invalidated,
  archived or expired at that moment) at a better rank than a live memory on the same *subject*. A
  subject is the memory-object table's ``subject`` when it names one, else the memory's supersede chain
  (an item and the items that supersede it, from ``supersede ... by`` rows and the objects'
  ``supersedes``). ``stale_above_current_share`` = such queries / queries that returned anything.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping

from ..common.results import ToDict, result
from ..traces.scopekeys import contains
from .results import RetrievalHealth

_NAN = float("nan")
MAX_LISTED = 20


@result
class StaleAboveCurrent(ToDict):
    queries_with_results: int
    queries_with_both: int  # a stale and a live memory on one subject in the same results
    queries_stale_above: int
    stale_above_current_share: float  # queries_stale_above / queries_with_results
    subjects_known: bool
    examples: tuple[dict, ...]  # up to MAX_LISTED: {query, stale, stale_rank, current, current_rank, reason}


class RetrievalAcc:
    """Queries, what they retrieved and what of it was injected; hits on stale items; each query's results
    (rank, item, why stale) for :func:`stale_above_current`."""

    def __init__(self, hit_event: str | None, kinds: set[str]) -> None:
        self.hit_event = hit_event
        self.has_search = "search" in kinds
        self.used_definition = "retrieve" in kinds and "inject" in kinds
        self.queries: dict = {}  # query key -> step, for the queries of this log
        self.results: dict = defaultdict(dict)  # query key -> {(run, item): (rank, reason)}
        self.injected: dict = defaultdict(set)  # (run, step) -> items
        self.hits = self.stale = 0
        self.by_reason: dict[str, int] = defaultdict(int)
        self.superseded_hits: dict[str, int] = defaultdict(int)
        self.hit_count: dict[str, int] = defaultdict(int)
        self._current = None

    def feed_step(self, query, run: str | None, step: int, event: str, item: str) -> None:
        """One row at a step; ``query``: its query's key (:func:`assign_queries`)."""
        self._current = None
        if event == "search" or (event == "retrieve" and query[0] == "step"):
            self.queries.setdefault(query, step)
        if event == "retrieve":
            self._current = (query, run)
        elif event == "inject":
            self.injected[(run, step)].add(item)

    def feed_use(self, item: str, event: str, reason: str | None, rank: int | None = None) -> None:
        if event != self.hit_event:
            return
        self.hits += 1
        self.hit_count[item] += 1
        if reason is not None:
            self.stale += 1
            self.by_reason[reason] += 1
            if reason == "superseded":
                self.superseded_hits[item] += 1
        if self._current is not None:
            key, run = self._current
            got = self.results[key]
            got.setdefault((run, item), (rank if rank is not None else len(got) + 1, reason))

    def finish(self, has_step: bool, notes: list[str]) -> RetrievalHealth:
        queries = list(self.queries)
        q = len(queries)
        returned = sum(1 for k in queries if self.results.get(k))
        n_results = sum(len(self.results.get(k, ())) for k in queries)

        def used(k) -> int:
            step = self.queries[k]
            return sum(item in self.injected.get((run, step), ()) for run, item in self.results.get(k, {}))

        n_used = sum(used(k) for k in queries)
        hits, rate, definition = returned, _NAN, None
        if has_step and self.used_definition:
            definition = "used"
            hits = sum(used(k) > 0 for k in queries)
            rate = hits / q if q else _NAN
            if not self.has_search:
                notes.append("retrieval hit rate (used): no search rows, so queries that retrieved nothing are "
                             "invisible and the rate is over queries that returned something")
        elif has_step and self.has_search:
            definition = "returned"
            rate = returned / q if q else _NAN
            notes.append("retrieval hit rate (returned): no inject rows beside the retrieve rows say what was "
                         "used, so a query counts as a hit when it retrieved anything")
        elif self.hit_event is not None:
            notes.append("no search rows: queries that found nothing are invisible, retrieval hit rate not computed")
        return RetrievalHealth(
            queries=q, queries_with_hits=hits, retrieval_hit_rate=rate, hit_definition=definition,
            retrieved_results=n_results, used_results=n_used if definition == "used" else 0,
            used_result_share=n_used / n_results if definition == "used" and n_results else _NAN,
            hit_event=self.hit_event, hits=self.hits, stale_hits=self.stale,
            stale_hit_share=self.stale / self.hits if self.hits else _NAN,
            stale_by_reason=dict(sorted(self.by_reason.items())),
        )

    def query_results(self) -> Iterable[tuple[object, list[tuple[int, str, str | None]]]]:
        """Each counted query's results as ``(rank, item, why stale)``, best rank first."""
        for k in self.queries:
            got = self.results.get(k)
            if got:
                yield k, sorted((rank, item, reason) for (_, item), (rank, reason) in got.items())


def assign_queries(runs: list[str | None], steps: list[int | None], events: list[str], items: list[str]) -> list:
    """The query key of each row, in time order: a ``search`` row's own (``("search", id)``); a
    ``retrieve`` row's, the latest search at its step whose scope contains the hit's (else its own
    ``("step", run, step)``); None for other rows and for rows without a step."""
    out: list = []
    searches: dict = defaultdict(list)  # step -> [(scope, key)]
    seen: set = set()
    for run, step, event, item in zip(runs, steps, events, items, strict=True):
        key = None
        if step is not None and event == "search":
            key = ("search", item)
            if key in seen:  # the same search id twice (two runs): still two queries
                key = ("search", f"{item}#{len(seen)}")
            seen.add(key)
            searches[step].append((run, key))
        elif step is not None and event == "retrieve":
            key = next((k for scope, k in reversed(searches.get(step, ())) if contains(scope, run)), None)
            if key is None:
                key = ("step", run, step)
        out.append(key)
    return out


def subjects(edges: Iterable[tuple[str, str]], named: Mapping[str, str | None]) -> dict[str, str]:
    """item -> subject: the object table's ``subject``, else the root of the item's supersede chain."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent.get(x, x) != x:
            parent[x] = parent.get(parent[x], parent[x])
            x = parent[x]
        return x

    nodes: set[str] = set()
    for a, b in edges:
        nodes.update((a, b))
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    out = {x: f"chain:{find(x)}" for x in sorted(nodes)}
    out.update({k: f"subject:{v}" for k, v in named.items() if v not in (None, "")})
    return out


def stale_above_current(acc: RetrievalAcc, subject: Mapping[str, str]) -> StaleAboveCurrent:
    """Queries whose results rank a stale memory above a live one on the same subject (module docstring)."""
    with_results = both = above = 0
    examples: list[dict] = []
    for key, results in acc.query_results():
        with_results += 1
        best_live: dict[str, tuple[int, str]] = {}
        stale: list[tuple[int, str, str, str]] = []
        for rank, item, reason in results:
            s = subject.get(item)
            if s is None:
                continue
            if reason is None:
                best_live.setdefault(s, (rank, item))
            else:
                stale.append((rank, item, reason, s))
        pairs = [(r, it, why, best_live[s]) for r, it, why, s in stale if s in best_live]
        if not pairs:
            continue
        both += 1
        inverted = [p for p in pairs if p[0] < p[3][0]]
        if inverted:
            above += 1
            if len(examples) < MAX_LISTED:
                r, it, why, (cr, cur) = inverted[0]
                examples.append({"query": key[1] if key[0] == "search" else f"{key[1]}@{key[2]}", "stale": it,
                                 "stale_rank": r, "current": cur, "current_rank": cr, "reason": why})
    return StaleAboveCurrent(
        queries_with_results=with_results, queries_with_both=both, queries_stale_above=above,
        stale_above_current_share=above / with_results if with_results else _NAN, subjects_known=bool(subject),
        examples=tuple(examples),
    )
