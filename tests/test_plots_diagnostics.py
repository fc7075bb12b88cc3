"""Figures of the diagnostics commands: files of the requested type, and lazily imported matplotlib."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

SAMPLE = Path(__file__).resolve().parent.parent / "sample_traces" / "tpl_events.parquet"

SIGNATURES = {".png": b"\x89PNG", ".pdf": b"%PDF"}


def _check(path):
    data = path.read_bytes()
    assert len(data) > 1000
    if path.suffix == ".svg":
        assert b"<svg" in data[:2000]
    else:
        assert data.startswith(SIGNATURES[path.suffix])


@pytest.fixture
def trace(tmp_path):
    rng = np.random.default_rng(0)
    rows = [{"item": f"m{int(rng.zipf(1.6)) % 80}", "step": s, "run": "r1" if s % 2 else "r2"} for s in range(700)]
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.mark.parametrize("suffix", [".png", ".svg", ".pdf"])
def test_concentration_plot(trace, tmp_path, run_cli, suffix):
    out = tmp_path / f"conc{suffix}"
    res = run_cli(["concentration", trace, "--group-by", "run", "--plot", out])
    assert res.code == 0, res.err
    _check(out)
    assert "figure:" in res.err


@pytest.mark.parametrize("suffix", [".png", ".pdf"])
def test_psd_plot(trace, tmp_path, run_cli, suffix):
    out = tmp_path / f"psd{suffix}"
    res = run_cli(["psd", trace, "--run", "r1", "--series", "total", "--plot", out])
    assert res.code == 0, res.err
    _check(out)


def test_finite_size_plot(trace, tmp_path, run_cli):
    out = tmp_path / "fs.svg"
    res = run_cli(["finite-size", f"{trace}:10", f"{trace}:20", "--plot", out])
    assert res.code == 0, res.err
    _check(out)


def test_plot_path_checked_before_work(tmp_path, run_cli):
    res = run_cli(["psd", tmp_path / "missing.jsonl", "--plot", tmp_path / "no" / "dir.png"])
    assert res.code == 2 and "does not exist" in res.err


def test_library_plot_functions(tmp_path):
    from ctwm_cli.diagnostics import psd
    from ctwm_cli.plots import save_figure
    from ctwm_cli.plots.lorenz import lorenz_points, plot_lorenz
    from ctwm_cli.plots.psd import plot_psd

    x, y = lorenz_points(np.array([0, 0, 0, 10]))
    assert x[0] == 0 and y[0] == 0 and y[-1] == pytest.approx(1.0)
    assert y[3] == 0  # the three empty items hold no accesses
    save_figure(plot_lorenz([("one-hot", np.array([0, 0, 0, 10]), 0.75)]), tmp_path / "l.png")
    _check(tmp_path / "l.png")
    save_figure(plot_psd(psd(np.random.default_rng(1).standard_normal(1024))), tmp_path / "p.png")
    _check(tmp_path / "p.png")


def test_plot_functions_draw_into_given_axes_and_return_the_figure():
    from matplotlib.figure import Figure

    from ctwm_cli.common.errors import UsageError
    from ctwm_cli.diagnostics import concentration_of_traces, psd
    from ctwm_cli.plots.psd import plot_psd
    from ctwm_cli.plots.rank_frequency import plot_concentration

    fig = Figure()
    ax1, ax2, ax3 = fig.subplots(1, 3)
    got = plot_psd(psd(np.random.default_rng(1).standard_normal(1024)), ax=ax1)
    assert got is fig and ax1.lines and not ax2.lines
    rep = concentration_of_traces([str(SAMPLE)])
    assert plot_concentration(rep, ax=[ax2, ax3]) is fig and ax2.lines and ax3.lines
    with pytest.raises(UsageError, match="sequence of 2 axes"):
        plot_concentration(rep, ax=ax1)
    assert isinstance(plot_psd(psd(np.random.default_rng(2).standard_normal(1024))), Figure)  # a new one
