"""LongMemEval format: loader and validator, prompts per policy, evidence recall, paired token counts."""

from __future__ import annotations

import copy
import importlib.util
import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctwm_cli.bench.lme_format import QUESTION_TYPES, load_longmemeval, parse_longmemeval
from ctwm_cli.bench.lme_judge import judge_prompt, parse_verdict
from ctwm_cli.bench.lme_prompts import ArmSpec, build_prompt, evidence_recall, recall_critical
from ctwm_cli.bench.longmemeval import run_longmemeval
from ctwm_cli.bench.packing import bm25_scores, pack_ctwm, pack_graph, rank_order, words
from ctwm_cli.common.errors import InputError, UsageError
from ctwm_cli.memory.tokens import token_counter

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "sample_traces" / "longmemeval" / "longmemeval_synthetic.json"


def official(answer="Biscuit", qid="q1"):
    """One question in the official shape (has_answer only on some turns, an extra key, as released)."""
    return {
        "question_id": qid,
        "question_type": "single-session-user",
        "question": "What is the name of the dog I adopted?",
        "answer": answer,
        "question_date": "2023/05/30 (Tue) 23:40",
        "haystack_session_ids": ["sharegpt_1", "answer_a1"],
        "haystack_dates": ["2023/05/20 (Sat) 02:21", "2023/05/22 (Mon) 10:00"],
        "haystack_sessions": [
            [{"role": "user", "content": "Tell me about gardening."},
             {"role": "assistant", "content": "Water the plants in the morning."}],
            [{"role": "user", "content": "I adopted a beagle named Biscuit.", "has_answer": True},
             {"role": "assistant", "content": "Congratulations on the dog!", "has_answer": False}],
        ],
        "answer_session_ids": ["answer_a1"],
        "extra_field": {"ignored": True},
    }


def write(tmp_path, doc, name="data.json"):
    p = tmp_path / name
    p.write_text(json.dumps(doc))
    return p


# ------------------------------------------------------------------------------------ loader
def test_loader_accepts_official_shape_and_integer_answers(tmp_path):
    qs = load_longmemeval(write(tmp_path, [official(), official(answer=3, qid="q2_abs")]))
    assert [q.question_id for q in qs] == ["q1", "q2_abs"]
    assert qs[1].answer == 3 and isinstance(qs[1].answer, int)
    assert [q.abstention for q in qs] == [False, True]
    assert [t.has_answer for t in qs[0].sessions[1].turns] == [True, False]
    assert qs[0].sessions[0].turns[0].has_answer is False  # missing has_answer means False
    assert qs[0].sessions[1].session_id == "answer_a1"


def _mut(path, value):
    def apply(doc):
        obj = doc
        for key in path[:-1]:
            obj = obj[key]
        if value is KeyError:
            del obj[path[-1]]
        else:
            obj[path[-1]] = value
        return doc
    return apply


BAD = [
    (_mut([0, "haystack_sessions", 1, 0, "role"], 5), r"data\.json: \[0\]\.haystack_sessions\[1\]\[0\]\.role: expected "
                                                      r"a string, got an integer$"),
    (_mut([1, "haystack_sessions", 0, 1, "content"], None), r"\[1\]\.haystack_sessions\[0\]\[1\]\.content: expected a "
                                                            r"string, got null"),
    (_mut([0, "answer"], ["a"]), r"\[0\]\.answer: expected a string or an integer, got a list"),
    (_mut([0, "answer"], True), r"\[0\]\.answer: expected a string or an integer, got a boolean"),
    (_mut([0, "answer"], 2.5), r"\[0\]\.answer: expected a string or an integer, got a number"),
    (_mut([1, "question_id"], KeyError), r"\[1\]\.question_id: missing"),
    (_mut([0, "haystack_dates"], ["2023/05/20"]), r"\[0\]\.haystack_dates: expected 2 entries \(one per session\), got "
                                                  r"1"),
    (_mut([0, "haystack_session_ids"], ["a", "b", "c"]), r"\[0\]\.haystack_session_ids: expected 2 entries"),
    (_mut([0, "haystack_sessions", 1, 0, "has_answer"], "yes"), r"\[0\]\.haystack_sessions\[1\]\[0\]\.has_answer: "
                                                                r"expected a boolean"),
    (_mut([0, "haystack_sessions", 1], {"role": "user"}), r"\[0\]\.haystack_sessions\[1\]: expected a list, got an "
                                                          r"object"),
    (_mut([0, "haystack_sessions", 0, 0], "hello"), r"\[0\]\.haystack_sessions\[0\]\[0\]: expected an object, got a "
                                                    r"string"),
    (_mut([0, "answer_session_ids", 0], 7), r"\[0\]\.answer_session_ids\[0\]: expected a string"),
    (_mut([1], "not a question"), r"data\.json: \[1\]: expected an object"),
    (_mut([1, "question_id"], "q1"), r"\[1\]\.question_id: duplicate of \[0\]"),
]


@pytest.mark.parametrize(("mutate", "message"), BAD)
def test_loader_rejects_malformed_files_naming_the_field(tmp_path, mutate, message):
    doc = mutate([official(), official(qid="q2")])
    with pytest.raises(InputError, match=message):
        load_longmemeval(write(tmp_path, doc))


def test_loader_rejects_non_list_bad_json_and_missing_files(tmp_path):
    with pytest.raises(InputError, match=r"data\.json: expected a JSON list of questions, got an object"):
        load_longmemeval(write(tmp_path, {"questions": []}))
    with pytest.raises(InputError, match=r"the list holds no questions"):
        load_longmemeval(write(tmp_path, []))
    bad = tmp_path / "bad.json"
    bad.write_text('[{"question_id": "x",]')
    with pytest.raises(InputError, match=r"bad\.json: not valid JSON \(line 1, column"):
        load_longmemeval(bad)
    with pytest.raises(InputError, match=r"nope\.json: no such file"):
        load_longmemeval(tmp_path / "nope.json")


# ------------------------------------------------------------------------------------ fixture
def test_fixture_covers_the_format():
    raw = json.loads(FIXTURE.read_text())
    qs = load_longmemeval(FIXTURE)
    assert {q.question_type for q in qs} == set(QUESTION_TYPES)
    assert any(q.abstention for q in qs)
    assert any(isinstance(r["answer"], int) for r in raw)
    ku = [q for q in qs if q.question_type == "knowledge-update" and not q.abstention]
    assert ku and all(len(q.answer_session_ids) >= 2 for q in ku)
    ms = [q for q in qs if q.question_type == "multi-session" and not q.abstention]
    assert ms and all(len(q.answer_session_ids) >= 3 for q in ms)
    for q in qs:
        ev = [t for s in q.sessions for t in s.turns if t.has_answer]
        if q.abstention:
            assert not ev and not q.answer_session_ids
        else:
            with_answer = {s.session_id for s in q.sessions if any(t.has_answer for t in s.turns)}
            assert ev and with_answer == set(q.answer_session_ids)
        dates = [s.date for s in q.sessions]
        assert dates == sorted(dates) and dates[-1] < q.question_date


def test_fixture_is_regenerated_byte_identically():
    spec = importlib.util.spec_from_file_location("lme_generate", FIXTURE.parent / "generate.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    text = json.dumps(mod.generate(), indent=1, ensure_ascii=False) + "\n"
    assert text == FIXTURE.read_text(encoding="utf-8")


# ------------------------------------------------------------------------------- evidence recall
def _question():
    doc = official()
    doc["haystack_session_ids"] = ["s0", "s1", "s2"]
    doc["haystack_dates"] = ["d0", "d1", "d2"]
    doc["haystack_sessions"] = [
        [{"role": "user", "content": "a", "has_answer": True}, {"role": "assistant", "content": "b"}],
        [{"role": "user", "content": "c"}, {"role": "user", "content": "d", "has_answer": True}],
        [{"role": "user", "content": "e", "has_answer": True}],
    ]
    doc["answer_session_ids"] = ["s0", "s1", "s2", "not_in_haystack"]
    return parse_longmemeval([doc])[0]


@pytest.mark.parametrize(("included", "expect"), [
    ([], dict(turn_any=False, turn_all=False, session_any=False, session_all=False, turns_recalled=0,
              sessions_recalled=0)),
    ([(0, 1)], dict(turn_any=False, turn_all=False, session_any=True, session_all=False, turns_recalled=0,
                    sessions_recalled=1)),
    ([(0, 0), (1, 0)], dict(turn_any=True, turn_all=False, session_any=True, session_all=False, turns_recalled=1,
                            sessions_recalled=2)),
    ([(0, 1), (1, 0), (2, 0)], dict(turn_any=True, turn_all=False, session_any=True, session_all=True,
                                    turns_recalled=1, sessions_recalled=3)),
    ([(0, 0), (1, 1), (2, 0)], dict(turn_any=True, turn_all=True, session_any=True, session_all=True,
                                    turns_recalled=3, sessions_recalled=3)),
])
def test_evidence_recall_on_a_hand_built_question(included, expect):
    r = evidence_recall(_question(), included)
    assert r.evidence_turns == 3 and r.evidence_sessions == 3  # the id missing from the haystack is not evidence
    for key, value in expect.items():
        assert getattr(r, key) == value, key


def test_recall_is_undefined_without_evidence():
    q = parse_longmemeval([official(qid="x_abs") | {"answer_session_ids": [], "haystack_sessions": [
        [{"role": "user", "content": "a"}], [{"role": "user", "content": "b"}]]}])[0]
    r = evidence_recall(q, [(0, 0), (1, 0)])
    assert (r.turn_any, r.turn_all, r.session_any, r.session_all) == (None, None, None, None)


# ------------------------------------------------------------------------------------ ranking
def test_bm25_matches_the_closed_form():
    docs = [["dog", "beagle"], ["cat"], ["dog", "dog", "walk", "park"]]
    got = bm25_scores("dog", docs)
    n, avgdl, df = 3, 7 / 3, 2
    idf = math.log(1 + (n - df + 0.5) / (df + 0.5))

    def part(tf, dl):
        return idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * dl / avgdl))

    assert got == pytest.approx([part(1, 2), 0.0, part(2, 4)], rel=1e-12)
    assert rank_order(got) == [2, 0, 1]
    assert rank_order([1.0, 2.0, 1.0]) == [1, 0, 2]  # ties to the earlier item
    assert words("The Dogs' houses and Puppies") == ["dog", "house", "puppy"]


# ----------------------------------------------------------------------------- prompts, tokens
def test_prompt_tokens_are_whole_prompt_counts_under_both_tokenizers():
    qs = load_longmemeval(FIXTURE)[:6]
    for name in ("cl100k_base", "o200k_base"):
        counter = token_counter(name)
        for q in qs:
            for arm in (ArmSpec(name="graph", policy="graph"), ArmSpec(name="ctwm", policy="ctwm"),
                        ArmSpec(name="r", policy="ctwm", relaxed=True)):
                p = build_prompt(q, arm, budget=1500, k=16, core=8, tau=1.0, max_candidates=64, relax_core=16,
                                 relax_tau=0.5, counter=counter)
                assert p.tokens == counter.count(p.text) <= 1500
                assert q.question in p.text


texts_st = st.lists(st.text(alphabet="abcde fgh", min_size=1, max_size=60).map(lambda s: " ".join(s.split()) or "x"),
                    min_size=0, max_size=40)


@settings(max_examples=60, deadline=None)
@given(texts=texts_st, budget=st.integers(120, 900), k=st.integers(1, 20), core=st.integers(1, 12),
       tau=st.floats(0.1, 3.0), m=st.integers(1, 50))
def test_packing_invariants(texts, budget, k, core, tau, m):
    counter = token_counter()
    groups = [f"g{i % 3}" for i in range(len(texts))]
    order = rank_order(bm25_scores("a b", [words(t) for t in texts]))
    head, foot = ["Task: x.\n", "Question: a b\n"], ["Output: y.\n"]
    g = pack_graph(texts, order, head, foot, budget=budget, k=k, counter=counter)
    c = pack_ctwm(texts, groups, order, head, foot, budget=budget, core=core, tau=tau, max_candidates=m,
                  counter=counter)
    for p in (g, c):
        assert p.tokens == counter.count(p.text) <= budget
    assert list(g.included) == order[: len(g.included)] and len(g.included) <= k
    # every candidate is a core line or counted in the tail; core lines come from the core ranks, in rank order
    assert len(c.included) + c.tail_count == min(m, len(texts))
    assert all(r <= core for r in c.included_rank) and list(c.included_rank) == sorted(c.included_rank)
    assert [order[r - 1] for r in c.included_rank] == list(c.included)


def test_tiny_budget_is_a_usage_error():
    q = load_longmemeval(FIXTURE)[0]
    with pytest.raises(UsageError, match="budget 20 is smaller than the prompt's fixed lines"):
        build_prompt(q, ArmSpec(name="graph", policy="graph"), budget=20, k=4, core=4, tau=1.0, max_candidates=8,
                     relax_core=8, relax_tau=0.5, counter=token_counter())


def test_relaxation_trigger():
    qs = {q.question_id: q for q in load_longmemeval(FIXTURE)}
    for q in qs.values():
        if q.question_type in ("multi-session", "temporal-reasoning"):
            assert recall_critical(q)
    cued = parse_longmemeval([official() | {"question": "How many dogs did I adopt in total?"}])[0]
    plain = parse_longmemeval([official()])[0]
    assert recall_critical(cued) and not recall_critical(plain)


# ------------------------------------------------------------------------------ paired results
def test_run_is_paired_and_reproducible():
    a = run_longmemeval(FIXTURE, budget=4096, seed=5, bootstrap=200)
    b = run_longmemeval(FIXTURE, budget=4096, seed=5, bootstrap=200)
    da, db = a.to_dict(), b.to_dict()
    assert "seconds" not in da  # no wall-clock field: the same seed gives the same document
    assert da == db
    assert not a.accuracy_measured and "not measured" in a.accuracy_note
    arms = [x.name for x in a.arms]
    assert arms == ["graph", "ctwm", "ctwm-relaxed"]
    ids = {arm: [o.question_id for o in a.outcomes if o.arm == arm] for arm in arms}
    assert ids["graph"] == ids["ctwm"] == ids["ctwm-relaxed"] and len(ids["graph"]) == a.questions
    # the reported reduction is 1 - sum/sum over the same questions, recomputed from the outcomes
    tok = {arm: np.array([o.tokens for o in a.outcomes if o.arm == arm]) for arm in arms}
    comp = next(c for c in a.comparisons if c.treatment == "ctwm" and c.metric == "tokens" and c.group == "all")
    assert -comp.relative == pytest.approx(1 - tok["ctwm"].sum() / tok["graph"].sum())
    assert comp.relative_confidence_interval.low <= comp.relative <= comp.relative_confidence_interval.high
    # relaxation changes only recall-critical questions
    for o_c, o_r in zip([o for o in a.outcomes if o.arm == "ctwm"], [o for o in a.outcomes if o.arm == "ctwm-relaxed"],
                        strict=True):
        if not o_c.recall_critical:
            assert o_c.tokens == o_r.tokens and o_c.recall == o_r.recall


def test_relaxation_recovers_multi_session_recall_on_the_fixture():
    res = run_longmemeval(FIXTURE, budget=4096, seed=1, bootstrap=0)
    s = {(x.arm, x.question_type): x for x in res.summary}
    assert s[("ctwm", "multi-session")].turn_all < s[("graph", "multi-session")].turn_all
    assert s[("ctwm-relaxed", "multi-session")].turn_all >= s[("graph", "multi-session")].turn_all
    no = run_longmemeval(FIXTURE, budget=4096, seed=1, bootstrap=0, relax=False)
    assert [a.name for a in no.arms] == ["graph", "ctwm"]


def test_bad_parameters():
    with pytest.raises(UsageError, match="unknown memory policy 'full'"):
        run_longmemeval(FIXTURE, memories="graph,full")
    with pytest.raises(UsageError, match="tau must be a finite number > 0"):
        run_longmemeval(FIXTURE, tau=0)
    with pytest.raises(UsageError, match="accuracy needs both base_url and model"):
        run_longmemeval(FIXTURE, base_url="http://127.0.0.1:1")


def test_judge_prompts_and_verdicts():
    qs = {q.question_id: q for q in load_longmemeval(FIXTURE)}
    tr = next(q for q in qs.values() if q.question_type == "temporal-reasoning")
    assert "error of one" in judge_prompt(tr, "3 weeks")
    ab = next(q for q in qs.values() if q.abstention)
    assert "does not hold the answer" in judge_prompt(ab, "I don't know")
    assert parse_verdict("Yes.") and parse_verdict("yes, it is") and not parse_verdict("No, yes would be wrong")
    assert not parse_verdict("maybe")


def test_inputs_are_not_mutated(tmp_path):
    doc = [official(), official(answer=2, qid="q2")]
    before = copy.deepcopy(doc)
    parse_longmemeval(doc)
    assert doc == before
