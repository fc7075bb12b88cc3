"""TraceWriter under bad events, full disks and concurrent or foreign processes (issue 25).

Real processes throughout: writers in other processes and another PID namespace (``unshare``), a
full disk (a 1 MiB tmpfs mounted in a user namespace) and a file size limit (``RLIMIT_FSIZE``)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import pytest

from ctwm_cli.common.errors import UsageError
from ctwm_cli.traces import open_trace
from ctwm_cli.traces.writer import TraceWriter, recover_trace


def _items(path) -> Counter:
    return Counter(i for b in open_trace(path).batches() for i in b.column("item").to_pylist())


# ---------------------------------------------------------------------------------------------
# Every event checked at call time


BAD = [
    (dict(step=2**63), "step must fit in 64 bits"),
    (dict(rank=2**63), "rank must fit in 64 bits"),
    (dict(tokens=2**70), "tokens must fit in 64 bits"),
    (dict(tokens=-5), "tokens must be >= 0"),
    (dict(task=5), "task must be a string"),
    (dict(ts=1700000000), "ts must be a string"),
    (dict(score="high"), "score must be a finite number"),
    (dict(score=float("inf")), "score must be a finite number"),
    (dict(item="a\ud800b"), "item must be valid Unicode"),
    (dict(run="r\udfff"), "run must be valid Unicode"),
]


@pytest.mark.parametrize("name", ["t.jsonl", "t.parquet"])
@pytest.mark.parametrize(("fields", "text"), BAD, ids=[t for _, t in BAD])
def test_a_bad_event_is_refused_at_call_time_and_changes_nothing(tmp_path, name, fields, text):
    path = tmp_path / name
    fields = dict(fields)
    item = fields.pop("item", "x")
    with TraceWriter(path, flush_rows=3) as w:
        w.retrieve("a")
        w.retrieve("b")
        with pytest.raises(UsageError, match=text) as err:
            w.retrieve(item, **fields)
        assert err.value.params == (text.split()[0],)
        w.retrieve("c")  # the batch flushes with the bad event left out
        w.retrieve("d")
    assert _items(path) == Counter("abcd")
    with TraceWriter(path) as again:  # the directory (or file) still opens
        again.retrieve("e")
    assert _items(path) == Counter("abcde")


def test_the_suffix_picks_the_format_and_anything_else_is_refused(tmp_path):
    with pytest.raises(UsageError, match=r"name it \.jsonl or \.ndjson"):
        TraceWriter(tmp_path / "y.csv")
    assert not (tmp_path / "y.csv").exists()
    with pytest.raises(UsageError, match="contradicts"):
        TraceWriter(tmp_path / "y.jsonl", format="parquet")
    with TraceWriter(tmp_path / "y.csv", format="jsonl") as w:  # said explicitly
        w.retrieve("a")
    assert (tmp_path / "y.csv").is_file()


def test_a_second_writer_on_one_jsonl_file_is_refused(tmp_path):
    from ctwm_cli.common.errors import WriteError

    path = tmp_path / "one.jsonl"
    with TraceWriter(path) as w:
        w.retrieve("a")
        with pytest.raises(WriteError, match="another TraceWriter"):
            TraceWriter(path)
        w.retrieve("b")
    assert _items(path) == Counter("ab")


# ---------------------------------------------------------------------------------------------
# Full disk: a 1 MiB tmpfs in a user + mount namespace


def _in_namespace(script: str, *args: str, flags=("--user", "--map-root-user", "--mount")):
    if shutil.which("unshare") is None:
        pytest.skip("unshare(1) is not installed")
    probe = subprocess.run(["unshare", *flags, "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"unshare {' '.join(flags)} is not permitted here: {probe.stderr.strip()}")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    return subprocess.run(["unshare", *flags, sys.executable, "-c", textwrap.dedent(script), *args],
                          capture_output=True, text=True, timeout=120, env=env)


_FULL_DISK = """
    import json, os, subprocess, sys, time
    from ctwm_cli.common.errors import WriteError
    from ctwm_cli.traces.writer import TraceWriter
    mnt = sys.argv[1]
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", mnt], check=True)
    out = {}
    def fill():
        fh = open(os.path.join(mnt, "filler"), "wb")
        try:
            while True:
                fh.write(os.urandom(4096)); fh.flush()
        except OSError:
            pass
        return fh
    def unfill(fh):
        try: fh.close()
        except OSError: pass
        os.unlink(os.path.join(mnt, "filler"))
    if sys.argv[2] == "flush":
        w = TraceWriter(os.path.join(mnt, "t.parquet"), flush_rows=10**6, flush_seconds=3600)
        for i in range(1000):
            w.retrieve(f"m{i}", step=i)
        fh = fill()
        try:
            w.flush()
        except WriteError as exc:
            out["flush_error"] = str(exc)
        unfill(fh)
        w.retrieve("last", step=1000)
        w.close()
    elif sys.argv[2] == "thread":
        w = TraceWriter(os.path.join(mnt, "t.parquet"), flush_rows=10**6, flush_seconds=0.2)
        for i in range(1000):
            w.retrieve(f"m{i}", step=i)
        fh = fill()
        time.sleep(2.5)  # the flush thread tries (and fails) at least once
        unfill(fh)
        try:
            w.retrieve("refused", step=1000)
        except WriteError as exc:
            out["event_error"] = str(exc)
        w.retrieve("last", step=1001)
        w.close()
    else:  # jsonl: write until the disk is full
        w = TraceWriter(os.path.join(mnt, "t.jsonl"))
        n = 0
        try:
            while True:
                w.retrieve(f"m{n:06d}" + "x" * 40, step=n); n += 1
        except WriteError as exc:
            out["write_error"] = str(exc)
        w.close()
        out["completed"] = n
    from ctwm_cli.traces import open_trace
    name = "t.jsonl" if sys.argv[2] == "jsonl" else "t.parquet"
    out["items"] = [i for b in open_trace(os.path.join(mnt, name)).batches() for i in b.column("item").to_pylist()]
    out["hidden"] = [] if name.endswith("jsonl") else sorted(
        f for f in os.listdir(os.path.join(mnt, name)) if f.startswith("."))
    print(json.dumps(out))
"""


def test_a_flush_on_a_full_disk_keeps_its_events_and_says_so(tmp_path):
    res = _in_namespace(_FULL_DISK, str(tmp_path), "flush")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert "cannot write a segment (No space left on device); 1,000 pending events" in out["flush_error"]
    assert sorted(out["items"]) == sorted([f"m{i}" for i in range(1000)] + ["last"])
    assert out["hidden"] == []


def test_the_flush_thread_fails_quietly_and_the_next_call_raises(tmp_path):
    res = _in_namespace(_FULL_DISK, str(tmp_path), "thread")
    assert res.returncode == 0, res.stderr
    assert "Traceback" not in res.stderr and "Exception in thread" not in res.stderr
    out = json.loads(res.stdout)
    assert "No space left on device" in out["event_error"]
    assert sorted(out["items"]) == sorted([f"m{i}" for i in range(1000)] + ["last"])


def test_jsonl_on_a_full_disk_ends_at_the_last_complete_event(tmp_path):
    res = _in_namespace(_FULL_DISK, str(tmp_path), "jsonl")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert "No space left on device" in out["write_error"] and "last complete event" in out["write_error"]
    assert out["completed"] > 1000
    assert out["items"] == [f"m{n:06d}" + "x" * 40 for n in range(out["completed"])]


_FSIZE = """
    import resource, signal, sys
    from ctwm_cli.common.errors import WriteError
    from ctwm_cli.traces.writer import TraceWriter
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a short write returns EFBIG instead of killing
    resource.setrlimit(resource.RLIMIT_FSIZE, (50_000, 50_000))
    w = TraceWriter(sys.argv[1])
    n = 0
    try:
        while True:
            w.retrieve(f"m{n:06d}", step=n, score=n / 7); n += 1
    except WriteError as exc:
        print(n, exc, file=sys.stderr)
    w.close()
    print(n)
"""


def test_jsonl_under_a_file_size_limit_has_only_whole_lines(tmp_path):
    path = tmp_path / "t.jsonl"
    res = subprocess.run([sys.executable, "-c", textwrap.dedent(_FSIZE), str(path)], capture_output=True, text=True,
                         timeout=60, env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    assert res.returncode == 0, res.stderr
    assert "File too large" in res.stderr
    completed = int(res.stdout)
    data = path.read_bytes()
    assert data.endswith(b"\n") and len(data) <= 50_000
    assert [json.loads(x)["step"] for x in data.splitlines()] == list(range(completed))


# ---------------------------------------------------------------------------------------------
# One writer per log, proven by a lock


_DEAD = """
    import sys
    from ctwm_cli.traces.writer import TraceWriter
    w = TraceWriter(sys.argv[1], flush_rows=10**6, flush_seconds=3600)
    for i in range(500):
        w.retrieve(f"dead{i}", step=i)
    print("ready", flush=True)
    sys.stdin.readline()
"""

_RACER = """
    import os, sys, time
    from ctwm_cli.traces.writer import TraceWriter
    while not os.path.exists(sys.argv[2]):
        time.sleep(0.001)
    with TraceWriter(sys.argv[1], flush_rows=30) as w:
        for i in range(100):
            w.retrieve(f"w{sys.argv[3]}-{i}")
"""


def _env():
    return {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}


def _killed_writer(path) -> None:
    with subprocess.Popen([sys.executable, "-c", textwrap.dedent(_DEAD), str(path)], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, text=True, env=_env()) as proc:
        assert proc.stdout.readline().strip() == "ready"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()


def test_four_writers_starting_at_once_recover_a_dead_log_once(tmp_path):
    path = tmp_path / "t.parquet"
    _killed_writer(path)
    assert len(list(path.glob(".wal-*"))) == 1
    go = tmp_path / "go"
    procs = [subprocess.Popen([sys.executable, "-c", textwrap.dedent(_RACER), str(path), str(go), str(k)],
                              stderr=subprocess.PIPE, text=True, env=_env()) for k in range(4)]
    go.touch()
    errs = [p.communicate(timeout=120)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0, 0], errs
    items = _items(path)
    expected = Counter([f"dead{i}" for i in range(500)] + [f"w{k}-{i}" for k in range(4) for i in range(100)])
    assert items == expected  # every dead event once, every new one once
    assert not list(path.glob(".*"))


_NS_WRITER = """
    import os, sys
    target = int(sys.argv[2])
    while True:  # fork until the child has this pid inside the namespace; it is the writer
        pid = os.fork()
        if pid == 0:
            if os.getpid() == target:
                break
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        if pid == target:
            sys.exit(os.waitstatus_to_exitcode(status))
        if pid > target:
            sys.exit(f"could not reach pid {target}")
    from ctwm_cli.traces.writer import TraceWriter
    w = TraceWriter(sys.argv[1], flush_rows=10**6, flush_seconds=3600)
    for i in range(1000):
        w.retrieve(f"ns{i}", step=i)
    print(os.getpid(), flush=True)
    sys.stdin.readline()
    for i in range(1000, 2000):
        w.retrieve(f"ns{i}", step=i)
    w.close()
    print("closed", flush=True)
"""


def _free_host_pid() -> int:
    return next(p for p in range(200, 30_000) if not Path(f"/proc/{p}").exists())


def test_a_live_writer_in_another_pid_namespace_keeps_its_log(tmp_path):
    if shutil.which("unshare") is None:
        pytest.skip("unshare(1) is not installed")
    flags = ["--user", "--map-root-user", "--pid", "--fork"]
    probe = subprocess.run(["unshare", *flags, "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"unshare {' '.join(flags)} (a PID namespace) is not permitted here: {probe.stderr.strip()}")
    path = tmp_path / "t.parquet"
    target = _free_host_pid()  # the namespace writer's pid is one no host process has
    with subprocess.Popen(["unshare", *flags, sys.executable, "-c", textwrap.dedent(_NS_WRITER), str(path),
                           str(target)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, env=_env()) as proc:
        assert proc.stdout.readline().strip() == str(target), proc.stderr.read()
        assert not Path(f"/proc/{target}").exists() or target != proc.pid
        with TraceWriter(path) as host:  # recovery on the host must not take the live log
            host.retrieve("host")
        assert recover_trace(path) == 0
        proc.stdin.write("\n")
        proc.stdin.flush()
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert out.strip() == "closed"
    assert _items(path) == Counter([f"ns{i}" for i in range(2000)] + ["host"])


def test_a_poisoned_log_is_set_aside_and_the_directory_still_opens(tmp_path):
    from ctwm_cli.traces.durable_files import RecoveryWarning

    path = tmp_path / "t.parquet"
    path.mkdir()
    lines = [b'{"item":"good","step":1,"event":"retrieve"}', b'{"item":"big","step":9223372036854775808}',
             b'{"item":"s\\ud800","step":2}', b'{"item":"n","task":5}', b'{"item":"cut","st']
    (path / ".wal-part-1-999999-00000000-000000.parquet.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    with pytest.warns(RecoveryWarning, match="4 line"), TraceWriter(path) as w:  # an older ctwm's log
        w.retrieve("new")
    assert _items(path) == Counter(["good", "new"])
    (aside,) = path.glob("_rejected-*.jsonl")
    assert aside.read_bytes().splitlines() == lines[1:]
