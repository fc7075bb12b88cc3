"""The report's memory lists (issue 42's last item, part of issue 46): a trace written through the real
``TraceWriter`` by four tenants, ``ctwm report`` run on it, the page parsed, and its hot list, cold list and
stale-above-current line checked against counts made here from the trace's own rows with pandas."""

from __future__ import annotations

import json
import random

import pandas as pd
import pytest
from report_helpers import external_references, parse

from ctwm_cli.traces.writer import TraceWriter

USERS = ("alice", "bob", "carol", "dave")
HOSTILE_ID = "<script>alert(1)</script>"
HOSTILE_TEXT = "\x1b[31m<script>alert(2)</script>\u202e" + "long " * 30
N_MEMORIES, COLD = 14, 2  # per user; the last COLD memories of each user are never read


def _workload(trace, objects) -> dict:
    """Each user writes 14 memories, supersedes m1 by m2, then runs searches that hit a skewed choice of the
    others (some return nothing, some rank the stale m1 above m2); returns the hand counts of the check."""
    rng = random.Random(7)
    stale_above = {u: 0 for u in USERS}
    objs = []
    step = 0
    with TraceWriter(trace, timestamps=False) as w:
        for u in USERS:
            scope = f"user_id={u}"
            mems = [HOSTILE_ID if (u, i) == ("alice", 3) else f"{u}-m{i}" for i in range(N_MEMORIES)]
            for i, m in enumerate(mems):
                w.write(m, step=step, run=scope)
                objs.append({"id": m, "content": HOSTILE_TEXT if m == HOSTILE_ID else f"{u} fact {i}", "scope": scope})
            w.supersede(mems[1], by=mems[2], step=step, run=scope)
            readable = mems[: N_MEMORIES - COLD]
            for q in range(30):
                step += 1
                w.event("search", f"q-{u}-{q}", step=step, run=scope)
                if q % 10 == 9:  # a query that found nothing
                    continue
                hits = rng.sample(readable, 3) if q % 3 else [mems[1], mems[2], readable[q % len(readable)]]
                if q % 6 == 0:  # the stale m1 below the live m2 at this query: not counted
                    hits[0], hits[1] = hits[1], hits[0]
                hits = list(dict.fromkeys(hits))
                ranks = {m: r for r, m in enumerate(hits, 1)}
                if mems[1] in ranks and mems[2] in ranks and ranks[mems[1]] < ranks[mems[2]]:
                    stale_above[u] += 1
                for r, m in enumerate(hits, 1):
                    w.retrieve(m, rank=r, step=step, run=scope)
                if q % 4 == 0:
                    w.event("read", readable[(q // 4) % len(readable)], step=step, run=scope)
    objects.write_text("".join(json.dumps(o) + "\n" for o in objs), encoding="utf-8")
    return stale_above


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    from ctwm_cli.cli import main

    tmp = tmp_path_factory.mktemp("hot")
    trace, objects, out = tmp / "agent.jsonl", tmp / "objects.jsonl", tmp / "page.html"
    stale_above = _workload(trace, objects)
    code = main(["report", str(trace), "--objects", str(objects), "--group-by", "user", "-o", str(out),
                 "--seed", "1", "--bootstrap", "10", "--sweep", "none", "--quiet"])
    assert code == 0
    rows = pd.read_json(trace, lines=True)
    rows["user"] = rows["run"].str.removeprefix("user_id=")
    return out.read_text(encoding="utf-8"), rows, stale_above


def _tables(tree) -> dict[str, list[list[str]]]:
    """caption -> rows of cell texts, for every table of the page."""
    out = {}
    for t in tree.root.iter("table"):
        cap = next(t.iter("caption")).all_text()
        out[cap] = [[c.all_text() for c in tr.iter() if c.tag in ("td", "th")] for tr in t.iter("tr")]
    return out


def _expected_hot(rows: pd.DataFrame) -> list[list[str]]:
    hits = rows[rows.event == "retrieve"].groupby("item").size()
    reads = rows[rows.event == "read"].groupby("item").size()
    superseded = set(rows.loc[rows.event == "supersede", "item"])
    top = sorted(hits.items(), key=lambda kv: (-kv[1], kv[0]))[:10]
    return [[m, f"{n:,}", f"{int(reads.get(m, 0)):,}", "superseded" if m in superseded else "live"] for m, n in top]


def _expected_cold(rows: pd.DataFrame) -> set[str]:
    used = set(rows.loc[rows.event.isin(["retrieve", "read"]), "item"])
    gone = set(rows.loc[rows.event == "supersede", "item"])
    return set(rows.loc[rows.event == "write", "item"]) - used - gone


def _queries_with_results(rows: pd.DataFrame) -> int:
    return rows[rows.event == "retrieve"][["run", "step"]].drop_duplicates().shape[0]


def _lists(tables, where: str):
    hot = next(v for k, v in tables.items() if k.startswith(f"Most-read memories{where}:"))
    cold = next(v for k, v in tables.items() if k.startswith(f"Never-read live memories{where}:"))
    return hot, cold


def test_hot_and_cold_lists_pooled_and_per_user_are_the_traces_counts(page):
    html, rows, _ = page
    tree = parse(html)
    tables = _tables(tree)
    for where, sub in [("", rows), *((f" of user={u}", rows[rows.user == u]) for u in USERS)]:
        hot, cold = _lists(tables, where)
        assert hot[0] == ["Memory", "Retrievals", "Key reads", "State at the end", "Text"]
        assert [r[:4] for r in hot[1:]] == _expected_hot(sub), where
        assert cold[0] == ["Memory", "Text"]
        assert {r[0] for r in cold[1:]} == _expected_cold(sub), where
        n = len(_expected_cold(sub))
        assert f"Never-read live memories{where}: {n:,} of {n:,}, oldest first" in tables
    # four tenants: each tenant's lists sit in a closed <details> (no script opens them), under one heading
    summaries = [d for d in tree.root.iter("details") if any(c.tag == "summary" for c in d.children)]
    assert [next(c for c in d.children if c.tag == "summary").all_text() for d in summaries
            if "open" not in d.attrs and "user=" in d.all_text()[:12]] == [f"user={u}" for u in USERS]
    assert any(h.all_text() == "Memory lists per user: 4 scopes" for h in tree.root.iter("h4"))


def test_stale_above_current_line_is_the_hand_count(page):
    html, rows, stale_above = page
    tree = parse(html)
    paragraphs = [p.all_text() for p in tree.root.iter("p")]
    total, with_results = sum(stale_above.values()), _queries_with_results(rows)
    assert total and with_results > total
    line = (f"In {total:,} of {with_results:,} queries with results ({total / with_results:.1%}), a stale memory "
            "ranked above a live one on the same subject.")
    assert line in paragraphs
    for u in USERS:
        n, q = stale_above[u], _queries_with_results(rows[rows.user == u])
        assert (f"In {n:,} of {q:,} queries with results ({n / q:.1%}), a stale memory ranked above a live one on "
                "the same subject.") in paragraphs
    examples = next(v for k, v in _tables(tree).items() if k.startswith("Stale above current:"))
    assert examples[0] == ["Query", "Stale memory", "Stale rank", "Live memory", "Live rank", "Why stale"]
    assert 1 <= len(examples) - 1 <= 5
    for _, stale, sr, live, lr, why in examples[1:]:
        assert stale.endswith("-m1") and live.endswith("-m2") and int(sr) < int(lr) and why == "superseded"


def test_hostile_ids_and_texts_stay_inert(page):
    html, _, _ = page
    tree = parse(html)
    assert list(tree.root.iter("script")) == [] and external_references(tree) == []
    assert "\x1b" not in html and "\u202e" not in html and "<script>alert" not in html
    hot = _lists(_tables(tree), " of user=alice")[0]
    row = next(r for r in hot[1:] if r[0] == HOSTILE_ID)  # the id arrives as the characters it is made of
    assert row[4].startswith("\\x1b[31m<script>alert(2)</script>\\u202elong") and row[4].endswith("…")
    assert len(row[4]) == 60
