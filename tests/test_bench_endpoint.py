"""LongMemEval accuracy against a real chat-completions server on 127.0.0.1 (standard library)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ctwm_cli.bench.longmemeval import load_longmemeval, run_longmemeval
from ctwm_cli.common.errors import InputError

FIXTURE = Path(__file__).resolve().parents[1] / "sample_traces" / "longmemeval" / "longmemeval_synthetic.json"


def _answer(body, srv):
    """A stand-in model: answers with the gold answer when its text is in the prompt, else "I do not
    know"; as a judge, says yes when the correct answer's text is in the response."""
    prompt = body["messages"][-1]["content"]
    if "Is the response correct?" in prompt:
        gold = re.search(r"^Correct answer: (.*)$", prompt, re.M).group(1).strip().lower()
        resp = re.search(r"^Response: (.*)$", prompt, re.M).group(1).lower()
        return "Yes." if gold in resp else "No."
    question = re.search(r"^Question: (.*)$", prompt, re.M).group(1)
    gold = str(srv.answers[question])
    memory = prompt.split("\n", 3)[3]  # after the task, date and question lines
    return f"The answer is {gold}." if gold.lower() in memory.lower() else "I do not know."


@pytest.fixture
def server(chat_server):
    srv = chat_server(_answer)
    srv.answers = {q.question: q.answer for q in load_longmemeval(FIXTURE)}
    return srv


def test_accuracy_per_type_from_the_endpoint(server):
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    res = run_longmemeval(FIXTURE, base_url=url, model="m", seed=3, bootstrap=100, limit=12)
    assert res.accuracy_measured and "judged by m" in res.accuracy_note
    n_arms = len(res.arms)
    assert len(server.requests) == 2 * 12 * n_arms  # one answer and one judge call per question and arm
    # expected verdicts straight from the requests: answer prompt i is followed by its judge prompt
    answers = server.requests[0::2]
    expect = []
    for req, q_arm in zip(answers, [(o.question_id, o.arm) for o in res.outcomes], strict=True):
        prompt = req["messages"][-1]["content"]
        question = re.search(r"^Question: (.*)$", prompt, re.M).group(1)
        gold = str(server.answers[question]).lower()
        expect.append((q_arm, gold in prompt.split("\n", 3)[3].lower()))
    got = [((o.question_id, o.arm), o.correct) for o in res.outcomes]
    assert got == expect
    for s in res.summary:
        outs = [o for o in res.outcomes
                if o.arm == s.arm and (s.question_type == "all" or o.question_type == s.question_type)]
        assert s.accuracy == pytest.approx(sum(o.correct for o in outs) / len(outs))
    assert any(c.metric == "accuracy" for c in res.comparisons)
    assert res.endpoint_stats["answer_calls"] == 12 * n_arms


def test_unreachable_endpoint_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match=r"cannot reach endpoint http://127\.0\.0\.1:9/v1/chat/completions"):
        run_longmemeval(FIXTURE, base_url="http://127.0.0.1:9/v1", model="m", retries=0, limit=1, bootstrap=0)
