"""docs/security.md is the contract: every row of its threat model names tests, and each exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "security.md"
ROW = re.compile(r"^\| ([A-Z]\d+) \|(.*)\|\s*$")
TEST = re.compile(r"`(tests/[\w/]+\.py)::(test_\w+)`")


def _rows() -> dict[str, list[tuple[str, str]]]:
    rows = {}
    for line in PAGE.read_text(encoding="utf-8").splitlines():
        m = ROW.match(line)
        if m:
            rows[m.group(1)] = TEST.findall(m.group(2).rsplit("|", 1)[-1])
    return rows


def test_every_row_names_tests_that_exist():
    rows = _rows()
    assert {"C1", "C2", "C3", "C4", "G1", "G3", "T1", "R1", "R3", "X1"} <= set(rows)
    for row, tests in rows.items():
        assert tests, f"row {row} names no test"
        for path, name in tests:
            source = (ROOT / path).read_text(encoding="utf-8")
            assert re.search(rf"^def {name}\(", source, re.M), f"row {row}: {path}::{name} does not exist"


def test_a_row_without_a_test_would_fail(tmp_path):
    """The check above can fail: a row whose test column names nothing is found."""
    line = "| Z9 | may | may not | how | none yet |"
    m = ROW.match(line)
    assert m and TEST.findall(m.group(2).rsplit("|", 1)[-1]) == []
