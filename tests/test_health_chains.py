"""Contradiction chains: cycles and chain lengths, checked against igraph on random graphs."""

from __future__ import annotations

import igraph
import numpy as np
import pytest

from ctwm_cli.health import contradiction_chains


def test_known_graph():
    edges = [("A", "B"), ("B", "C"), ("C", "D"), ("X", "Y"), ("Y", "X"), ("Z", "Z"), ("A", "C")]
    c = contradiction_chains(edges, {"B": 2, "A": 1, "Q": 0})
    assert c.cycles == (("X", "Y"), ("Z",))
    assert c.n_cycles == 2 and c.chains == 3 and c.items_in_chains == 7
    assert c.max_chain_length == 4  # A -> B -> C -> D
    assert c.superseded_but_retrieved == 2 and c.superseded_hits == 3
    assert c.superseded_but_retrieved_items == ("B", "A")
    assert c.to_dict()["n_cycles"] == 2


def test_no_edges():
    c = contradiction_chains([])
    assert (c.edges, c.chains, c.max_chain_length, c.cycles) == (0, 0, 0, ())


@pytest.mark.parametrize("seed", range(10))
def test_cycles_and_components_match_igraph(seed):
    rng = np.random.default_rng(seed)
    n = 30
    pairs = {(int(a), int(b)) for a, b in rng.integers(0, n, size=(40, 2))}
    edges = [(f"v{a}", f"v{b}") for a, b in pairs]
    c = contradiction_chains(edges)
    names = sorted({x for e in edges for x in e})
    idx = {x: i for i, x in enumerate(names)}
    g = igraph.Graph(n=len(names), edges=[(idx[a], idx[b]) for a, b in edges], directed=True)
    loops = {names[e.source] for e in g.es if e.source == e.target}
    want = sorted(
        tuple(sorted(names[i] for i in comp))
        for comp in g.connected_components(mode="strong")
        if len(comp) > 1 or names[comp[0]] in loops
    )
    assert list(c.cycles) == want
    assert c.chains == len(g.connected_components(mode="weak"))
    # longest chain: longest path in the condensation, each component counted with its size
    cond = g.connected_components(mode="strong")
    dag = cond.cluster_graph(combine_edges=False)
    dag.simplify(loops=True, multiple=True)
    sizes = cond.sizes()
    best = list(sizes)
    for v in dag.topological_sorting():
        for w in dag.successors(v):
            best[w] = max(best[w], best[v] + sizes[w])
    assert c.max_chain_length == max(best)
