"""``ctwm simulate`` wiring: modes, output formats, errors naming the option, plots."""

from __future__ import annotations

import csv
import io
import json

import pytest

from ctwm_cli.allocation import allocate, tau_sweep
from ctwm_cli.common.errors import EXIT_USAGE


def test_single_tau_table(run_cli):
    res = run_cli(["simulate", "--tau", "1.0", "--items", "1000", "--core", "10", "--budget", "512"])
    assert res.code == 0, res.err
    assert "CTWM allocation" in res.out and "tail 11-1,000 (990 items)" in res.out
    assert "core mass" in res.out and "Gini" in res.out and "max/median" in res.out
    assert res.err == ""


def test_defaults_and_json(run_cli):
    res = run_cli(["simulate", "--json"])
    assert res.code == 0, res.err
    doc = json.loads(res.out)
    assert doc["command"] == "simulate" and doc["mode"] == "allocation"
    assert (doc["n_items"], doc["core"], doc["budget"], doc["tau"]) == (1000, 10, 512, 1.0)
    a = allocate(1000, 1.0, core=10, budget=512)
    assert doc["core_mass"] == a.core_mass
    assert [r["slots"] for r in doc["ranks"]] == a.core_slots.tolist()
    assert doc["tail"]["slots"] == a.tail_slots
    assert sum(r["slots"] for r in doc["ranks"]) + doc["tail"]["slots"] == 512


def test_large_m_json_is_small(run_cli):
    res = run_cli(["simulate", "-M", "1000000", "-K", "500", "-t", "0.01", "--json", "--show", "5"])
    assert res.code == 0, res.err
    doc = json.loads(res.out)
    assert len(doc["ranks"]) == 5 and doc["ranks_listed"] == 5
    assert len(res.out) < 5000


def test_csv_rows(run_cli):
    res = run_cli(["simulate", "-K", "3", "-M", "20", "-B", "30", "--format", "csv"])
    assert res.code == 0, res.err
    rows = list(csv.DictReader(io.StringIO(res.out)))
    assert [r["rank"] for r in rows] == ["1", "2", "3", "tail (4-20)"]
    assert sum(int(r["slots"]) for r in rows) == 30


def test_sweep_table_and_json(run_cli):
    res = run_cli(["simulate", "--sweep", "0.25:2.0:7"])
    assert res.code == 0, res.err
    assert "monotonicity in τ" in res.out and "guaranteed (Thm A.4)" in res.out and "observed" in res.out
    res = run_cli(["simulate", "--sweep", "0.25:2.0:7", "--json"])
    doc = json.loads(res.out)
    assert doc["mode"] == "sweep" and len(doc["results"]) == 7
    expected = tau_sweep(1000, [r["tau"] for r in doc["results"]], core=10, budget=512)
    assert [r["core_mass"] for r in doc["results"]] == [r.core_mass for r in expected.results]
    assert all(c["increasing"] for c in doc["checks"])


def test_repeated_tau_is_a_sweep(run_cli):
    res = run_cli(["simulate", "-t", "2", "-t", "0.5", "-t", "1", "--format", "jsonl"])
    assert res.code == 0, res.err
    rows = [json.loads(line) for line in res.out.splitlines()]
    assert [r["tau"] for r in rows] == [0.5, 1.0, 2.0]
    assert [r["check"] for r in rows] == ["–", "ok", "ok"]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--tau", "0"], "--tau"),
        (["--tau", "-1"], "--tau"),
        (["--core", "0"], "--core"),
        (["--core", "1000"], "--core"),
        (["--items", "5", "--core", "5"], "--core"),
        (["--items", "1", "--core", "1"], "--items"),
        (["--budget", "0"], "--budget"),
        (["--sweep", "1:2"], "--sweep"),
        (["--sweep", "2:1:3"], "--sweep"),
        (["--sweep", "0.5:1:x"], "--sweep"),
        (["--sweep", "0.5:1:3", "--tau", "1"], "--sweep"),
        (["--show", "-1"], "--show"),
        (["--plot", "x.png"], "--plot"),
        (["--sweep", "1:2:3", "--plot", "/nonexistent-dir/x.png"], "--plot"),
        (["--items", "10", "--trace", "whatever.jsonl"], "--items"),
    ],
)
def test_usage_errors_name_the_option(run_cli, args, needle):
    res = run_cli(["simulate", *args])
    assert res.code == EXIT_USAGE
    assert res.out == ""
    assert res.err.startswith("ctwm: error:") and needle in res.err
    assert len(res.err.strip().splitlines()) == 1


def test_trace_counts(run_cli, tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_text("".join(json.dumps({"item": f"m{i}", "count": 100 // (i + 1)}) + "\n" for i in range(30)))
    res = run_cli(["simulate", "--trace", str(p), "--sweep", "0.5:2:4", "-K", "5", "-B", "20"])
    assert res.code == 0, res.err
    assert "(counts ranking)" in res.out and "m0 (100)" in res.out and "share of accesses served" in res.out
    res = run_cli(["simulate", "--trace", str(p), "--sweep", "0.5:2:4", "-K", "5", "-B", "20", "--json"])
    doc = json.loads(res.out)
    assert doc["mode"] == "trace" and doc["ranking"] == "counts" and doc["core_items"] == [f"m{i}" for i in range(5)]
    assert len(doc["results"]) == 4 and doc["allocation"]["n_items"] == 30


def test_trace_step_ranking_with_remap(run_cli, tmp_path):
    p = tmp_path / "s.jsonl"
    rows = [{"mem": f"m{(s + r) % 7}", "t": s, "position": r + 1} for s in range(10) for r in range(4)]
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    res = run_cli(["simulate", "--trace", str(p), "--item-col", "mem", "--step-col", "t", "--col", "rank=position",
                   "-K", "2", "-B", "4", "--json"])
    assert res.code == 0, res.err
    doc = json.loads(res.out)
    assert doc["ranking"] == "step" and doc["steps"] == 10 and doc["mean_list_length"] == 4.0


def test_trace_stdin_counts(run_cli):
    data = "".join(json.dumps({"item": f"m{i % 5}", "step": i, "rank": 1}) + "\n" for i in range(40)).encode()
    res = run_cli(["simulate", "--trace", "-", "-K", "2", "--json"], stdin=data)
    assert res.code == 0, res.err
    assert json.loads(res.out)["ranking"] == "counts"  # stdin can be read once: auto falls back to counts
    res = run_cli(["simulate", "--trace", "-", "-K", "2", "--ranking", "step"], stdin=data)
    assert res.code == EXIT_USAGE and "standard input" in res.err


def test_trace_errors(run_cli, tmp_path):
    res = run_cli(["simulate", "--trace", str(tmp_path / "missing.jsonl")])
    assert res.code == 3 and "no such file" in res.err
    p = tmp_path / "few.jsonl"
    p.write_text('{"item": "a"}\n{"item": "b"}\n')
    res = run_cli(["simulate", "--trace", str(p), "-K", "5"])
    assert res.code == 3 and "has 2 distinct items, so core=5 leaves no tail" in res.err  # the data, not the flag


@pytest.mark.parametrize(
    ("args", "match"),
    [(["-M", "100000000000"], "n_items = 100,000,000,000 is above the limit of 100,000,000"),
     (["--items", "1e11"], "--items"),
     (["--sweep", "0.25:2:100000000"], "is above the limit of 10,000 τ values"),
     (["--sweep", "0.25:2:1000", "-M", "1000000"], "above the limit of 200,000,000"),
     (["--budget", str(2**63)], "budget = 9,223,372,036,854,775,808 is above the limit")],
)
def test_sizes_that_cannot_fit_exit_2_with_the_limit(run_cli, args, match):
    res = run_cli(["simulate", *args])
    assert res.code == EXIT_USAGE and match in res.err, res.err


@pytest.mark.parametrize("budget", [2**53 + 1, 10**18 + 7, 2**63 - 1])
def test_budgets_above_2_53_sum_exactly_and_round_each_exact_quota(run_cli, budget):
    from fractions import Fraction

    res = run_cli(["simulate", "--budget", str(budget), "--tau", "0.7", "-M", "50", "-K", "7", "--json"])
    assert res.code == 0, res.err
    doc = json.loads(res.out)
    slots = [r["slots"] for r in doc["ranks"]] + [doc["tail"]["slots"]]
    assert sum(slots) == budget and doc["budget"] == budget
    a = allocate(50, 0.7, core=7, budget=budget)
    # every slot is the floor or the ceiling of its exact quota B·w/Σw (w: the float shares)
    shares = [Fraction(w) for w in [*a.shares[:7].tolist(), a.tail_share]]
    for s, w in zip(slots, shares, strict=True):
        q = w * budget / sum(shares)
        assert q - 1 < s < q + 1


@pytest.mark.parametrize("suffix", [".png", ".svg"])
def test_plot_sweep(run_cli, tmp_path, suffix):
    out = tmp_path / f"fig{suffix}"
    res = run_cli(["simulate", "--sweep", "0.25:2:5", "--plot", str(out)])
    assert res.code == 0, res.err
    assert out.exists() and out.stat().st_size > 1000
    assert "plot written" in res.err


def test_plot_trace_and_bad_suffix(run_cli, tmp_path):
    p = tmp_path / "s.jsonl"
    p.write_text("".join(json.dumps({"item": f"m{(s * 3 + r) % 9}", "step": s, "rank": r + 1}) + "\n"
                         for s in range(6) for r in range(5)))
    out = tmp_path / "trace.png"
    res = run_cli(["simulate", "--trace", str(p), "-t", "0.5", "-t", "2", "-K", "2", "-B", "6", "--plot", str(out)])
    assert res.code == 0, res.err
    assert out.exists() and out.stat().st_size > 1000
    res = run_cli(["simulate", "--sweep", "0.25:2:5", "--plot", str(tmp_path / "fig.gif")])
    assert res.code == EXIT_USAGE and "--plot" in res.err


def test_help_mentions_defaults(run_cli):
    res = run_cli(["simulate", "--help"])
    assert res.code == 0
    for needle in ("--tau", "--sweep", "--items", "--core", "--budget", "--trace", "--plot", "1000", "512"):
        assert needle in res.out
