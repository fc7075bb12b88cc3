"""Whole audits give the JSON they gave before issue 29's faster fits, character for character, and the
same null distributions bit for bit (tests/data/audit_golden.json, written by
tests/data/make_audit_golden.py from commit 4f7bdf5, written again once after the discrete MLE's fix)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"
sys.path.insert(0, str(DATA))
import make_audit_golden as golden  # noqa: E402

pytest.importorskip("powerlaw")  # the Clauset data sets ship in its wheel

GOLDEN = json.loads((DATA / "audit_golden.json").read_text())


@pytest.mark.parametrize("case", golden.CASES, ids=[golden.case_key(*c) for c in golden.CASES])
def test_same_json_as_before(case):
    want, got = GOLDEN[golden.case_key(*case)], golden.run_case(*case)
    assert got["nulls"] == want["nulls"]
    assert got["json"] == want["json"]


def test_every_case_is_stored():
    assert sorted(GOLDEN) == sorted(golden.case_key(*c) for c in golden.CASES)
