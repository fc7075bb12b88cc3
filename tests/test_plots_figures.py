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
    ladder = Ladder(rows=tuple(LadderRow(**r) for r in doc["rows"]), policy=doc["policy"], steps=doc["steps"],
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
