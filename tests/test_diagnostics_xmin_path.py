"""Appendix D: the τ scan of allocation-driven traces, its α̂ and x_min, and ``ctwm xmin-path``."""

from __future__ import annotations

import json

import pytest

from ctwm_cli.common.errors import UsageError
from ctwm_cli.diagnostics.xmin_path import xmin_path


def test_alpha_tracks_the_zipf_limit_and_the_cutoff_moves():
    res = xmin_path([0.5, 1.0, 2.0], n_items=2000, n_events=200_000, replicates=3, seed=4)
    by = {s.tau: s for s in res.steps}
    for t, s in by.items():
        assert s.fits == 3
        assert s.alpha_mean == pytest.approx(1 + 1 / t, abs=0.12)  # the many-events limit alpha = 1 + 1/tau
    assert by[0.5].xmin_median > by[1.0].xmin_median > by[2.0].xmin_median  # the cutoff is not fixed
    assert res.alpha_monotone and res.gini_monotone and res.alpha_xmin_spearman > 0.5
    again = xmin_path([0.5, 1.0, 2.0], n_items=2000, n_events=200_000, replicates=3, seed=4)
    assert again.to_dict() == res.to_dict()  # seeded
    assert xmin_path([1.0], n_items=2000, n_events=200_000, replicates=3, seed=5).to_dict() != \
        xmin_path([1.0], n_items=2000, n_events=200_000, replicates=3, seed=4).to_dict()


def test_a_trace_too_short_for_a_tail_is_reported_not_fitted():
    res = xmin_path([1.0], n_items=50, n_events=60, replicates=2, min_tail=100, seed=1)
    assert res.steps[0].fits == 0 and all(r.alpha is None for r in res.runs)


@pytest.mark.parametrize(("kw", "match"), [
    ({"n_events": 0}, "n_events must be an integer"), ({"replicates": 0}, "replicates must be"),
    ({"n_items": 1}, "n_items must be >= 2"), ({"n_items": 10**9}, "above the limit"),
])
def test_arguments_name_the_parameter(kw, match):
    with pytest.raises(UsageError, match=match):
        xmin_path([1.0], **kw)


def test_cli_table_json_and_plot(run_cli, tmp_path):
    out = tmp_path / "d.png"
    res = run_cli(["xmin-path", "--sweep", "0.5:2:3", "--items", "300", "--events", "5000", "--replicates", "2",
                   "--seed", "3", "--plot", str(out), "--json"])
    assert res.code == 0, res.err
    doc = json.loads(res.out)
    assert doc["command"] == "xmin-path" and doc["seed"] == 3 and len(doc["steps"]) == 3 and len(doc["runs"]) == 6
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    from ctwm_cli.plots.xmin_path import plot_xmin_path

    fig = plot_xmin_path(xmin_path([0.5, 2.0], n_items=300, n_events=5000, replicates=2, seed=3))
    left, right = fig.axes[:2]
    assert "α̂" in left.get_ylabel() and "x_min" in right.get_ylabel()
    res = run_cli(["xmin-path", "--sweep", "0.5:2:100000"])
    assert res.code == 2 and "10,000" in res.err
