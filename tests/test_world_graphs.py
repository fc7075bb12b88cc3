"""Graph families: size, simplicity, connectivity (checked with igraph), degree shape, determinism."""

from __future__ import annotations

import igraph
import numpy as np
import pytest

from ctwm_cli.common.errors import UsageError
from ctwm_cli.world.graphs import FAMILIES, make_graph


def _igraph(g):
    return igraph.Graph(n=g.size, edges=g.edges().tolist(), directed=False)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("size", [100, 500])
def test_family_is_simple_connected_undirected(family, size):
    g = make_graph(family, size, rng=7)
    assert g.size == size
    assert g.indptr.size == size + 1 and g.indptr[-1] == g.indices.size
    ig = _igraph(g)
    assert ig.vcount() == size
    assert ig.is_connected()
    assert ig.is_simple()
    # CSR is symmetric: every edge is walkable both ways
    src = np.repeat(np.arange(size), g.degrees)
    fwd = set(zip(src.tolist(), g.indices.tolist(), strict=True))
    assert all((b, a) in fwd for a, b in fwd)
    assert np.array_equal(np.asarray(ig.degree()), g.degrees)


@pytest.mark.parametrize("family", FAMILIES)
def test_same_seed_same_graph_other_seed_other_graph(family):
    a = make_graph(family, 200, rng=3)
    b = make_graph(family, 200, rng=3)
    c = make_graph(family, 200, rng=4)
    assert np.array_equal(a.indices, b.indices) and np.array_equal(a.indptr, b.indptr)
    assert not (a.indices.size == c.indices.size and np.array_equal(a.indices, c.indices))


def test_uniform_is_regular_with_requested_degree():
    for k in (3, 4, 6):
        g = make_graph("uniform", 100, params={"degree": k}, rng=1)
        assert set(g.degrees.tolist()) == {k}
        assert g.n_edges == 100 * k // 2


def test_scale_free_has_heavier_tail_than_uniform_and_modular():
    for seed in range(3):
        sf = make_graph("scale-free", 1000, rng=seed).degrees
        un = make_graph("uniform", 1000, rng=seed).degrees
        mo = make_graph("modular", 1000, rng=seed).degrees
        assert sf.max() > 4 * un.max()
        assert sf.var() > 5 * mo.var()
        assert sf.min() >= 3  # every new node brings m = 3 edges


def test_scale_free_degree_tail_follows_preferential_attachment():
    # BA with m: P(k) ~ 2 m^2 / k^3, so the fraction with degree >= 4m is about 1/16.
    d = np.concatenate([make_graph("scale-free", 1000, rng=s).degrees for s in range(5)])
    frac = np.mean(d >= 12)
    assert 0.03 < frac < 0.12


def test_exponential_degrees_are_spread_with_requested_mean():
    d = np.concatenate([make_graph("exponential", 1000, rng=s).degrees for s in range(3)])
    assert 5.0 < d.mean() < 7.0
    assert d.var() > 10  # an exponential with mean ~6 has variance ~30; a regular graph has 0
    assert d.min() >= 1


def test_modular_blocks_are_denser_inside():
    g = make_graph("modular", 500, params={"blocks": 5, "mixing": 0.1}, rng=2)
    block = (np.arange(500) * 5) // 500
    e = g.edges()
    inside = np.mean(block[e[:, 0]] == block[e[:, 1]])
    assert inside > 0.8  # ~90% of the edges are inside a block (mixing 0.1)


def test_mixed_halves_are_joined_by_few_bridges():
    g = make_graph("mixed", 400, params={"bridges": 5}, rng=5)
    e = g.edges()
    cross = np.sum((e[:, 0] < 200) != (e[:, 1] < 200))
    assert 1 <= cross <= 5 + 2  # the bridges, plus at most a stray join


@pytest.mark.parametrize(
    ("family", "size", "params", "match"),
    [
        ("uniform", 5, None, "size"),
        ("uniform", 101, {"degree": 3}, "even"),
        ("scale-free", 100, {"k": 3}, "does not apply"),
        ("modular", 100, {"mixing": 2}, "mixing"),
        ("nope", 100, None, "unknown graph family"),
        ("scale-free", 100, {"m": 2.5}, "integer"),
    ],
)
def test_bad_parameters_raise_usage_error(family, size, params, match):
    with pytest.raises(UsageError, match=match):
        make_graph(family, size, params=params, rng=0)
