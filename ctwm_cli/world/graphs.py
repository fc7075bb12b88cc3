"""Graph families of the Synthetic Graph World (paper Section 5, "Setup").

Every generator returns a :class:`Graph`: simple (no self-loops, no multi-edges), undirected
(every edge walkable both ways), connected, with ``size`` nodes, drawn from ``seed`` only.
Only numpy is used. Families and their parameters (all settable through ``params``):

``uniform``
    Random ``degree``-regular graph (default ``degree=6``; ``size * degree`` must be even).
    Stubs are paired at random (configuration model); self-loops and repeated edges are then
    repaired by degree-preserving double-edge switches, and components are merged by switches too,
    so every node keeps exactly ``degree`` neighbours.
``exponential``
    Configuration model with exponential degrees: ``d = 1 + floor(X)``, ``X ~ Exponential(scale =
    mean_degree - 0.5)`` (default ``mean_degree=6``), capped at ``size - 1``. Self-loops and
    multi-edges are removed; every component other than the largest is then joined to the largest
    by one edge between uniformly chosen nodes.
``scale-free``
    Barabasi-Albert preferential attachment: a clique of ``m + 1`` nodes, then each new node links
    to ``m`` distinct existing nodes chosen with probability proportional to degree (default ``m=3``).
``modular``
    Stochastic block model with ``blocks`` near-equal blocks (default 5). Edge probabilities are set
    from the expected degree: ``p_in = mean_degree (1 - mixing) / (b - 1)`` inside a block of size
    ``b`` and ``p_out = mean_degree * mixing / (size - b)`` between blocks (defaults
    ``mean_degree=6``, ``mixing=0.1``). Stray components are joined to the largest one as above,
    preferring a node of the same block.
``mixed``
    A scale-free half (nodes ``0 .. size//2 - 1``, parameter ``m``) and a modular half (``blocks``
    default 3, ``mean_degree``, ``mixing``), joined by ``bridges`` random edges (default 5).
``baseline-symmetric``
    The ``uniform`` regular graph; the world gives all its nodes an identical payload
    (see :mod:`ctwm_cli.world.env`), so only topology and retrieval can break the symmetry.

**Optional parameters** (:data:`OPTIONAL_PARAMS`; absent unless given, so default graphs are
unchanged). They follow the reading of the paper's own code (``--preset artifact``):

* ``p_in``, ``p_out`` (``modular``, and the modular half of ``mixed``): absolute edge probabilities
  inside and between blocks, replacing ``mean_degree`` and ``mixing`` (the artifact uses 0.15 /
  0.01 at every size, so its mean degree grows with size: about 3.6, 19 and 38 at 100, 500, 1000).
  Both must be given.
* ``scale`` (``exponential``): the exponential's scale, ``d = 1 + floor(X)``, ``X ~ Exponential(scale)``
  (the artifact: 6; the default is ``mean_degree - 0.5``).
* ``ring`` (every family but the regular ones; 1 = on): components are connected by one-way edges
  along a ring through one random node of each component (the artifact's strong-connectivity
  repair) instead of one undirected edge each to the largest component. The graph is then
  directed: ``neighbors(v)`` are the out-neighbours and :attr:`Graph.arcs` counts the one-way edges.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..checks import check_range
from ..errors import UsageError
from ..results import ToDict, result
from ..vocabulary import GRAPH_FAMILIES as FAMILIES
from ..vocabulary import PAPER_SIZES as PAPER_SIZES  # re-exported


#: Default parameters per family; every key may be overridden through ``params``.
DEFAULT_PARAMS: dict[str, dict[str, float]] = {
    "uniform": {"degree": 6},
    "exponential": {"mean_degree": 6.0},
    "scale-free": {"m": 3},
    "modular": {"blocks": 5, "mean_degree": 6.0, "mixing": 0.1},
    "mixed": {"m": 3, "blocks": 3, "mean_degree": 6.0, "mixing": 0.1, "bridges": 5},
    "baseline-symmetric": {"degree": 6},
}
#: Parameters a family accepts that are absent by default (see the module docstring).
OPTIONAL_PARAMS: dict[str, tuple[str, ...]] = {
    "uniform": (),
    "exponential": ("scale", "ring"),
    "scale-free": ("ring",),
    "modular": ("p_in", "p_out", "ring"),
    "mixed": ("p_in", "p_out", "ring"),
    "baseline-symmetric": (),
}
_INT_PARAMS = {"degree", "m", "blocks", "bridges", "ring"}
MIN_SIZE = 10


@result
class Graph(ToDict):
    """A simple, connected, undirected graph in CSR form (``neighbors(v) = indices[indptr[v]:indptr[v+1]]``)."""

    family: str
    size: int
    params: dict[str, float]
    seed: int | None
    indptr: np.ndarray
    indices: np.ndarray
    arcs: int = 0  # one-way edges (``ring``); the rest are undirected

    @property
    def n_edges(self) -> int:
        """Undirected edges (each counted once) plus one-way arcs."""
        return int((self.indices.size - self.arcs) // 2 + self.arcs)

    @property
    def degrees(self) -> np.ndarray:
        return np.diff(self.indptr)

    def neighbors(self, v: int) -> np.ndarray:
        return self.indices[self.indptr[v] : self.indptr[v + 1]]

    def edges(self) -> np.ndarray:
        """Each undirected edge once, as rows ``(u, v)`` with ``u < v``, sorted (a one-way ``ring`` arc
        appears only when ``u < v``)."""
        src = np.repeat(np.arange(self.size), self.degrees)
        keep = src < self.indices
        return np.column_stack([src[keep], self.indices[keep]])

    def to_dict(self) -> dict[str, Any]:
        deg = self.degrees
        return {
            "family": self.family,
            "size": self.size,
            "params": dict(self.params),
            "seed": self.seed,
            "n_edges": self.n_edges,
            "degree_min": int(deg.min()),
            "degree_max": int(deg.max()),
            "degree_mean": float(deg.mean()),
            **({"arcs": self.arcs} if self.arcs else {}),
        }


def known_params(family: str) -> tuple[str, ...]:
    """Every parameter ``family`` accepts: its defaults, then its optional ones."""
    return (*DEFAULT_PARAMS[family], *OPTIONAL_PARAMS[family])


def graph_params(family: str, params: Mapping[str, float] | None = None) -> dict[str, float]:
    """The family's defaults updated by ``params``; unknown keys and bad values raise ``UsageError``."""
    if family not in DEFAULT_PARAMS:
        raise UsageError(f"unknown graph family {family!r} (choose from: {', '.join(FAMILIES)})", params=("family",))
    out: dict[str, float] = dict(DEFAULT_PARAMS[family])
    known = known_params(family)
    for key, value in (params or {}).items():
        if key not in known:
            raise UsageError(
                f"graph parameter {key!r} does not apply to family {family!r} (known: {', '.join(known)})",
                params=("graph_param",)
            )
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise UsageError(f"graph parameter {key!r} must be a number, got {value!r}",
                             params=("graph_param",)) from None
        if key in _INT_PARAMS and not number.is_integer():
            raise UsageError(f"graph parameter {key!r} must be an integer, got {value!r}", params=("graph_param",))
        out[key] = int(number) if key in _INT_PARAMS else number
    return out


def _validate(family: str, size: int, p: dict[str, float]) -> None:
    if not isinstance(size, (int, np.integer)) or size < MIN_SIZE:
        raise UsageError(f"size must be an integer >= {MIN_SIZE}, got {size!r}", params=("size",))
    if family in ("uniform", "baseline-symmetric"):
        k = p["degree"]
        if not 2 <= k < size:
            raise UsageError(f"degree must be in [2, size - 1], got {k}", params=("graph_param",))
        if (k * size) % 2:
            raise UsageError(f"a {k}-regular graph needs size * degree even, got size {size}",
                             params=("graph_param", "size"))
    if "mean_degree" in p and not 1.0 <= p["mean_degree"] < size / 2:
        raise UsageError(f"mean_degree must be in [1, size / 2), got {p['mean_degree']}", params=("graph_param",))
    if "mixing" in p and not 0.0 <= p["mixing"] <= 1.0:
        raise UsageError(f"mixing must be in [0, 1], got {p['mixing']}", params=("graph_param",))
    part = size // 2 if family == "mixed" else size
    if "m" in p and not 1 <= p["m"] < part - 1:
        raise UsageError(f"m must be in [1, {part - 2}] for size {size}, got {p['m']}", params=("graph_param",))
    if "blocks" in p and not 1 <= p["blocks"] <= (size - size // 2 if family == "mixed" else size) // 3:
        raise UsageError(f"blocks must be between 1 and a third of the (modular part of the) size, got {p['blocks']}",
                         params=("graph_param",))
    if "bridges" in p:
        check_range("bridges", p["bridges"], lo=1)
    if ("p_in" in p) != ("p_out" in p):
        raise UsageError("graph parameters p_in and p_out go together (absolute block probabilities)",
                         params=("graph_param",))
    for key in ("p_in", "p_out"):
        if key in p:
            check_range(key, p[key], lo=0, hi=1)
    if "scale" in p:
        check_range("scale", p["scale"], lo=0, lo_open=True)
    if "ring" in p and p["ring"] not in (0, 1):
        raise UsageError(f"graph parameter ring must be 0 or 1, got {p['ring']}", params=("graph_param",))


def make_graph(
    family: str,
    size: int,
    *,
    params: Mapping[str, float] | None = None,
    rng: int | np.random.Generator | None = None,
) -> Graph:
    """Draw a graph of ``family`` with ``size`` nodes; ``rng`` is a seed or a Generator (normalised once with
    ``np.random.default_rng``, which hands a Generator back as is)."""
    p = graph_params(family, params)
    _validate(family, int(size), p)
    size = int(size)
    gen = np.random.default_rng(rng)
    ring = bool(p.get("ring"))
    join = _no_join if ring else _join_components
    if family in ("uniform", "baseline-symmetric"):
        edges = _regular(size, int(p["degree"]), gen)
    elif family == "exponential":
        edges = _exponential(size, p.get("scale", p["mean_degree"] - 0.5), gen, join)
    elif family == "scale-free":
        edges = _preferential(size, int(p["m"]), gen)
    elif family == "modular":
        edges = _sbm(size, int(p["blocks"]), _block_probs(p), gen, join)
    else:
        edges = _mixed(size, p, gen, join)
    arcs = _ring_arcs(size, edges, gen) if ring else np.empty((0, 2), dtype=np.int64)
    indptr, indices = _csr(size, edges, arcs)
    seed = int(rng) if isinstance(rng, (int, np.integer)) else None  # a Generator's seed is not known
    return Graph(family=family, size=size, params=p, seed=seed, indptr=indptr, indices=indices,
                 arcs=int(arcs.shape[0]))


# --------------------------------------------------------------------------------------------
# helpers


def _csr(n: int, edges: np.ndarray, arcs: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
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
    indptr, indices = _csr(n, edges)
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


def _simple(edges: np.ndarray) -> np.ndarray:
    """Drop self-loops and repeated edges; rows ``(u, v)`` with ``u < v``, sorted."""
    e = np.sort(np.asarray(edges, dtype=np.int64).reshape(-1, 2), axis=1)
    e = e[e[:, 0] != e[:, 1]]
    return np.unique(e, axis=0)


def _join_components(n: int, edges: np.ndarray, gen: np.random.Generator,
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
    return _simple(np.vstack([edges, np.asarray(extra, dtype=np.int64)]))


def _no_join(n: int, edges: np.ndarray, gen: np.random.Generator, block: np.ndarray | None = None) -> np.ndarray:
    return edges


def _ring_arcs(n: int, edges: np.ndarray, gen: np.random.Generator) -> np.ndarray:
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


def _block_probs(p: dict[str, float]) -> dict[str, float | None]:
    """The block-model keywords of ``p``: absolute ``p_in``/``p_out`` when set, else ``mean_degree``/``mixing``."""
    return {"mean_degree": p["mean_degree"], "mixing": p["mixing"], "p_in": p.get("p_in"), "p_out": p.get("p_out")}


def _regular(n: int, k: int, gen: np.random.Generator) -> np.ndarray:
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
    edges = _simple(np.asarray(e))
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
        edges = _simple(edges)
    raise UsageError(f"could not draw a connected {k}-regular graph on {n} nodes",
                     params=("graph_param", "size"))  # pragma: no cover


def _exponential(n: int, scale: float, gen: np.random.Generator, join=_join_components) -> np.ndarray:
    x = gen.exponential(scale=max(scale, 0.5), size=n)
    deg = np.minimum(1 + np.floor(x).astype(np.int64), n - 1)
    if deg.sum() % 2:
        deg[int(gen.integers(n))] += 1 if deg.max() < n - 1 else 0
        if deg.sum() % 2:
            deg[int(np.argmax(deg))] -= 1
    stubs = np.repeat(np.arange(n, dtype=np.int64), deg)
    edges = _simple(gen.permutation(stubs).reshape(-1, 2))
    return join(n, edges, gen)


def _preferential(n: int, m: int, gen: np.random.Generator, offset: int = 0) -> np.ndarray:
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


def _sbm_raw(n: int, blocks: int, gen: np.random.Generator, *, mean_degree: float, mixing: float,
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


def _sbm(n: int, blocks: int, probs: dict[str, float | None], gen: np.random.Generator,
         join=_join_components) -> np.ndarray:
    edges, block = _sbm_raw(n, blocks, gen, **probs)
    return join(n, edges, gen, block=block)


def _mixed(n: int, p: dict[str, float], gen: np.random.Generator, join=_join_components) -> np.ndarray:
    half = n // 2
    sf = _preferential(half, int(p["m"]), gen)
    mod = _sbm(n - half, int(p["blocks"]), _block_probs(p), gen, join) + half
    k = int(p["bridges"])
    a = gen.integers(0, half, size=k)
    b = gen.integers(half, n, size=k)
    return _simple(np.vstack([sf, mod, np.column_stack([a, b])]))
