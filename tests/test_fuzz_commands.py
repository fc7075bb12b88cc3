"""Exit codes are a contract (issue 40; docs/security.md row X1): every command, walked with a corpus of
hostile inputs — file names, predicates, configs, saved results — ends in 0-3 with one line, never exit 4
(a bug in ctwm) and never a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ctwm_cli.common.errors import UsageError
from ctwm_cli.traces.predicate import check_where

ROWS = "".join(f'{{"step": {i}, "item": "m{i % 31}", "run": "r{i % 2}", "event": "retrieve"}}\n' for i in range(300))
COMMANDS = [["inspect"], ["audit", "-b", "0", "--seed", "1"], ["concentration"], ["health"],
            ["psd", "--series", "total"]]


def _ok(res) -> None:
    assert res.code != 4 and "Traceback" not in res.err and "unexpected error" not in res.err, res.err
    assert len(res.err.strip().splitlines()) <= 3, res.err  # a sentence, not a dump


@pytest.fixture
def names(tmp_path):
    """Hostile file names, each holding a readable trace."""
    out = []
    for raw in (b"\xff.jsonl", b"esc\x1b[2Jname.jsonl", b"new\nline.jsonl", b"-dash.jsonl", b"a::b.jsonl",
                b"sp ace.jsonl"):
        path = os.path.join(os.fsencode(tmp_path), raw)
        with open(path, "wb") as fh:
            fh.write(ROWS.encode())
        out.append(os.fsdecode(path))
    inner = tmp_path / "dir"
    inner.mkdir()
    with open(os.path.join(os.fsencode(inner), b"\xfe.jsonl"), "wb") as fh:
        fh.write(ROWS.encode())
    out.append(str(inner))
    os.mkfifo(tmp_path / "fifo.jsonl")
    out.append(str(tmp_path / "fifo.jsonl"))
    return out


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_hostile_file_names(run_cli, names, command):
    for name in names:
        res = run_cli([*command, "--", name])
        _ok(res)
        if "\udcff" in name or name.endswith("dir"):
            assert res.code == 3 and "not valid UTF-8" in res.err and "\\udc" in res.err  # named by its repr


PREDICATES = [
    "item = 'a\x00'", "(" * 30_000 + "step > 1" + ")" * 30_000, "step > 1e400", "item = 'unterminated",
    "step > 1) OR (true", "step > " + "9" * 5000, "item IN (" + ",".join(map(str, range(6000))) + ")",
    "\u202eitem = 'x'", "length(repeat(item, 100)) > 0", "", " ", "step >",
]


@pytest.mark.parametrize("command", COMMANDS[:3], ids=lambda c: c[0])
def test_hostile_predicates_typed(run_cli, tmp_path, command):
    trace = tmp_path / "t.jsonl"
    trace.write_text(ROWS)
    for where in PREDICATES:
        _ok(run_cli([*command, str(trace), "--where", where.replace("\x00", "")]))
    for where in ("item = 'a\x00'", "item IN (" + ",".join(map(str, range(10**6))) + ")",
                  "(" * 100_000 + "step > 1" + ")" * 100_000):
        with pytest.raises(UsageError, match=r"NUL|at most 65,536 characters"):
            check_where(where)


def _check(repo: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTWM_")}
    return subprocess.run([sys.executable, "-m", "ctwm_cli", "check", *args], cwd=repo, capture_output=True,
                          text=True, timeout=300, env=env)


CONFIGS = [
    b"\xff\xfe not utf-8", b"[[check]\n", b"check = 5\n", b"check = [1]\n", b"[[check]]\ncommand = 'audit'\n",
    b"[[check]]\ncommand = 'audti'\ntraces = ['t.jsonl']\n", b"[[check]]\ncommand = 'inspect'\ntraces = 't.jsonl'\n",
    b"[[check]]\ncommand = 'inspect'\ntraces = ['t.jsonl']\noptions = [1]\n",
    b"[[check]]\ncommand = 'inspect'\ntraces = ['t.jsonl']\nfail_on = 'x'\n",
    b"[[check]]\ncommand = 'inspect'\ntraces = ['t.jsonl']\noptions = { where = \"item = '\\u0000'\" }\n",
    b"[[check]]\ncommand = 'inspect'\ntraces = ['t.jsonl']\noptions = { where = \"" + b"(" * 100_000 + b"step>1"
    + b")" * 100_000 + b"\" }\n",
    b"[[check]]\ncommand = 'inspect'\ntraces = ['t.jsonl']\noptions = { where = \"item IN ("
    + ",".join(map(str, range(10**6))).encode() + b")\" }\n",
    b"[[check]]\ncommand = 'inspect'\ntraces = ['t.jsonl']\noptions = { item_col = { a = 1 } }\n",
    b"[[check]]\nname = 5\ncommand = 'inspect'\ntraces = ['t.jsonl']\n",
    b"[[check]]\ncommand = 'inspect'\ntraces = ['t.jsonl']\noptions = { where = 'step > 1', memory_limit = 'lots' }\n",
    b"[[check]]\ncommand = 'inspect'\ntraces = [" + b"[" * 500 + b"]" * 500 + b"]\n",
    b"junit_xml = 5\n[[check]]\ncommand = 'inspect'\ntraces = ['t.jsonl']\n",
    b"[tool]\n",
]


def test_hostile_configs(tmp_path):
    (tmp_path / "t.jsonl").write_text(ROWS)
    for i, config in enumerate(CONFIGS):
        (tmp_path / "ctwm.toml").write_bytes(config)
        proc = _check(tmp_path)
        assert proc.returncode in (0, 1, 2, 3), (i, proc.stderr)
        assert "Traceback" not in proc.stderr and "unexpected error" not in proc.stderr, (i, proc.stderr)
        assert len(proc.stderr) < 2000, (i, proc.stderr[:300])  # a sentence, not the predicate quoted whole


def _saved(tmp_path: Path, doc) -> str:
    path = tmp_path / f"s{len(list(tmp_path.glob('s*.json')))}.json"
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return str(path)


def test_hostile_saved_results(run_cli, tmp_path):
    trace = tmp_path / "t.jsonl"
    trace.write_text(ROWS)
    good = json.loads(run_cli(["audit", str(trace), "-b", "0", "--seed", "1", "--json"]).out)
    one = good["results"][0]
    hostile = [
        {**good, "results": {}}, {**good, "results": [1]}, {**good, "results": [{**one, "source": None}]},
        {**good, "results": [{**one, "power_law": "x"}]}, {**good, "results": [one, one]},
        {**good, "results": [{**one, "power_law": {"alpha": 1e400}}]}, {**good, "command": "nope"},
        {**good, "schema_version": 99}, '{"tool": "ctwm", "command": "audit", "results": ' + "[" * 100_000
        + "]" * 100_000 + "}", {**good, "results": [{**one, "source": "\x1b[2J"}]},
    ]
    base = _saved(tmp_path, good)
    for doc in hostile:
        head = _saved(tmp_path, doc)
        _ok(run_cli(["diff", base, head, "--tol", "alpha=0.1"]))
        _ok(run_cli(["diff", head, base, "--tol", "alpha=0.1"]))
