"""Open vs closed loop, answerable metrics and reference rows, matched budgets, Pareto, and the shared
paired bootstrap's refusal to print an interval it cannot form."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from ctwm_cli.common.errors import InputError, UsageError
from ctwm_cli.memory.encodings import make_encoding
from ctwm_cli.memory.policies import EpisodicMemory, make_policy
from ctwm_cli.memory.predictor import make_predictor
from ctwm_cli.memory.tokens import token_counter
from ctwm_cli.models.llm import ChatClient
from ctwm_cli.replay import (
    Arm,
    ReplayConfig,
    episode,
    frozen_replay,
    make_agent,
    replay_compare,
    replay_encodings,
    replay_pareto,
    run_episode,
)
from ctwm_cli.replay.agents import AgentDecision, decision_prompt
from ctwm_cli.replay.experiments import check_arms, replay_logs
from ctwm_cli.stats.paired import BlockResample, IndexResample, paired_delta

SMALL = dict(size=100, steps=400, seeds=(3,), bootstrap=100, block=50)


def _states(memories, agent):
    """The state sequence each memory policy visits on seed 3 under ``agent``."""
    cfg = ReplayConfig(**{**SMALL, "agent": agent})
    ep = episode(cfg, 3)
    out = {}
    for m in memories:
        agent_obj = make_agent(agent) if cfg.loop == "closed" else None
        log = run_episode(ep, Arm(memory=m, encoding="compact"), cfg, counter=token_counter("cl100k_base"),
                          predictor=make_predictor("reader"), agent=agent_obj)
        out[m] = log.states
    return out


def test_closed_loop_task_bookkeeping_is_consistent():
    from ctwm_cli.replay.runner import MAX_TASK_STEPS

    cfg = ReplayConfig(**{**SMALL, "steps": 1500, "agent": "reader"})
    log = run_episode(episode(cfg, 3), Arm(memory="graph", encoding="compact"), cfg, agent=make_agent("reader"))
    ends = log.task_end_steps
    assert 0 < log.tasks_reached <= log.tasks_started
    assert int((ends > 0).sum()) == log.tasks_reached == len(log.task_lengths)
    assert list(ends[ends > 0]) == log.task_lengths and max(log.task_lengths) <= MAX_TASK_STEPS
    assert log.decision_tokens.min() > 0


def test_closed_loop_policies_visit_different_states_open_loop_identical():
    closed = _states(["graph", "ctwm"], "reader")
    assert closed["graph"].size == closed["ctwm"].size == 400
    assert not np.array_equal(closed["graph"], closed["ctwm"])
    again = _states(["graph"], "reader")  # deterministic given the seed
    assert np.array_equal(again["graph"], closed["graph"])
    opened = _states(["graph", "ctwm"], "random-walk")
    assert np.array_equal(opened["graph"], opened["ctwm"])


def test_answerable_metrics_and_reference_rows():
    res = replay_compare(ReplayConfig(size=100, steps=1000, seeds=(1, 2), bootstrap=100), memories=["full", "graph"],
                         seed=1)
    full = next(a for a in res.arms if a.memory == "full")
    assert full.evidence_in_prompt == 1.0  # full history shows every past step
    oracle, counts = res.references
    assert oracle.name == "oracle" and counts.name == "counts"
    assert all(a.answerable_steps == oracle.answerable_steps for a in res.arms)  # open loop: the same steps
    # the oracle knows the true probabilities: below every policy on the answerable steps
    assert all(oracle.answerable_overall_error < a.answerable_overall_error for a in res.arms)
    assert counts.overall_error > counts.answerable_overall_error  # counts has no answer on unanswerable steps
    assert {"answerable_tail_error", "evidence_in_prompt"} <= {c.metric for c in res.comparisons}


def test_matched_ctwm_never_spends_more_than_graph_except_its_minimal_prompt():
    cfg = ReplayConfig(**{**SMALL, "budget": 1024}).checked()
    arms = check_arms(cfg, [Arm(memory="graph", encoding="compact"),
                            Arm(memory="ctwm", encoding="compact", match_tokens="graph"),
                            Arm(memory="ctwm", encoding="compact")])
    _, logs = replay_logs(cfg, arms, counter=token_counter("cl100k_base"), predictor=make_predictor("reader"),
                          agent=None)
    graph, matched, free = (logs[(i, 3)] for i in range(3))
    over = matched.tokens > graph.tokens
    assert int(over.sum()) == matched.matched_over_budget  # only where ctwm's minimal prompt is larger
    assert free.tokens.mean() > graph.tokens.mean() > matched.tokens.mean()  # unmatched ctwm fills its budget
    with pytest.raises(UsageError, match="open loop"):
        replay_compare(ReplayConfig(**{**SMALL, "agent": "reader"}), memories=["graph", "ctwm"], match_tokens="graph")


def test_pareto_tokens_non_decreasing_and_answers_at_equal_cost():
    res = replay_pareto(ReplayConfig(**SMALL), budgets="128:512:3", memories=["graph", "ctwm"], seed=1)
    assert res.budgets == (128, 320, 512)
    assert {p.arm for p in res.points} == {"graph", "ctwm(tau=1)", "ctwm(tau=1)[<=graph]"}
    for label, ok in res.tokens_non_decreasing.items():
        toks = [p.tokens_mean for p in res.points if p.arm == label]
        assert ok == all(a <= b + 1e-9 for a, b in itertools.pairwise(toks))
    assert res.tokens_non_decreasing["graph"]
    assert "At equal cost" in res.finding
    assert json.loads(json.dumps(res.to_dict()))["points"]


def test_block_longer_than_half_the_steps_gives_no_interval():
    res = replay_encodings(ReplayConfig(size=100, steps=200, seeds=(1,), bootstrap=50, block=150), memory="graph",
                           seed=1)
    assert all(c.confidence_interval is None and c.relative_confidence_interval is None
               and c.interval_status.startswith("not formable") for c in res.comparisons)
    x = np.arange(10.0)
    one = np.ones(10)
    d = paired_delta((x, one), (x * 0, one), IndexResample(1, 100, np.random.default_rng(0)), level=0.9,
                     treatment="a", baseline="b", metric="m")
    assert d.confidence_interval is None and d.interval_status.startswith("not formable")
    ok = BlockResample([100], 10, 100, np.random.default_rng(0))
    assert ok.status == "formed"


def test_frozen_replay_of_closed_loop_runs_reports_a_trajectory_term(tmp_path):
    # a tight budget: the verbose prompt holds fewer memories, so the reader agent acts differently
    cfg = ReplayConfig(**{**SMALL, "agent": "reader", "budget": 200})
    replay_encodings(cfg, memory="graph", seed=1, out=tmp_path / "closed")
    res = frozen_replay(tmp_path / "closed", "verbose")
    row = next(r for r in res.results if r.live_encoding == "compact")
    assert row.trajectory_run is not None and row.trajectory_identical is False
    assert row.trajectory_term is not None and row.trajectory_term != 0
    replay_encodings(ReplayConfig(**{**SMALL, "budget": 200}), memory="graph", seed=1, out=tmp_path / "open")
    row = next(r for r in frozen_replay(tmp_path / "open", "verbose").results if r.live_encoding == "compact")
    assert row.trajectory_identical is True and row.trajectory_term == 0


def test_endpoint_agent_acts_from_the_prompt(chat_server):
    def answer(body, srv):
        if "Goal: reach" in body["messages"][-1]["content"]:
            return '{"action": 0}'
        return "next-state=s0; confidence=low; evidence-rank=tail"

    srv = chat_server(answer)
    url = f"http://127.0.0.1:{srv.server_address[1]}/v1"
    cfg = ReplayConfig(size=100, steps=30, seeds=(1,), bootstrap=0, agent="endpoint",
                       agent_params={"base_url": url, "model": "m", "timeout": 5})
    res = replay_compare(cfg, memories=["graph"], baseline=None, seed=1)
    assert res.loop == "closed" and res.agent_stats["agent_calls"] == 30
    prompts = [r["messages"][-1]["content"] for r in srv.requests]
    assert all(p.startswith("Goal: reach s") and "Actions: a0..a" in p for p in prompts)


def test_endpoint_agent_retries_then_fails_with_the_last_answer(chat_server):
    srv = chat_server(lambda body, srv: "I would go north")
    url = f"http://127.0.0.1:{srv.server_address[1]}/v1"
    cfg = ReplayConfig(size=100, steps=20, seeds=(1,), bootstrap=0, agent="endpoint",
                       agent_params={"base_url": url, "model": "m", "retries": 2})
    with pytest.raises(InputError, match=r"gave no valid action after 3 attempt\(s\) at each of its first 5 steps; "
                                         r"last answer: 'I would go north'"):
        replay_compare(cfg, memories=["graph"], baseline=None, seed=1)
    assert len(srv.requests) == 15  # 5 steps x 3 attempts, then the run stops
    assert "That is not valid" in srv.requests[-1]["messages"][-1]["content"]


def test_endpoint_agent_explores_when_some_steps_go_unanswered(chat_server):
    calls = {"n": 0}

    def answer(body, srv):
        if "Goal: reach" not in body["messages"][1]["content"]:
            return "next-state=s0"
        calls["n"] += 1
        return '{"action": 0}' if calls["n"] % 4 == 1 else "no idea"  # every other step unanswered

    srv = chat_server(answer)
    url = f"http://127.0.0.1:{srv.server_address[1]}/v1"
    cfg = ReplayConfig(size=100, steps=12, seeds=(1,), bootstrap=0, agent="endpoint",
                       agent_params={"base_url": url, "model": "m", "retries": 1})
    res = replay_compare(cfg, memories=["graph"], baseline=None, seed=1)
    assert res.agent_stats["agent_unanswered"] > 0 and res.arms[0].steps == 12


@pytest.mark.parametrize(("kw", "match"), [
    ({"base_url": "file:///etc/passwd"}, "http:// or https://"),
    ({"timeout": float("nan")}, "finite number of seconds"),
    ({"timeout": -1}, "finite number of seconds"),
    ({"retries": -1}, "retries must be"),
])
def test_chat_client_refuses_bad_settings(kw, match):
    with pytest.raises(UsageError, match=match):
        ChatClient(**{"base_url": "http://127.0.0.1:9/v1", "model": "m", **kw})


def test_chat_client_caps_the_response_size(chat_server):
    srv = chat_server(lambda body, srv: "x" * 5000)
    client = ChatClient(base_url=f"http://127.0.0.1:{srv.server_address[1]}/v1", model="m", max_response_bytes=1000)
    with pytest.raises(InputError, match="larger than 1000 bytes"):
        client.complete([{"role": "user", "content": "hi"}])


def test_cli_closed_loop_endpoint_agent_and_deprecated_seeds(run_cli, chat_server):
    srv = chat_server(lambda body, srv: '{"action": 1}' if "Goal:" in body["messages"][-1]["content"] else "s0")
    url = f"http://127.0.0.1:{srv.server_address[1]}/v1"
    res = run_cli(["replay", "compare", "--memory", "graph,ctwm", "--agent", "endpoint", "--base-url", url,
                   "--model", "m", "--timeout", "5", "--size", "100", "--steps", "20", "--seeds", "1", "--seed", "1",
                   "--bootstrap", "0", "--json"])
    assert res.code == 0, res.err
    assert "--seeds is deprecated" in res.err
    doc = json.loads(res.out)
    assert doc["loop"] == "closed" and doc["config"]["seeds"] == [1]
    assert all(a["tasks_started"] >= 1 for a in doc["arms"])
    bad = run_cli(["replay", "compare", "--agent", "endpoint", "--base-url", "file:///etc/passwd", "--model", "m",
                   "--steps", "20", "--seed", "1"])
    assert bad.code == 2 and "http:// or https://" in bad.err
    bad = run_cli(["replay", "--predictor", "endpoint", "--base-url", url, "--model", "m", "--timeout", "nan",
                   "--steps", "20", "--seed", "1"])
    assert bad.code == 2 and "timeout" in bad.err


def test_cli_pareto_json_and_plot(run_cli, tmp_path):
    pytest.importorskip("matplotlib")
    fig = tmp_path / "p.png"
    res = run_cli(["replay", "pareto", "--size", "100", "--steps", "200", "--episodes", "1", "--budget", "150,400",
                   "--bootstrap", "50", "--block", "20", "--seed", "2", "--plot", str(fig), "--json"])
    assert res.code == 0, res.err
    doc = json.loads(res.out)
    assert doc["budgets"] == [150, 400] and doc["finding"]
    assert fig.stat().st_size > 0
    text = run_cli(["replay", "--size", "100", "--steps", "100", "--episodes", "1", "--block", "80", "--seed", "2"])
    assert text.code == 0 and "not formable" in text.out


@pytest.mark.parametrize("memory", ["full", "flat", "graph", "ctwm", "tiered"])
def test_decision_prompt_token_count_is_exact(memory):
    ep = episode(ReplayConfig(size=100, steps=300, seeds=(4,)), 4)
    mem = EpisodicMemory(ep.world)
    pol = make_policy(memory, mem, budget=300)
    counter = token_counter("cl100k_base")
    for t, tid in enumerate(ep.tids.tolist()[:250]):
        mem.write(tid, t)
        if hasattr(pol, "observe"):
            pol.observe(tid, t)
    s = int(ep.next_states[249])
    for enc_name in ("compact", "verbose"):
        text, tokens = decision_prompt(pol, s, 7, 3, make_encoding(enc_name, ep.world), counter)
        assert tokens == counter.count(text)
        assert "-> a" in text  # the memory lines reached the decision prompt
        d = AgentDecision(text)
        assert (d.goal, d.state, d.n_actions) == (7, s, 3)
