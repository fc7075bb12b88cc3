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

from ..common.checks import check_range
from ..common.errors import UsageError
from ..common.results import ToDict, result
from ..common.vocabulary import GRAPH_FAMILIES as FAMILIES
from ..common.vocabulary import PAPER_SIZES as PAPER_SIZES  # re-exported
from .graph_edges import (
    block_probs,
    csr,
    exponential_edges,
    join_components,
    mixed_edges,
    no_join,
    preferential_edges,
    regular_edges,
    ring_arcs,
    sbm_edges,
)

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
    join = no_join if ring else join_components
    if family in ("uniform", "baseline-symmetric"):
        edges = regular_edges(size, int(p["degree"]), gen)
    elif family == "exponential":
        edges = exponential_edges(size, p.get("scale", p["mean_degree"] - 0.5), gen, join)
    elif family == "scale-free":
        edges = preferential_edges(size, int(p["m"]), gen)
    elif family == "modular":
        edges = sbm_edges(size, int(p["blocks"]), block_probs(p), gen, join)
    else:
        edges = mixed_edges(size, p, gen, join)
    arcs = ring_arcs(size, edges, gen) if ring else np.empty((0, 2), dtype=np.int64)
    indptr, indices = csr(size, edges, arcs)
    seed = int(rng) if isinstance(rng, (int, np.integer)) else None  # a Generator's seed is not known
    return Graph(family=family, size=size, params=p, seed=seed, indptr=indptr, indices=indices,
                 arcs=int(arcs.shape[0]))
