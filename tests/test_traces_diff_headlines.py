"""``ctwm diff`` of two saved results reads every headline it names (issue 41): each metric ``--tol`` accepts
for audit, concentration and psd is found in results saved by today's ``ctwm ... --json``."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ctwm_cli.baseline import HEADLINES


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    """Two event traces of Zipf-like draws (seeded), with steps for psd."""
    root = tmp_path_factory.mktemp("diff")
    out = []
    for k, s in enumerate((1.9, 2.1)):
        rng = np.random.default_rng(k)
        items = np.minimum(rng.zipf(s, 3000), 400)
        path = root / f"t{k}.parquet"
        pq.write_table(pa.table({"item": [f"m{i}" for i in items], "step": np.arange(items.size)}), path)
        out.append(path)
    return out


def saved(run_cli, tmp_path, command, trace, *extra):
    res = run_cli([command, str(trace), "--json", *extra])
    assert res.code == 0, res.err
    path = tmp_path / f"{command}-{trace.stem}.json"
    path.write_text(res.out)
    return path


@pytest.mark.parametrize("command,extra", [
    ("audit", ("--seed", "1", "--bootstrap", "10", "--label", "t")),
    ("concentration", ("--label", "t")),
    ("psd", ("--label", "t")),
])
def test_every_tol_metric_is_read_from_saved_results(run_cli, tmp_path, traces, command, extra):
    base, head = (saved(run_cli, tmp_path, command, t, *extra) for t in traces)
    tols = [f"--tol={m}=1e9" for m in HEADLINES[command]]
    res = run_cli(["diff", str(base), str(head), "--json", *tols])
    assert res.code == 0, res.err  # a metric not read would be "not available", exit 1
    changes = {c["metric"]: c for c in json.loads(res.out)["changes"]}
    assert set(changes) == set(HEADLINES[command])
    for metric, c in changes.items():
        assert c["base"] is not None and c["head"] is not None, metric


def test_diff_z_is_vuong_z_of_the_rule_pair(run_cli, tmp_path, traces):
    base, head = (saved(run_cli, tmp_path, "audit", t, "--seed", "1", "--bootstrap", "10", "--label", "t")
                  for t in traces)
    z = []
    for p in (base, head):
        (r,) = json.loads(p.read_text())["results"]
        (c,) = [c for c in r["comparisons"] if (c["first"], c["second"]) == ("truncated_power_law", "lognormal")]
        z.append(c["z"])
    res = run_cli(["diff", str(base), str(head), "--json", "--tol", "z=100"])
    (c,) = [c for c in json.loads(res.out)["changes"] if c["metric"] == "z"]
    assert (c["base"], c["head"]) == (z[0], z[1])
    assert c["change"] == pytest.approx(z[1] - z[0])
