"""Runs, traces, manifests, the grid and the ladder (library and CLI)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from ctwm_cli.common.errors import UsageError
from ctwm_cli.traces import item_counts, open_trace, scan_trace
from ctwm_cli.world import WorldConfig, concentration, run_grid, run_ladder, run_world, simulate

SMALL = dict(family="scale-free", size=100, steps=2000)


def test_same_seed_gives_byte_identical_trace(tmp_path):
    cfg = WorldConfig(**SMALL, seed=42)
    a = run_world(cfg, tmp_path / "a")
    b = run_world(cfg, tmp_path / "b")
    c = run_world(WorldConfig(**SMALL, seed=43), tmp_path / "c")
    assert (tmp_path / "a/trace.parquet").read_bytes() == (tmp_path / "b/trace.parquet").read_bytes()
    assert (tmp_path / "a/manifest.json").read_bytes() == (tmp_path / "b/manifest.json").read_bytes()
    assert a.sha256 == b.sha256 != c.sha256


@pytest.mark.parametrize("retriever", ["state-frequency", "uniform-frequency", "state-uniform", "none"])
def test_trace_is_in_the_schema_and_counts_match(tmp_path, retriever):
    res = run_world(WorldConfig(**SMALL, seed=1, retriever=retriever), tmp_path)
    table = pq.read_table(tmp_path / "trace.parquet")
    assert table.column_names == ["item", "step", "rank", "run", "event"]
    assert table.schema.metadata is None  # nothing varying (timestamps, pandas) in the file metadata
    scan = scan_trace(open_trace(tmp_path / "trace.parquet"))
    assert scan.runs == 1 and scan.step_min == 0 and scan.step_max == SMALL["steps"] - 1
    assert scan.events.get("write") == SMALL["steps"]
    sim = simulate(WorldConfig(**SMALL, seed=1, retriever=retriever))
    if retriever == "none":
        assert "retrieve" not in scan.events
        return
    assert scan.events["retrieve"] == res.retrieve_events == sim.retrieved.size
    (counts,) = item_counts(scan)  # no options: counts the retrieve events
    expect = np.bincount(sim.retrieved, minlength=sim.world.n_transitions)
    got = dict(zip(counts.items.to_pylist(), counts.counts.tolist(), strict=True))
    assert got == {sim.world.items[t]: int(c) for t, c in enumerate(expect) if c}
    # ranks are 1..k within a step, in order
    ret = table.filter(table.column("event").to_numpy(zero_copy_only=False) == "retrieve")
    steps, ranks = ret.column("step").to_numpy(), ret.column("rank").to_numpy()
    starts = np.r_[True, steps[1:] != steps[:-1]]
    assert np.all(ranks[starts] == 1) and np.all(np.diff(ranks)[~starts[1:]] == 1)


def test_manifest_repeats_the_run(tmp_path, run_cli):
    res = run_cli(["world", "run", "--family", "modular", "--size", "120", "--steps", "1500", "--seed", "9",
                   "--retriever", "state-uniform", "--out", tmp_path / "a", "--json"])
    assert res.code == 0, res.err
    doc = json.loads(res.out)
    assert doc["seed"] == 9 and doc["command"] == "world run"
    man = json.loads((tmp_path / "a/manifest.json").read_text())
    assert man["config"]["seed"] == 9 and man["version"] and man["config"]["graph_params"]["blocks"] == 5
    args = [*shlex.split(man["repeat"])[1:], "--out", str(tmp_path / "b")]
    assert run_cli(args).code == 0
    assert (tmp_path / "a/trace.parquet").read_bytes() == (tmp_path / "b/trace.parquet").read_bytes()


def test_cli_draws_and_announces_a_seed(tmp_path, run_cli):
    res = run_cli(["world", "run", "--size", "100", "--steps", "200", "--out", tmp_path, "--json"])
    assert res.code == 0
    seed = json.loads(res.out)["seed"]
    assert f"seed: {seed}" in res.err


def test_cli_refuses_to_overwrite_and_bad_values(tmp_path, run_cli):
    args = ["world", "run", "--size", "100", "--steps", "100", "--seed", "1", "--out", tmp_path]
    assert run_cli(args).code == 0
    res = run_cli(args)
    assert res.code == 2 and "--overwrite" in res.err
    assert run_cli([*args, "--overwrite"]).code == 0
    res = run_cli(["world", "run", "--size", "100", "--steps", "0", "--seed", "1", "--out", tmp_path / "x"])
    assert res.code == 2 and "steps" in res.err
    res = run_cli(["world", "run", "--graph-param", "m=abc=1", "--seed", "1", "--out", tmp_path / "y"])
    assert res.code == 2
    res = run_cli(["world", "run", "--graph-param", "blocks=3", "--seed", "1", "--out", tmp_path / "z"])
    assert res.code == 2 and "does not apply" in res.err
    res = run_cli(["world", "run", "--policy", "endpoint", "--seed", "1", "--out", tmp_path / "w"])
    assert res.code == 2 and "--base-url" in res.err


def test_grid_layout_and_jobs_independence(tmp_path):
    kw = dict(families=["uniform", "mixed"], sizes=[100, 150], seeds=[5, 6],
              base=WorldConfig(steps=600, retriever="state-frequency"))
    g1 = run_grid(tmp_path / "g1", jobs=1, **kw)
    g2 = run_grid(tmp_path / "g2", jobs=2, **kw)
    assert len(g1.cells) == 8
    assert [(c.file, c.n_rows, c.gini) for c in g1.cells] == [(c.file, c.n_rows, c.gini) for c in g2.cells]
    for cell in g1.cells:
        f1, f2 = tmp_path / "g1" / cell.file, tmp_path / "g2" / cell.file
        assert f1.read_bytes() == f2.read_bytes()
        assert cell.file == f"family={cell.family}/size={cell.size}/seed={cell.seed}/part-0.parquet"
        t = pq.read_table(f1)
        assert t.column_names == ["item", "step", "rank", "run", "event"]
        assert set(t.column("run").to_pylist()) == {f"{cell.family}-{cell.size}-{cell.seed}"}
    man = json.loads((tmp_path / "g1/_manifest.json").read_text())
    assert len(man["cells"]) == 8 and man["seeds"] == [5, 6]
    # the whole directory reads as one hive-partitioned dataset, groupable by family and size
    reader = open_trace(tmp_path / "g1", keep=("family",))
    scan = scan_trace(reader, group_by="family")
    assert scan.runs == 8 and {c.group for c in item_counts(scan)} == {"uniform", "mixed"}
    assert {"family", "size", "seed"} <= set(reader.columns_found)


def test_grid_cell_equals_world_run(tmp_path, run_cli):
    g = run_grid(tmp_path / "g", families=["exponential"], sizes=[100], seeds=[3], jobs=1,
                 base=WorldConfig(steps=800))
    r = run_world(WorldConfig(family="exponential", size=100, seed=3, steps=800), tmp_path / "r")
    assert (tmp_path / "g" / g.cells[0].file).read_bytes() == Path(r.trace).read_bytes()
    # the manifest's repeat command reproduces the cell
    cell = json.loads((tmp_path / "g/_manifest.json").read_text())["cells"][0]
    assert run_cli([*shlex.split(cell["repeat"])[1:], "--out", str(tmp_path / "x")]).code == 0
    assert (tmp_path / "x/trace.parquet").read_bytes() == Path(r.trace).read_bytes()


def test_grid_cli(tmp_path, run_cli):
    res = run_cli(["world", "grid", "--out", tmp_path, "--family", "uniform", "--size", "100", "--replicates", "2",
                   "--steps", "300", "--seed", "4", "--jobs", "1", "--format", "csv"])
    assert res.code == 0, res.err
    lines = res.out.strip().splitlines()
    assert lines[0].startswith("family,size,seed,run") and len(lines) == 3
    assert (tmp_path / "family=uniform/size=100/seed=5/part-0.parquet").exists()


def test_gini_against_mean_absolute_difference():
    rng = np.random.default_rng(0)
    for _ in range(5):
        x = rng.integers(1, 50, size=rng.integers(2, 40))
        mad = np.abs(x[:, None] - x[None, :]).sum() / (2 * x.size**2 * x.mean())
        assert concentration(x).gini == pytest.approx(mad)
    assert concentration(np.array([0, 3, 3, 3])).gini == pytest.approx(0.0)  # zeros are left out
    assert concentration(np.zeros(3)).gini is None


def test_ladder_rows_and_paired_trajectories(run_cli):
    base = WorldConfig(size=100, steps=3000, seed=2)
    lad = run_ladder(families=["scale-free", "baseline-symmetric"], base=base, jobs=1)
    assert [(r.family, r.retriever) for r in lad.rows][:4] == [
        ("scale-free", "uniform-frequency"), ("scale-free", "state-frequency"),
        ("scale-free", "state-uniform"), ("scale-free", "none")]
    for r in lad.rows:
        assert 0 < r.gini < 1
        assert (r.gini_retrieve is None) == (r.retriever == "none")
    sf = {r.retriever: r for r in lad.rows if r.family == "scale-free"}
    assert sf["state-frequency"].gini_vs_state_frequency == 1.0
    # random-walk trajectories do not depend on the retriever: the write counts are shared
    sims = [simulate(WorldConfig(size=100, steps=3000, seed=2, retriever=r)) for r in ("none", "state-uniform")]
    assert np.array_equal(sims[0].transitions, sims[1].transitions)
    none = concentration(np.bincount(sims[0].transitions)).gini
    assert sf["none"].gini == pytest.approx(none)
    res = run_cli(["world", "ladder", "--family", "uniform", "--retriever", "none", "--retriever",
                   "state-frequency", "--size", "100", "--steps", "500", "--seed", "1", "--jobs", "1", "--json"])
    assert res.code == 0, res.err
    doc = json.loads(res.out)
    assert [r["retriever"] for r in doc["results"]] == ["none", "state-frequency"]
    assert "rows" not in doc and lad.rows is lad.results  # issue 43: JSON says results; .rows stays for callers


def test_semantic_policy_is_goal_directed_and_deterministic():
    # epsilon = 1 is the same task loop with uniformly random actions
    for seed in (11, 12):
        base = dict(family="modular", size=200, steps=6000, seed=seed, policy="semantic")
        sem = simulate(WorldConfig(**base))
        rnd = simulate(WorldConfig(**base, policy_params={"epsilon": 1.0}))
        assert sem.policy_stats["tasks_completed"] > 2 * max(1, rnd.policy_stats["tasks_completed"])
    again = simulate(WorldConfig(**base))
    assert np.array_equal(sem.transitions, again.transitions) and np.array_equal(sem.retrieved, again.retrieved)


def test_task_popularity_is_zipf():
    from scipy import stats

    from ctwm_cli.world.env import build_world
    from ctwm_cli.world.graphs import make_graph
    from ctwm_cli.world.policies import TaskSampler

    w = build_world(make_graph("uniform", 50, rng=0), seed=0)
    ts = TaskSampler(w, 1.2, np.random.default_rng(3))
    draws = np.array([ts.draw() for _ in range(20_000)])
    rank_of = np.empty(50, dtype=np.int64)
    rank_of[ts.order] = np.arange(50)
    obs = np.bincount(rank_of[draws], minlength=50)
    p = np.arange(1, 51, dtype=float) ** -1.2
    exp = p / p.sum() * draws.size
    assert stats.chisquare(obs, exp).pvalue > 1e-3


def test_config_validation():
    with pytest.raises(UsageError, match=r"^family must be one of .*, got 'ring'$"):
        WorldConfig(family="ring").resolved()
    with pytest.raises(UsageError, match="policy parameter"):
        WorldConfig(policy="semantic", policy_params={"temperature": 1}).resolved()
    with pytest.raises(UsageError, match="epsilon"):
        WorldConfig(policy="semantic", policy_params={"epsilon": 2}).resolved()
    with pytest.raises(UsageError, match="world parameter"):
        WorldConfig(world_params={"colour": 1}).resolved()
