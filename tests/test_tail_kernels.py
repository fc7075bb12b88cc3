"""The tail's kernels compile only when needed (issue 29): an audit without replicates of a small
histogram runs them as Python and never loads numba, and gives the same bits as the compiled kernels."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

from ctwm_cli.tail import kernels, zeta

PROBE = r"""
import json, sys
import numpy as np
import pytest
import ctwm_cli
from ctwm_cli.tail import kernels

rng = np.random.default_rng(8)
cases = {
    "zipf": (rng.zipf(2.2, 20000), {}),
    "lognormal": (np.ceil(rng.lognormal(2.0, 1.0, 3000)), {}),
    "continuous": (3.0 * np.exp(rng.exponential(1 / 1.4, 1500)), {"discrete": False}),
    "short tail": (rng.zipf(2.6, 400), {"min_tail": 200}),
    "xmax": (rng.zipf(2.0, 5000), {"xmax": 200.0}),
}
def run():
    return {k: ctwm_cli.audit(x, bootstrap=0, seed=3, **o).to_dict() for k, (x, o) in cases.items()}
before = run()
loaded = "numba" in sys.modules
kernels.compile_all()
after = run()
print(json.dumps({"loaded_before": loaded, "compiled": kernels.compiled(), "same": before == after,
                  "differs": [k for k in before if before[k] != after[k]]}))
"""


def _run(code: str) -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True,
                         timeout=600)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_interpreted_kernels_give_the_compiled_bits_and_load_no_numba():
    res = _run(PROBE)
    assert res["loaded_before"] is False  # a bootstrap-free audit of small histograms: no numba
    assert res["compiled"] is True
    assert res["differs"] == [] and res["same"] is True


def test_replicates_or_a_large_histogram_use_the_compiled_kernels():
    code = ("import sys, json, numpy as np, ctwm_cli\n"
            "rng = np.random.default_rng(1)\n"
            "ctwm_cli.audit(rng.zipf(2.2, 3000), bootstrap=5, seed=1, jobs=1)\n"
            "a = 'numba' in sys.modules\n"
            "print(json.dumps({'bootstrap': a}))\n")
    assert _run(code) == {"bootstrap": True}
    big = kernels.INTERPRETED_MAX_DISTINCT + 500
    code = ("import sys, json, numpy as np, ctwm_cli\n"
            f"x = 1.0 + np.random.default_rng(2).pareto(1.5, {big})\n"
            "ctwm_cli.audit(x, bootstrap=0, seed=1, discrete=False)\n"
            "print(json.dumps({'large': 'numba' in sys.modules}))\n")
    assert _run(code) == {"large": True}


def test_a_kernel_compiles_on_first_use_and_pickles_by_name():
    assert float(zeta.log_hurwitz_zeta(2.0, 1.0)) == pytest.approx(np.log(np.pi**2 / 6), rel=1e-14)  # ζ(2) = π²/6
    assert kernels.compiled()
    # every module-level name that held a kernel now holds its numba dispatcher
    assert type(zeta.log_hurwitz_zeta).__module__.startswith("numba")
    k = next(k for k in kernels.KERNELS if k.__name__ == "log_hurwitz_zeta")
    again = pickle.loads(pickle.dumps(k))
    assert again(3.0, 2.0) == zeta.log_hurwitz_zeta(3.0, 2.0)
