"""A pull request's ctwm.toml reads, fetches and hides nothing (docs/security.md, rows C1-C6, G1-G3).

Every case runs ``ctwm check`` as a process on a real repository in a temporary directory: real symlinks
to a file holding a secret, a real ``.git/config``, a real HTTP server on 127.0.0.1 that records whether
it was asked anything, real rlimits and real signals. The secret must appear nowhere: stdout, stderr,
the JUnit file.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

junitparser = pytest.importorskip("junitparser")

SECRET = "ctwm-secret-4d1e"
ROWS = "".join(f'{{"step": {i}, "item": "m{i % 23}", "event": "retrieve"}}\n' for i in range(300))


def _repo(tmp_path: Path, config: str) -> Path:
    repo = tmp_path / "repo"
    (repo / "d2").mkdir(parents=True)
    (repo / "t.jsonl").write_text(ROWS)
    (repo / "d2" / "a.csv").write_text("[default],step\nm1,1\nm2,2\n")
    (repo / "ctwm.toml").write_text(config)
    (tmp_path / "credentials").write_text(f"[default]\n{SECRET}\n")
    return repo


def _check(repo: Path, *args: str, timeout: float = 120, **kw) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTWM_")}
    return subprocess.run([sys.executable, "-m", "ctwm_cli", "check", *args], cwd=repo, capture_output=True,
                          text=True, timeout=timeout, env=env, **kw)


def _no_secret(repo: Path, proc: subprocess.CompletedProcess) -> None:
    assert SECRET not in proc.stdout and SECRET not in proc.stderr
    for xml in repo.rglob("*.xml"):
        assert SECRET not in xml.read_text()


def _entry(traces: str, command: str = "inspect", **options: str) -> str:
    opts = ", ".join(f'{k} = "{v}"' for k, v in options.items())
    return f'junit_xml = "j.xml"\n[[check]]\nname = "e1"\ncommand = "{command}"\ntraces = {traces}\n' \
           f"options = {{ {opts} }}\n"


def test_c1_a_link_inside_a_listed_directory_is_refused(tmp_path):
    """C1: traces = ["d2"] inside the repository, d2/creds.csv -> a credentials file outside it."""
    repo = _repo(tmp_path, _entry('["d2"]', "concentration", item_col="[default]", group_by="[default]"))
    (repo / "d2" / "creds.csv").symlink_to(tmp_path / "credentials")
    proc = _check(repo)
    assert proc.returncode == 2, proc.stderr
    assert "e1" in proc.stderr and "d2/creds.csv" in proc.stderr and "outside the repository" in proc.stderr
    _no_secret(repo, proc)
    suite = junitparser.JUnitXml.fromfile(str(repo / "j.xml"))
    assert suite.errors == 1
    (repo / "d2" / "creds.csv").unlink()  # without the link the same entry runs
    assert _check(repo).returncode == 0


def test_c1_a_glob_match_through_a_link_is_refused(tmp_path):
    repo = _repo(tmp_path, _entry('["d2/*.csv"]', item_col="[default]"))
    (repo / "d2" / "creds.csv").symlink_to(tmp_path / "credentials")
    proc = _check(repo)
    assert proc.returncode == 2 and "d2/creds.csv" in proc.stderr and "outside the repository" in proc.stderr
    _no_secret(repo, proc)


@pytest.mark.parametrize("name", [".git/config", "cfg.csv", "sub/.hg/hgrc.csv", ".svn/x.csv"])
def test_c2_vcs_metadata_is_never_read(tmp_path, name):
    """C2: .git/config (where CI checkouts keep the job token), directly or through a link."""
    repo = _repo(tmp_path, _entry(f'["{name}"]', item_col="[default]"))
    for meta in (".git/config", "sub/.hg/hgrc.csv", ".svn/x.csv"):
        (repo / meta).parent.mkdir(parents=True, exist_ok=True)
        (repo / meta).write_text(f"[default]\nextraheader AUTHORIZATION: basic {SECRET}\n")
    (repo / "cfg.csv").symlink_to(repo / ".git" / "config")
    proc = _check(repo)
    assert proc.returncode == 2, proc.stderr
    assert "version-control metadata" in proc.stderr and "e1" in proc.stderr
    _no_secret(repo, proc)


class _Recorder(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        self.server.hits.append(self.path)
        body = ROWS.encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_HEAD = do_GET


@pytest.fixture
def server():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    srv.hits = []
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


@pytest.mark.parametrize("url", ["http://127.0.0.1:{port}/t.jsonl", "https://127.0.0.1:{port}/t.jsonl",
                                 "simplecache::http://127.0.0.1:{port}/t.jsonl", "local://{repo}/t.jsonl",
                                 "file://{repo}/t.jsonl", "s3://bucket/t.jsonl", "gs://b/t.jsonl", "hf://d/t.jsonl",
                                 "-"])
def test_c3_a_config_names_no_url_and_makes_no_request(tmp_path, server, url):
    """C3: a URL or fsspec protocol (or standard input) from a config is refused before any request."""
    repo = tmp_path / "repo"
    text = url.format(port=server.server_address[1], repo=repo)
    repo = _repo(tmp_path, _entry(f'["{text}"]'))
    proc = _check(repo)
    assert proc.returncode == 2, proc.stderr
    assert "never read from a config" in proc.stderr and "e1" in proc.stderr
    assert server.hits == []


def test_c3_allow_remote_is_the_operators_flag_and_typed_urls_work(tmp_path, server):
    """With --allow-remote (the operator's flag) the entry fetches its URL, as a URL typed by the user is
    fetched; what the reading layer then makes of an http trace is its own business (not a refusal)."""
    url = f"http://127.0.0.1:{server.server_address[1]}/t.jsonl"
    repo = _repo(tmp_path, _entry(f'["{url}"]'))
    proc = _check(repo, "--allow-remote")
    assert server.hits, proc.stderr
    assert "never read from a config" not in proc.stderr and proc.returncode != 2
    server.hits.clear()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTWM_")}
    typed = subprocess.run([sys.executable, "-m", "ctwm_cli", "inspect", url, "--json"], capture_output=True,
                           text=True, timeout=120, env=env)
    assert server.hits and "never read from a config" not in typed.stderr


def test_c4_a_config_predicate_is_bounded(tmp_path):
    """C4: the OOM predicate of issue 40 is refused (exit 2) before a row is read."""
    repo = _repo(tmp_path, _entry('["t.jsonl"]', where="length(repeat(item, 100000000)) > 0", memory_limit="1GB"))
    proc = _check(repo)
    assert proc.returncode == 2 and "repeat()" in proc.stderr and "allocate without bound" in proc.stderr
    big = "item IN (" + ", ".join(f"'m{i}'" for i in range(1000)) + ")"
    (repo / "ctwm.toml").write_text(_entry('["t.jsonl"]', where=big.replace('"', "")))
    proc = _check(repo)
    assert proc.returncode == 2 and "at most 2,000 characters" in proc.stderr


def _limit_address_space(nbytes: int):
    def apply():
        resource.setrlimit(resource.RLIMIT_AS, (nbytes, nbytes))
    return apply


def test_g1_an_entry_past_its_memory_bound_fails_the_run_within_a_minute(tmp_path):
    """G1: with the allow-list lifted (--trust-config), the OS bound stops the predicate; on a 2 GB-capped
    run (RLIMIT_AS of ctwm check itself) the run ends non-zero, JUnit records an error."""
    repo = _repo(tmp_path, _entry('["t.jsonl"]', where="length(repeat(item, 100000000)) > 0", memory_limit="1GB"))
    proc = _check(repo, "--trust-config", "--format", "github", timeout=60,
                  preexec_fn=_limit_address_space(2 << 30))
    assert proc.returncode == 3, proc.stderr
    assert proc.stdout.startswith("::error title=ctwm check%3A e1::could not run: ")
    suite = junitparser.JUnitXml.fromfile(str(repo / "j.xml"))
    assert (suite.tests, suite.errors) == (1, 1)
    _no_secret(repo, proc)


def test_g2_an_entry_past_its_time_bound_fails_the_run(tmp_path):
    repo = _repo(tmp_path, 'junit_xml = "j.xml"\n[[check]]\nname = "slow"\ncommand = "audit"\ntraces = ["t.jsonl"]\n'
                 "options = { seed = 1, bootstrap = 100000 }\n")
    proc = _check(repo, "--entry-timeout", "3", "--json", timeout=60)
    assert proc.returncode == 3, proc.stderr
    (entry,) = json.loads(proc.stdout)["entries"]
    assert entry["status"] == "error (timeout)" and "--entry-timeout" in entry["error"]
    assert (junitparser.JUnitXml.fromfile(str(repo / "j.xml")).errors) == 1


def _children(pid: int) -> list[int]:
    out = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        out += [int(c) for c in (task / "children").read_text().split()]
    return out


def test_g3_an_entry_killed_by_a_signal_fails_the_run(tmp_path):
    """G3: issue 40's hole: an entry ended by SIGKILL (the OOM killer's signal) passed with exit 0."""
    repo = _repo(tmp_path, '[[check]]\nname = "victim"\ncommand = "audit"\ntraces = ["t.jsonl"]\n'
                 "options = { seed = 1, bootstrap = 100000 }\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTWM_")}
    proc = subprocess.Popen([sys.executable, "-m", "ctwm_cli", "check", "--json"], cwd=repo, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not _children(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    (child,) = _children(proc.pid)
    time.sleep(1.0)  # let the entry start its work
    os.kill(child, signal.SIGKILL)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 3, err
    (entry,) = json.loads(out)["entries"]
    assert entry["status"] == "error (signal SIGKILL)" and "out-of-memory" in entry["error"]


def test_c1_an_objects_file_through_a_link_is_refused(tmp_path):
    """C1: health's --objects from a config is admitted like a trace, link resolved."""
    repo = _repo(tmp_path, 'junit_xml = "j.xml"\n[[check]]\nname = "e1"\ncommand = "health"\ntraces = ["t.jsonl"]\n'
                 'options = { objects = "objs.jsonl" }\n')
    (repo / "objs.jsonl").symlink_to(tmp_path / "credentials")
    proc = _check(repo)
    assert proc.returncode == 2 and "objs.jsonl" in proc.stderr and "outside the repository" in proc.stderr
    _no_secret(repo, proc)


@pytest.mark.parametrize(("args", "message"), [(["--entry-memory", "lots"], "must be a size such as 4GB"),
                                               (["--entry-memory", "1GB"], "at least 2GiB"),
                                               (["--entry-timeout", "0"], "--entry-timeout")])
def test_bounds_flags_are_checked(tmp_path, args, message):
    repo = _repo(tmp_path, _entry('["t.jsonl"]'))
    proc = _check(repo, *args)
    assert proc.returncode == 2 and message in proc.stderr


def test_c1_only_what_is_read_is_judged(tmp_path):
    """A link the entry would not open (a file of another kind: a README, a hidden file) does not refuse its
    directory; a file of unknown kind would be opened to sniff its format, so a link there is refused unread."""
    repo = _repo(tmp_path, _entry('["d2"]', "concentration", item_col="[default]"))
    (repo / "d2" / "README").symlink_to(tmp_path / "credentials")
    (repo / "d2" / ".cache.csv").symlink_to(tmp_path / "credentials")
    proc = _check(repo)
    assert proc.returncode == 0, proc.stderr
    _no_secret(repo, proc)
    (repo / "d2" / "NOTES").symlink_to(tmp_path / "credentials")
    proc = _check(repo)
    assert proc.returncode == 2, proc.stderr
    _no_secret(repo, proc)
