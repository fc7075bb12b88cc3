"""Finite-size trend: the paper's Table 1 slopes, known slopes recovered, the grid contract."""

from __future__ import annotations

import json
import math

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ctwm_cli.common.errors import InputError, UsageError
from ctwm_cli.diagnostics import finite_size_of_traces, trend
from ctwm_cli.diagnostics.finite_size import RunSigma, SizeCell, cells_from_runs, parse_sized_trace, uniform_null_sigma

# Paper Table 1: sigma_100, sigma_500, sigma_1000, slope, R^2
TABLE1 = {
    "uniform": (0.152, 0.802, 1.364, 0.505, 0.967),
    "exponential": (0.333, 0.900, 1.369, 0.433, 0.971),
    "scale-free": (0.385, 0.809, 1.349, 0.392, 0.915),
    "modular": (0.162, 1.461, 1.366, 0.573, 0.874),
    "mixed": (0.231, 1.252, 1.430, 0.541, 0.975),
    "baseline-symmetric": (0.253, 1.190, 1.543, 0.564, 0.999),
}


def _cell(fam, size, sigma):
    return SizeCell(family=fam, size=size, sigma=sigma, sigma_sd=math.nan, n_runs=1, n_runs_undefined=0,
                    mean_items=size)


def test_reproduces_table1_slopes_with_natural_log():
    cells = [_cell(f, s, v[i]) for f, v in TABLE1.items() for i, s in enumerate((100.0, 500.0, 1000.0))]
    fams = {t.family: t for t in trend(cells)}
    for f, v in TABLE1.items():
        # the table's sigmas are rounded to 3 decimals, so the refit agrees to about 1e-3
        assert fams[f].slope == pytest.approx(v[3], abs=2e-3), f
        assert fams[f].r2 == pytest.approx(v[4], abs=2e-3), f
    # the same fit in decades is ln(10) times steeper
    ten = {t.family: t for t in trend(cells, log_base="10")}
    assert ten["uniform"].slope == pytest.approx(fams["uniform"].slope * math.log(10))
    assert ten["uniform"].r2 == pytest.approx(fams["uniform"].r2)


def _top_counts(n_items: int, sigma: float, base: float, rng) -> tuple[np.ndarray, float]:
    """Counts of n_items items whose top decile has sd(ln count) = sigma up to rounding; returns the exact one."""
    k = -(-n_items // 10)
    z = rng.standard_normal(k)
    z = (z - z.mean()) / z.std(ddof=1)
    top = np.round(base * np.exp(sigma * z)).astype(np.int64)
    body = rng.integers(1, max(2, int(top.min() * 0.5)), n_items - k)
    counts = np.concatenate([top, body])
    exact = float(np.std(np.log(np.sort(counts)[::-1][:k]), ddof=1))
    return counts, exact


def test_known_slope_is_recovered_from_counts_tables(tmp_path):
    rng = np.random.default_rng(7)
    a, b = 0.05, 0.1  # sigma(N) = a + b ln N
    specs = []
    for size in (100, 300, 1000, 3000):
        counts, _ = _top_counts(size, a + b * math.log(size), 1e6, rng)
        path = tmp_path / f"n{size}.parquet"
        pq.write_table(pa.table({"item": [f"i{j}" for j in range(size)], "count": counts}), path)
        specs.append(f"{path}:{size}")
    rep = finite_size_of_traces(specs, family="synthetic")
    (fam,) = rep.families
    assert fam.family == "synthetic"
    assert fam.slope == pytest.approx(b, abs=1e-4)
    assert fam.intercept == pytest.approx(a, abs=1e-3)
    assert fam.r2 == pytest.approx(1.0, abs=1e-6)
    assert fam.sizes == (100.0, 300.0, 1000.0, 3000.0)


def _write_grid(root, plan, rng):
    """Synthetic Graph World layout: OUT/family=F/size=N/seed=S/part-0.parquet, one event per row."""
    expected = {}
    for (fam, size, seed), sigma in plan.items():
        counts, exact = _top_counts(size, sigma, 12.0, rng)
        items = np.repeat(np.array([f"v{j}" for j in range(size)]), counts)
        rng.shuffle(items)
        n = items.size
        d = root / f"family={fam}" / f"size={size}" / f"seed={seed}"
        d.mkdir(parents=True)
        run = f"{fam}-{size}-{seed}"
        table = pa.table(
            {"item": items, "step": np.arange(n), "rank": np.ones(n, dtype=np.int64), "run": [run] * n,
             "event": ["retrieve"] * n}
        )
        pq.write_table(table, d / "part-0.parquet")
        expected[(fam, size, seed)] = exact
    return expected


def test_grid_dataset_averages_runs_per_family_and_size(tmp_path, run_cli):
    rng = np.random.default_rng(9)
    plan = {}
    for fam, slope in (("ring", 0.2), ("star", -0.1)):
        for size in (20, 40, 80):
            for seed in (0, 1):
                plan[(fam, size, seed)] = 0.6 + slope * math.log(size / 20) + 0.05 * seed
    expected = _write_grid(tmp_path / "out", plan, rng)
    rep = finite_size_of_traces([str(tmp_path / "out")], size_col="size", group_by="family")
    assert [f.family for f in rep.families] == ["ring", "star"]
    for fam in rep.families:
        means = []
        for i, size in enumerate((20, 40, 80)):
            runs = [expected[(fam.family, size, s)] for s in (0, 1)]
            assert fam.sigma[i] == pytest.approx(np.mean(runs), abs=1e-12)
            assert fam.sigma_sd[i] == pytest.approx(np.std(runs, ddof=1), abs=1e-12)
            assert fam.n_runs[i] == 2
            means.append(np.mean(runs))
        ref = np.polyfit(np.log([20, 40, 80]), means, 1)[0]
        assert fam.slope == pytest.approx(ref, abs=1e-12)
    # the CLI on the same grid: Table 1 layout and the JSON numbers
    res = run_cli(["finite-size", tmp_path / "out", "--size-col", "size", "--group-by", "family"])
    assert res.code == 0, res.err
    for text in ("σ_20", "σ_40", "σ_80", "slope per ln(size)", "R²", "ring", "star"):
        assert text in res.out
    res = run_cli(["finite-size", tmp_path / "out", "--size-col", "size", "--group-by", "family", "--json"])
    doc = json.loads(res.out)
    assert doc["command"] == "finite-size" and doc["log_base"] == "e"
    assert doc["families"][0]["slope"] == pytest.approx(rep.families[0].slope)
    res = run_cli(["finite-size", tmp_path / "out", "--size-col", "size", "--group-by", "family", "-f", "csv"])
    header = res.out.splitlines()[0].split(",")
    assert header[:4] == ["family", "sigma_20", "sigma_sd_20", "runs_20"] and "slope" in header


def test_labelled_jsonl_traces_without_runs(tmp_path, run_cli):
    rng = np.random.default_rng(2)
    specs, exact = [], {}
    for size, sigma in ((30, 0.3), (60, 0.5), (120, 0.7)):
        counts, ex = _top_counts(size, sigma, 40.0, rng)
        path = tmp_path / f"s{size}.jsonl"
        path.write_text("".join(json.dumps({"item": f"x{j}"}) + "\n" for j, c in enumerate(counts) for _ in range(c)))
        specs.append(f"{path}:{size}")
        exact[size] = ex
    rep = finite_size_of_traces(specs)
    (fam,) = rep.families
    assert fam.family == "all"
    assert fam.sigma == pytest.approx(tuple(exact[s] for s in (30, 60, 120)), abs=1e-12)
    assert fam.n_runs == (1, 1, 1)
    assert math.isnan(fam.sigma_sd[0])
    res = run_cli(["finite-size", *specs, "--family", "toy", "--log-base", "10", "-f", "jsonl"])
    assert res.code == 0, res.err
    row = json.loads(res.out)
    assert row["family"] == "toy" and row["log_base"] == "10"
    assert row["slope"] == pytest.approx(np.polyfit(np.log10([30, 60, 120]), [exact[30], exact[60], exact[120]], 1)[0])


def test_cells_pool_runs_and_skip_undefined():
    runs = [("f", 10.0, math.nan, 5), ("f", 100.0, 0.3, 100), ("f", 100.0, 0.5, 100), ("f", 1000.0, 0.9, 900)]
    cells = cells_from_runs(
        [RunSigma(family=f, size=s, run=str(i), sigma=v, n_items=n, n_events=10 * n)
         for i, (f, s, v, n) in enumerate(runs)]
    )
    assert [c.size for c in cells] == [10.0, 100.0, 1000.0]
    assert math.isnan(cells[0].sigma) and cells[0].n_runs_undefined == 1
    assert cells[1].sigma == pytest.approx(0.4) and cells[1].sigma_sd == pytest.approx(math.sqrt(0.02))
    (fam,) = trend(cells)
    assert fam.slope == pytest.approx((0.9 - 0.4) / math.log(10))  # NaN cell skipped: two points


def test_parse_and_argument_errors(tmp_path, run_cli):
    assert parse_sized_trace("a/b.parquet:500") == ("a/b.parquet", 500.0)
    assert parse_sized_trace("a/b.parquet") == ("a/b.parquet", None)
    assert parse_sized_trace("odd:name.jsonl") == ("odd:name.jsonl", None)
    with pytest.raises(UsageError, match="positive"):
        parse_sized_trace("a.parquet:-3")
    p = tmp_path / "t.jsonl"
    p.write_text('{"item": "a"}\n')
    with pytest.raises(UsageError, match="PATH:SIZE"):
        finite_size_of_traces([str(p)])
    with pytest.raises(UsageError, match="exclude each other"):
        finite_size_of_traces([f"{p}:5"], family="x", group_by="family")
    with pytest.raises(UsageError, match="log_base"):
        finite_size_of_traces([f"{p}:5"], log_base="3")
    with pytest.raises(InputError, match="missing column 'size'"):
        finite_size_of_traces([str(p)], size_col="size")
    res = run_cli(["finite-size", p])
    assert res.code == 2 and "PATH:SIZE" in res.err
    res = run_cli(["finite-size", f"{p}:10", "--event", "write"])
    assert res.code == 3 and "no events of kind write" in res.err


def test_uniform_null_matches_uniform_traces_and_is_seeded(tmp_path, run_cli):
    rng = np.random.default_rng(5)
    specs = []
    for size in (50, 200, 800):
        for rep in range(3):
            counts = rng.multinomial(4000, np.full(size, 1 / size))
            counts = counts[counts > 0]
            path = tmp_path / f"u{size}_{rep}.parquet"
            pq.write_table(pa.table({"item": [f"i{j}" for j in range(counts.size)], "count": counts}), path)
            specs.append(f"{path}:{size}")
    rep1 = finite_size_of_traces(specs, null_draws=10, seed=3)
    rep2 = finite_size_of_traces(specs, null_draws=10, seed=3)
    assert rep1.to_dict() == rep2.to_dict()
    (fam,) = rep1.families
    assert fam.n_runs == (3, 3, 3)
    # uniform data: the observed trend is the sampling-noise trend
    assert fam.slope > 0
    assert fam.slope_null == pytest.approx(fam.slope, rel=0.25)
    for obs, nul in zip(fam.sigma, fam.sigma_null, strict=True):
        assert nul == pytest.approx(obs, rel=0.25)
    assert uniform_null_sigma(100, 1000, 5, rng=1) == uniform_null_sigma(100, 1000, 5, rng=1)
    with pytest.raises(UsageError, match="null_draws"):
        finite_size_of_traces(specs, null_draws=-1)
    res = run_cli(["finite-size", *specs[::3], "--null-draws", "2", "--json"])
    assert res.code == 0, res.err
    doc = json.loads(res.out)
    assert f"seed: {doc['seed']}" in res.err
    assert doc["families"][0]["slope_null"] is not None
    res = run_cli(["finite-size", *specs[::3], "--null-draws", "2", "--seed", "7"])
    assert "null slope" in res.out and "seed" not in res.err


def test_store_capacity_is_stated_from_manifests_or_the_caller(tmp_path, run_cli):
    rng = np.random.default_rng(3)
    plan = {("ring", size, seed): 0.5 + 0.1 * math.log(size / 20) for size in (20, 40) for seed in (0, 1)}
    _write_grid(tmp_path / "out", plan, rng)
    args = [str(tmp_path / "out")]
    rep = finite_size_of_traces(args, size_col="size", group_by="family")
    assert rep.store_capacity == () and rep.capacity_source == "unknown"
    assert finite_size_of_traces(args, size_col="size", group_by="family", capacity=2000).store_capacity == (2000,)
    (tmp_path / "out" / "_manifest.json").write_text(json.dumps({"command": "world grid", "shared": {"capacity": 200}}))
    rep = finite_size_of_traces(args, size_col="size", group_by="family")
    assert (rep.store_capacity, rep.capacity_source) == ((200,), "manifest")
    with pytest.raises(UsageError, match="capacity 2000 contradicts the manifests, which record 200"):
        finite_size_of_traces(args, size_col="size", group_by="family", capacity=2000)
    res = run_cli(["finite-size", *args, "--size-col", "size", "--group-by", "family"])
    assert res.code == 0, res.err
    assert "Store capacity: 200 (manifest)" in " ".join(res.out.split()) and "raw slope" in res.out
    # the paper's raw-count sigma and its slope are reported beside ours
    (fam,) = rep.families
    assert len(fam.sigma_raw) == 2 and math.isfinite(fam.slope_raw)
