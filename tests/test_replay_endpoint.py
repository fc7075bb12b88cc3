"""The endpoint predictor against a real chat-completions server on 127.0.0.1 (standard library)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from ctwm_cli.common.errors import InputError
from ctwm_cli.replay import ReplayConfig, episode, run_episode
from ctwm_cli.replay.runner import Arm


def _answer(body, srv):
    prompt = body["messages"][1]["content"]
    mode = srv.mode if isinstance(srv.mode, str) else srv.mode.pop(0)
    cur = re.search(r"Current state: s(\d+)", prompt).group(1)
    # the server's own rule: the first destination written in the prompt, else the current state
    first = re.search(r"-> s(\d+)", prompt)
    guess = first.group(1) if first else cur
    return {"valid": f"next-state=s{guess}; confidence=medium; evidence-rank=1", "invalid": "I cannot tell"}[mode]


@pytest.fixture
def server(chat_server):
    srv = chat_server(_answer)
    srv.mode = "valid"
    return srv


def _cfg(srv, **kw):
    return ReplayConfig(family="scale-free", size=100, steps=40, seeds=(2,), predictor="endpoint",
                        predictor_params={"base_url": f"http://127.0.0.1:{srv.server_address[1]}/v1", "model": "m",
                                          "retries": 1, "backoff": 0.0, **kw})


def test_endpoint_predictions_and_api_tokens(server):
    cfg = _cfg(server)
    ep = episode(cfg, 2)
    log = run_episode(ep, Arm(memory="ctwm", encoding="compact"), cfg)
    assert len(server.requests) == 40
    prompts = [r["messages"][1]["content"] for r in server.requests]
    want = []
    for p in prompts:
        first = re.search(r"-> s(\d+)", p)
        want.append(int(first.group(1)) if first else int(re.search(r"Current state: s(\d+)", p).group(1)))
    assert log.prediction.tolist() == want
    assert np.array_equal(log.correct, log.prediction == ep.next_states)
    assert log.api_prompt_tokens.tolist() == [len(p) for p in prompts]
    assert set(log.confidence) == {"medium"}
    assert all(r["model"] == "m" and r["temperature"] == 0 for r in server.requests)
    assert "next-state=" in server.requests[0]["messages"][0]["content"]


def test_invalid_answer_is_retried_then_fails(server):
    server.mode = ["invalid"] + ["valid"] * 60
    cfg = _cfg(server)
    ep = episode(cfg, 2)
    log = run_episode(ep, Arm(memory="graph", encoding="verbose"), _cfg(server))
    assert log.prediction.size == 40 and len(server.requests) == 41
    retry = server.requests[1]["messages"]
    assert retry[2] == {"role": "assistant", "content": "I cannot tell"} and "not valid" in retry[3]["content"]
    server.mode = "invalid"
    with pytest.raises(InputError, match="gave no valid next-state after 2 attempt"):
        run_episode(ep, Arm(memory="graph", encoding="verbose"), cfg)
