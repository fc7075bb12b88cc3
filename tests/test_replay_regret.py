"""Regret against each arm's own ceiling, and planted differences the replay must detect with the
right sign, in open and closed loop: memory off (the ``none`` policy), top-k = 1, a starved budget."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from ctwm_cli.replay import Arm, ReplayConfig, arm_metrics, episode, make_agent, paired_deltas, run_episode, tail_states

CFG = dict(size=100, steps=800, seeds=(1, 2, 3), bootstrap=300)
GRAPH = Arm(memory="graph", encoding="compact")
STARVED = 85  # tokens: the fixed lines and room for one memory line


def _logs(cfg: ReplayConfig, arm: Arm, closed: bool) -> list:
    out = []
    for s in cfg.seeds:
        ep = episode(cfg, s)
        g = run_episode(ep, arm, cfg, agent=make_agent("reader") if closed else None)
        g.tail = tail_states(g.states, ep.world.size)[g.states]
        out.append(g)
    return out


@pytest.fixture(scope="module", params=["open", "closed"])
def planted(request):
    closed = request.param == "closed"
    cfg = ReplayConfig(**CFG, agent="reader" if closed else "random-walk").checked()
    return closed, {
        "graph": _logs(cfg, GRAPH, closed),
        "none": _logs(cfg, Arm(memory="none", encoding="compact"), closed),
        "k1": _logs(dataclasses.replace(cfg, k=1), GRAPH, closed),
        "starved": _logs(dataclasses.replace(cfg, budget=STARVED), GRAPH, closed),
    }


def _delta(treat, base, metric, closed, **kw):
    got = paired_deltas(treat, base, None, replicates=300, block="auto", level=0.95, rng=np.random.default_rng(0),
                        metrics=(metric,), regret=closed, **kw)
    assert len(got) == 1
    return got[0]


@pytest.mark.parametrize("worse,metric", [("none", "answerable_tail_error"), ("none", "answerable_overall_error"),
                                          ("k1", "answerable_overall_error"),
                                          ("starved", "answerable_overall_error")])
def test_a_planted_worse_memory_is_detected_with_the_right_sign(planted, worse, metric):
    closed, logs = planted
    d = _delta(logs[worse], logs["graph"], metric, closed)
    assert d.metric == (f"{metric}_oracle_regret" if closed else metric)
    assert d.interval_status == "formed" and d.confidence_interval.low > 0, d  # worse: positive, significant
    assert d.mde is not None and d.mde > 0


def test_none_prompt_holds_no_memory_and_is_the_floor(planted):
    _, logs = planted
    none, graph = arm_metrics(logs["none"]), arm_metrics(logs["graph"])
    assert none.evidence_in_prompt == 0 and none.items_injected == 0
    assert none.tokens_mean < graph.tokens_mean
    assert none.answerable_overall_error > graph.answerable_overall_error


def test_regret_is_error_minus_the_counts_and_oracle_rows_on_the_arms_own_steps(planted):
    _, logs = planted
    for g in logs.values():
        m = arm_metrics(g)
        wrong = np.concatenate([~x.correct for x in g])
        cw = np.concatenate([~x.counts_correct for x in g])
        ow = np.concatenate([~x.oracle_correct for x in g])
        ans = np.concatenate([x.transition_evidence for x in g])
        tail = np.concatenate([x.tail for x in g])
        at = ans & tail
        assert m.answerable_tail_error_regret == pytest.approx(wrong[at].mean() - cw[at].mean())
        assert m.answerable_overall_error_regret == pytest.approx(wrong[ans].mean() - cw[ans].mean())
        assert m.overall_error_oracle_regret == pytest.approx(wrong.mean() - ow.mean())
        assert m.tail_error_regret == pytest.approx(wrong[tail].mean() - cw[tail].mean())


def test_open_loop_regret_deltas_equal_the_exactly_paired_deltas():
    """Open loop: every arm has the same steps, so the counts reference cancels from a difference of
    regrets, intervals included (the same blocks are drawn, since the per-step difference is the same)."""
    cfg = ReplayConfig(**CFG).checked()
    a, b = _logs(cfg, Arm(memory="ctwm", encoding="compact", tau=1.0), False), _logs(cfg, GRAPH, False)
    metrics = ("tail_error", "overall_error", "answerable_tail_error", "answerable_overall_error")
    raw = paired_deltas(a, b, None, replicates=300, block="auto", level=0.95, rng=np.random.default_rng(4),
                        metrics=metrics)
    reg = paired_deltas(a, b, None, replicates=300, block="auto", level=0.95, rng=np.random.default_rng(4),
                        metrics=metrics, regret=True)
    assert [d.metric for d in reg] == [f"{m}_oracle_regret" for m in metrics]
    for r, g in zip(raw, reg, strict=True):
        assert g.delta == pytest.approx(r.delta, abs=1e-12)
        assert g.block == r.block and g.interval_status == r.interval_status
        if r.confidence_interval is not None:
            gi, ri = g.confidence_interval, r.confidence_interval
            assert (gi.low, gi.high, g.mde) == pytest.approx((ri.low, ri.high, r.mde), abs=1e-12)


def test_closed_loop_task_metrics_are_per_episode_and_resampled_by_episode():
    cfg = ReplayConfig(**{**CFG, "steps": 400, "seeds": tuple(range(1, 7))}, agent="reader").checked()
    g, n = _logs(cfg, GRAPH, True), _logs(cfg, Arm(memory="none", encoding="compact"), True)
    d = _delta(n, g, "tasks_per_episode", True)
    assert d.resampling == "episodes" and d.units == 6 and d.interval_status == "formed"
    assert d.delta == pytest.approx((sum(x.tasks_reached for x in n) - sum(x.tasks_reached for x in g)) / 6)
    few = _delta(n[:3], g[:3], "tasks_per_episode", True)
    assert few.confidence_interval is None and few.interval_status.startswith("not formable: 3 episode(s)")


def test_frozen_trajectory_term_has_an_interval_over_episodes(tmp_path):
    from scipy import stats

    from ctwm_cli.replay import frozen_replay, replay_encodings

    cfg = ReplayConfig(size=100, steps=300, seeds=(1, 2, 3, 4), bootstrap=0, agent="reader", budget=200)
    replay_encodings(cfg, memory="graph", seed=1, out=tmp_path / "closed")
    res = frozen_replay(tmp_path / "closed", "verbose")
    (term,) = [t for t in res.trajectory_terms if t.live_encoding == "compact"]
    terms = [r.trajectory_term for r in res.results if r.live_encoding == "compact"]
    assert term.episodes == 4 and term.mean == pytest.approx(np.mean(terms))
    lo, hi = stats.t.interval(0.95, 3, loc=np.mean(terms), scale=np.std(terms, ddof=1) / 2)
    assert (term.confidence_interval.low, term.confidence_interval.high) == pytest.approx((lo, hi))
    assert term.interval_status.startswith("formed")


def test_majority_evidence_is_graded_below_any_outcome_evidence(planted):
    """Top-k = 1 shows an outcome of (s, a) on most answerable steps, but not always the most seen one."""
    _, logs = planted
    for g in logs.values():
        m = arm_metrics(g)
        assert m.majority_evidence_in_prompt <= m.evidence_in_prompt
    k1 = arm_metrics(logs["k1"])
    assert k1.majority_evidence_in_prompt < k1.evidence_in_prompt
    assert arm_metrics(logs["none"]).majority_evidence_in_prompt == 0
    cfg = ReplayConfig(**{**CFG, "seeds": (1,)}).checked()
    full = arm_metrics(_logs(cfg, Arm(memory="full", encoding="compact"), False))
    assert full.majority_evidence_in_prompt == full.evidence_in_prompt == 1


def test_closed_loop_headline_regret_forms_where_the_arms_show_the_evidence(run_cli):
    """Against counts the answerable regret was 0 at every step where the reader read the evidence (it
    then predicts what counts predicts), so the default ``--min-effect`` metric was never formed ("not
    formed: the numerator is 0 at every episode under both arms") and any --min-effect X exited 1.
    Against the oracle it forms, and a large effect is detectable."""
    import json

    args = ["replay", "compare", "--agent", "reader", "--memory", "graph,ctwm", "--size", "100", "--steps", "400",
            "--episodes", "6", "--seed", "1", "--bootstrap", "300"]
    res = run_cli([*args, "--json", "--min-effect", "0.9"])
    assert res.code == 0, res.err
    d = next(c for c in json.loads(res.out)["comparisons"] if c["metric"] == "answerable_tail_error_oracle_regret")
    assert d["interval_status"] == "formed" and d["resampling"] == "episodes" and d["units"] == 6
