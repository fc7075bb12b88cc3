"""Untrusted input reads, writes and leaks nothing (README: Security).

Each attack runs for real: DuckDB on a real trace, ``ctwm check`` as a process on a hostile config in
a temporary repository, a real HTTP server on 127.0.0.1 that redirects or drips its reply. Each ends in
the documented exit code, and no file content, environment value or escape sequence reaches stdout,
stderr or a written file.
"""

from __future__ import annotations

import csv
import io
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import xml.etree.ElementTree as ET
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ctwm_cli.common.errors import EXIT_INPUT, EXIT_USAGE, UsageError
from ctwm_cli.common.inert import markdown_text, spreadsheet_safe, visible, xml_text
from ctwm_cli.models.llm import ChatClient, EndpointError
from ctwm_cli.traces import paths
from ctwm_cli.traces.predicate import check_where

SECRET = "ctwm-test-secret-7f3a9c"
ESC = "\x1b"


@pytest.fixture
def trace(tmp_path):
    path = tmp_path / "t.parquet"
    items = [f"m{i % 40}" for i in range(400)]
    pq.write_table(pa.table({"item": items, "step": list(range(400)), "run": ["a", "b"] * 200}), path)
    return path


@pytest.fixture
def secret_file(tmp_path):
    path = tmp_path / "secret.txt"
    path.write_text(SECRET + "\n")
    return path


def _no_leak(*texts: str) -> None:
    for text in texts:
        assert SECRET not in text
        assert ESC not in text and "\x07" not in text and "\x9b" not in text


# ----------------------------------------------------------------------------------------- --where

ATTACKS = [
    ("error((SELECT string_agg(content, '') FROM read_text('{secret}')))", "error()"),
    ("item IN (SELECT content FROM read_text('{secret}'))", "subquery"),
    ("EXISTS (SELECT * FROM glob('/root/*'))", "subquery"),
    ("read_text('http://127.0.0.1:9/x') IS NOT NULL", "read_text()"),
    ("length(getenv('HOME')) > 0", "getenv()"),
    ("current_setting('temp_directory') = ''", "current_setting()"),
    ("$1 = 2", "parameter"),
    ("step > ?", "parameter"),
    ("step > 1) UNION SELECT content, 1, 'x' FROM read_text('{secret}') WHERE (true", "set operation"),
    ("step > 1 ORDER BY 1", "syntax error"),
    ("count(*) > 1", "count_star()"),
    ("row_number() OVER () > 1", "window function"),
    ("list_transform([1], x -> x) IS NULL", "list_transform()"),
    ("step > 1; COPY (SELECT 1) TO '/tmp/x'", "syntax error"),
    ("main.lower(item) = 'a'", "lower()"),
]


@pytest.mark.parametrize(("predicate", "token"), ATTACKS)
def test_where_attacks_are_refused_naming_the_token(predicate, token, trace, secret_file, run_cli, tmp_path):
    where = predicate.format(secret=secret_file)
    res = run_cli(["inspect", trace, "--where", where, "--json"])
    assert res.code == EXIT_USAGE, res.err
    assert res.out == ""
    assert res.err.count("\n") == 1 and res.err.startswith("ctwm: error: --where: ")
    assert token in res.err
    _no_leak(res.out, res.err)
    assert not (Path.home() / ".duckdb" / "extensions").exists() or os.environ.get("CTWM_KEEP_DUCKDB_HOME")


@pytest.mark.parametrize("predicate", [
    "run LIKE 'a%' AND step > 10",
    "run = 'a' OR step BETWEEN 3 AND 9",
    "item IN ('m1', 'm2') AND NOT (step < 5)",
    "lower(item) ILIKE 'M1%' AND run IS NOT NULL",
    "CAST(step AS DOUBLE) / 2 >= 3.5 AND step % 2 = 0",
    "CASE WHEN run = 'a' THEN step > 100 ELSE false END",
    "regexp_matches(item, '^m[0-9]$') AND starts_with(run, 'a')",
    "coalesce(run, 'x') <> 'b' AND abs(step - 200) < 50",
    "item SIMILAR TO 'm1.*' OR item GLOB 'm2*'",
])
def test_where_predicates_keep_working(predicate, trace):
    counts = paths.read_counts([str(trace)], paths.ReadOptions(where=predicate))
    assert counts[0].n_events > 0
    import duckdb

    with duckdb.connect() as con:
        expected = con.execute(f"SELECT count(*) FROM read_parquet('{trace}') WHERE {predicate}").fetchall()[0][0]
    assert counts[0].n_events == expected


def test_non_boolean_and_unknown_column_predicates_are_usage_errors(trace, run_cli):
    for where, text in [("step", "must be a condition"), ("step + 1", "must be a condition"),
                        ("nosuch = 1", "nosuch"), ("CAST(item AS INTEGER) > 3", "cannot be evaluated")]:
        res = run_cli(["inspect", trace, "--where", where])
        assert res.code == EXIT_USAGE, (where, res.err)
        assert text in res.err, (where, res.err)


def test_the_engine_sandbox_holds_when_the_allow_list_is_bypassed(trace, secret_file, monkeypatch):
    """Defence in depth: a predicate that got past the parser still reads no other file."""
    for module in ("base", "engine", "readers"):
        monkeypatch.setattr(f"ctwm_cli.traces.{module}.check_where", lambda w: w)
    attack = f"item IN (SELECT content FROM read_text('{secret_file}'))"
    with pytest.raises(Exception) as info:
        paths.read_counts([str(trace)], paths.ReadOptions(where=attack))
    assert SECRET not in str(info.value)
    assert "disabled by configuration" in str(info.value)


def test_check_where_is_called_for_in_memory_sources():
    from ctwm_cli import audit_trace

    with pytest.raises(UsageError, match="subquery"):
        audit_trace(pa.table({"item": ["a", "b"]}), where="item IN (SELECT 1)")


# ------------------------------------------------------------------------------ rendered output

HOSTILE = [
    "=cmd|' /C calc'!A0", "+1+1", "-2+3", "@SUM(A1)", "\tx", "<img src=x onerror=alert(1)>",
    f"{ESC}[2J{ESC}]8;;http://evil.example{ESC}\\link{ESC}]8;;{ESC}\\", "*bold* [l](http://x) `c`", "a|b",
    "\u202eevil", "\x9b31m", "line\nbreak", "ok",
]


@pytest.fixture
def hostile(tmp_path):
    path = tmp_path / "hostile.parquet"
    items = HOSTILE * 30
    runs = [HOSTILE[i % len(HOSTILE)] for i in range(len(items))]
    pq.write_table(pa.table({"item": items, "run": runs, "step": list(range(len(items)))}), path)
    return path


@pytest.mark.parametrize("fmt", ["table", "csv", "markdown", "github", "jsonl", "json"])
def test_trace_contents_reach_no_output_live(fmt, hostile, run_cli, tmp_path):
    junit = tmp_path / "j.xml"
    res = run_cli(["concentration", hostile, "--group-by", "run", "--format", fmt, "--details",
                   "--fail-on", "gini>0.99", "--junit-xml", junit])
    assert res.code in (0, 1), res.err
    _no_leak(res.out, res.err)
    assert "\u202e" not in res.out and "\u202e" not in res.err
    root = ET.parse(junit).getroot()  # parses: no character XML 1.0 forbids
    assert ESC not in ET.tostring(root, encoding="unicode")
    if fmt == "csv":
        for row in csv.DictReader(io.StringIO(res.out)):
            assert not row["group"].startswith(("=", "+", "-", "@", "\t", "\r"))
    if fmt == "markdown":
        assert "<img" not in res.out and "[l](http" not in res.out


def test_csv_raw_keeps_cells_and_numbers_stay_numbers(hostile, run_cli):
    raw = run_cli(["concentration", hostile, "--group-by", "run", "--format", "csv-raw"]).out
    groups = {row["group"] for row in csv.DictReader(io.StringIO(raw))}
    assert "=cmd|' /C calc'!A0" in groups
    safe = run_cli(["concentration", hostile, "--group-by", "run", "--format", "csv"]).out
    rows = list(csv.DictReader(io.StringIO(safe)))
    assert "'=cmd|' /C calc'!A0" in {r["group"] for r in rows}
    assert all(float(r["gini"]) >= 0 for r in rows)  # numbers are not prefixed


def test_inert_functions():
    assert visible(f"a{ESC}[2Jb\u202e\x00\n") == "a\\x1b[2Jb\\u202e\\x00\\n"
    assert visible("plain ünïcode ✓") == "plain ünïcode ✓"
    assert spreadsheet_safe("=1+1") == "'=1+1" and spreadsheet_safe(-3) == -3 and spreadsheet_safe("a=1") == "a=1"
    assert markdown_text("<b>*x*</b> [a](b) |") == "&lt;b&gt;\\*x\\*&lt;/b&gt; \\[a\\](b) \\|"
    assert xml_text("a\ud800b\ufffe" + ESC) == "ab\\x1b"
    ET.fromstring(f"<a>{xml_text(chr(0xDFFF) + chr(1) + 'x')}</a>")


# --------------------------------------------------------------------- outputs never overwrite inputs

def test_junit_and_plot_never_replace_an_input(trace, run_cli, tmp_path):
    before = trace.read_bytes()
    figure = tmp_path / "figure.png"
    figure.symlink_to(trace)
    for args in (["--junit-xml", tmp_path / "." / trace.name], ["--plot", figure]):
        res = run_cli(["concentration", trace, *args])
        assert res.code == EXIT_USAGE and "never overwrites an input" in res.err, res.err
    link = tmp_path / "link.xml"
    link.symlink_to(trace)
    res = run_cli(["audit", trace, "--bootstrap", "0", "--junit-xml", link])
    assert res.code == EXIT_USAGE, res.err
    assert trace.read_bytes() == before


def test_import_refuses_an_existing_output_without_overwrite(tmp_path, run_cli):
    src = Path(__file__).resolve().parents[1] / "sample_traces" / "telemetry"
    spans = src / "otel_spans.json"
    out = tmp_path / "out.parquet"
    out.write_bytes(b"keep me")
    res = run_cli(["import", "otel", spans, "-o", out])
    assert res.code == EXIT_USAGE and "already exists" in res.err and "--overwrite" in res.err, res.err
    assert out.read_bytes() == b"keep me"
    assert run_cli(["import", "otel", spans, "-o", out, "--overwrite"]).code == 0
    assert out.read_bytes()[:4] == b"PAR1"
    res = run_cli(["import", "otel", spans, "-o", spans, "--overwrite"])
    assert res.code == EXIT_USAGE and "never overwrites an input" in res.err


# ------------------------------------------------------------------------ ctwm check on a hostile config

def _repo(tmp_path: Path, config: str, trace: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "traces").mkdir(parents=True)
    (repo / "traces" / "t.parquet").write_bytes(trace.read_bytes())
    (repo / "ctwm.toml").write_text(textwrap.dedent(config))
    return repo


def _check(repo: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    environ = {**os.environ, "CTWM_SECRET_FOR_TEST": SECRET}
    environ.pop("CTWM_TRUST_CONFIG", None)
    environ.update(env or {})
    return subprocess.run([sys.executable, "-m", "ctwm_cli", "check", *args], cwd=repo, capture_output=True,
                          text=True, timeout=300, env=environ)


HOSTILE_CONFIGS = [
    ("""[[check]]
command = "inspect"
traces = ["traces/t.parquet"]
options = {{ where = "error((SELECT string_agg(content, '') FROM read_text('/proc/self/environ')))" }}
""", "error()"),
    ("""junit_xml = "{outside}/junit.xml"
[[check]]
command = "inspect"
traces = ["traces/t.parquet"]
""", "outside the repository"),
    ("""junit_xml = "ctwm.toml"
[[check]]
command = "inspect"
traces = ["traces/t.parquet"]
""", "never overwrites an input"),
    ("""junit_xml = "traces/t.parquet"
[[check]]
command = "inspect"
traces = ["traces/t.parquet"]
""", "never overwrites an input"),
    ("""[[check]]
command = "concentration"
traces = ["traces/t.parquet"]
options = {{ plot = "{outside}/x.png" }}
""", "option 'plot' is not allowed"),
    ("""[[check]]
command = "audit"
traces = ["traces/t.parquet"]
options = {{ scheduler = "tcp://127.0.0.1:{port}", bootstrap = 0 }}
""", "option 'scheduler' is not allowed"),
    ("""[[check]]
command = "inspect"
traces = ["../secret.txt"]
""", "outside the repository"),
    ("""[[check]]
command = "inspect"
traces = ["{tmp}/*.txt"]
""", "outside the repository"),
    ("""[[check]]
command = "inspect"
traces = ["link/secret.txt"]
""", "outside the repository"),
    ("""[[check]]
command = "health"
traces = ["traces/t.parquet"]
options = {{ objects = "../secret.txt" }}
""", "outside the repository"),
]


@pytest.mark.parametrize(("config", "refusal"), HOSTILE_CONFIGS)
def test_ctwm_check_treats_its_config_as_untrusted(config, refusal, tmp_path, trace, secret_file):
    outside = tmp_path / "outside"
    outside.mkdir()
    listener = __import__("socket").socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.settimeout(0.1)
    repo = _repo(tmp_path, config.format(outside=outside, tmp=tmp_path, port=listener.getsockname()[1]), trace)
    (repo / "link").symlink_to(tmp_path)
    proc = _check(repo, "--format", "json")
    assert proc.returncode == EXIT_USAGE, proc.stderr
    assert refusal in proc.stderr
    _no_leak(proc.stdout, proc.stderr)
    assert SECRET not in "".join(p.read_text(errors="replace") for p in repo.rglob("*.xml"))
    assert list(outside.iterdir()) == []
    with pytest.raises(OSError):
        listener.accept()  # nobody connected
    listener.close()


def test_trace_entries_are_never_parsed_as_options(tmp_path, trace):
    config = """[[check]]
command = "inspect"
traces = ["--where=error((SELECT 1))"]
"""
    repo = _repo(tmp_path, config, trace)
    (repo / "--where=error((SELECT 1))").write_bytes(trace.read_bytes())
    proc = _check(repo, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["entries"][0]["status"] == "pass"


def test_trust_config_lifts_the_confinement(tmp_path, trace, secret_file):
    config = f"""junit_xml = "{tmp_path}/outside-junit.xml"
[[check]]
command = "inspect"
traces = ["{trace}"]
"""
    repo = _repo(tmp_path, config, trace)
    assert _check(repo).returncode == EXIT_USAGE
    assert _check(repo, "--trust-config").returncode == 0
    assert _check(repo, env={"CTWM_TRUST_CONFIG": "1"}).returncode == 0
    ET.parse(tmp_path / "outside-junit.xml")


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.slow
def test_sigterm_to_ctwm_check_ends_the_entry_and_its_workers(tmp_path):
    path = tmp_path / "big.parquet"
    import numpy as np

    rng = np.random.default_rng(3)
    counts = rng.zipf(2.0, 20_000)
    pq.write_table(pa.table({"item": [f"m{i}" for i in range(counts.size)], "count": counts}), path)
    config = """[[check]]
command = "audit"
traces = ["big.parquet"]
options = { bootstrap = 5000, jobs = 2, seed = 1 }
"""
    (tmp_path / "ctwm.toml").write_text(config)
    proc = subprocess.Popen([sys.executable, "-m", "ctwm_cli", "check"], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    entry_pgid = None
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and entry_pgid is None:  # the entry runs in a group of its own
        out = subprocess.run(["ps", "-eo", "pid,ppid,pgid,args"], capture_output=True, text=True).stdout
        for line in out.splitlines()[1:]:
            _pid, ppid, pgid, *args = line.split(None, 3)
            if int(ppid) == proc.pid and "ctwm_cli" in " ".join(args):
                entry_pgid = int(pgid)
        time.sleep(0.2)
    assert entry_pgid is not None
    members = 0
    while time.monotonic() < deadline and members < 2:  # the entry and at least one pool worker
        out = subprocess.run(["ps", "-eo", "pgid"], capture_output=True, text=True).stdout.split()
        members = out.count(str(entry_pgid))
        time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert not _group_alive(entry_pgid), "the entry or one of its workers outlived ctwm check"


# --------------------------------------------------------------------------- the model endpoint


class _Redirector(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        srv = self.server
        srv.seen.append((self.path, self.headers.get("Authorization")))
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.path.startswith("/v1/chat/completions") and srv.target:
            self.send_response(srv.status)
            self.send_header("Location", srv.target)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if srv.drip:
            self.send_response(200)
            self.send_header("Content-Length", "1000")
            self.end_headers()
            for _ in range(60):
                try:
                    self.wfile.write(b" ")
                    self.wfile.flush()
                except OSError:
                    return
                time.sleep(0.4)
            return
        data = json.dumps({"choices": [{"message": {"content": "ok"}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def _server(target=None, status=302, drip=False):
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Redirector)
    srv.seen, srv.target, srv.status, srv.drip = [], target, status, drip
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


@pytest.mark.parametrize("status", [301, 302, 307, 308])
def test_credentials_never_follow_a_redirect_to_another_origin(status, monkeypatch):
    monkeypatch.setenv("CTWM_API_KEY", SECRET)
    other = _server()
    here = _server(target=f"http://127.0.0.1:{other.server_port}/steal", status=status)
    try:
        client = ChatClient(base_url=f"http://127.0.0.1:{here.server_port}/v1", model="m", retries=0)
        with pytest.raises(EndpointError, match="another origin") as info:
            client.complete([{"role": "user", "content": "hi"}])
        assert SECRET not in str(info.value)
        assert other.seen == []
        assert here.seen == [("/v1/chat/completions", f"Bearer {SECRET}")]
    finally:
        here.shutdown()
        here.server_close()
        other.shutdown()
        other.server_close()


def test_a_same_origin_redirect_is_followed_without_the_key(monkeypatch):
    monkeypatch.setenv("CTWM_API_KEY", SECRET)
    srv = _server()
    srv.target = "/moved"
    srv.status = 307
    try:
        client = ChatClient(base_url=f"http://127.0.0.1:{srv.server_port}/v1", model="m", retries=0)
        assert client.complete([{"role": "user", "content": "hi"}]) == "ok"
        assert srv.seen == [("/v1/chat/completions", f"Bearer {SECRET}"), ("/moved", None)]
    finally:
        srv.shutdown()
        srv.server_close()


def test_timeout_is_a_deadline_for_the_whole_request():
    srv = _server(drip=True)
    try:
        client = ChatClient(base_url=f"http://127.0.0.1:{srv.server_port}/v1", model="m", timeout=2.0, retries=2)
        started = time.monotonic()
        with pytest.raises(EndpointError, match="within the 2 s timeout"):
            client.complete([{"role": "user", "content": "hi"}])
        # the drip lasts 24 s (72 s with two retries); the call ends at its 2 s deadline (a generous bound:
        # this tests the mechanism, not the machine's speed)
        assert time.monotonic() - started < 10.0
    finally:
        srv.shutdown()
        srv.server_close()


def test_check_where_refuses_non_strings():
    with pytest.raises(UsageError):
        check_where("   ")
    assert check_where(None) is None
    assert EXIT_INPUT == 3
