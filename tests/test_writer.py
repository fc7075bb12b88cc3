"""TraceWriter: schema v1 rows that the readers count, thread safety, and a SIGKILL mid-write."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
from collections import Counter

import pyarrow.parquet as pq
import pytest

from ctwm_cli import UsageError
from ctwm_cli.api import read_trace
from ctwm_cli.traces import open_trace, scan_trace
from ctwm_cli.traces.writer import TraceWriter, recover_trace


@pytest.mark.parametrize("name", ["t.jsonl", "t.parquet"])
def test_every_event_kind_reads_back_as_schema_v1(tmp_path, name):
    path = tmp_path / name
    with TraceWriter(path, run="ep-1") as w:
        w.write("a")
        w.retrieve("a", rank=1, score=0.9, tokens=12)
        w.retrieve("b", rank=2, score=0.5)
        w.advance()
        w.inject("a")
        w.update("b", run="ep-2")
        w.supersede("b", by="c")
        w.archive("a", step=10)
    scan = scan_trace(open_trace(path))
    assert scan.events == {"archive": 1, "inject": 1, "retrieve": 2, "supersede": 1, "update": 1, "write": 1}
    assert (scan.step_min, scan.step_max, scan.runs) == (0, 10, 2)
    counts = read_trace(path)[0]
    assert dict(zip(counts.items.to_pylist(), counts.counts.tolist(), strict=True)) == {"a": 1, "b": 1}


def test_jsonl_lines_carry_only_given_fields(tmp_path):
    path = tmp_path / "t.jsonl"
    with TraceWriter(path, timestamps=False, step=3) as w:
        w.retrieve(17, rank=1, score=1)
        w.supersede("x", by=5)
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert lines == [{"item": "17", "step": 3, "event": "retrieve", "rank": 1, "score": 1.0},
                     {"item": "x", "step": 3, "event": "supersede", "by": "5"}]


def test_parquet_flushes_segments_on_size_and_appends(tmp_path):
    path = tmp_path / "t.parquet"
    with TraceWriter(path, flush_rows=4) as w:
        for i in range(10):
            w.retrieve(f"m{i % 3}", step=i)
        assert len(list(path.glob("*.parquet"))) == 2  # 8 events in two closed segments, 2 pending
    with TraceWriter(path) as w:  # a second writer appends
        w.retrieve("m0", step=10)
    files = sorted(path.glob("*.parquet"))
    assert len(files) == 4
    assert sum(pq.read_metadata(f).num_rows for f in files) == 11
    assert read_trace(path)[0].n_events == 11


def test_parquet_flushes_pending_events_on_time_without_new_events(tmp_path):
    path = tmp_path / "t.parquet"
    with TraceWriter(path, flush_rows=1000, flush_seconds=0.05) as w:
        w.retrieve("a")
        done = threading.Event()
        for _ in range(200):  # the background flusher writes the segment; poll for it (up to ~10 s)
            if list(path.glob("*.parquet")):
                done.set()
                break
            done.wait(0.05)
        assert done.is_set()
        assert read_trace(path)[0].n_events == 1  # readable while the writer is still open


def test_two_open_writers_on_one_directory_keep_their_own_events(tmp_path):
    path = tmp_path / "t.parquet"
    with TraceWriter(path) as first:
        first.retrieve("a")  # pending in first's write-ahead log
        with TraceWriter(path) as second:  # must not take over first's log
            second.retrieve("b")
        first.retrieve("c")
    assert read_trace(path)[0].n_events == 3
    assert len(list(path.glob("*.parquet"))) == 2 and not list(path.glob(".*"))


def test_threads_share_one_writer(tmp_path):
    path = tmp_path / "t.parquet"
    with TraceWriter(path, flush_rows=97) as w:
        def work(k):
            for i in range(500):
                w.retrieve(f"t{k}-{i % 7}", step=i)

        threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    counts = read_trace(path)[0]
    assert counts.n_events == 2000
    assert Counter(dict(zip(counts.items.to_pylist(), counts.counts.tolist(), strict=True)))["t3-0"] == 72


@pytest.mark.parametrize(
    ("call", "text"),
    [
        (lambda w: w.retrieve("a", rank=0), "rank must be >= 1"),
        (lambda w: w.retrieve("a", score=float("nan")), "score must be a finite number"),
        (lambda w: w.retrieve("", step=1), "item must be a non-empty id"),
        (lambda w: w.retrieve("a", step=1.5), "step must be an integer"),
        (lambda w: w.event("peek", "a"), "event kind must be one of"),
    ],
)
def test_bad_events_name_the_parameter(tmp_path, call, text):
    with TraceWriter(tmp_path / "t.jsonl") as w, pytest.raises(UsageError, match=text):
        call(w)
    assert (tmp_path / "t.jsonl").read_text() == ""


def test_closed_writer_refuses_events(tmp_path):
    w = TraceWriter(tmp_path / "t.jsonl")
    w.close()
    with pytest.raises(UsageError, match="closed"):
        w.retrieve("a")


_CHILD = textwrap.dedent("""
    import sys
    from ctwm_cli.traces.writer import TraceWriter
    w = TraceWriter(sys.argv[1], flush_rows=50, flush_seconds=3600)
    i = 0
    while True:
        w.retrieve(f"m{i % 11}", step=i, rank=1 + i % 5, score=i / 7)
        print(i, flush=True)  # event i completed
        i += 1
""")


@pytest.mark.parametrize("name", ["killed.jsonl", "killed.parquet"])
def test_sigkill_mid_write_leaves_every_completed_event(tmp_path, name):
    path = tmp_path / name
    with subprocess.Popen([sys.executable, "-c", _CHILD, str(path)], stdout=subprocess.PIPE, text=True) as proc:
        last = -1
        for line in proc.stdout:
            last = int(line)
            if last >= 1234:
                break
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    if name.endswith(".parquet"):
        closed = _steps(path)  # closed segments read back at once, whole segments only
        assert len(closed) % 50 == 0 and len(closed) >= last + 1 - 50
        assert closed == list(range(len(closed)))
        assert recover_trace(path) >= last + 1 - len(closed)  # the write-ahead log holds the rest
        assert not list(path.glob(".*"))
    steps = _steps(path)
    assert len(steps) >= last + 1  # every event reported complete is there...
    assert steps == list(range(len(steps)))  # ...once, in order, with no gap and no torn line


def _steps(path) -> list[int]:
    return sorted(s for batch in open_trace(path).batches() for s in batch.column("step").to_pylist())
