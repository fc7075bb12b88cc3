"""Contradiction chains: the supersede graph (edge old -> new), its cycles and longest chains.

Edges come from ``supersede`` events with a ``by`` column (item superseded by ``by``) and from the
memory-object table (``B.supersedes = [A]`` gives A -> B). A *cycle* is a strongly connected
component with more than one item, or an item that supersedes itself: a version history that loops
(A replaced by B, later B replaced by A) means the store keeps flipping between contradicting
entries. A *chain* is a weakly connected component with at least one edge; its length is the number
of items on the longest path through it (cycles count once). ``superseded_but_retrieved`` counts the
items retrieved after they had been superseded (the retrieval saw a contradicted entry).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from ..common.results import ToDict, result

MAX_LISTED = 20


@result
class Contradictions(ToDict):
    edges: int
    chains: int
    items_in_chains: int
    max_chain_length: int
    cycles: tuple[tuple[str, ...], ...]
    superseded_but_retrieved: int
    superseded_hits: int
    superseded_but_retrieved_items: tuple[str, ...]  # the first MAX_LISTED, most hit first

    @property
    def n_cycles(self) -> int:
        return len(self.cycles)

    def to_dict(self) -> dict:
        d = ToDict.to_dict(self)
        d["n_cycles"] = self.n_cycles
        return d


def contradiction_chains(
    edges: Iterable[tuple[str, str]], superseded_hits: Mapping[str, int] | None = None
) -> Contradictions:
    """Cycles and chains of the supersede graph ``edges`` (old, new); hits on superseded items."""
    pairs = sorted({(str(a), str(b)) for a, b in edges})
    hits = {k: int(v) for k, v in (superseded_hits or {}).items() if v > 0}
    listed = tuple(k for k, _ in sorted(hits.items(), key=lambda kv: (-kv[1], kv[0]))[:MAX_LISTED])
    if not pairs:
        return Contradictions(edges=0, chains=0, items_in_chains=0, max_chain_length=0, cycles=(),
                              superseded_but_retrieved=len(hits), superseded_hits=sum(hits.values()),
                              superseded_but_retrieved_items=listed)
    names = sorted({x for p in pairs for x in p})
    index = {x: i for i, x in enumerate(names)}
    src = np.array([index[a] for a, _ in pairs])
    dst = np.array([index[b] for _, b in pairs])
    n = len(names)
    g = coo_matrix((np.ones(len(pairs)), (src, dst)), shape=(n, n)).tocsr()
    n_scc, scc = connected_components(g, directed=True, connection="strong")
    n_weak, _ = connected_components(g, directed=True, connection="weak")
    members: dict[int, list[str]] = {}
    for i, c in enumerate(scc):
        members.setdefault(int(c), []).append(names[i])
    self_loops = {names[a] for a, b in zip(src, dst, strict=True) if a == b}
    cycles = sorted(
        tuple(sorted(m)) for m in members.values() if len(m) > 1 or (len(m) == 1 and m[0] in self_loops)
    )
    return Contradictions(
        edges=len(pairs), chains=int(n_weak), items_in_chains=n, max_chain_length=_longest_chain(src, dst, scc, n_scc),
        cycles=tuple(cycles), superseded_but_retrieved=len(hits), superseded_hits=sum(hits.values()),
        superseded_but_retrieved_items=listed,
    )


def _longest_chain(src: np.ndarray, dst: np.ndarray, scc: np.ndarray, n_scc: int) -> int:
    """Items on the longest path of the condensation (a DAG), counting each component's items once."""
    size = np.bincount(scc, minlength=n_scc)
    succ: dict[int, set[int]] = {}
    indeg = np.zeros(n_scc, dtype=int)
    for a, b in zip(src, dst, strict=True):
        ca, cb = int(scc[a]), int(scc[b])
        if ca != cb and cb not in succ.setdefault(ca, set()):
            succ[ca].add(cb)
            indeg[cb] += 1
    best = size.astype(int).copy()
    queue = [c for c in range(n_scc) if indeg[c] == 0]
    while queue:
        c = queue.pop()
        for d in succ.get(c, ()):
            best[d] = max(best[d], best[c] + size[d])
            indeg[d] -= 1
            if indeg[d] == 0:
                queue.append(d)
    return int(best.max())
