"""How the graph families of :mod:`ctwm_cli.world.graphs` draw their edges: the configuration model with
its degree-preserving repair, preferential attachment, the stochastic block model, the mixed graph, and the
connectivity repairs (an undirected edge to the largest component, or the artifact's ring of one-way arcs).
Every function draws from the Generator it is given and returns edge rows ``(u, v)``; :func:`csr` turns
them into the adjacency a :class:`~ctwm_cli.world.graphs.Graph` holds.
"""

from __future__ import annotations

import numpy as np

from ..common.errors import UsageError

__all__ = [
    "block_probs", "components", "csr", "exponential_edges", "join_components", "mixed_edges", "no_join",
    "preferential_edges", "regular_edges", "ring_arcs", "sbm_edges", "sbm_raw", "simple_edges",
]



def csr(n: int, edges: np.ndarray, arcs: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """CSR of the undirected ``edges`` (both directions) and the one-way ``arcs``."""
    e = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    a = np.empty((0, 2), dtype=np.int64) if arcs is None else np.asarray(arcs, dtype=np.int64).reshape(-1, 2)
    src = np.concatenate([e[:, 0], e[:, 1], a[:, 0]])
    dst = np.concatenate([e[:, 1], e[:, 0], a[:, 1]])
    order = np.lexsort((dst, src))
    src, dst = src[order], dst[order]
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=indptr[1:])
    return indptr, dst


def components(n: int, edges: np.ndarray) -> np.ndarray:
    """Connected-component label of every node (labels 0.., in order of smallest member)."""
    indptr, indices = csr(n, edges)
    label = np.full(n, -1, dtype=np.int64)
    nb = indices.tolist()
    ptr = indptr.tolist()
    lab = label.tolist()
    c = 0
    for s in range(n):
        if lab[s] >= 0:
            continue
        lab[s] = c
        stack = [s]
        while stack:
            v = stack.pop()
            for w in nb[ptr[v] : ptr[v + 1]]:
                if lab[w] < 0:
                    lab[w] = c
                    stack.append(w)
        c += 1
    return np.asarray(lab, dtype=np.int64)


def simple_edges(edges: np.ndarray) -> np.ndarray:
    """Drop self-loops and repeated edges; rows ``(u, v)`` with ``u < v``, sorted."""
    e = np.sort(np.asarray(edges, dtype=np.int64).reshape(-1, 2), axis=1)
    e = e[e[:, 0] != e[:, 1]]
    return np.unique(e, axis=0)


def join_components(n: int, edges: np.ndarray, gen: np.random.Generator,
                     block: np.ndarray | None = None) -> np.ndarray:
    """Join every component other than the largest to the largest with one edge."""
    lab = components(n, edges)
    sizes = np.bincount(lab)
    if sizes.size == 1:
        return edges
    giant = int(np.argmax(sizes))
    in_giant = np.flatnonzero(lab == giant)
    extra = []
    for c in range(sizes.size):
        if c == giant:
            continue
        members = np.flatnonzero(lab == c)
        u = int(members[gen.integers(members.size)])
        pool = in_giant
        if block is not None:
            same = in_giant[block[in_giant] == block[u]]
            if same.size:
                pool = same
        v = int(pool[gen.integers(pool.size)])
        extra.append((u, v))
    return simple_edges(np.vstack([edges, np.asarray(extra, dtype=np.int64)]))


def no_join(n: int, edges: np.ndarray, gen: np.random.Generator, block: np.ndarray | None = None) -> np.ndarray:
    return edges


def ring_arcs(n: int, edges: np.ndarray, gen: np.random.Generator) -> np.ndarray:
    """One-way arcs ``rep[i] -> rep[i+1]`` (cyclically) through one uniformly drawn node per component,
    in component order: the artifact's repair, which makes the graph strongly connected."""
    lab = components(n, edges)
    c = int(lab.max()) + 1
    if c == 1:
        return np.empty((0, 2), dtype=np.int64)
    reps = []
    for k in range(c):
        members = np.flatnonzero(lab == k)
        reps.append(int(members[gen.integers(members.size)]))
    return np.asarray([(reps[i], reps[(i + 1) % c]) for i in range(c)], dtype=np.int64)


def block_probs(p: dict[str, float]) -> dict[str, float | None]:
    """The block-model keywords of ``p``: absolute ``p_in``/``p_out`` when set, else ``mean_degree``/``mixing``."""
    return {"mean_degree": p["mean_degree"], "mixing": p["mixing"], "p_in": p.get("p_in"), "p_out": p.get("p_out")}


def regular_edges(n: int, k: int, gen: np.random.Generator) -> np.ndarray:
    stubs = np.repeat(np.arange(n, dtype=np.int64), k)
    e = gen.permutation(stubs).reshape(-1, 2).tolist()
    m = len(e)
    # Repair self-loops and repeated edges by degree-preserving double-edge switches.
    for _ in range(1000 * m):
        seen: dict[tuple[int, int], int] = {}
        bad = []
        for i, (a, b) in enumerate(e):
            key = (a, b) if a < b else (b, a)
            if a == b or key in seen:
                bad.append(i)
            else:
                seen[key] = i
        if not bad:
            break
        for i in bad:
            a, b = e[i]
            j = int(gen.integers(m))
            c, d = e[j]
            if j == i:
                continue
            if gen.random() < 0.5:
                c, d = d, c
            new1 = (a, c) if a < c else (c, a)
            new2 = (b, d) if b < d else (d, b)
            if a == c or b == d or new1 == new2 or new1 in seen or new2 in seen:
                continue
            old_j = (c, d) if c < d else (d, c)
            if seen.get(old_j) == j:
                del seen[old_j]
            e[i], e[j] = [a, c], [b, d]
            seen[new1], seen[new2] = i, j
    edges = simple_edges(np.asarray(e))
    if edges.shape[0] != m:  # pragma: no cover - the repair loop converges for 2 <= k < n
        raise UsageError(f"could not draw a simple {k}-regular graph on {n} nodes", params=("graph_param", "size"))
    # Merge components by switches between an edge of the giant and an edge of another component.
    for _ in range(10 * n):
        lab = components(n, edges)
        if lab.max() == 0:
            return edges
        sizes = np.bincount(lab)
        giant = int(np.argmax(sizes))
        other = int(gen.choice(np.flatnonzero(np.arange(sizes.size) != giant)))
        eg = np.flatnonzero(lab[edges[:, 0]] == giant)
        eo = np.flatnonzero(lab[edges[:, 0]] == other)
        i, j = int(eg[gen.integers(eg.size)]), int(eo[gen.integers(eo.size)])
        (a, b), (c, d) = edges[i].tolist(), edges[j].tolist()
        edges[i], edges[j] = (a, c), (b, d)
        edges = simple_edges(edges)
    raise UsageError(f"could not draw a connected {k}-regular graph on {n} nodes",
                     params=("graph_param", "size"))  # pragma: no cover


def exponential_edges(n: int, scale: float, gen: np.random.Generator, join=join_components) -> np.ndarray:
    x = gen.exponential(scale=max(scale, 0.5), size=n)
    deg = np.minimum(1 + np.floor(x).astype(np.int64), n - 1)
    if deg.sum() % 2:
        deg[int(gen.integers(n))] += 1 if deg.max() < n - 1 else 0
        if deg.sum() % 2:
            deg[int(np.argmax(deg))] -= 1
    stubs = np.repeat(np.arange(n, dtype=np.int64), deg)
    edges = simple_edges(gen.permutation(stubs).reshape(-1, 2))
    return join(n, edges, gen)


def preferential_edges(n: int, m: int, gen: np.random.Generator, offset: int = 0) -> np.ndarray:
    edges = [(i, j) for i in range(m + 1) for j in range(i + 1, m + 1)]
    ends = [v for e in edges for v in e]  # every edge end once: uniform draw = degree-proportional
    block = 4096
    u = gen.random(block).tolist()
    pos = 0
    for v in range(m + 1, n):
        chosen: list[int] = []
        while len(chosen) < m:
            if pos == block:
                u, pos = gen.random(block).tolist(), 0
            t = ends[int(u[pos] * len(ends))]
            pos += 1
            if t not in chosen:
                chosen.append(t)
        for t in chosen:
            edges.append((t, v))
            ends.extend((t, v))
    return np.asarray(edges, dtype=np.int64) + offset


def sbm_raw(n: int, blocks: int, gen: np.random.Generator, *, mean_degree: float, mixing: float,
             p_in: float | None = None, p_out: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    block = (np.arange(n) * blocks) // n  # near-equal contiguous blocks
    sizes = np.bincount(block, minlength=blocks)
    iu, ju = np.triu_indices(n, k=1)
    same = block[iu] == block[ju]
    b = sizes[block[iu]]
    if p_in is not None and p_out is not None:  # absolute probabilities (the paper's code)
        p_out = p_out if blocks > 1 else 0.0
    else:
        p_in = np.minimum(mean_degree * (1.0 - mixing) / np.maximum(b - 1, 1), 1.0)
        p_out = np.minimum(mean_degree * mixing / np.maximum(n - b, 1), 1.0) if blocks > 1 else 0.0
    p = np.where(same, p_in, p_out)
    keep = gen.random(iu.size) < p
    edges = np.column_stack([iu[keep], ju[keep]]).astype(np.int64)
    return edges, block


def sbm_edges(n: int, blocks: int, probs: dict[str, float | None], gen: np.random.Generator,
         join=join_components) -> np.ndarray:
    edges, block = sbm_raw(n, blocks, gen, **probs)
    return join(n, edges, gen, block=block)


def mixed_edges(n: int, p: dict[str, float], gen: np.random.Generator, join=join_components) -> np.ndarray:
    half = n // 2
    sf = preferential_edges(half, int(p["m"]), gen)
    mod = sbm_edges(n - half, int(p["blocks"]), block_probs(p), gen, join) + half
    k = int(p["bridges"])
    a = gen.integers(0, half, size=k)
    b = gen.integers(half, n, size=k)
    return simple_edges(np.vstack([sf, mod, np.column_stack([a, b])]))
