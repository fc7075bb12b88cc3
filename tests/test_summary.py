"""The lead paragraph (``summary``) of audit, health and the report: its numbers against figures computed here
from the files, every branch of the verdict rule in words, the missing-data cases, and hostile labels
(issue 39)."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pyarrow.parquet as pq
import pytest

from ctwm_cli.health.deadweight import DeadWeightAcc
from ctwm_cli.reporting.reasons import KIND_WORDS, PATTERNS, explain
from ctwm_cli.reporting.summary import audits_summary, dead_weight_sentence, percent
from ctwm_cli.tail.calibrate import calibrated_rule
from ctwm_cli.tail.verdict import Verdict, fit_checked, paper_rule

TPL = "sample_traces/tpl_events.parquet"
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def _doc(run_cli, args):
    res = run_cli([*args, "--json"])
    assert res.code in (0, 1), res.err
    return json.loads(res.out)


def _whole_percent(share: float) -> str:
    return f"{round(share * 100)}%"


def test_audit_lead_restates_the_counts_computed_by_hand(run_cli):
    t = pq.read_table(TPL).to_pandas()
    counts = t[t.event == "retrieve"].item.value_counts().to_numpy()  # the audit counts retrieve rows per item
    desc = np.sort(counts)[::-1]
    k = math.ceil(0.1 * desc.size)
    share = desc[:k].sum() / desc.sum()
    doc = _doc(run_cli, ["audit", TPL, "-b", "0", "--seed", "1"])
    lead = doc["summary"]
    assert lead == doc["results"][0]["summary"]  # one trace: the document's lead is its result's
    assert f"{int(desc.sum()):,} accesses of {desc.size:,} items." in lead
    assert f"The top 10% of items ({k:,} items) take {_whole_percent(share)} of the accesses" in lead
    assert f"the most-accessed item is {desc[0] / np.median(desc):,.0f} times the median" in lead
    verdict = doc["results"][0]["verdict"]
    assert f"The tail verdict is {verdict['verdict']} because " in lead
    assert not CONTROL.search(lead)


def test_the_table_format_prints_the_lead_first(run_cli):
    res = run_cli(["audit", TPL, "-b", "0", "--seed", "1"])
    doc = _doc(run_cli, ["audit", TPL, "-b", "0", "--seed", "1"])
    first = res.out.split("Tail audit:")[0]
    assert " ".join(first.split()) == doc["summary"]  # the same words, wrapped at the console's width


def test_grouped_audit_tallies_the_verdicts_and_gives_each_group_its_lead(run_cli):
    doc = _doc(run_cli, ["audit", TPL, "--group-by", "run", "-b", "0", "--seed", "1"])
    verdicts = [r["verdict"]["verdict"] for r in doc["results"]]
    n = len(verdicts)
    assert doc["summary"].startswith(f"{n} groups: ")
    for v in set(verdicts):
        assert f"{verdicts.count(v)} {v}" in doc["summary"]
    for r in doc["results"]:
        assert r["summary"].startswith(f"{r['source']}[{r['group']}]: ") and r["verdict"]["verdict"] in r["summary"]


def test_counts_table_without_steps(run_cli):
    t = pq.read_table("sample_traces/powerlaw_counts.parquet").to_pandas()
    lead = _doc(run_cli, ["audit", "sample_traces/powerlaw_counts.parquet", "-b", "0", "--seed", "1"])["summary"]
    assert f"{int(t['count'].sum()):,} accesses of {len(t):,} items." in lead


def test_few_items_say_the_most_accessed_item_and_value_columns_say_values(run_cli, tmp_path):
    few = tmp_path / "few.jsonl"
    few.write_text("".join(json.dumps({"item": f"m{i}"}) + "\n" for i in (1, 1, 1, 2, 3)))
    lead = _doc(run_cli, ["audit", few, "-b", "0"])["summary"]
    assert "3 items. The most-accessed item takes 60% of the accesses" in lead
    assert "tail cutoff" in lead or "Assumption 3.3" in lead  # 3 items cannot make a tail of 100
    sizes = tmp_path / "sizes.jsonl"
    sizes.write_text("".join(json.dumps({"item": str(i), "size": float(i)}) + "\n" for i in range(1, 41)))
    lead = _doc(run_cli, ["audit", sizes, "--value-col", "size", "--continuous", "-b", "0"])["summary"]
    assert "40 values." in lead and "accesses" not in lead
    assert f"The top 10% of values (4 values) take {_whole_percent((37 + 38 + 39 + 40) / 820)} of the total" in lead


def test_hostile_labels_and_items_reach_no_summary_raw(run_cli, tmp_path):
    evil = "\x1b[31mred\x1b]0;title\x07\u202e"
    path = tmp_path / "evil.jsonl"
    rows = [{"item": f"{evil}{i % 7}", "run": f"{evil}run{i % 2}", "step": i, "event": "retrieve"} for i in range(60)]
    rows += [{"item": f"{evil}{i}", "run": f"{evil}run0", "step": 0, "event": "write"} for i in range(9)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    audit = _doc(run_cli, ["audit", path, "--group-by", "run", "-b", "0"])
    health = _doc(run_cli, ["health", path, "--group-by", "run"])
    texts = [audit["summary"], *(r["summary"] for r in audit["results"]), health["summary"],
             *(g["report"]["summary"] for g in health["groups"])]
    for text in texts:
        assert not CONTROL.search(text) and "\u202e" not in text, text
    table = run_cli(["health", path, "--group-by", "run"]).out
    assert "\x1b" not in table and "live memories" in table


def test_health_lead_counts_a_trace_written_by_hand(run_cli, tmp_path):
    """5 memories written, m4 superseded (4 live), m0 and m1 read: m2 and m3, 2 of 4, never read."""
    rows = [{"item": f"m{i}", "step": i, "event": "write"} for i in range(5)]
    rows += [{"item": "m4", "step": 5, "event": "supersede", "by": "m3"}]
    rows += [{"item": "m0", "step": 6, "event": "retrieve"}, {"item": "m1", "step": 7, "event": "retrieve"},
             {"item": "m4", "step": 8, "event": "retrieve"}]  # m4 is superseded: a stale read
    path = tmp_path / "h.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    doc = _doc(run_cli, ["health", path])
    lead = doc["summary"]
    assert lead.startswith(f"{path}: 9 rows. 2 of 4 live memories were never read")
    assert "1 of the 3 retrieve rows (33%) read a memory that was superseded" in lead


def test_health_without_reads_or_live_memories_says_what_it_cannot_tell(run_cli):
    lead = _doc(run_cli, ["health", "sample_traces/telemetry/mem0_history.json"])["summary"]
    assert "the trace records no reads" in lead and "never read" not in lead
    nothing = DeadWeightAcc()  # the real accumulator, fed a store whose one memory was removed
    nothing.feed("m0", "write", 0.0, None)
    nothing.feed("m0", "evict", 1.0, None)
    empty = nothing.finish({}, 1.0, None, None, "step", [])  # the lifecycle leaves nothing live
    assert empty.live == 0 and dead_weight_sentence(empty) == "No memory is live at the end of the trace."


def test_no_audits():
    assert audits_summary([], noun="groups") == "No groups to audit."


def test_report_sections_open_with_the_lead(tmp_path):
    from ctwm_cli.reporting.model import Report, Section
    from ctwm_cli.reporting.page import render

    lead = "x: 3 items. The tail verdict is inconclusive because <b>\x1b[31m."
    html = render(Report(title="t", seed=1, sections=(Section(kind="trace", source="x", title="T", card=None,
                                                              blocks=(), summary=lead),)))
    assert '<p class="lead">x: 3 items. The tail verdict is inconclusive because &lt;b&gt;\\x1b[31m.</p>' in html


# --- every branch of the rule, in words

def _paper(**kw):
    base = dict(n_tail=500, lam=5.0, sigma=1.0, p_gof=0.5, min_tail=100, p_star=0.1, z_star=1.96)
    return paper_rule(**{**base, **kw})


BRANCHES = {
    "no-cutoff": _paper(n_tail=None),
    "short-tail": _paper(n_tail=40),
    "few-values": _paper(distinct=2),
    "fit-failed": _paper(fit_problem="the lognormal fit failed on the tail (no finite likelihood)"),
    "fit-at-bound": _paper(fit_problem="the truncated_power_law fit stops at its bound lambda = 0: Λ does not "
                                       "compare two maxima"),
    "no-sigma": _paper(sigma=0.0),
    "no-preference": _paper(lam=1.0),
    "lognormal": _paper(lam=-5.0),
    "no-bootstrap": _paper(p_gof=math.nan),
    "gof-rejected": _paper(p_gof=0.03),
    "tpl": _paper(),
    "own-fit-unchecked": fit_checked(_paper(), {}, 0.05, 5.0),
    "own-fit-rejected": fit_checked(_paper(lam=-5.0), {"lognormal": 0.01}, 0.05, -5.0),
    "mixture": fit_checked(_paper(), {"truncated_power_law": 0.5}, 0.05, 5.0, mixture_z={"truncated_power_law": 3.0}),
}


@pytest.mark.parametrize("kind", sorted(BRANCHES))
def test_every_reason_of_the_rule_has_plain_words_with_its_numbers(kind):
    v = BRANCHES[kind]
    e = explain(v.reason)
    assert e.kind == kind, v.reason
    for number in re.findall(r"-?\d+(?:\.\d+)?", v.reason):  # every number of the reason, as printed
        assert number in e.text, (number, v.reason, e.text)
    assert "TPL preferred" not in e.text


def test_every_pattern_is_driven_and_has_words_for_several_groups():
    assert {kind for kind, _, _ in PATTERNS} == set(BRANCHES) and set(BRANCHES) | {"other"} == set(KIND_WORDS)


def test_appended_parts_are_explained_or_quoted():
    passes = fit_checked(_paper(), {"truncated_power_law": 0.42}, 0.05, 5.0)
    e = explain(passes.reason)
    assert e.kind == "tpl" and e.text.endswith("; the truncated power law passes its own goodness-of-fit test "
                                               "(p_gof_truncated_power_law = 0.420)")
    unknown = explain("x_max = 5: only the doubly truncated power-law fit is supported")
    assert unknown.kind == "other" and unknown.text == "x_max = 5: only the doubly truncated power-law fit is supported"


@pytest.mark.parametrize("args", [dict(z=3.0, z_hi=2.0, z_lo=-2.0), dict(z=0.0, z_hi=2.0, z_lo=-2.0),
                                  dict(z=-3.0, z_hi=2.0, z_lo=-2.0), dict(z=math.inf, z_hi=2.0, z_lo=-2.0)])
def test_calibrated_reasons_are_quoted_whole(args):
    v = calibrated_rule(_paper(), level=0.05, **args)
    assert explain(v.reason).text == v.reason


def test_a_grouped_lead_names_the_most_common_reason():
    class A:
        def __init__(self, v: Verdict):
            self.verdict, self.concentration = v, None

    lead = audits_summary([A(BRANCHES["short-tail"]), A(_paper(n_tail=50)), A(BRANCHES["gof-rejected"])])
    assert lead.startswith("3 groups: 3 inconclusive.") and "Inconclusive: 2 of 3 because the tail is shorter" in lead


@pytest.mark.parametrize("share, text", [(0.0, "0%"), (1.0, "100%"), (0.7, "70%"), (0.996, "99.6%"),
                                         (0.0004, "<0.1%"), (0.9996, ">99.9%"), (0.004, "0.4%")])
def test_percent(share, text):
    assert percent(share) == text
