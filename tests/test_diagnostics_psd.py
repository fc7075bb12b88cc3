"""PSD exponent: calibration on noises of known exponent, and series built from traces."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ctwm_cli.common.errors import InputError, UsageError
from ctwm_cli.diagnostics import psd, psd_of_trace
from ctwm_cli.diagnostics.spectrum import parse_band, parse_series

N = 4096
SEEDS = range(6)


def shaped_noise(n: int, beta: float, rng: np.random.Generator) -> np.ndarray:
    """Noise with spectrum ∝ f^-beta by spectral shaping of Gaussian white noise."""
    spec = np.fft.rfft(rng.standard_normal(n))
    f = np.fft.rfftfreq(n)
    spec[1:] *= f[1:] ** (-beta / 2)
    spec[0] = 0
    return np.fft.irfft(spec, n)


GENERATORS = {
    "white": (0.0, lambda rng: rng.standard_normal(N)),
    "poisson counts": (0.0, lambda rng: rng.poisson(2.0, N).astype(float)),
    "pink": (1.0, lambda rng: shaped_noise(N, 1.0, rng)),
    "random walk": (2.0, lambda rng: np.cumsum(rng.standard_normal(N))),
}


@pytest.mark.parametrize("name", list(GENERATORS))
def test_beta_recovers_known_exponent_over_seeds(name):
    target, gen = GENERATORS[name]
    betas = np.array([psd(gen(np.random.default_rng(seed))).beta for seed in SEEDS])
    # per-seed spread is about 0.06 at N = 4096 (measured over 20 seeds): 0.25 is > 4 sd
    assert np.all(np.abs(betas - target) < 0.25), betas
    assert abs(betas.mean() - target) < 0.1, betas


def test_beta_band_verdict_is_honest():
    rng = np.random.default_rng(11)
    white = psd(rng.standard_normal(N))
    pink = psd(shaped_noise(N, 1.0, rng))
    walk = psd(np.cumsum(rng.standard_normal(N)))
    assert not white.in_beta_band
    assert pink.in_beta_band
    assert not walk.in_beta_band
    assert psd(rng.standard_normal(N), beta_band=(-0.5, 0.5)).in_beta_band


def test_standard_error_roughly_matches_spread_over_seeds():
    betas, ses = [], []
    for seed in range(12):
        r = psd(np.random.default_rng(100 + seed).standard_normal(N))
        betas.append(r.beta)
        ses.append(r.beta_se)
    sd = np.std(betas, ddof=1)
    assert 0.4 * sd < np.mean(ses) < 2.5 * sd


def test_defaults_are_as_documented():
    r = psd(np.random.default_rng(0).standard_normal(N))
    assert r.nperseg == 512  # largest power of two <= N/8
    assert r.band == pytest.approx((3 / 512, 0.125))
    assert r.detrend == "constant"
    f = r.frequencies[r.fit_mask]
    assert f.min() == pytest.approx(3 / 512) and f.max() == pytest.approx(0.125)
    assert r.n_fit_bins == 62
    d = r.to_dict()
    assert "frequencies" not in d and "power" not in d
    json.dumps(d)


def test_scaling_and_shifting_the_series_leave_beta_unchanged():
    x = np.cumsum(np.random.default_rng(5).standard_normal(1024))
    b = psd(x).beta
    assert psd(3.0 * x + 100.0).beta == pytest.approx(b, abs=1e-9)


def test_argument_errors():
    with pytest.raises(InputError, match="at least 256"):
        psd(np.arange(100.0))
    with pytest.raises(InputError, match="constant"):
        psd(np.ones(1000))
    with pytest.raises(UsageError, match="band must satisfy"):
        psd(np.random.default_rng(0).standard_normal(1000), band=(0.2, 0.7))
    with pytest.raises(InputError, match="Welch bins"):
        psd(np.random.default_rng(0).standard_normal(1000), band=(0.1, 0.11))
    with pytest.raises(UsageError, match="detrend"):
        psd(np.random.default_rng(0).standard_normal(1000), detrend="quadratic")
    with pytest.raises(UsageError, match="LO:HI"):
        parse_band("0.5", "--beta-band")
    with pytest.raises(UsageError, match="LO < HI"):
        parse_band("2:1", "--band")
    with pytest.raises(UsageError, match="core, total or item:ID"):
        parse_series("items")
    assert parse_band("0.5:1.5", "x") == (0.5, 1.5)
    assert parse_series("item:a:b") == ("item", "a:b")


# --------------------------------------------------------------------------------------------
# traces


def _trace(tmp_path, per_step_core, per_step_tail, *, step0=0, name="t.jsonl", run=None):
    """Items c0..c9 are the heavy core, t0..t89 the tail (<= 100 items: the top decile is c0..c9)."""
    rng = np.random.default_rng(0)
    lines = []
    for i, (nc, nt) in enumerate(zip(per_step_core, per_step_tail, strict=True)):
        step = step0 + i
        for _ in range(int(nc)):
            row = {"item": f"c{rng.integers(10)}", "step": step, "event": "retrieve"}
            lines.append(row if run is None else {**row, "run": run})
        for _ in range(int(nt)):
            row = {"item": f"t{rng.integers(90)}", "step": step, "event": "retrieve"}
            lines.append(row if run is None else {**row, "run": run})
        row = {"item": "note", "step": step, "event": "write"}
        lines.append(row if run is None else {**row, "run": run})
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    return path, lines


def test_trace_series_equal_the_series_they_were_built_from(tmp_path):
    rng = np.random.default_rng(1)
    n = 600
    walk = np.cumsum(rng.integers(-1, 2, n))
    core = walk - walk.min() + 5  # a random walk, always well above the tail (c-items stay the core)
    tail = rng.integers(0, 2, n)
    path, _ = _trace(tmp_path, core, tail, step0=1000)
    r_core = psd_of_trace(str(path))
    ref = psd(core.astype(float))
    assert r_core.beta == pytest.approx(ref.beta, abs=1e-12)
    assert r_core.core_items == 10
    assert r_core.n_steps == n and r_core.step_min == 1000 and r_core.step_max == 1000 + n - 1
    r_total = psd_of_trace(str(path), series="total")
    assert r_total.beta == pytest.approx(psd((core + tail).astype(float)).beta, abs=1e-12)
    r_write = psd_of_trace(str(path), series="total", events=["retrieve", "write"])
    assert r_write.beta == pytest.approx(psd((core + tail + 1).astype(float)).beta, abs=1e-12)
    assert r_write.events == ("retrieve", "write")
    assert 1.5 < r_core.beta < 2.5


def test_item_series_and_gaps_are_zero_filled(tmp_path):
    rng = np.random.default_rng(2)
    n = 512
    per_step = rng.poisson(1.0, n)
    rows = []
    for s, k in enumerate(per_step):
        rows += [{"item": "x", "step": 10 + s}] * int(k)
        rows.append({"item": "y", "step": 10 + s})
    path = tmp_path / "g.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    r = psd_of_trace(str(path), series="item:x")
    series = per_step.astype(float)
    assert r.beta == pytest.approx(psd(series).beta, abs=1e-12)
    assert r.series_total == per_step.sum()
    with pytest.raises(InputError, match="never occurs"):
        psd_of_trace(str(path), series="item:zzz")


def test_core_is_the_top_decile(tmp_path):
    n = 400
    core = np.full(n, 3)
    core[::7] += 4
    path, lines = _trace(tmp_path, core, np.ones(n, dtype=int))
    from collections import Counter

    cnt = Counter(r["item"] for r in lines if r["event"] == "retrieve")
    k = -(-len(cnt) // 10)
    top = {it for it, _ in sorted(cnt.items(), key=lambda kv: (-kv[1], kv[0]))[:k]}
    expect = np.zeros(n)
    for r in lines:
        if r["event"] == "retrieve" and r["item"] in top:
            expect[r["step"]] += 1
    res = psd_of_trace(str(path))
    assert res.core_items == k
    assert res.beta == pytest.approx(psd(expect).beta, abs=1e-12)


def test_runs_must_be_chosen(tmp_path):
    rng = np.random.default_rng(4)
    a, _ = _trace(tmp_path, rng.integers(1, 4, 300), np.ones(300, dtype=int), name="a.jsonl", run="A")
    b, _ = _trace(tmp_path, rng.integers(1, 4, 300), np.ones(300, dtype=int), name="b.jsonl", run="B")
    both = tmp_path / "ab.jsonl"
    both.write_text(a.read_text() + b.read_text())
    with pytest.raises(UsageError, match="2 runs; choose one with run"):
        psd_of_trace(str(both))
    with pytest.raises(UsageError, match="2 runs"):
        psd_of_trace(str(both), series="total")
    ra = psd_of_trace(str(both), run="A")
    assert ra.beta == pytest.approx(psd_of_trace(str(a)).beta, abs=1e-12)
    assert ra.run == "A"


def test_trace_errors(tmp_path):
    p = tmp_path / "nostep.jsonl"
    p.write_text('{"item": "a"}\n' * 300)
    with pytest.raises(InputError, match="no step column"):
        psd_of_trace(str(p), series="total")
    with pytest.raises(UsageError, match="standard input"):
        psd_of_trace("-")


def test_trace_arguments_checked_before_reading(tmp_path):
    missing = str(tmp_path / "missing.jsonl")
    with pytest.raises(UsageError, match="band must satisfy"):
        psd_of_trace(missing, band=(0.3, 0.9))
    with pytest.raises(UsageError, match="nperseg"):
        psd_of_trace(missing, nperseg=4)
    with pytest.raises(UsageError, match="beta_band"):
        psd_of_trace(missing, beta_band=(2.0, 1.0))
    with pytest.raises(InputError, match="no such file"):
        psd_of_trace(missing)
    p = tmp_path / "norun.jsonl"
    p.write_text("".join(json.dumps({"item": "a", "step": s}) + "\n" for s in range(300)))
    with pytest.raises(InputError, match="no run column"):
        psd_of_trace(str(p), series="total", run="x")
