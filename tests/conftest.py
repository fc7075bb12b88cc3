"""Shared fixtures: run the CLI in-process and capture what it prints."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ctwm_cli.cli import main
from ctwm_cli.models.localmodel import LocalModelError, LocalModelServer, find_gguf, missing_modules


@dataclass
class CliResult:
    code: int
    out: str
    err: str


@pytest.fixture
def run_cli(capsys, monkeypatch):
    """``run_cli(["audit", path], stdin=b"...")`` -> CliResult(code, out, err), in-process."""

    def _run(args: list[str], stdin: bytes | None = None) -> CliResult:
        if stdin is not None:
            monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
        monkeypatch.delenv("CTWM_DEBUG", raising=False)
        monkeypatch.setenv("COLUMNS", "200")
        capsys.readouterr()
        code = main([str(a) for a in args])
        captured = capsys.readouterr()
        return CliResult(code, captured.out, captured.err)

    return _run


class _ChatHandler(BaseHTTPRequestHandler):
    """HTTP plumbing of a stand-in OpenAI-compatible chat-completions server; the reply text comes
    from the test's ``answer(request_body, server)``."""

    def log_message(self, *args):
        pass

    def do_POST(self):
        srv = self.server
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        srv.requests.append(body)
        content = srv.answer(body, srv)
        prompt = body["messages"][-1]["content"]
        data = json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}],
                           "usage": {"prompt_tokens": len(prompt)}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def chat_server():
    """``chat_server(answer)`` starts a real HTTP server on 127.0.0.1 (standard library) that answers
    chat-completions requests with ``answer(body, server)``; ``server.requests`` records the bodies."""
    servers = []

    def start(answer):
        srv = ThreadingHTTPServer(("127.0.0.1", 0), _ChatHandler)
        srv.requests = []
        srv.answer = answer
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        servers.append(srv)
        return srv

    yield start
    for srv in servers:
        srv.shutdown()
        srv.server_close()


@pytest.fixture(scope="session")
def local_model():
    """The real llama.cpp server with the packaged GGUF model on a free 127.0.0.1 port, started once per
    session and stopped at its end (``LocalServerInfo``: ``base_url``, ``model``). Skipped cleanly without
    the ``.[local-model]`` extra."""
    pytest.importorskip("llama_cpp", reason="needs the optional extra: pip install '.[local-model]'")
    if missing_modules():
        pytest.skip(f"needs the optional extra (missing {', '.join(missing_modules())}): pip install '.[local-model]'")
    try:
        find_gguf()
    except LocalModelError as exc:
        pytest.skip(str(exc))
    with LocalModelServer(port=0, threads=1) as info:  # 2 threads on a busy 2-core machine: ~30x slower
        yield info


@pytest.fixture
def cli_in_child():
    """``cli_in_child(["audit", path, "--json"], watched)`` -> (the JSON it printed, which of the module
    names ``watched`` it loaded): ``python -m ctwm_cli ...`` as a script (its exit path included) in a
    fresh interpreter, so the modules a command imports can be seen (issue 29)."""

    def _run(argv: list[str], watched: tuple[str, ...]) -> tuple[dict, list[str]]:
        probe = (
            "import json, runpy, sys\n"
            f"sys.argv = ['ctwm', *{list(argv)!r}]\n"
            "try:\n    runpy.run_module('ctwm_cli', run_name='__main__')\n"
            "except SystemExit as exc:\n    assert exc.code in (0, None), exc.code\n"
            f"print(json.dumps([m for m in {tuple(watched)!r} if m in sys.modules]), file=sys.stderr)\n"
        )
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
        out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=True)
        return json.loads(out.stdout), json.loads(out.stderr.strip().splitlines()[-1])

    return _run
