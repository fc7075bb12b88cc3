"""Replay metrics: tail states, per-arm numbers against an independent recomputation, paired CIs."""

from __future__ import annotations

import types

import numpy as np
import pandas as pd
import pytest

from ctwm_cli.replay import ReplayConfig, paired_deltas, replay_compare, tail_states
from ctwm_cli.replay.runner import Arm


def test_tail_states_bottom_half_with_ties_to_the_smaller_id():
    states = np.array([0, 0, 0, 1, 1, 2, 3, 3, 3, 3, 5])
    assert np.flatnonzero(tail_states(states, 7)).tolist() == [2, 5]  # 5 visited -> the 2 least visited
    assert np.flatnonzero(tail_states(np.array([3, 2, 1, 0]), 4)).tolist() == [0, 1]
    assert np.flatnonzero(tail_states(np.array([4, 4, 1, 1, 2]), 6)).tolist() == [2]


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("replay") / "run"
    cfg = ReplayConfig(family="scale-free", size=100, steps=400, seeds=(11, 12), bootstrap=300)
    res = replay_compare(cfg, memories=["full", "flat", "graph", "ctwm"], taus=(0.5, 2.0), out=out, seed=3)
    return res, out


def test_metrics_match_an_independent_recomputation(small_run):
    res, out = small_run
    steps = pd.read_parquet(out / "steps.parquet")
    assert len(res.arms) == 5 and steps["run"].nunique() == 10
    for arm in res.arms:
        memory, tau = arm.memory, arm.tau
        d = steps[(steps.memory == memory) & ((steps.tau == tau) if tau is not None else steps.tau.isna())]
        assert len(d) == 800
        assert arm.tokens_counted == "whole_request"
        assert arm.tokens_mean == pytest.approx(d.request_tokens.mean())
        assert arm.tokens_median == pytest.approx(d.request_tokens.median())
        assert arm.tokens_p95 == pytest.approx(np.percentile(d.request_tokens, 95))
        assert arm.user_tokens_mean == pytest.approx(d.prompt_tokens.mean())
        # the request adds the same system prompt and chat template at every step
        assert (d.request_tokens - d.prompt_tokens).nunique() == 1 and (d.request_tokens > d.prompt_tokens).all()
        assert arm.overall_error == pytest.approx(1 - d.correct.mean())
        tail = []
        for _, g in d.groupby("seed"):  # bottom half of visited states by visits, ties by id
            visits = g.state.value_counts()
            order = sorted(visits.index, key=lambda s: (visits[s], s))
            tail.append(g.state.isin(order[: len(order) // 2]))
        mask = pd.concat(tail)
        assert arm.tail_error == pytest.approx(1 - d.correct[mask].mean())
        se = d.state_evidence
        assert arm.state_coverage == pytest.approx(d.state_covered[se].mean())
        assert arm.transition_coverage == pytest.approx(d.transition_covered[d.transition_evidence].mean())
        assert (d.prediction == d.next_state).equals(d.correct)
    full = next(a for a in res.arms if a.memory == "full")
    assert full.state_coverage == 1 and full.transition_coverage == 1


def test_prompt_tokens_respect_the_budget_and_the_sweep_is_reported(small_run):
    res, out = small_run
    steps = pd.read_parquet(out / "steps.parquet")
    assert steps[steps.memory != "full"].prompt_tokens.max() <= 512
    assert [r.tau for r in res.tau_sweep] == [0.5, 2.0]
    lo, hi = res.tau_sweep
    # larger τ: more core mass at every rank cut (Theorem A.4), so fewer core lines spill into the
    # tail, and fewer tail slots, so fewer tail entries listed; and a shorter prompt
    assert lo.items_summarised >= hi.items_summarised
    assert lo.tail_items >= hi.tail_items
    assert lo.tokens_mean > hi.tokens_mean


def _log(name: str, tokens, correct, seed=0):
    n = len(tokens)
    ones = np.ones(n, bool)
    return types.SimpleNamespace(arm=Arm(memory=name, encoding="compact"), seed=seed, tokens=np.asarray(tokens),
                                 correct=np.asarray(correct, bool), state_covered=ones, state_evidence=ones,
                                 transition_covered=ones, transition_evidence=ones, counts_correct=ones,
                                 oracle_correct=ones)


def test_identical_arms_have_a_zero_delta_and_the_intervals_are_seeded():
    rng = np.random.default_rng(0)
    tok = rng.integers(100, 200, 1000)
    cor = rng.random(1000) < 0.4
    tail = [rng.random(1000) < 0.5]
    a, b = _log("graph", tok, cor), _log("ctwm", tok, cor)
    got = paired_deltas([a], [b], tail, replicates=200, block=25, level=0.9, rng=np.random.default_rng(1))
    # nothing differs: no [0, 0] "interval", but why there is none
    assert all(d.delta == 0 and d.confidence_interval is None and d.interval_status == "not formed: no step differs"
               for d in got)
    c = _log("ctwm", tok + 10, ~cor)
    one = paired_deltas([c], [a], tail, replicates=200, block=25, level=0.9, rng=np.random.default_rng(5))
    two = paired_deltas([c], [a], tail, replicates=200, block=25, level=0.9, rng=np.random.default_rng(5))
    assert [d.to_dict() for d in one] == [d.to_dict() for d in two]
    tokens = next(d for d in one if d.metric == "tokens_mean")
    assert tokens.delta == pytest.approx(10)
    # the same +10 at every step: every replicate gives 10, a certainty rather than an interval
    assert tokens.confidence_interval is None
    assert tokens.interval_status == "not formed: every replicate gave the same difference"
    assert tokens.relative == pytest.approx(10 / tok.mean())


def test_block_bootstrap_interval_covers_the_true_delta_near_its_level():
    """iid losses with error rates 0.5 and 0.4: the 90% interval of the difference covers 0.1 in
    about 90% of repetitions."""
    rng = np.random.default_rng(42)
    hits = 0
    reps = 300
    for _ in range(reps):
        n = 1500
        tail = [rng.random(n) < 0.5]
        a = _log("a", np.zeros(n), rng.random(n) < 0.5)
        b = _log("b", np.zeros(n), rng.random(n) < 0.6)
        d = next(x for x in paired_deltas([a], [b], tail, replicates=300, block=10, level=0.9, rng=rng,
                                          metrics=["overall_error"]))
        hits += d.confidence_interval.low <= 0.1 <= d.confidence_interval.high
    assert 0.84 <= hits / reps <= 0.96
