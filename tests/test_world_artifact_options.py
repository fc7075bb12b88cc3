"""The options that follow the paper's own code (issue 30): each changes what it claims, defaults do not move."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ctwm_cli.common.errors import UsageError
from ctwm_cli.memory.retrievers import StateFrequency, StateTau
from ctwm_cli.memory.store import TransitionStore
from ctwm_cli.world import WorldConfig, make_graph, run_ladder, run_world, simulate
from ctwm_cli.world.graph_edges import components
from ctwm_cli.world.presets import artifact_graph_params


# ---------------------------------------------------------------- Algorithm R
def _inclusion(eviction: str, n: int, k: int, reps: int) -> np.ndarray:
    """How often each of ``n`` distinct arrivals is stored at the end, over ``reps`` seeds."""
    kept = np.zeros(n)
    for seed in np.random.SeedSequence(7).spawn(reps):
        store = TransitionStore(k, n, 1, eviction=eviction, rng=np.random.default_rng(seed))
        for tid in range(n):
            store.write(tid, 0, 0)
        kept[store.items] += 1
        assert len(store) == k
    return kept / reps


@pytest.mark.slow
def test_reservoir_keeps_each_arrival_with_probability_k_over_n():
    n, k, reps = 100, 10, 3000
    p = _inclusion("reservoir", n, k, reps)
    sd = np.sqrt(k / n * (1 - k / n) / reps)
    # every item, first and last alike, near k/n (4.5 sd: a family-wise bound over 100 items)
    assert np.max(np.abs(p - k / n)) < 4.5 * sd
    assert abs(p[:10].mean() - p[-10:].mean()) < 4 * sd / np.sqrt(5)
    # random replacement is the recency-biased store Algorithm R corrects: early items almost never survive
    rr = _inclusion("random", n, k, 500)
    assert rr[:10].mean() < 0.02 and rr[-1] == 1.0


def test_reservoir_counts_arrivals_not_hits():
    store = TransitionStore(2, 10, 1, eviction="reservoir", rng=np.random.default_rng(0))
    for tid in (0, 1, 0, 1, 0, 1):
        store.write(tid, 0, 0)
    assert store.arrivals == 2 and store.rejected == 0 and sorted(store.items) == [0, 1]
    for tid in range(2, 10):
        store.write(tid, 0, 0)
    assert store.arrivals == 10 and len(store) == 2 and store.rejected + store.evictions == 8


# ---------------------------------------------------------------- walks
def _visit_share(walk: str, seed: int = 3, steps: int = 200_000):
    cfg = WorldConfig(family="scale-free", size=30, steps=steps, seed=seed, retriever="none", walk=walk,
                      writes=True)
    sim = simulate(cfg)
    deg = sim.world.graph.degrees
    return sim, sim.visits / sim.visits.sum(), deg / deg.sum()


def test_uniform_neighbour_walk_visits_states_in_proportion_to_degree():
    sim, share, pi = _visit_share("uniform-neighbour")
    assert 0.5 * np.abs(share - pi).sum() < 0.01  # total variation to the closed form deg(v) / 2|E|
    # every directed edge is one item and equally frequent: steps / 2|E| each
    counts = np.bincount(sim.transitions, minlength=sim.world.n_transitions)
    assert sim.world.n_transitions == sim.world.graph.indices.size
    mean = sim.transitions.size / counts.size
    assert np.abs(counts / mean - 1).max() < 0.35
    # ctwm's typed walk (uneven Dirichlet outcomes) is not degree-proportional on the same graph
    _, typed, pi2 = _visit_share("typed")
    assert 0.5 * np.abs(typed - pi2).sum() > 0.05


def test_write_first_lets_the_step_retrieve_its_own_transition():
    base = dict(family="uniform", size=100, steps=3000, seed=5, retriever="state-frequency", walk="uniform-neighbour")
    first = simulate(WorldConfig(**base))
    leak = simulate(WorldConfig(**base, order="write-first"))
    assert first.retrieved[first.retrieved_step == 0].size == 0  # nothing stored before e_0
    assert leak.retrieved[leak.retrieved_step == 0].tolist() == [leak.transitions[0]]

    def own(sim):
        hits = sim.retrieved == sim.transitions[sim.retrieved_step]
        return np.unique(sim.retrieved_step[hits]).size / sim.transitions.size

    assert own(leak) > own(first) + 0.2


def test_walk_and_order_apply_to_the_random_walk_only():
    with pytest.raises(UsageError, match="random-walk policy only"):
        WorldConfig(policy="semantic", walk="uniform-neighbour").resolved()
    with pytest.raises(UsageError, match="walk"):
        WorldConfig(walk="sideways").resolved()


# ---------------------------------------------------------------- state-tau
def _store_with_mates(m: int) -> TransitionStore:
    store = TransitionStore(50, 50, 2)
    for tid in range(m):  # tid t written m - t times: frequency rank r = tid + 1
        for _ in range(m - tid):
            store.write(tid, 0, 1)
    return store


def test_state_tau_first_draw_follows_rank_power_law():
    store = _store_with_mates(12)
    tau, draws = 1.0, 20_000
    r = StateTau(3, tau=tau, rng=np.random.default_rng(1))
    first = np.bincount([r.retrieve(store, 0)[0] for _ in range(draws)], minlength=12)
    w = np.arange(1, 11) ** -tau
    expected = w / w.sum()
    assert first[10:].sum() == 0  # only the top 10 (the pool) are eligible
    assert np.abs(first[:10] / draws - expected).max() < 4 * np.sqrt(expected[0] * (1 - expected[0]) / draws)
    picks = r.retrieve(store, 0)
    assert len(picks) == 3 == len(set(picks))


def test_state_tau_at_large_tau_is_the_frequency_top_k():
    store = _store_with_mates(8)
    assert StateTau(3, tau=80.0, rng=np.random.default_rng(2)).retrieve(store, 0) == \
        StateFrequency(3).retrieve(store, 0) == [0, 1, 2]


def test_tau_needs_the_state_tau_retriever():
    with pytest.raises(UsageError, match="state-tau"):
        WorldConfig(tau=0.5).resolved()
    assert WorldConfig(retriever="state-tau").resolved().tau == 1.0


# ---------------------------------------------------------------- graphs
def test_absolute_block_probabilities_set_the_mean_degree():
    # modular, 5 blocks of 20: expected degree p_in * 19 + p_out * 80 = 3.65 (ctwm's default: 6)
    degs = [make_graph("modular", 100, params={"p_in": 0.15, "p_out": 0.01, "ring": 1}, rng=s).degrees.mean()
            for s in range(30)]
    assert abs(np.mean(degs) - 3.65) < 0.15
    with pytest.raises(UsageError, match="p_in and p_out"):
        make_graph("modular", 100, params={"p_in": 0.2}, rng=0)


def test_ring_repair_is_one_way_and_strongly_connects():
    found = 0
    for s in range(10):
        g = make_graph("modular", 100, params={"p_in": 0.15, "p_out": 0.01, "ring": 1}, rng=s)
        assert g.degrees.min() >= 1
        if g.arcs:
            found += 1
            src = np.repeat(np.arange(g.size), g.degrees)
            pairs = set(zip(src.tolist(), g.indices.tolist(), strict=True))
            one_way = [(u, v) for u, v in pairs if (v, u) not in pairs]
            assert len(one_way) == (g.arcs if g.arcs > 2 else 0)  # a ring of two is one edge both ways
            # strongly connected: every node reaches node 0 and is reached from it
            for ptr, nb in ((g.indptr, g.indices), _reverse(g)):
                seen, stack = {0}, [0]
                while stack:
                    v = stack.pop()
                    for w in nb[ptr[v]:ptr[v + 1]].tolist():
                        if w not in seen:
                            seen.add(w)
                            stack.append(w)
                assert len(seen) == g.size
        else:
            assert components(g.size, g.edges()).max() == 0
    assert found  # at mean degree 3.65 some seeds leave stray nodes


def _reverse(g):
    src = np.repeat(np.arange(g.size), g.degrees)
    order = np.argsort(g.indices, kind="stable")
    ptr = np.zeros(g.size + 1, dtype=np.int64)
    np.cumsum(np.bincount(g.indices, minlength=g.size), out=ptr[1:])
    return ptr, src[order]


def test_exponential_scale_parameter():
    a = make_graph("exponential", 400, params={"scale": 6.0}, rng=1)
    b = make_graph("exponential", 400, params={"mean_degree": 6.5}, rng=1)
    assert np.array_equal(a.indices, b.indices)  # scale s is mean_degree s + 0.5


# ---------------------------------------------------------------- preset and manifests
def test_defaults_record_none_of_the_new_options():
    cfg = WorldConfig().resolved()
    assert not {"walk", "order", "store", "tau", "preset"} & set(cfg.to_dict())
    assert "--walk" not in cfg.command() and "--preset" not in cfg.command()


def test_preset_fills_every_choice_and_explicit_options_win():
    cfg = WorldConfig(family="mixed", size=100, preset="artifact").resolved()
    assert (cfg.walk, cfg.order, cfg.store) == ("uniform-neighbour", "write-first", "lfu")
    assert cfg.graph_params["m"] == 1 and cfg.graph_params["p_in"] == 0.15 and cfg.graph_params["ring"] == 1
    assert cfg.world_params["actions_max"] == 3
    assert artifact_graph_params("mixed", 500)["m"] == 3
    mine = WorldConfig(family="mixed", size=100, preset="artifact", walk="typed", graph_params={"m": 2}).resolved()
    assert mine.walk == "typed" and mine.graph_params["m"] == 2 and mine.order == "write-first"
    sem = WorldConfig(family="uniform", size=100, preset="artifact", policy="semantic").resolved()
    assert (sem.walk, sem.order, sem.store) == (None, None, "lfu")  # a memory-reading policy retrieves first


def test_preset_is_recorded_in_the_manifest_and_repeats(tmp_path, run_cli):
    res = run_world(WorldConfig(family="modular", size=100, steps=1000, seed=4, preset="artifact"), tmp_path / "a")
    doc = json.loads((tmp_path / "a/manifest.json").read_text())
    assert doc["config"]["preset"] == "artifact" and doc["config"]["walk"] == "uniform-neighbour"
    assert doc["eviction"] == "lfu" and doc["retrieval"] == "after the step's write"
    assert "--preset artifact" in doc["repeat"]
    r = run_cli([*doc["repeat"].split()[1:], "--out", str(tmp_path / "b")])
    assert r.code == 0, r.err
    assert (tmp_path / "b/trace.parquet").read_bytes() == (tmp_path / "a/trace.parquet").read_bytes()
    assert res.sha256


def test_ladder_store_for_every_rung_is_recorded():
    lad = run_ladder(families=["uniform"], retrievers=["state-frequency", "state-uniform", "state-tau"],
                     base=WorldConfig(size=100, steps=2000, seed=1, store="lfu", tau=0.0))
    d = lad.to_dict()
    assert d["store"] == "lfu" and d["tau"] == 0.0 and "preset" not in d
    assert [r.retriever for r in lad.rows] == ["state-frequency", "state-uniform", "state-tau"]
    plain = run_ladder(families=["uniform"], retrievers=["state-uniform"], base=WorldConfig(size=100, steps=2000,
                                                                                             seed=1))
    assert "store" not in plain.to_dict()
    assert plain.rows[0].gini != lad.rows[1].gini  # random replacement vs LFU changes the rung


def test_cli_options_and_errors(tmp_path, run_cli):
    r = run_cli(["world", "run", "--out", str(tmp_path / "x"), "--policy", "semantic", "--walk",
                 "uniform-neighbour", "--seed", "1", "--steps", "100", "--size", "30"])
    assert r.code == 2 and "--walk" in r.err and "Traceback" not in r.err
    r = run_cli(["world", "ladder", "--tau", "0.5", "--size", "30", "--steps", "100", "--seed", "1"])
    assert r.code == 2 and "state-tau" in r.err
    r = run_cli(["world", "ladder", "--preset", "artifact", "--family", "uniform", "--size", "30", "--steps", "300",
                 "--seed", "1", "--json"])
    assert r.code == 0, r.err
    assert json.loads(r.out)["preset"] == "artifact"


@pytest.mark.slow
def test_preset_ladder_gives_the_codes_ladder():
    """Done-when of issue 30 at a third of the steps: one LFU store makes the non-preferential rung keep
    >= 84% of the preferential Gini (ctwm's default rung, with random eviction, keeps < 80%), and the
    uniform-neighbour walk lowers the no-retrieval Gini below ctwm's typed walk."""
    kw = dict(families=["uniform", "scale-free", "modular"], retrievers=["state-frequency", "state-uniform", "none"],
              jobs=1)
    rows = {}
    for name, base in (("artifact", WorldConfig(size=500, steps=30_000, seed=7, preset="artifact")),
                       ("default", WorldConfig(size=500, steps=30_000, seed=7))):
        rows[name] = {(r.family, r.retriever): r for r in run_ladder(base=base, **kw).rows}
    for fam in kw["families"]:
        art, dflt = rows["artifact"], rows["default"]
        assert art[fam, "state-uniform"].gini_vs_state_frequency >= 0.84
        assert dflt[fam, "state-uniform"].gini_vs_state_frequency < 0.8
        assert art[fam, "none"].gini < dflt[fam, "none"].gini - 0.05
