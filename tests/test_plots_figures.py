"""Paper figures drawn from results: the retriever ladder (Fig. 3) and the Appendix D x_min path."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("matplotlib")


def test_world_ladder_plot_shows_every_retriever_and_family(run_cli, tmp_path):
    out = tmp_path / "ladder.png"
    res = run_cli(["world", "ladder", "--family", "uniform", "--family", "scale-free", "--size", "50",
                   "--steps", "2000", "--seed", "1", "--plot", str(out), "--json"])
    assert res.code == 0, res.err
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and "figure:" in res.err
    from ctwm_cli.plots.ladder import plot_ladder
    from ctwm_cli.world.ladder import Ladder, LadderRow

    doc = json.loads(res.out)
    ladder = Ladder(results=tuple(LadderRow(**r) for r in doc["results"]), policy=doc["policy"], steps=doc["steps"],
                    k=doc["k"], capacity=doc["capacity"])
    fig = plot_ladder(ladder)
    ax = fig.axes[0]
    assert len(ax.patches) == len(ladder.rows) == 8  # one bar per (family, retriever)
    heights = sorted(round(p.get_height(), 9) for p in ax.patches)
    assert heights == sorted(round(r.gini, 9) for r in ladder.rows)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any(lab.startswith("none: no retrieval") for lab in labels)
    assert "store capacity" in ax.get_title()


def test_ladder_plot_path_is_checked_before_the_run(run_cli, tmp_path):
    res = run_cli(["world", "ladder", "--steps", "100000000", "--plot", str(tmp_path / "x.txt")])
    assert res.code == 2 and "--plot" in res.err


def test_replay_ablation_plot_draws_cost_and_error_per_arm(run_cli, tmp_path):
    out = tmp_path / "fig5.png"
    res = run_cli(["replay", "ablation", "--steps", "300", "--size", "100", "--episodes", "1", "--seed", "2",
                   "--bootstrap", "0", "--plot", str(out), "--json"])
    assert res.code == 0, res.err
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    bad = run_cli(["replay", "ablation", "--steps", "300", "--plot", str(tmp_path / "fig.txt")])
    assert bad.code == 2 and "--plot" in bad.err  # checked before the replay runs


def test_replay_plot_bars_match_the_result():
    from ctwm_cli.plots.replay import plot_replay
    from ctwm_cli.replay import ReplayConfig, replay_compare

    cfg = ReplayConfig(family="uniform", size=60, steps=200, seeds=(0,), bootstrap=0)
    res = replay_compare(cfg, memories=["graph", "ctwm"], encoding="compact", baseline=None, seed=0)
    fig = plot_replay(res)
    left, right = fig.axes[:2]
    assert [round(p.get_height(), 9) for p in left.patches] == [round(a.tokens_mean, 9) for a in res.arms]
    assert round(right.patches[0].get_height(), 9) == round(res.arms[0].tail_error, 9)


def test_bench_report_forest_plot_places_each_reduction_and_interval():
    from ctwm_cli.bench.report import BenchReport, ReportRow
    from ctwm_cli.plots.bench import plot_bench_report
    from ctwm_cli.stats.intervals import ConfidenceInterval

    def row(name, red, lo, hi):
        return ReportRow(configuration=name, source="s", units="steps", n=100, baseline="graph", treatment="ctwm",
                         baseline_tokens=100.0, treatment_tokens=100.0 * (1 - red), reduction=red,
                         reduction_confidence_interval=ConfidenceInterval(low=lo, high=hi, level=0.95),
                         parity_metric="coverage", baseline_parity=0.5, treatment_parity=0.5,
                         parity_delta=0.0)

    rep = BenchReport(results=(row("A", 0.25, 0.2, 0.3), row("B", -0.05, -0.1, 0.0)), notes=())
    ax = plot_bench_report(rep).axes[0]
    points = sorted(round(float(line.get_xdata()[0]), 6) for line in ax.lines if line.get_marker() == "o")
    assert points == [-5.0, 25.0]  # the reductions, in percent
    caps = sorted(round(float(line.get_xdata()[0]), 6) for line in ax.lines if line.get_marker() == "|")
    assert caps == [-10.0, 0.0, 20.0, 30.0]  # the interval ends
    assert [t.get_text() for t in ax.get_yticklabels()] == ["B", "A"]


def test_bench_report_plot_path_checked_first(run_cli, tmp_path):
    res = run_cli(["bench", "report", "--synthetic", "1", "--plot", str(tmp_path / "x.gif")])
    assert res.code == 2 and "--plot" in res.err


def test_grouped_audit_writes_the_groups_side_by_side(run_cli, tmp_path):
    from pathlib import Path

    samples = Path(__file__).resolve().parent.parent / "sample_traces"
    out = tmp_path / "fig4.png"
    res = run_cli(["audit", str(samples / "tpl_events.parquet"), str(samples / "lognormal_events.parquet"),
                   "--bootstrap", "20", "--seed", "1", "--no-diagnostics", "--plot", str(out)])
    assert res.code == 0, res.err
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"  # the summary at the path itself
    assert (tmp_path / "fig4-1.png").exists() and (tmp_path / "fig4-2.png").exists()  # one CCDF per group
