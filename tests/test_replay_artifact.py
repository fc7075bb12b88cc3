"""Replay after the paper's code (issue 30): ``tail_on``, the artifact variants of flat/graph/ctwm, ``--preset``."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pyarrow.parquet as pq
import pytest

from ctwm_cli.common.errors import UsageError
from ctwm_cli.memory.artifact import FiveFeatureCoreTail, draw_ranks, make_variant_policy
from ctwm_cli.memory.base import EpisodicMemory
from ctwm_cli.memory.encodings import make_encoding
from ctwm_cli.memory.tokens import token_counter
from ctwm_cli.replay import ReplayConfig, episode, frozen_replay, replay_compare, tail_steps


def test_tail_masks_on_a_hand_built_trajectory():
    # s_0..s_6 = 0 1 0 1 2 0 3: steps t = 0..5 with states s_0..s_5 and next states s_1..s_6
    traj = np.array([0, 1, 0, 1, 2, 0, 3])
    states, nxt = traj[:-1], traj[1:]
    # current: visits over s_0..s_5 are 0:3, 1:2, 2:1 -> floor(3/2) = 1 tail state {2}: step 4
    assert tail_steps(states, nxt, 4, "current").tolist() == [False, False, False, False, True, False]
    # next: visits over s_0..s_6 add 3:1 -> floor(4/2) = 2 tail states {2, 3}: steps whose s_{t+1} is 2 or 3
    assert tail_steps(states, nxt, 4, "next").tolist() == [False, False, False, True, False, True]
    with pytest.raises(UsageError, match="tail_on must be one of current, next"):
        tail_steps(states, nxt, 4, "previous")


def test_tail_error_on_next_is_the_error_over_steps_into_tail_states(tmp_path):
    cfg = ReplayConfig(size=100, steps=300, seeds=(4,), bootstrap=0, tail_on="next")
    res = replay_compare(cfg, memories=["graph", "ctwm"], out=tmp_path / "r")
    steps = pq.read_table(tmp_path / "r" / "steps.parquet").to_pydict()
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
    assert manifest["tail_states"].startswith("tail_on=next") and manifest["config"]["tail_on"] == "next"
    run = [i for i, r in enumerate(steps["run"]) if r == steps["run"][0]]
    traj = [steps["state"][i] for i in run] + [steps["next_state"][run[-1]]]
    visits = {v: traj.count(v) for v in set(traj)}
    tail = set(sorted(visits, key=lambda v: (visits[v], v))[: len(visits) // 2])
    mask = [steps["next_state"][i] in tail for i in run]
    assert [steps["tail_state"][i] for i in run] == mask
    wrong = [not steps["correct"][i] for i, m in zip(run, mask, strict=True) if m]
    arm = next(a for a in res.arms if steps["run"][0].startswith(a.arm))
    assert arm.tail_error == pytest.approx(sum(wrong) / len(wrong))
    cur_visits = {v: traj[:-1].count(v) for v in set(traj[:-1])}
    cur_tail = set(sorted(cur_visits, key=lambda v: (cur_visits[v], v))[: len(cur_visits) // 2])
    assert mask != [steps["state"][i] in cur_tail for i in run]  # the two readings differ on this episode
    frozen = frozen_replay(tmp_path / "r", "compact", runs=[steps["run"][0]])
    assert frozen.results[0].live_tail_error == pytest.approx(arm.tail_error)  # frozen replay reads tail_on too


def test_defaults_leave_the_config_as_it_was_and_the_preset_is_recorded():
    d = ReplayConfig().checked().to_dict()
    assert not {"tail_on", "preset", "flat_retrieval", "graph_retrieval", "ctwm_store"} & set(d)
    cfg = ReplayConfig(preset="artifact").checked()
    assert (cfg.tail_on, cfg.predictor, cfg.k, cfg.core, cfg.size) == ("next", "top1", 3, 3, 100)
    assert cfg.variants() == {"flat_retrieval": "uniform", "graph_retrieval": "recency", "ctwm_store": "five-feature"}
    wc = cfg.world_config(0).resolved()
    assert (wc.walk_rule, wc.world_params["actions_max"], wc.preset) == ("typed", 3, "artifact")
    # the comparison script's walk: a uniform action, then a uniform neighbour of the action's set
    w = episode(dataclasses.replace(cfg, steps=10), 0).world
    for g in range(w.out_ptr.size - 1):
        p = w.tid_prob[w.out_ptr[g]:w.out_ptr[g + 1]]
        np.testing.assert_allclose(p, 1 / p.size, rtol=0.02)
    assert episode(ReplayConfig(size=100, steps=10).checked(), 0).world.tid_prob.std() > 0.05  # default: uneven
    # an explicit option wins over the preset
    mine = ReplayConfig(preset="artifact", tail_on="current", ctwm_store="ranked", k=5, size=200).checked()
    assert (mine.tail_on, mine.ctwm_store, mine.k, mine.size, mine.flat_retrieval) == \
        ("current", "ranked", 5, 200, "uniform")
    with pytest.raises(UsageError, match="ctwm_store must be one of"):
        ReplayConfig(ctwm_store="lfu").checked()


def _memory(seed=2, steps=600):
    cfg = ReplayConfig(size=60, steps=steps, seeds=(seed,), preset="artifact").checked()
    ep = episode(cfg, seed)
    return ep, EpisodicMemory(ep.world)


def test_five_feature_scores_against_a_direct_computation_and_capacity():
    ep, mem = _memory()
    pol = make_variant_policy("ctwm", mem, core=3, seed=2, ctwm_store="five-feature")
    assert isinstance(pol, FiveFeatureCoreTail)
    pol.capacity = 40  # small, so that eviction happens within the episode
    enc, counter = make_encoding("compact", ep.world), token_counter("cl100k_base")
    tids = ep.tids.tolist()
    src, dst = ep.world.tid_src.tolist(), ep.world.tid_dst.tolist()
    for t, tid in enumerate(tids):
        r = pol.retrieve(src[tid], 0)
        mates = [x for x in r.tids[:pol._k] if src[x] == src[tid]]
        assert r.tids[:len(mates)] == tuple(mates)  # state-mates come first among the core lines
        p = pol.render(r, src[tid], 0, enc, counter)
        assert p.injected == r.tids[:pol._k] and set(p.summarised) <= set(r.tids[pol._k:])  # core lines, then tail
        mem.write(tid, t)
        assert len(pol.ids) <= 40
    assert pol.evictions > 0
    # features recomputed from the trajectory for the stored entries
    hist = tids
    visits = np.bincount(np.r_[[src[x] for x in hist], [dst[x] for x in hist]], minlength=ep.world.size)
    succ = {s: {dst[x] for x in hist if src[x] == s} for s in set(src[x] for x in hist)}
    outw = np.bincount([src[x] for x in hist], minlength=ep.world.size)
    ids = pol.ids
    f = np.array([pol.f[t] for t in ids], float)
    q = np.array([1 / (1 + pol.q[t][0] / pol.q[t][1]) if pol.q[t][1] else 0.0 for t in ids])
    d = np.array([len(succ[src[t]]) / outw[src[t]] for t in ids])
    v = np.array([1 / visits[dst[t]] for t in ids])

    def z(x):
        return (x - x.mean()) / x.std() if x.std() > 1e-9 else x - x.mean()
    np.testing.assert_allclose(pol.scores(), 0.3 * z(f) + 0.2 * z(q) + 0.2 * z(d) + 0.15 * z(v), atol=1e-12)


def test_draw_ranks_follows_rank_power_weights():
    rng = np.random.default_rng(7)
    first = np.bincount([draw_ranks(5, 2, 1.0, rng)[0] for _ in range(20_000)], minlength=5) / 20_000
    w = 1 / np.arange(1, 6)
    np.testing.assert_allclose(first, w / w.sum(), atol=0.012)
    assert sorted(draw_ranks(3, 5, 1.0, rng)) == [0, 1, 2]  # at most n, without replacement


def test_uniform_flat_draws_every_stored_transition_alike_and_recency_graph_is_newest_first():
    ep, mem = _memory(steps=400)
    flat = make_variant_policy("flat", mem, k=3, seed=2, flat_retrieval="uniform")
    graph = make_variant_policy("graph", mem, k=3, seed=2, graph_retrieval="recency")
    tids = ep.tids.tolist()
    src = ep.world.tid_src.tolist()
    last_out: dict[int, list[int]] = {}
    for t, tid in enumerate(tids):
        mem.write(tid, t)
        last_out.setdefault(src[tid], []).append(tid)
    s = src[tids[-1]]
    recent = list(dict.fromkeys(last_out[s][-3:][::-1]))
    assert graph.retrieve(s, 0).tids[:len(recent)] == tuple(recent)
    stored = len(set(tids))
    hits = np.bincount([flat.retrieve(0, 0).tids[0] for _ in range(20_000)], minlength=ep.world.n_transitions)
    seen = hits[sorted(set(tids))]
    assert (hits > 0).sum() == stored  # only stored transitions, every one of them
    chi2 = ((seen - 20_000 / stored) ** 2 / (20_000 / stored)).sum()
    assert chi2 < stored + 5 * np.sqrt(2 * stored)  # uniform: chi^2 ~ its degrees of freedom


def test_cli_preset_records_every_choice(run_cli, tmp_path):
    r = run_cli(["replay", "compare", "--preset", "artifact", "--memory", "flat,graph,ctwm", "--steps", "120",
                 "--episodes", "1", "--seed", "3", "--bootstrap", "0", "--tail-on", "current", "-o", tmp_path / "o",
                 "--json"])
    assert r.code == 0, r.err
    cfg = json.loads(r.out)["config"]
    assert (cfg["preset"], cfg["tail_on"], cfg["predictor"], cfg["ctwm_store"], cfg["size"]) == \
        ("artifact", "current", "top1", "five-feature", 100)
    manifest = json.loads((tmp_path / "o" / "manifest.json").read_text())
    assert manifest["tail_states"].startswith("tail_on=current")
    assert "--preset artifact" in manifest["episodes"]["3"]["world_run"]
    # the variants' seeded draws are part of rho: a frozen replay reproduces every retrieval
    frozen = run_cli(["replay", "frozen", tmp_path / "o", "--encoding", "verbose", "--json"])
    assert frozen.code == 0 and json.loads(frozen.out)["all_identical"] is True, frozen.err
    bad = run_cli(["replay", "--tail-on", "previous"])
    assert bad.code == 2


def test_preset_defaults_match_the_library():
    from ctwm_cli.world.presets import ARTIFACT_REPLAY_DEFAULTS

    base = ReplayConfig()
    assert {k: getattr(base, k) for k in ARTIFACT_REPLAY_DEFAULTS} == \
        {k: d for k, (d, _) in ARTIFACT_REPLAY_DEFAULTS.items()}  # "at the default" means ReplayConfig's default


@pytest.mark.slow
def test_preset_gives_the_codes_tail_error_ordering():
    """The paper's code's memory comparison: Full >= Flat > Graph > CTWM on s_{t+1}'s tail (6 episodes)."""
    res = replay_compare(ReplayConfig(preset="artifact", seeds=tuple(range(6)), bootstrap=300),
                         memories=["full", "flat", "graph", "ctwm"], seed=0)
    err = {a.memory: a.tail_error for a in res.arms}
    assert err["full"] >= err["flat"] > err["graph"] + 0.05 and err["ctwm"] < err["graph"]
    d = next(c for c in res.comparisons if c.metric == "tail_error" and c.treatment.startswith("ctwm"))
    assert d.confidence_interval.high < 0  # CTWM's gain over Graph is resolved on these episodes
