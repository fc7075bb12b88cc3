"""Write tests/data/audit_golden.json: whole audits' JSON, character for character.

    PYTHONPATH=<checkout> python tests/data/make_audit_golden.py

Issue 29 asks that speed work leave results unchanged: the same seed gives byte-identical JSON. The
x_min scan and p_gof's bootstrap are pinned by scan_golden.json; this file pins everything else an audit
computes with a seed (the alternatives' L-BFGS-B fits, the nested test's null, the families' fit checks,
the uncertainty re-fits), from the code before the fits were made faster (commit 4f7bdf5), and written again
once after the discrete MLE's fix: against 4f7bdf5's outputs every x_min, n_tail, bootstrap p-value and verdict
is the same, α̂ moved by at most 1e-13 relative, and what L-BFGS-B fits from it (TPL, mixture, the LR tests)
by at most 4e-6 relative, inside the optimiser's own tolerance.
tests/test_audit_golden.py recomputes every case and compares it field by field (tests/data/golden_compare.py):
decisions exactly, floats to the precision of the method that computed them, so the goldens hold on any CPU.
Write the file again only on purpose, when a change of results is intended, and say why in the commit.
"""

from __future__ import annotations

import json
import sys

from make_scan_golden import data

from ctwm_cli.tail.audit import audit

# (data, discrete, bootstrap, options)
CASES = [
    ("blackouts", True, 30, {}),
    ("blackouts", False, 30, {}),
    ("terrorism", False, 20, {}),
    ("words", True, 20, {}),
    ("surnames", False, 15, {"check_all_families": True}),
    ("zipf", True, 20, {"uncertainty": 20}),
    ("lognormal", True, 20, {"check_all_families": True}),
    ("pareto", False, 20, {}),
]


def case_key(name: str, discrete: bool, bootstrap: int, opts: dict) -> str:
    return json.dumps([name, discrete, bootstrap, opts], sort_keys=True)


def _hex(a) -> list[str] | None:
    return None if a is None else [float(v).hex() for v in a]


def run_case(name: str, discrete: bool, bootstrap: int, opts: dict) -> dict:
    """The JSON text (without the version), and every bootstrap's null distribution in hex (the JSON keeps
    only their quantiles)."""
    r = audit(data(name), discrete=discrete, bootstrap=bootstrap, seed=5, jobs=1, **opts)
    d = r.to_dict()
    d.pop("version", None)
    nulls = {"gof": _hex(r.gof.null_distribution), "gof_lr": _hex(r.gof.null_lr)}
    nulls.update({k: _hex(g.null_distribution) for k, g in (r.fit_checks or {}).items()})
    return {"json": json.dumps(d, sort_keys=True), "nulls": nulls}


if __name__ == "__main__":
    out = {case_key(*c): run_case(*c) for c in CASES}
    path = sys.argv[1] if len(sys.argv) > 1 else __file__.replace("make_audit_golden.py", "audit_golden.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
        f.write("\n")
