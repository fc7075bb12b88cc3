"""Write tests/data/scan_golden.json: the x_min scan's and the bootstrap's outputs, bit for bit.

    PYTHONPATH=<checkout> python tests/data/make_scan_golden.py

The stored file was made from the code before issue 29's scan (c024add) and written again, once, after the
discrete MLE stopped restarting by bisection at its converged root (issue 29): α̂ moved by at most
1e-13 relative towards the exact root, the KS distances by at most 1e-11, every x_min and count stayed. The test
tests/test_tail_scan.py recomputes every case with the current code and compares it with
tests/data/golden_compare.py: x_min, n_tail, the candidates and the p-value exactly, α̂, KS, the loglik and every
null value to 1e-9 relative (the MLE's precision; the floats are stored in hex, so nothing is lost in the file).
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np

from ctwm_cli.tail.bootstrap import bootstrap_gof, gof_result, gof_tasks, replicate_ks
from ctwm_cli.tail.powerlaw import Histogram, fit_power_law


def reference(name: str) -> np.ndarray:
    import powerlaw

    return np.genfromtxt(os.path.join(os.path.dirname(powerlaw.__file__), "reference_data", f"{name}.txt"))


def synthetic(name: str) -> np.ndarray:
    rng = np.random.default_rng(7)
    if name == "zipf":
        return rng.zipf(2.2, 5000).astype(np.float64)
    if name == "lognormal":
        return np.ceil(rng.lognormal(2.0, 1.2, 5000))
    if name == "pareto":  # continuous, every value distinct
        return 3.0 * np.exp(rng.exponential(1 / 1.5, 4000))
    raise KeyError(name)


# (data, discrete, replicates, options)
CASES = [
    ("cities", True, 12, {}),
    ("cities", False, 12, {}),
    ("quakes", False, 8, {}),
    ("blackouts", True, 40, {}),
    ("words", True, 20, {}),
    ("flares", True, 12, {}),
    ("terrorism", False, 20, {}),
    ("zipf", True, 30, {}),
    ("lognormal", True, 30, {}),
    ("pareto", False, 20, {}),
    ("zipf", True, 20, {"xmin": 3.0}),
    ("pareto", False, 20, {"xmin_range": (4.0, 20.0)}),
    ("cities", True, 10, {"min_tail": 300}),
    # the audit scans with --scan-floor 10
    ("cities", True, 8, {"min_tail": 10}),
    ("cities", False, 8, {"min_tail": 10}),
    ("quakes", False, 8, {"min_tail": 10}),
    ("words", True, 10, {"min_tail": 10}),
    ("zipf", True, 20, {"min_tail": 10}),
    ("pareto", False, 20, {"min_tail": 10}),
]


def data(name: str) -> np.ndarray:
    return synthetic(name) if name in ("zipf", "lognormal", "pareto") else reference(name)


def run_case(name: str, discrete: bool, replicates: int, opts: dict) -> dict:
    hist = Histogram.from_sample(data(name))
    min_tail = opts.get("min_tail", 100)
    fit = fit_power_law(hist, discrete=discrete, min_tail=min_tail, xmin=opts.get("xmin"),
                        xmin_range=opts.get("xmin_range"))
    out = {"fit": {k: (v.hex() if isinstance(v, float) else v) for k, v in fit.to_dict().items()}}
    ss = np.random.SeedSequence(11)
    if "xmin_range" in opts:
        tasks = gof_tasks(hist, fit, replicates=replicates, seed=ss, min_tail=min_tail, xmin_fixed=False,
                          xmin_range=opts["xmin_range"])
        gof = gof_result(fit, [replicate_ks(t) for t in tasks], replicates)
    else:
        gof = bootstrap_gof(hist, fit, replicates=replicates, seed=ss, jobs=1, min_tail=min_tail,
                            xmin_fixed="xmin" in opts)
    out["pvalue"] = gof.pvalue.hex()
    out["null"] = [float(d).hex() for d in gof.null_distribution]
    return out


def case_key(name, discrete, replicates, opts) -> str:
    return json.dumps([name, discrete, replicates, opts], sort_keys=True)


def main() -> None:
    result = {case_key(*c): run_case(*c) for c in CASES}
    path = os.path.join(os.path.dirname(__file__), "scan_golden.json")
    with open(path, "w") as f:
        json.dump(result, f, indent=1, sort_keys=True)
    print("wrote", path, file=sys.stderr)


if __name__ == "__main__":
    main()
