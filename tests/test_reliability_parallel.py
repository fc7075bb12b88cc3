"""ctwm_cli.runtime.parallel: results in task order whatever the jobs, and signals that end every worker.

The signal tests run a real Python process with a real pool, send it SIGINT / SIGTERM once every
worker is busy, and check the exit code and that no worker process is left.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from ctwm_cli.common.errors import UsageError
from ctwm_cli.runtime.parallel import BACKENDS, run_tasks


def _square_pid(x: int) -> tuple[int, int]:
    return x * x, os.getpid()


def _fail_on_three(x: int) -> int:
    if x == 3:
        raise ValueError("task 3 failed")
    return x


def test_results_in_task_order_whatever_the_jobs():
    seen = []
    sizes = [1, 2, 1, 2, 1, 2, 1]
    one = run_tasks(_square_pid, range(7), jobs=1, sizes=sizes, progress=lambda d, t: seen.append((d, t)))
    two = run_tasks(_square_pid, range(7), jobs=2)
    assert [r for r, _ in one] == [r for r, _ in two] == [x * x for x in range(7)]
    assert {p for _, p in one} == {os.getpid()}  # jobs=1 runs in the calling process
    assert os.getpid() not in {p for _, p in two}  # jobs=2 runs in workers
    assert [d for d, _ in seen] == [1, 3, 4, 6, 7, 9, 10] and {t for _, t in seen} == {10}
    assert multiprocessing.active_children() == []


def test_failing_task_propagates_and_leaves_no_worker():
    before = set(multiprocessing.active_children())  # another test's stragglers are not this call's
    with pytest.raises(ValueError, match="task 3 failed"):
        run_tasks(_fail_on_three, range(6), jobs=2)
    assert set(multiprocessing.active_children()) - before == set()


def test_bad_arguments_name_the_parameter():
    with pytest.raises(UsageError, match="jobs must be >= 1, got 0"):
        run_tasks(_square_pid, [1], jobs=0)
    with pytest.raises(UsageError, match="unknown backend 'nope'"):
        run_tasks(_square_pid, [1], backend="nope")
    with pytest.raises(UsageError, match="sizes has 1 entries for 2 tasks"):
        run_tasks(_square_pid, [1, 2], sizes=[1])
    assert "processes" in BACKENDS


SCRIPT = textwrap.dedent("""
    import os, sys, time
    from pathlib import Path
    from ctwm_cli.runtime.interrupts import Interrupted
    from ctwm_cli.runtime.parallel import run_tasks

    DIR = Path(sys.argv[1])

    def busy(i):
        (DIR / f"worker-{os.getpid()}").write_text("")
        time.sleep(600)

    try:
        run_tasks(busy, range(8), jobs=2)
    except Interrupted as exc:
        (DIR / "caught").write_text(str(exc.signum))
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        sys.exit(130)
""")


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_signal_stops_the_pool_and_ends_every_worker(tmp_path, sig, code):
    script = tmp_path / "pool.py"
    script.write_text(SCRIPT)
    with subprocess.Popen([sys.executable, str(script), str(tmp_path)], stderr=subprocess.PIPE) as proc:
        deadline = time.monotonic() + 60
        while len(list(tmp_path.glob("worker-*"))) < 2:
            assert proc.poll() is None, proc.stderr.read().decode()
            assert time.monotonic() < deadline, "workers never started"
            time.sleep(0.05)
        workers = [int(p.name.split("-")[1]) for p in tmp_path.glob("worker-*")]
        assert all(_alive(w) for w in workers)
        proc.send_signal(sig)
        try:
            err = proc.communicate(timeout=30)[1].decode()
        finally:
            proc.kill()
    assert proc.returncode == code, err
    assert (tmp_path / "caught").read_text() == str(int(sig))
    assert not any(_alive(w) for w in workers)
    assert "Traceback" not in err  # workers ignore SIGINT, die quietly on SIGTERM
