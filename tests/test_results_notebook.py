"""Results in a notebook (issue 24 item 6): headline numbers as attributes, the verdict equal to its word,
grouped audits indexed by label or group, ``.plot()``, and ``to_arrow()``/``to_polars()`` beside ``to_frame()``.
Every object comes from a real audit of generated data."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import ctwm_cli
from ctwm_cli.api import audit_trace
from ctwm_cli.tail import INCONCLUSIVE, LOGNORMAL, TPL, VERDICTS


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


@pytest.fixture(scope="module")
def zipf():
    x = np.random.default_rng(11).zipf(2.2, 4000)
    return x, ctwm_cli.audit(x, bootstrap=20, seed=5, jobs=1)


@pytest.fixture(scope="module")
def grouped(tmp_path_factory):
    rng = np.random.default_rng(3)
    ids = [f"m{k}" for k in rng.zipf(1.9, 5000)] + [f"m{k}" for k in rng.zipf(2.4, 3000)]
    path = tmp_path_factory.mktemp("nb") / "trace.parquet"
    pq.write_table(pa.table({"item": ids, "run": ["r1"] * 5000 + ["r2"] * 3000}), path)
    return str(path), audit_trace(path, group_by="run", seed=2, bootstrap=0)


def test_headline_numbers_are_attributes_with_the_json_values(zipf):
    _, r = zipf
    d = r.to_dict()
    pl = d["power_law"]
    rule = next(c for c in d["comparisons"] if (c["first"], c["second"]) == ("truncated_power_law", "lognormal"))
    assert (r.alpha, r.xmin, r.n_tail, r.alpha_se) == (pl["alpha"], pl["xmin"], pl["n_tail"], pl["alpha_se"])
    assert (r.Lambda, r.sigma, r.z) == (rule["statistic"], rule["sigma"], rule["z"])
    assert r.p_gof == d["gof"]["pvalue"] and r.reason == d["verdict"]["reason"]
    # every number the repr shows is an attribute of that name with that value
    for key, value in r.summary_row().items():
        assert _same(getattr(r, key), value), key
    assert f"alpha={r.alpha:.4g}" in repr(r) and f"z={r.z:.4g}" in repr(r)


def test_no_fit_gives_nan_not_an_attribute_error():
    r = ctwm_cli.audit(np.full(300, 4), bootstrap=0, seed=1)  # every count equal: no tail to fit
    assert r.power_law is None and r.n_tail is None
    assert all(math.isnan(v) for v in (r.alpha, r.xmin, r.z, r.sigma, r.Lambda, r.alpha_se, r.p_gof))
    assert r.verdict == INCONCLUSIVE and "equal" in r.reason


def test_the_verdict_equals_its_word():
    x = np.ceil(np.random.default_rng(4).lognormal(1.0, 0.6, 400))
    r = ctwm_cli.audit(x, bootstrap=0, seed=1)
    word = r.to_dict()["verdict"]["verdict"]
    assert word in VERDICTS
    assert r.verdict == word and str(r.verdict) == word and r.verdict in {word}
    assert all(r.verdict != other for other in VERDICTS if other != word)
    assert r.verdict != 3 and r.verdict == r.verdict
    # two verdicts are still compared field by field, not only by word
    other = ctwm_cli.audit(x, bootstrap=0, seed=1, min_tail=10_000)
    assert other.verdict == INCONCLUSIVE and (word != INCONCLUSIVE or other.verdict != r.verdict)
    assert json.loads(json.dumps(r.to_dict()))["verdict"]["verdict"] == word  # the JSON is unchanged
    assert {TPL, LOGNORMAL, INCONCLUSIVE} == set(VERDICTS)


def test_grouped_results_index_by_label_and_by_group(grouped):
    path, res = grouped
    assert res.groups == ("r1", "r2")
    assert res["r2"] is res[1] and res[f"{path}[r1]"] is res[0] and res[-1] is res[1]
    with pytest.raises(KeyError, match="no audit labelled 'r3'"):
        res["r3"]
    frame = res.to_frame()
    assert list(frame.columns)[:3] == ["source", "group", "n_items"] and list(frame["group"]) == ["r1", "r2"]
    assert list(frame["source"]) == [path, path]  # the group apart, as in the JSON
    assert frame["alpha"].tolist() == [res["r1"].alpha, res["r2"].alpha]


def test_arrow_and_polars_tables_hold_the_frame(grouped):
    _, res = grouped
    table = res.to_arrow()
    assert isinstance(table, pa.Table) and table.num_rows == 2
    frame = res.to_frame()
    assert table.column_names == list(frame.columns)
    assert table.column("group").to_pylist() == ["r1", "r2"]
    assert table.column("alpha").to_pylist() == frame["alpha"].tolist()
    assert table.column("verdict").to_pylist() == [a.verdict.verdict for a in res]
    one = res[0].to_arrow()
    assert one.num_rows == 1 and one.column("z").to_pylist() == [res[0].z]
    polars = pytest.importorskip("polars")
    pf = res.to_polars()
    assert isinstance(pf, polars.DataFrame) and pf.columns == table.column_names
    assert pf["alpha"].to_list() == table.column("alpha").to_pylist()
    assert res[0].to_polars()["verdict"].to_list() == [res[0].verdict.verdict]


def test_to_polars_without_polars_says_so():
    code = ("import sys\nsys.modules['polars'] = None  # import polars now raises ImportError\n"
            "import numpy as np, ctwm_cli\n"
            "r = ctwm_cli.audit(np.random.default_rng(1).zipf(2.5, 500), bootstrap=0, seed=1)\n"
            "try:\n    r.to_polars()\nexcept ImportError as e:\n    print(e)\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert "to_polars() needs polars, which is not installed" in out.stdout
    assert "Traceback" not in out.stderr


def test_plot_draws_the_audit_and_loads_matplotlib_only_then(zipf):
    x, r = zipf
    code = ("import sys, numpy as np, ctwm_cli\n"
            "r = ctwm_cli.audit(np.random.default_rng(1).zipf(2.5, 800), bootstrap=0, seed=1)\n"
            "before = 'matplotlib' in sys.modules\nfig = r.plot()\n"
            "print(before, 'matplotlib' in sys.modules, type(fig).__name__)\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.split() == ["False", "True", "Figure"]
    fig = r.plot()
    (ax,) = fig.axes
    data = ax.lines[0]
    values = np.unique(x)
    assert np.array_equal(data.get_xdata(), values)  # the audited data's CCDF, every distinct value
    assert data.get_ydata()[0] == 1.0 and len(ax.lines) >= 4  # P(X >= min) = 1; power law, TPL, log-normal
    assert r.verdict.verdict in ax.get_title()
    from matplotlib.figure import Figure

    target = Figure().subplots()
    assert r.plot(ax=target) is target.figure and target.lines


def test_grouped_plot_has_a_panel_per_measure(grouped):
    _, res = grouped
    fig = res.plot()
    assert len(fig.axes) == 3
    drawn = {float(v) for line in fig.axes[0].lines for v in np.atleast_1d(line.get_xdata())}
    assert {a.alpha for a in res} <= drawn  # the first panel is each group's α
