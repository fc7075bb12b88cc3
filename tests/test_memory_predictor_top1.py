"""The ``top1`` predictor (issue 30): the paper's code's check, the first hint's destination."""

from __future__ import annotations

import json

import pytest

from ctwm_cli.common.errors import UsageError
from ctwm_cli.memory.predictor import make_predictor


def test_first_hint_destination_whatever_its_source():
    p = make_predictor("top1")
    ranked = ("Task: predict.\nCurrent state: s3\nAction: a1\nCore memories:\n"
              "rank 1: s5 -> a0 -> s3; hint=x4\nrank 2: s3 -> a1 -> s9; hint=x2\n")
    got = p.predict(ranked)
    assert (got.state, got.evidence, got.confidence) == (3, "1", "low")  # a hint into s3: never right
    history = "Current state: s2\nAction: a0\nHistory:\ns0 -> a1 -> s1\ns1 -> a0 -> s2\n"
    assert p.predict(history).state == 1 and p.predict(history).evidence == "history"  # the oldest line
    # the reader, by contrast, uses the line whose source and action are the current ones
    assert make_predictor("reader").predict(ranked).state == 9


def test_no_hint_is_a_stated_guess_and_errors():
    p = make_predictor("top1")
    got = p.predict("Current state: s4\nAction: a0\n(no memories)\n")
    assert (got.state, got.evidence) == (4, "guess")
    with pytest.raises(UsageError, match="Current state"):
        p.predict("nothing here")
    with pytest.raises(UsageError, match="no parameters"):
        make_predictor("top1", {"x": 1})


def test_replay_compare_with_top1(run_cli):
    r = run_cli(["replay", "compare", "--size", "100", "--steps", "150", "--seeds", "1", "--seed", "3",
                 "--bootstrap", "0", "--predictor", "top1", "--json"])
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert doc["predictor"] == "top1"
    full = next(a for a in doc["arms"] if a.get("memory") == "full")
    assert full["overall_error"] > 0.9  # the oldest transition is almost never the next state
