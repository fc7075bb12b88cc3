"""Dask: counting through dask.dataframe equals DuckDB's counts, and an audit whose replicates run on
a 2-worker LocalCluster (--scheduler tcp://...) prints the same JSON as the local run for the same
seed. Skipped without the dask extra."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

distributed = pytest.importorskip("distributed")
pytest.importorskip("dask.dataframe")

from ctwm_cli.common.errors import UsageError  # noqa: E402
from ctwm_cli.runtime.distributed import check_scheduler, using_scheduler  # noqa: E402
from ctwm_cli.runtime.parallel import run_tasks  # noqa: E402
from ctwm_cli.traces import EngineOptions  # noqa: E402
from ctwm_cli.traces.paths import ReadOptions, read_counts  # noqa: E402


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None) as c:
        yield c


@pytest.fixture(scope="module")
def hive(tmp_path_factory):
    rng = np.random.default_rng(11)
    n = 40_000
    items = [f"m{k}" for k in rng.zipf(1.8, n) % 2500]
    t = pa.table({"item": items, "step": np.arange(n), "run": [f"r{k % 3}" for k in range(n)],
                  "event": rng.choice(["retrieve", "retrieve", "write"], n)})
    d = tmp_path_factory.mktemp("dask")
    pq.write_to_dataset(t, d / "hive", partition_cols=["run"])
    pacsv.write_csv(t, d / "t.csv")
    return d


def _as_dict(counts):
    return {(c.group, i): n for c in counts for i, n in zip(c.items.to_pylist(), c.counts.tolist(), strict=True)}


@pytest.mark.parametrize("name", ["hive", "t.csv"])
def test_dask_counts_equal_duckdb(hive, cluster, name):
    path = str(hive / name)
    local = read_counts([path], ReadOptions(where="step >= 100"), group_by="run")
    dask = read_counts([path], ReadOptions(where="step >= 100", engine=EngineOptions(
        engine="dask", scheduler=cluster.scheduler_address)), group_by="run")
    assert [c.group for c in dask] == [c.group for c in local] == ["r0", "r1", "r2"]
    assert _as_dict(dask) == _as_dict(local)


def _square(x: int) -> int:
    return x * x


def test_run_tasks_on_the_cluster_keeps_task_order(cluster):
    with using_scheduler(cluster.scheduler_address):
        got = run_tasks(_square, list(range(40)), jobs=2)
    assert got == [x * x for x in range(40)]


def test_audit_on_a_cluster_prints_the_local_json(hive, cluster, run_cli):
    args = ["audit", str(hive / "hive"), "--group-by", "run", "--bootstrap", "40", "--calibrate", "3", "--seed", "7",
            "--json"]
    local = run_cli(args)
    assert local.code == 0, local.err
    remote = run_cli([*args, "--engine", "dask", "--scheduler", cluster.scheduler_address])
    assert remote.code == 0, remote.err
    assert json.loads(remote.out) == json.loads(local.out)


def test_scheduler_checks():
    assert check_scheduler("local") == "local"
    with pytest.raises(UsageError, match="scheduler must be tcp://HOST:PORT"):
        check_scheduler("localhost:8786")
