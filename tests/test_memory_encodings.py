"""Encodings (Appendix C) and the prompt-only reader."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctwm_cli.common.errors import UsageError
from ctwm_cli.memory.encodings import OUTPUT, make_encoding
from ctwm_cli.memory.policies import EpisodicMemory, make_policy
from ctwm_cli.memory.predictor import PromptReader, make_predictor, parse_answer
from ctwm_cli.memory.tokens import token_counter
from ctwm_cli.replay import ReplayConfig, episode


@pytest.fixture(scope="module")
def ep():
    return episode(ReplayConfig(family="modular", size=100, steps=600, seeds=(5,)), 5)


def _render(enc, world, state, action, items, tail, kind="core"):
    """Lines of a prompt for a given retrieval: items = [(tid, score, count, degree, last)], tail = [(tid, count)]."""
    lines = enc.header(state, action, kind)
    lines += [enc.item(r, *it) for r, it in enumerate(items, 1)]
    if tail:
        dom = [enc.tail_entry(t, c) for t, c in tail if c >= 2]
        rare = [enc.tail_entry(t, c) for t, c in tail if c < 2]
        lines.append(enc.tail(len(tail), dom, rare))
    return lines + enc.footer(kind)


retrieval = st.tuples(
    st.integers(0, 99),  # state
    st.lists(st.tuples(st.integers(0, 10_000), st.floats(0, 4), st.integers(1, 500), st.integers(1, 40),
                       st.integers(0, 99_999)), max_size=12),
    st.lists(st.tuples(st.integers(0, 10_000), st.integers(1, 500)), max_size=20),
    st.sampled_from(["ranked", "core", "history"]),
)


@settings(max_examples=80, deadline=None)
@given(r=retrieval, tokenizer=st.sampled_from(["cl100k_base", "o200k_base"]))
def test_compact_is_never_longer_than_verbose(ep, r, tokenizer):
    w = ep.world
    state, items, tail, kind = r
    n = w.n_transitions
    items = [(t % n, *rest) for t, *rest in items]
    tail = [(t % n, c) for t, c in tail]
    action = 0
    c = token_counter(tokenizer)
    compact = _render(make_encoding("compact", w), w, state, action, items, tail, kind)
    verbose = _render(make_encoding("verbose", w), w, state, action, items, tail, kind)
    assert c.count("".join(compact)) <= c.count("".join(verbose))
    # piece by piece too: header, each memory line and the tail line; then the footer
    body = len(compact) - len(make_encoding("compact", w).footer(kind))
    for a, b in zip(compact[:body], verbose[:body], strict=True):
        assert c.count(a) <= c.count(b), (a, b)
    assert c.count("".join(compact[body:])) <= c.count("".join(verbose[body:]))


def test_templates_follow_appendix_c(ep):
    w = ep.world
    tid = 0
    s, a, d = int(w.tid_src[tid]), int(w.tid_local[tid]), int(w.tid_dst[tid])
    comp = make_encoding("compact", w)
    verb = make_encoding("verbose", w)
    assert comp.item(1, tid, 2.5, 3, 4, 17) == f"rank 1: s{s} -> a{a} -> s{d}; hint=x3\n"
    line = verb.item(1, tid, 2.5, 3, 4, 17)
    for field in ("score 2.50", "count 3", "degree 4", "source step 17", w.places[s], w.places[d]):
        assert field in line
    assert comp.tail(5, ["x"], []) == "Tail summary: count=5; dominant transitions: x; rare exceptions: none\n"
    assert OUTPUT in comp.footer("core") and OUTPUT in verb.footer("core")
    assert any("Budget rule" in x for x in comp.footer("core"))
    with pytest.raises(UsageError, match="unknown encoding 'terse'"):
        make_encoding("terse", w)


def _mode(counts: dict[int, int], order: list[int]) -> int:
    best = max(counts.values())
    return next(d for d in order if counts[d] == best)


@settings(max_examples=80, deadline=None)
@given(obs=st.lists(st.tuples(st.integers(0, 5), st.integers(1, 9)), min_size=1, max_size=8),
       noise=st.lists(st.integers(0, 10_000), max_size=6), encoding=st.sampled_from(["verbose", "compact"]))
def test_reader_picks_the_best_supported_outcome(ep, obs, noise, encoding):
    """With the evidence of (s, a) in the prompt, the reader returns its best-supported outcome
    (largest summed count, ties to the first written), whatever else the prompt holds."""
    w = ep.world
    # a state with an action that has several outcomes
    g = next(g for g in range(w.n_actions) if w.out_ptr[g + 1] - w.out_ptr[g] >= 2)
    outs = list(range(int(w.out_ptr[g]), int(w.out_ptr[g + 1])))
    s, a = int(w.tid_src[outs[0]]), int(w.tid_local[outs[0]])
    items, counts, order = [], {}, []
    for j, c in obs:
        tid = outs[j % len(outs)]
        d = int(w.tid_dst[tid])
        items.append((tid, 1.0, c, 3, 7))
        counts[d] = counts.get(d, 0) + c
        if d not in order:
            order.append(d)
    others = [t % w.n_transitions for t in noise if int(w.tid_action[t % w.n_transitions]) != g]
    mixed = items + [(t, 0.5, 9, 2, 1) for t in others]
    enc = make_encoding(encoding, w)
    text = "".join(_render(enc, w, s, a, mixed, [], "ranked"))
    got = PromptReader().predict(text)
    assert got.state == _mode(counts, order)
    assert got.evidence.isdigit()


def test_reader_uses_the_tail_then_states_a_guess(ep):
    w = ep.world
    g = next(g for g in range(w.n_actions) if w.out_ptr[g + 1] - w.out_ptr[g] >= 2)
    t0, t1 = int(w.out_ptr[g]), int(w.out_ptr[g]) + 1
    s, a = int(w.tid_src[t0]), int(w.tid_local[t0])
    enc = make_encoding("compact", w)
    text = "".join(_render(enc, w, s, a, [], [(t0, 1), (t1, 3)]))
    got = PromptReader().predict(text)
    assert (got.state, got.evidence) == (int(w.tid_dst[t1]), "tail")
    empty = "".join(_render(enc, w, s, a, [], []))
    got = PromptReader().predict(empty)
    assert (got.state, got.evidence, got.confidence) == (s, "guess", "low")


@pytest.mark.parametrize("memory", ["flat", "graph", "ctwm", "full"])
@pytest.mark.parametrize("encoding", ["verbose", "compact"])
def test_reader_cannot_know_what_the_prompt_leaves_out(ep, memory, encoding):
    """On real prompts: the prediction is always a state the prompt names (or the current one), so
    a next state absent from the prompt is never predicted; and with every line naming the true
    next state deleted, the reader never gets it right."""
    w = ep.world
    c = token_counter("cl100k_base")
    mem = EpisodicMemory(w)
    pol = make_policy(memory, mem, budget=300)
    enc = make_encoding(encoding, w)
    reader = PromptReader()
    right_with = 0
    for t in range(300 if memory == "full" else 600):
        s, a, d = int(ep.states[t]), int(ep.actions[t]), int(ep.next_states[t])
        text = pol.render(pol.retrieve(s, a), s, a, enc, c).text
        named = {int(x) for x in re.findall(r"\bs(\d+)\b", text)}
        got = reader.predict(text)
        assert got.state in named
        right_with += got.state == d
        cut = "".join(ln for ln in text.splitlines(keepends=True) if not re.search(rf"\bs{d}\b", ln))
        assert reader.predict(cut).state != d
        mem.write(int(ep.tids[t]), t)
    assert right_with > 0


def test_parse_answer_and_predictor_names():
    got = parse_answer("next-state=s42; confidence=high; evidence-rank=1")
    assert (got.state, got.confidence, got.evidence) == (42, "high", "1")
    assert parse_answer("Next-State = 7") is not None and parse_answer("I think 7") is None
    with pytest.raises(UsageError, match="needs base_url"):
        make_predictor("endpoint", {})
    with pytest.raises(UsageError, match="unknown predictor"):
        make_predictor("oracle")
    assert np.isfinite(1.0)
