"""Figures of the diagnostics commands: files of the requested type, and lazily imported matplotlib."""

from __future__ import annotations

import json

import numpy as np
import pytest

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
    from ctwm_cli.plots.lorenz import lorenz_points, plot_lorenz
    from ctwm_cli.plots.psd import plot_psd

    x, y = lorenz_points(np.array([0, 0, 0, 10]))
    assert x[0] == 0 and y[0] == 0 and y[-1] == pytest.approx(1.0)
    assert y[3] == 0  # the three empty items hold no accesses
    plot_lorenz(tmp_path / "l.png", [("one-hot", np.array([0, 0, 0, 10]), 0.75)])
    _check(tmp_path / "l.png")
    plot_psd(tmp_path / "p.png", psd(np.random.default_rng(1).standard_normal(1024)))
    _check(tmp_path / "p.png")
