"""Memory store and the retriever ladder, against brute-force reference computations."""

from __future__ import annotations

import collections

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from ctwm_cli.common.errors import UsageError
from ctwm_cli.memory import TransitionStore, make_retriever, make_store
from ctwm_cli.world.run import WorldConfig, simulate

N_STATES = 6


def _edge(tid: int) -> tuple[int, int]:
    """A fixed toy transition table: tid -> (src, dst) over N_STATES states."""
    return tid % N_STATES, (tid // N_STATES + tid + 1) % N_STATES


def _brute_top(freqs: dict[int, int], k: int) -> list[int]:
    return [t for t, _ in sorted(freqs.items(), key=lambda kv: (-kv[1], kv[0]))][:k]


@settings(max_examples=60, deadline=None)
@given(
    writes=st.lists(st.integers(0, 29), min_size=1, max_size=120),
    capacity=st.integers(1, 12),
    eviction=st.sampled_from(["lfu", "random"]),
    seed=st.integers(0, 2**16),
)
def test_store_invariants_match_brute_force(writes, capacity, eviction, seed):
    store = TransitionStore(capacity, 30, N_STATES, eviction=eviction, seed=seed)
    model: dict[int, int] = {}
    for tid in writes:
        src, dst = _edge(tid)
        before = dict(model)
        victim = store.write(tid, src, dst)
        if tid in model:
            assert victim == -1
            model[tid] += 1
        else:
            if len(model) >= capacity:
                assert victim in before
                if eviction == "lfu":
                    assert before[victim] == min(before.values())
                del model[victim]
            else:
                assert victim == -1
            model[tid] = 1
        assert store.frequencies() == model
        assert len(store) == len(model) <= capacity
        for s in range(N_STATES):
            expect = {t for t in model if s in _edge(t)}
            assert sorted(store.of_state(s)) == sorted(expect)
        for k in (1, 3, 50):
            assert store.top(k) == _brute_top(model, k)


def test_uniform_frequency_returns_the_most_frequent_items():
    rng = np.random.default_rng(0)
    writes = rng.zipf(1.6, size=3000) % 60
    r = make_retriever("uniform-frequency", k=5)
    store = make_store(r, 1000, 60, N_STATES, seed=0)  # large: nothing evicted
    for tid in writes.tolist():
        store.write(tid, *_edge(tid))
    counts = collections.Counter(writes.tolist())
    expect = [t for t, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))][:5]
    for state in range(N_STATES):  # whatever the state
        assert r.retrieve(store, state) == expect


def test_state_frequency_ranks_state_matches_then_falls_back():
    r = make_retriever("state-frequency", k=2)
    store = make_store(r, 100, 60, 10, seed=0)
    # tid -> (src, dst); state 9 touched by nothing
    table = {1: (0, 1), 2: (1, 2), 3: (2, 0), 4: (0, 2), 5: (3, 4)}
    for tid, n in {1: 5, 2: 1, 3: 7, 4: 2, 5: 9}.items():
        for _ in range(n):
            store.write(tid, *table[tid])
    assert r.retrieve(store, 0) == [3, 1]  # matches of state 0: 1 (5), 3 (7), 4 (2)
    assert r.retrieve(store, 4) == [5]
    assert r.retrieve(store, 9) == [5, 3]  # no match: global top-k
    assert store.eviction == "lfu"


def test_state_uniform_picks_state_matches_uniformly():
    r = make_retriever("state-uniform", k=3, seed=1)
    store = make_store(r, 100, 60, 10, seed=0)
    matches = [10, 11, 12, 13, 14, 15, 16]
    for i, tid in enumerate(matches):
        for _ in range(1 + 10 * i):  # very different frequencies: must not matter
            store.write(tid, 0, 1 + i % 3)
    store.write(40, 5, 6)  # not a match of state 0
    n = 14_000
    first = collections.Counter()
    anywhere = collections.Counter()
    for _ in range(n):
        got = r.retrieve(store, 0)
        assert len(got) == 3 and len(set(got)) == 3 and set(got) <= set(matches)
        first[got[0]] += 1
        anywhere.update(got)
    obs_first = np.array([first[t] for t in matches])
    assert stats.chisquare(obs_first).pvalue > 1e-3
    obs_any = np.array([anywhere[t] for t in matches])
    assert stats.chisquare(obs_any).pvalue > 1e-3
    # fewer matches than k: all of them, in uniformly random order
    order = collections.Counter(tuple(r.retrieve(store, 5)) for _ in range(10))
    assert set(order) == {(40,)}


def test_state_uniform_orders_few_matches_uniformly():
    r = make_retriever("state-uniform", k=5, seed=3)
    store = make_store(r, 10, 10, 4, seed=0)
    for tid in (1, 2, 3):
        store.write(tid, 0, tid)
    perms = collections.Counter(tuple(r.retrieve(store, 0)) for _ in range(6000))
    assert len(perms) == 6 and all(sorted(p) == [1, 2, 3] for p in perms)
    assert stats.chisquare(np.array(list(perms.values()))).pvalue > 1e-3


@pytest.mark.parametrize("retriever", ["uniform-frequency", "state-frequency", "state-uniform", "none"])
def test_retrieval_happens_before_the_write(retriever):
    sim = simulate(WorldConfig(family="scale-free", size=100, steps=3000, seed=5, retriever=retriever))
    if retriever == "none":
        assert sim.retrieved.size == 0
        return
    first_write = {}
    for t, tid in enumerate(sim.transitions.tolist()):
        first_write.setdefault(tid, t)
    for step, tid in zip(sim.retrieved_step.tolist(), sim.retrieved.tolist(), strict=True):
        assert first_write[tid] < step
    assert sim.retrieved_step.min() >= 1  # nothing to retrieve at step 0
    assert sim.retrieved_rank.max() <= 3


def test_bad_arguments():
    with pytest.raises(UsageError, match="capacity"):
        TransitionStore(0, 10, 2)
    with pytest.raises(UsageError, match="eviction"):
        TransitionStore(5, 10, 2, eviction="lru")
    with pytest.raises(UsageError, match="unknown retriever"):
        make_retriever("bm25")
    with pytest.raises(UsageError, match="k must be"):
        make_retriever("state-frequency", k=0)
