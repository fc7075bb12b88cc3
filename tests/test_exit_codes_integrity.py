"""The exit-code table holds (issue 25): FIFOs, object stores without credentials or reachable
endpoint, malformed saved results — exit 3 with one line, never a hang or exit 4."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = str(Path(__file__).resolve().parents[1])


def _ctwm(*args: str, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ctwm_cli", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "PYTHONPATH": ROOT, **(env or {})})


@pytest.mark.parametrize("name", ["trace.jsonl", "trace.parquet", "trace"])
def test_a_fifo_is_refused_not_waited_on(tmp_path, name):
    fifo = tmp_path / name
    os.mkfifo(fifo)
    res = _ctwm("inspect", str(fifo), timeout=60)  # before: open() waited forever for a writer
    assert res.returncode == 3, res.stderr
    assert res.stderr.strip() == f"ctwm: error: {fifo}: not a regular file (a FIFO); pass - to read JSONL from " \
                                 "standard input"


def test_the_guarded_opener_refuses_a_fifo(tmp_path):
    from ctwm_cli.common.errors import InputError
    from ctwm_cli.traces.guard import open_guarded

    fifo = tmp_path / "spans.json"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="not a regular file"):
        open_guarded(fifo)


@pytest.fixture
def s3_env(tmp_path, monkeypatch):
    """An S3 endpoint nobody listens on, no credentials anywhere, one attempt (the refusal, not the
    back-off); in-process, with fsspec's configuration and s3fs's instance cache reset."""
    s3fs = pytest.importorskip("s3fs")
    import fsspec.config

    for name in [k for k in os.environ if k.startswith("AWS_")]:
        monkeypatch.delenv(name)
    for name, value in {"AWS_EC2_METADATA_DISABLED": "true", "AWS_CONFIG_FILE": str(tmp_path / "none"),
                        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"), "AWS_MAX_ATTEMPTS": "1",
                        "AWS_RETRY_MODE": "standard", "FSSPEC_S3_ENDPOINT_URL": "http://127.0.0.1:9"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(fsspec.config, "conf", {})
    fsspec.config.set_conf_env(fsspec.config.conf)
    s3fs.S3FileSystem.clear_instance_cache()
    yield monkeypatch
    s3fs.S3FileSystem.clear_instance_cache()


def test_s3_without_credentials_is_exit_3(s3_env, run_cli):
    res = run_cli(["inspect", "s3://bucket/t.jsonl"])
    assert res.code == 3, res.err
    assert "s3://bucket/t.jsonl: cannot list (NoCredentialsError" in res.err


def test_s3_with_an_unreachable_endpoint_is_exit_3(s3_env, run_cli):
    s3_env.setenv("AWS_ACCESS_KEY_ID", "x")
    s3_env.setenv("AWS_SECRET_ACCESS_KEY", "y")
    res = run_cli(["inspect", "s3://bucket/t.jsonl"])
    assert res.code == 3, res.err
    assert "s3://bucket/t.jsonl: cannot list (EndpointConnectionError" in res.err


@pytest.mark.parametrize(("doc", "why"), [
    ({"tool": "ctwm", "command": "concentration", "results": {"a": 1}}, "whose 'results' is a dict, not a list"),
    ({"tool": "ctwm", "command": "concentration", "results": [1]}, "whose 'results'[0] is a int, not an object"),
    ({"tool": "ctwm", "command": "audit", "results": "x"}, "whose 'results' is a str, not a list"),
])
def test_diff_of_a_malformed_saved_result_is_exit_3(tmp_path, run_cli, doc, why):
    good = {"tool": "ctwm", "command": doc["command"], "results": []}
    (tmp_path / "base.json").write_text(json.dumps(good))
    (tmp_path / "head.json").write_text(json.dumps(doc))
    res = run_cli(["diff", str(tmp_path / "base.json"), str(tmp_path / "head.json")])
    assert res.code == 3, res.err
    assert res.err.strip() == f"ctwm: error: {tmp_path / 'head.json'}: a {doc['command']!r} result {why}"


_QUERY = """
    import sys, time
    import pyarrow as pa
    from ctwm_cli.runtime.interrupts import exit_code, signals_raise
    from ctwm_cli.traces.base import ArrowReader
    from ctwm_cli.traces.engine import Engine
    from ctwm_cli.traces.schema import ColumnMap
    reader = ArrowReader(pa.table({"item": ["a"]}), "t", "arrow", ColumnMap())
    with signals_raise(), Engine(reader.options) as engine:
        print("running", flush=True)
        t0 = time.monotonic()
        try:  # minutes of work: only an interrupt ends it early
            reader.fetch(engine, "SELECT sum(i % 7) FROM range(1000000000000) t(i)", [])
        except KeyboardInterrupt as exc:
            print(f"stopped after {time.monotonic() - t0:.2f} s", file=sys.stderr)
            sys.exit(exit_code(exc))
    sys.exit("the query finished: it was never interrupted")
"""


@pytest.mark.parametrize(("sig", "code"), [("SIGINT", 130), ("SIGTERM", 143)])
def test_a_signal_during_a_duckdb_query_interrupts_it(sig, code):
    import signal
    import textwrap
    import time

    with subprocess.Popen([sys.executable, "-c", textwrap.dedent(_QUERY)], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": ROOT}) as proc:
        assert proc.stdout.readline().strip() == "running"
        time.sleep(0.5)  # let the query start (an earlier signal ends it the same way)
        proc.send_signal(getattr(signal, sig))
        _, err = proc.communicate(timeout=60)  # a hang guard, not a timing assertion
    assert proc.returncode == code, err
    assert "stopped after" in err and "Traceback" not in err
