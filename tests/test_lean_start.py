"""The audit path loads only what it runs (issue 29): no scipy.stats (its import alone is ~1 s, most
of it parsing docstrings), no plotting, no DuckDB; and the p-values it now takes from scipy.special
are scipy.stats' own, to the bit."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from scipy import stats

from ctwm_cli.tail.compare import nested_power_law, vuong

HEAVY = ("scipy.stats", "matplotlib", "duckdb", "polars", "pandas", "typer", "rich")


def _loaded_after(code: str) -> list[str]:
    probe = code + f"\nimport sys, json\nprint(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))\n"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_library_audit_imports_nothing_heavy():
    code = ("import numpy as np\nfrom ctwm_cli import audit\n"
            "r = audit(np.random.default_rng(1).zipf(2.2, 3000), bootstrap=20, seed=1, jobs=1)\n")
    assert _loaded_after(code) == []


def test_a_heavy_import_is_seen():  # the probe itself can fail
    assert _loaded_after("import scipy.stats") == ["scipy.stats"]


@pytest.mark.parametrize("z", [0.0, 0.3, 1.96, 2.5, 6.0, 12.0, -3.0])
def test_vuong_pvalue_is_scipy_stats_norm(z):
    # two points with log-ratio differences chosen so that z = Λ/σ comes out as given
    d = np.array([1.0, -1.0]) + z / np.sqrt(2.0)
    w = np.array([1.0, 1.0])
    c = vuong("a", "b", d, w, 1.96)
    assert c.pvalue == float(2.0 * stats.norm.sf(abs(c.z)))


@pytest.mark.parametrize("lr", [1e-6, 0.5, 2.7055, 3.84, 10.0, 60.0, 700.0])
def test_nested_pvalue_is_scipy_stats_chi2(lr):
    c = nested_power_law(0.0, lr / 2.0, 0.05)
    assert c.pvalue == float(0.5 * stats.chi2.sf(lr, 1))


#: what ``ctwm audit COUNTS.parquet --bootstrap 0`` has no use for (watched by the ``cli_in_child``
#: fixture): Typer's pydantic coercion (Typer >= 0.29), the packages' __init__ of scipy.special (its
#: array-API layer) and scipy.optimize, Arrow compute kernels, process pools and numba (a histogram
#: this small runs its kernels as Python)
NOT_AT_B0 = ("pydantic", "scipy.special._basic", "scipy._lib._array_api", "numpy.f2py", "scipy.optimize._minimize",
             "pyarrow.compute", "multiprocessing", "numba", "scipy.stats", "matplotlib", "polars", "pandas")


@pytest.fixture(scope="module")
def counts_file(tmp_path_factory):
    import pyarrow as pa
    import pyarrow.parquet as pq

    counts = np.random.default_rng(7).zipf(2.3, 4000)
    path = tmp_path_factory.mktemp("lean") / "counts.parquet"
    pq.write_table(pa.table({"item": [f"m{i}" for i in range(counts.size)], "count": counts}), path)
    return path, counts


def test_cli_audit_at_b0_loads_only_what_it_runs(counts_file, cli_in_child):
    path, counts = counts_file
    doc, loaded = cli_in_child(["audit", str(path), "--bootstrap", "0", "--seed", "3", "--json"], NOT_AT_B0)
    assert loaded == []
    from ctwm_cli import audit

    mine = audit(counts, bootstrap=0, seed=3)
    (row,) = doc["results"]
    assert (row["power_law"]["alpha"], row["power_law"]["xmin"]) == (mine.alpha, mine.xmin)
    assert row["verdict"]["verdict"] == mine.verdict.verdict


def test_cli_audit_with_replicates_loads_numba_but_small_work_no_pool(counts_file, cli_in_child):
    """The probe above can fail (numba is seen once replicates run), and 4 replicates on --jobs 2 are small work:
    they run inline (run_tasks' inline budget, issue 48), so multiprocessing is never imported."""
    path, _ = counts_file
    argv = ["audit", str(path), "--bootstrap", "4", "--jobs", "2", "--seed", "3", "--json"]
    _, loaded = cli_in_child(argv, NOT_AT_B0)
    assert "numba" in loaded and "multiprocessing" not in loaded
