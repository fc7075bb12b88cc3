"""The world: payloads, actions covering every edge, transition frequencies matching probabilities."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats

from ctwm_cli.common.errors import UsageError
from ctwm_cli.world.env import World, WorldEnv, build_world
from ctwm_cli.world.graphs import make_graph


@pytest.fixture(scope="module")
def world():
    return build_world(make_graph("scale-free", 200, rng=1), seed=2)


def test_actions_cover_every_edge_once(world):
    g = world.graph
    for v in range(world.size):
        lo, hi = world.state_ptr[v], world.state_ptr[v + 1]
        assert sorted(world.tid_dst[lo:hi].tolist()) == sorted(g.neighbors(v).tolist())
        assert np.all(world.tid_src[lo:hi] == v)
        n_act = world.act_ptr[v + 1] - world.act_ptr[v]
        assert 1 <= n_act <= 4 and n_act <= g.degrees[v]


def test_outcome_probabilities_sum_to_one_per_action(world):
    sums = np.bincount(world.tid_action, weights=world.tid_prob)
    assert np.allclose(sums, 1.0)
    assert np.all(world.tid_prob >= 0)


def test_state_and_transition_are_readable(world):
    s = world.state(0)
    assert s.place and s.entities and s.relations and s.constraints
    assert len(s.actions) == world.act_ptr[1] - world.act_ptr[0]
    for name in s.actions:
        assert name.startswith(s.place + " -") and "-> " in name
    t = world.transition(int(world.state_ptr[0]))
    assert t.src == 0 and t.item == f"s0-a{t.action}->s{t.dst}"
    assert t.action_name == s.actions[t.action]
    assert len(set(world.items)) == world.n_transitions  # item ids are unique


def test_same_seed_same_world():
    g = make_graph("modular", 100, rng=4)
    a, b = World(g, seed=9), World(g, seed=9)
    assert a.items == b.items and a.action_names == b.action_names
    assert np.array_equal(a.tid_prob, b.tid_prob) and a.places == b.places


def test_identical_payloads_for_baseline_symmetric():
    w = build_world(make_graph("baseline-symmetric", 100, rng=1), seed=1)
    assert len({w.state(v).text() for v in range(100)}) == 1
    assert len({tuple(w.actions(v)) for v in range(100)}) == 1
    assert np.allclose(w.tid_prob, 1.0 / np.diff(w.out_ptr)[w.tid_action])


def test_step_frequencies_match_transition_probabilities(world):
    # Pick the action with the most outcomes; step from its state many times; chi-square.
    sizes = np.diff(world.out_ptr)
    gid = int(np.argmax(sizes))
    v = int(world.tid_src[world.out_ptr[gid]])
    a = gid - int(world.act_ptr[v])
    tids = world.transitions_of(v, a)
    env = WorldEnv(world, seed=11)
    n = 20_000
    counts = np.zeros(world.n_transitions, dtype=np.int64)
    for _ in range(n):
        env.reset(v)
        counts[env.step(a)] += 1
    obs = counts[tids]
    assert obs.sum() == n
    exp = world.tid_prob[tids] * n
    keep = exp > 5
    res = stats.chisquare(obs[keep], exp[keep] * obs[keep].sum() / exp[keep].sum())
    assert res.pvalue > 1e-3


def test_walk_frequencies_match_uniform_action_choice(world):
    # From a fixed state under the random-walk rule, P(tid) = P(s'|s,a) / #actions.
    from ctwm_cli.world.simulation import _walk

    v = int(np.argmax(np.diff(world.state_ptr)))
    lo, hi = int(world.state_ptr[v]), int(world.state_ptr[v + 1])
    gen = np.random.default_rng(5)
    counts = np.zeros(hi - lo, dtype=np.int64)
    for _ in range(4000):
        t = int(_walk(world, v, 1, gen)[0])
        counts[t - lo] += 1
    n_act = world.act_ptr[v + 1] - world.act_ptr[v]
    p = world.tid_prob[lo:hi] / n_act
    keep = p * 4000 > 5
    res = stats.chisquare(counts[keep], p[keep] * counts[keep].sum() / p[keep].sum())
    assert res.pvalue > 1e-3


def test_env_tracks_visits_and_validates(world):
    env = WorldEnv(world, seed=1)
    with pytest.raises(UsageError, match="reset"):
        env.step(0)
    s = env.reset(3)
    with pytest.raises(UsageError, match="action must be"):
        env.step(99)
    for _ in range(10):
        env.step(0)
    assert env.visits.sum() == 11 and env.visits[s] >= 1
    with pytest.raises(UsageError, match="state must be"):
        world.state(world.size)


def test_bad_world_parameters():
    g = make_graph("uniform", 50, rng=0)
    with pytest.raises(UsageError, match="actions_min"):
        World(g, seed=0, actions_min=3, actions_max=2)
    with pytest.raises(UsageError, match="unknown world parameter"):
        build_world(g, seed=0, colour=3)


def test_a_recorded_world_counts_and_lists_like_a_built_one(tmp_path):
    """One definition of the counts and queries serves a file of recorded episodes too."""
    from ctwm_cli.replay.recorded import read_episodes

    rows = [("kitchen", "open fridge", "kitchen"), ("kitchen", "go north", "hall"), ("hall", "go south", "kitchen"),
            ("kitchen", "go north", "hall"), ("hall", "go south", "cellar"), ("cellar", "climb", "kitchen")]
    path = tmp_path / "eps.jsonl"
    path.write_text("".join(json.dumps({"run": "r", "state": s, "action": a, "observation": o}) + "\n"
                            for s, a, o in rows))
    w = read_episodes(path).world
    assert w.n_actions == len({(s, a) for s, a, _ in rows})
    assert w.n_transitions == len(set(rows))
    kitchen = w.places.index("kitchen")
    assert w.actions(kitchen) == ["open fridge", "go north"]
    north = w.transitions_of(kitchen, 1)
    assert [w.places[d] for d in w.tid_dst[north]] == ["hall"]
    hall = w.places.index("hall")
    assert sorted(w.places[d] for d in w.tid_dst[w.transitions_of(hall, 0)]) == ["cellar", "kitchen"]
