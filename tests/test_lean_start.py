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
