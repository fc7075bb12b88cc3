"""Whole audits agree with tests/data/audit_golden.json (written by tests/data/make_audit_golden.py from commit
4f7bdf5, written again once after the discrete MLE's fix, on a machine with AVX-512): every decision exactly and
every float to the precision of the method that computed it (tests/data/golden_compare.py says which and why), so
the goldens hold on any CPU; and the same seed gives the same bytes twice on this machine."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"
sys.path.insert(0, str(DATA))
import golden_compare  # noqa: E402
import make_audit_golden as golden  # noqa: E402

pytest.importorskip("powerlaw")  # the Clauset data sets ship in its wheel

GOLDEN = json.loads((DATA / "audit_golden.json").read_text())


def parsed(record: dict) -> dict:
    """A golden record with its JSON text parsed, so that the comparison walks its fields."""
    return {"json": json.loads(record["json"]), "nulls": record["nulls"]}


@pytest.mark.parametrize("case", golden.CASES, ids=[golden.case_key(*c) for c in golden.CASES])
def test_same_decisions_and_fits_as_before(case):
    want, got = GOLDEN[golden.case_key(*case)], golden.run_case(*case)
    assert golden_compare.mismatches(parsed(want), parsed(got)) == []


def test_every_case_is_stored():
    assert sorted(GOLDEN) == sorted(golden.case_key(*c) for c in golden.CASES)


_TWICE = """
import json, sys
sys.path.insert(0, sys.argv[1])
import make_audit_golden as g
print(json.dumps([g.run_case(*c) for c in g.CASES if c[0] in ("blackouts", "lognormal")], sort_keys=True))
"""


def test_same_seed_gives_the_same_bytes():
    """Bit for bit within one machine: two fresh processes give the same JSON text and the same null
    distributions to the last bit (hex), for a discrete and a continuous audit and one with every family."""
    runs = [subprocess.run([sys.executable, "-c", _TWICE, str(DATA)], capture_output=True, text=True, check=True)
            for _ in range(2)]
    assert runs[0].stdout == runs[1].stdout
    assert len(json.loads(runs[0].stdout)) == 3
