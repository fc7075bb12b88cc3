"""The endpoint policy against a real chat-completions server on 127.0.0.1 (standard library)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from ctwm_cli.common.errors import InputError
from ctwm_cli.world.endpoint import EndpointPolicy, parse_action
from ctwm_cli.world.env import build_world
from ctwm_cli.world.graphs import make_graph
from ctwm_cli.world.run import WorldConfig, simulate


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):  # keep test output clean
        pass

    def do_POST(self):
        srv = self.server
        length = int(self.headers.get("Content-Length", 0))
        body = json.loads(self.rfile.read(length))
        srv.requests.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
        mode = srv.mode if isinstance(srv.mode, str) else srv.mode.pop(0)
        if mode == "drop":
            self.close_connection = True
            self.connection.shutdown(2)
            return
        if mode == "500":
            self.send_response(500)
            self.end_headers()
            return
        if mode == "401":
            data = b"bad key"
            self.send_response(401)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        # the prompt lists actions as "i: name"; answer the last one (valid) or nonsense (invalid)
        prompt = body["messages"][1]["content"]
        n = sum(1 for line in prompt.splitlines() if line[:1].isdigit() and ": " in line)
        content = {"valid": json.dumps({"action": n - 1}), "prose": f'I pick {{"action": {n - 1}}} because',
                   "invalid": "go north", "range": json.dumps({"action": n + 5})}[mode]
        data = json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}],
                           "usage": {"prompt_tokens": 10}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def server():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    srv.mode = "valid"
    srv.requests = []
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()
    thread.join()


@pytest.fixture(scope="module")
def world():
    return build_world(make_graph("scale-free", 60, rng=1), seed=1)


def _policy(srv, world, **kw):
    p = EndpointPolicy(base_url=f"http://127.0.0.1:{srv.server_address[1]}/v1", model="toy", backoff=0.0, **kw)
    p.start(world, np.random.default_rng(0))
    return p


def test_valid_answer_is_used(server, world, monkeypatch):
    monkeypatch.setenv("CTWM_API_KEY", "sk-test")
    p = _policy(server, world)
    n_act = int(world.act_ptr[1] - world.act_ptr[0])
    assert p.act(0, [], 0) == n_act - 1
    req = server.requests[-1]
    assert req["path"] == "/v1/chat/completions"
    assert req["body"]["model"] == "toy"
    assert req["auth"] == "Bearer sk-test"
    assert "Actions:" in req["body"]["messages"][1]["content"]
    assert p.stats()["calls"] == 1 and p.stats()["prompt_tokens"] == 10


def test_json_inside_prose_is_accepted(server, world):
    server.mode = "prose"
    p = _policy(server, world)
    assert p.act(0, [], 0) == int(world.act_ptr[1] - world.act_ptr[0]) - 1


def test_invalid_answer_is_retried_then_clear_error(server, world):
    server.mode = "invalid"
    p = _policy(server, world, retries=2)
    with pytest.raises(InputError, match=r"gave no valid action after 3 attempt\(s\).*'go north'"):
        p.act(0, [], 7)
    assert len(server.requests) == 3
    # the retry tells the model what was wrong
    assert "not valid" in server.requests[-1]["body"]["messages"][-1]["content"]


def test_invalid_then_valid_recovers(server, world):
    server.mode = ["range", "valid"]
    p = _policy(server, world, retries=2)
    assert p.act(0, [], 0) == int(world.act_ptr[1] - world.act_ptr[0]) - 1
    assert p.stats()["invalid_answers"] == 1


def test_dropped_connection_is_retried_then_clear_error(server, world):
    server.mode = "drop"
    p = _policy(server, world, retries=1)
    with pytest.raises(InputError, match=r"cannot reach endpoint http://127\.0\.0\.1:\d+/v1/chat/completions after 2"):
        p.act(0, [], 0)
    assert len(server.requests) == 2


def test_dropped_then_answered_recovers(server, world):
    server.mode = ["drop", "500", "valid"]
    p = _policy(server, world, retries=2)
    assert p.act(0, [], 0) >= 0


def test_unreachable_server(world):
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    port = srv.server_address[1]
    srv.server_close()  # nothing listens there any more
    p = EndpointPolicy(base_url=f"http://127.0.0.1:{port}", model="m", backoff=0.0, retries=0)
    p.start(world, np.random.default_rng(0))
    with pytest.raises(InputError, match="cannot reach endpoint"):
        p.act(0, [], 0)


def test_auth_failure_is_not_retried(server, world):
    server.mode = "401"
    p = _policy(server, world, retries=3)
    with pytest.raises(InputError, match="HTTP 401: bad key"):
        p.act(0, [], 0)
    assert len(server.requests) == 1


def test_run_with_endpoint_policy_and_cli_error(server, run_cli, tmp_path):
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    cfg = WorldConfig(family="scale-free", size=60, steps=25, seed=3, policy="endpoint",
                      policy_params={"base_url": url, "model": "toy"})
    sim = simulate(cfg, policy_backoff=0.0)
    assert sim.transitions.size == 25 and sim.policy_stats["calls"] == 25
    server.mode = "invalid"
    res = run_cli(["world", "run", "--policy", "endpoint", "--base-url", url, "--model", "toy", "--size", "60",
                   "--steps", "5", "--seed", "1", "--policy-param", "retries=0", "--out", tmp_path / "o"])
    assert res.code == 3
    assert res.err.startswith("ctwm: error: endpoint") and len(res.err.strip().splitlines()) == 1


def test_parse_action():
    assert parse_action('{"action": 2}', 3) == 2
    assert parse_action('```json\n{"action": "1"}\n```', 3) == 1
    assert parse_action('{"action": 3}', 3) is None
    assert parse_action('{"action": true}', 3) is None
    assert parse_action("2", 3) is None
    assert parse_action('{"move": 1}', 3) is None
