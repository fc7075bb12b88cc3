"""Tables for people: the glossary headers (the JSON key as the tooltip), numbers for reading, intervals written
``+0.016 [+0.010, +0.023]``, identifiers that wrap only after a separator, long tables folded after their first
rows. Pure functions of :mod:`ctwm_cli.reporting.page`; the browser checks are in ``test_report_browser.py``."""

from __future__ import annotations

import re

import pytest
from report_helpers import parse, replay_dir

__all__ = ["replay_dir"]  # fixture

from ctwm_cli.reporting.glossary import GLOSSARY
from ctwm_cli.reporting.model import Estimate, Table
from ctwm_cli.reporting.page import cell_text, estimate, fmt, table_html


@pytest.mark.parametrize(("value", "shown"), [
    (13350.0, "13,350"), (1.335e4 + 0.4, "13,350"), (1400.5, "1,400"), (203.3725, "203.4"), (0.7294117, "0.7294"),
    (-0.0008527, "−8.527×10⁻⁴"), (12, "12"), (-1234567, "−1,234,567"), (0.0, "0"), (None, "–"),
    (float("nan"), "–"), (float("inf"), "∞"), (True, "yes"), (2.0e16, "2.000×10¹⁶"),
])
def test_numbers_for_reading(value, shown):
    assert fmt(value) == shown


@pytest.mark.parametrize(("cell", "shown"), [
    (Estimate(value=0.0163, low=0.0101, high=0.0229), "+0.016 [+0.010, +0.023]"),
    (Estimate(value=1197.1275, low=996.854, high=1459.916), "+1,197 [+997, +1,460]"),
    (Estimate(value=-0.0117, low=-0.0536, high=0.0152), "−0.012 [−0.054, +0.015]"),
    (Estimate(value=203.4, low=180.2, high=230.9, signed=False), "203 [180, 231]"),
    (Estimate(value=0.0, low=None, high=None), "0"),
    (Estimate(value=0.25, low=None, high=None), "+0.25"),
    (Estimate(value=None), "–"),
])
def test_an_interval_is_written_at_the_precision_of_its_width(cell, shown):
    assert estimate(cell) == shown == fmt(cell)


def test_headers_come_from_the_glossary_and_keep_the_key_as_tooltip():
    t = Table(caption="c", columns=("tokens_mean", "Memory"), rows=((1400.5, "m1"),))
    ths = list(parse(table_html(t)).root.iter("th"))
    assert [(th.all_text(), th.attrs.get("title")) for th in ths] == [("Tokens per step", "tokens_mean"),
                                                                     ("Memory", None)]
    assert Table.to_dict(t)["columns"] == ["tokens_mean", "Memory"]  # the JSON keeps the key


def test_identifiers_wrap_only_after_a_separator():
    html = cell_text("majority_evidence_in_prompt")
    assert html == "majority_<wbr>evidence_<wbr>in_<wbr>prompt"
    assert cell_text("graph/compact") == "graph/<wbr>compact"
    assert cell_text("<b>a_b</b>") == "&lt;b&gt;a_<wbr>b&lt;/<wbr>b&gt;"  # escaped all the same
    assert cell_text("plain words") == "plain words"


def test_a_long_table_shows_its_first_rows_and_folds_the_rest():
    rows = tuple((f"m{i}", i) for i in range(30))
    t = Table(caption="long", columns=("item", "accesses"), rows=rows, summary="30 items.", open_rows=10)
    tree = parse(table_html(t))
    tables = list(tree.root.iter("table"))
    assert [len(list(x.iter("tr"))) - 1 for x in tables] == [10, 20]  # header row each
    folded = next(tree.root.iter("details"))
    assert "The other 20 rows" in folded.all_text() and "30 items." in next(tree.root.iter("caption")).all_text()
    short = Table(caption="short", columns=("item",), rows=rows[:11], open_rows=10)  # 1 more row: not folded
    assert "<details>" not in table_html(short)


def test_every_snake_case_column_of_a_page_has_glossary_words(replay_dir):
    import ctwm_cli

    rep = ctwm_cli.report(str(replay_dir), seed=1)
    keys = {c for s in rep.to_dict()["sections"] for b in s["blocks"] for t in b.get("tables", [])
            for c in t["columns"]}
    keys |= {c for f in rep.figures() for c in f.table.columns}
    raw = {k for k in keys if re.fullmatch(r"[a-z0-9_.]+", k) and ("_" in k or "." in k)}
    assert raw and raw <= set(GLOSSARY), sorted(raw - set(GLOSSARY))
