"""A real model, offline: ``ctwm model serve`` and the endpoint predictor against llama.cpp's server.

The tests that need the server use the session fixture ``local_model`` (tests/conftest.py), which skips
them cleanly without the ``.[local-model]`` extra; the error paths without the extra always run.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import urllib.request

import pyarrow.parquet as pq
import pytest

from ctwm_cli.common.errors import EXIT_INPUT, UsageError
from ctwm_cli.memory.predictor import ANSWER_MAX_TOKENS, parse_answer
from ctwm_cli.memory.predictor import SYSTEM_PROMPT as PREDICTOR_SYSTEM
from ctwm_cli.memory.tokens import token_counter
from ctwm_cli.models.llm import ChatClient
from ctwm_cli.models.localmodel import MODEL_ALIAS, LocalModelError, LocalModelServer, find_gguf
from ctwm_cli.replay import ReplayConfig, episode, run_episode
from ctwm_cli.replay.runner import Arm


def _needs_model_package():
    try:
        return find_gguf()
    except LocalModelError as exc:
        pytest.skip(str(exc))


# ---------------------------------------------------------------- without the extra


def test_serve_without_the_server_exits_3_with_the_install_line(run_cli, monkeypatch):
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # as if llama-cpp-python were not installed
    res = run_cli(["model", "serve", "--port", "0"])
    assert res.code == EXIT_INPUT
    assert res.out == ""
    assert len(res.err.strip().splitlines()) == 1
    assert "missing: llama_cpp" in res.err and "pip install '.[local-model]'" in res.err


def test_a_missing_model_package_is_named():
    with pytest.raises(LocalModelError, match="'no-such-model-package' is not installed; install the optional extra"):
        find_gguf("no-such-model-package")
    assert LocalModelError.exit_code == EXIT_INPUT


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"port": 70000}, "port must be"), ({"n_ctx": 16}, "n_ctx must be"), ({"threads": 0}, "threads must be"),
    ({"timeout": 0}, "timeout must be"),
])
def test_bad_parameters_are_named(kwargs, match):
    with pytest.raises(UsageError, match=match):
        LocalModelServer(**kwargs)


def test_the_shipped_model_is_a_gguf_file():
    path = _needs_model_package()
    assert path.suffix == ".gguf"
    with open(path, "rb") as f:
        assert f.read(4) == b"GGUF"  # the format's magic number


def test_an_off_contract_answer_naming_one_state_is_read_as_that_state():
    """SmolLM2-135M answers 'The next structured state after the current action is s3.' instead of the
    Appendix C line; the one state it names is its prediction, marked off-contract."""
    got = parse_answer("The next structured state after the current action is s3.")
    assert (got.state, got.confidence, got.evidence) == (3, "low", "off-contract")
    assert parse_answer("from s3 to s4") is None  # two states: no prediction
    assert parse_answer("it takes 5s") is None
    assert parse_answer("next-state=s4; confidence=high; evidence-rank=2").evidence == "2"


def test_a_step_left_unanswered_is_recorded_and_the_run_goes_on(chat_server):
    """One step whose every attempt is invalid becomes prediction -1 / evidence 'invalid' (an error), not the
    end of the run; a model that answers none of its first UNANSWERED_LIMIT steps still stops it."""
    modes = ["valid"] * 3 + ["invalid"] * 2 + ["valid"] * 40

    def answer(body, srv):
        cur = re.search(r"Current state: s(\d+)", body["messages"][1]["content"]).group(1)
        return f"next-state=s{cur}; confidence=low; evidence-rank=tail" if modes.pop(0) == "valid" else "no idea"

    srv = chat_server(answer)
    cfg = ReplayConfig(size=60, steps=10, seeds=(1,), predictor="endpoint", predictor_params={
        "base_url": f"http://127.0.0.1:{srv.server_address[1]}/v1", "model": "m", "retries": 1, "backoff": 0.0})
    log = run_episode(episode(cfg, 1), Arm(memory="graph", encoding="compact"), cfg)
    assert log.evidence == ["tail"] * 3 + ["invalid"] + ["tail"] * 6
    assert log.prediction[3] == -1 and not log.correct[3]
    assert len(srv.requests) == 11
    assert {r["max_tokens"] for r in srv.requests} == {ANSWER_MAX_TOKENS}  # one line: a rambling model is cut short


# ---------------------------------------------------------------- against the real server


def test_a_file_that_is_no_model_fails_with_the_servers_reason(tmp_path):
    pytest.importorskip("llama_cpp", reason="needs the optional extra: pip install '.[local-model]'")
    bad = tmp_path / "broken.gguf"
    bad.write_bytes(b"this is not a GGUF model\n" * 10)
    with pytest.raises(LocalModelError, match="exited with code") as err:
        LocalModelServer(model_path=bad, port=0, timeout=60).start()
    assert err.value.exit_code == EXIT_INPUT


def test_the_server_lists_the_model_and_answers_a_chat(local_model):
    assert local_model.base_url.startswith("http://127.0.0.1:") and local_model.model == MODEL_ALIAS
    with urllib.request.urlopen(local_model.base_url + "/models", timeout=10) as resp:
        assert [m["id"] for m in json.loads(resp.read())["data"]] == [MODEL_ALIAS]
    client = ChatClient(base_url=local_model.base_url, model=local_model.model, timeout=120, retries=0)
    text = client.complete([{"role": "user", "content": "Say hello."}])
    assert text.strip()
    assert client.calls == 1 and client.prompt_tokens > 0


def test_api_prompt_tokens_are_the_prompts_tokens_plus_a_constant_template(local_model):
    """usage.prompt_tokens = the model tokenizer's count of system + user text + the chat template's
    fixed tokens, the same for every prompt; cl100k (the offline count) differs from it by the template
    and by how the two tokenizers split the text."""
    llama_cpp = pytest.importorskip("llama_cpp")
    vocab = llama_cpp.Llama(model_path=str(find_gguf()), vocab_only=True, verbose=False)

    def n_model(text: str) -> int:
        return len(vocab.tokenize(text.encode(), add_bos=False, special=False))

    prompts = ["Current state: s12\nAction: a1\nMemory:\ns12 -> a1 -> s40; hint=x3",
               "Current state: s7\nAction: a0\nMemory:\n" + "\n".join(f"s7 -> a0 -> s{i}; hint=x{i % 4 + 1}"
                                                                       for i in range(30, 60)),
               "Current state: s301\nAction: a2\nMemory: (none)"]
    overheads = []
    for text in prompts:
        client = ChatClient(base_url=local_model.base_url, model=local_model.model, timeout=120, retries=0)
        client.complete([{"role": "system", "content": PREDICTOR_SYSTEM}, {"role": "user", "content": text}])
        overheads.append(client.prompt_tokens - n_model(PREDICTOR_SYSTEM) - n_model(text))
    assert len(set(overheads)) == 1, overheads  # the template adds the same tokens to every prompt
    assert 0 < overheads[0] <= 16, overheads
    cl100k = token_counter("cl100k_base")
    long_model, long_cl = n_model(prompts[1]), cl100k.count(prompts[1])
    assert long_model != long_cl  # two different tokenizers: the offline count is not the model's


def test_replay_compare_with_the_real_model_end_to_end(local_model, run_cli, tmp_path):
    out = tmp_path / "run"
    res = run_cli(["replay", "compare", "--memory", "graph,ctwm", "--size", "60", "--steps", "6", "--episodes", "1",
                   "--seed", "3", "--bootstrap", "0", "--predictor", "endpoint", "--base-url", local_model.base_url,
                   "--model", local_model.model, "--out", out, "--json"])
    assert res.code == 0, res.err
    doc = json.loads(res.out)
    assert doc["predictor"] == "endpoint"
    steps = pq.read_table(out / "steps.parquet").to_pylist()
    assert len(steps) == 2 * 6
    api = [r["api_prompt_tokens"] for r in steps]
    assert all(a is not None and a > 0 for a in api)
    # the API counts the prompt in SmolLM2's tokenizer (more tokens than cl100k here) plus the system prompt,
    # the template and any retries: always more than ctwm's offline count of the prompt alone
    assert all(a > r["prompt_tokens"] for a, r in zip(api, steps, strict=True))
    for arm in doc["arms"]:
        assert arm["api_prompt_tokens"] > arm["tokens_mean"]
    stats = doc["predictor_stats"]
    assert stats["calls"] >= len(steps) and stats["api_prompt_tokens"] == sum(api)
    answered = [r for r in steps if r["evidence"] != "invalid"]
    assert answered and all(r["prediction"] >= 0 for r in answered)
    assert all(r["prediction"] == -1 and not r["correct"] for r in steps if r["evidence"] == "invalid")


def test_ctwm_model_serve_runs_until_sigterm():
    pytest.importorskip("llama_cpp", reason="needs the optional extra: pip install '.[local-model]'")
    _needs_model_package()
    cmd = [sys.executable, "-m", "ctwm_cli", "model", "serve", "--port", "0", "--threads", "1", "--format", "jsonl"]
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        try:
            info = json.loads(proc.stdout.readline())
            with urllib.request.urlopen(info["base_url"] + "/models", timeout=10) as resp:
                assert json.loads(resp.read())["data"][0]["id"] == MODEL_ALIAS
            proc.send_signal(signal.SIGTERM)
            code = proc.wait(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert code == 128 + signal.SIGTERM
    with pytest.raises(OSError):  # the server went down with the command
        urllib.request.urlopen(info["base_url"] + "/models", timeout=5)
