"""Frozen-trajectory replay (Theorem A.7): retrieval identity, exact reproduction of live losses."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ctwm_cli.common.errors import InputError, UsageError
from ctwm_cli.replay import ReplayConfig, frozen_replay, replay_ablation, replay_compare


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    out = tmp_path_factory.mktemp("frozen") / "run"
    cfg = ReplayConfig(family="modular", size=100, steps=300, seeds=(21, 22), bootstrap=0, budget=300)
    replay_ablation(cfg, out=out, seed=1)
    return out


@pytest.mark.parametrize("encoding", ["verbose", "compact"])
def test_replay_under_its_own_encoding_reproduces_the_live_losses_exactly(recorded, encoding):
    res = frozen_replay(recorded, encoding)
    own = [r for r in res.results if r.live_encoding == encoding]
    assert len(own) == 4  # graph and ctwm, two seeds
    for r in own:
        assert r.retrieval_identical and r.mismatched_steps == 0
        assert r.max_step_loss_difference == 0
        assert r.replay_tail_error == r.live_tail_error and r.replay_overall_error == r.live_overall_error
        assert r.replay_tokens_mean == r.live_tokens_mean
    # under the other encoding the retrieval map is unchanged (Theorem A.7's premise)
    assert res.all_identical


def test_other_encoding_changes_tokens_not_retrieval(recorded):
    res = frozen_replay(recorded, "compact")
    verbose_ctwm = [r for r in res.results if r.live_encoding == "verbose" and r.memory == "ctwm"]
    assert verbose_ctwm and all(r.retrieval_identical for r in verbose_ctwm)
    assert all(r.replay_tokens_mean < r.live_tokens_mean for r in verbose_ctwm)


def test_a_changed_recording_is_detected(recorded, tmp_path):
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "manifest.json").write_text((recorded / "manifest.json").read_text())
    t = pq.read_table(recorded / "steps.parquet")
    retrieved = t.column("retrieved").to_pylist()
    runs = t.column("run").to_pylist()
    i = next(i for i, (r, x) in enumerate(zip(runs, retrieved, strict=True)) if r.startswith("ctwm") and len(x) >= 2)
    retrieved[i] = list(reversed(retrieved[i]))
    t = t.set_column(t.column_names.index("retrieved"), "retrieved", pa.array(retrieved, type=pa.list_(pa.string())))
    pq.write_table(t, bad / "steps.parquet")
    res = frozen_replay(bad, "compact", runs=[runs[i]])
    assert not res.all_identical
    assert res.results[0].mismatched_steps == 1 and res.results[0].first_mismatch == t.column("step")[i].as_py()


def test_frozen_replay_errors(recorded, tmp_path):
    with pytest.raises(InputError, match=r"no manifest\.json"):
        frozen_replay(tmp_path, "compact")
    with pytest.raises(UsageError, match="unknown encoding"):
        frozen_replay(recorded, "tiny")
    with pytest.raises(UsageError, match="run 'nope' is not in"):
        frozen_replay(recorded, "compact", runs=["nope"])
    with pytest.raises(UsageError, match="must not be the recorded run directory"):
        frozen_replay(recorded, "compact", out=recorded, overwrite=True)


def test_frozen_replay_writes_its_own_run(recorded, tmp_path):
    res = frozen_replay(recorded, "compact", runs=["graph/verbose/21"], out=tmp_path / "replayed")
    doc = json.loads((tmp_path / "replayed" / "manifest.json").read_text())
    assert doc["runs"] == ["graph/verbose/21@compact"] and doc["command"] == "replay frozen"
    steps = pq.read_table(tmp_path / "replayed" / "steps.parquet").to_pandas()
    live = pq.read_table(recorded / "steps.parquet").to_pandas()
    live = live[live.run == "graph/verbose/21"]
    assert np.array_equal(steps.state.to_numpy(), live.state.to_numpy())
    assert res.results[0].replay_overall_error == pytest.approx(1 - steps.correct.mean())


def test_trajectories_are_shared_across_arms(tmp_path):
    cfg = ReplayConfig(family="uniform", size=100, steps=200, seeds=(4,), bootstrap=0)
    replay_compare(cfg, memories=["flat", "ctwm"], baseline="flat", out=tmp_path / "r", seed=0)
    steps = pq.read_table(tmp_path / "r" / "steps.parquet").to_pandas()
    a, b = (g.item.tolist() for _, g in steps.groupby("run"))
    assert a == b
