"""One ``ctwm check`` entry as a child process under OS-enforced bounds, and what its end means.

Each entry runs as ``python -m ctwm_cli COMMAND ... --format json`` in its own session (so a signal
reaches its pool workers too) with

* ``RLIMIT_AS`` set to :attr:`Bounds.memory` before ``exec``: an allocation past it fails inside the
  entry (DuckDB: "Out of Memory Error", Python: ``MemoryError``) instead of growing until the kernel's
  OOM killer ends the job — DuckDB's own ``memory_limit`` does not bound its string functions
  (``repeat(item, 10^8)`` was OOM-killed at 9 GB under ``memory_limit = "1GB"``);
* a wall-clock bound, :attr:`Bounds.seconds`: past it the entry's process group gets SIGTERM, then
  SIGKILL;
* a config's confinement (:mod:`ctwm_cli.runtime.confine`) in its environment.

An entry *ran* when it exited 0 or 1 with a JSON document; anything else — exit 2/3/4, a signal, a
timeout, no JSON — is an error, and an error fails ``ctwm check`` (see :func:`check_exit_code`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import resource
import signal
import subprocess
import sys
import time
from typing import Any

from ..common.errors import EXIT_CHECK_FAILED, EXIT_INPUT, EXIT_UNEXPECTED, UsageError

#: The exit code ``ctwm check`` gives for an entry stopped by a signal, its memory or its time bound:
#: an input/data error (the entry's data or predicate could not be processed within the bounds).
EXIT_STOPPED = EXIT_INPUT
#: Default time bound of one entry, seconds.
DEFAULT_SECONDS = 1800.0
#: The least address space a ctwm process needs to start (Python, numpy, DuckDB and numba mapped:
#: an audit's VmPeak is 2.7 GB on x86-64; it fails to load llvmlite under ``ulimit -v 1500000``).
MIN_MEMORY = 2 << 30


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Bounds:
    """What one entry may use: ``memory`` bytes of address space (None: unbounded) and ``seconds``."""

    memory: int | None
    seconds: float


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class EntryEnd:
    """How one entry ended: its exit code (negative: the signal), its JSON document if it ran, the last
    line of its stderr, the wall time, and whether the time bound stopped it."""

    code: int
    doc: dict[str, Any] | None
    last: str
    seconds: float
    timed_out: bool = False

    @property
    def ran(self) -> bool:
        return self.doc is not None and self.code in (0, EXIT_CHECK_FAILED)

    @property
    def status(self) -> str:
        """``pass``, ``fail``, or ``error (exit N)`` / ``error (signal NAME)`` / ``error (timeout)``."""
        if self.ran:
            return "pass" if self.code == 0 else "fail"
        if self.timed_out:
            return "error (timeout)"
        if self.code < 0:
            return f"error (signal {_signame(-self.code)})"
        return f"error (exit {self.code})"

    @property
    def error(self) -> str | None:
        """Why the entry could not run, in a sentence; None when it ran."""
        if self.ran:
            return None
        if self.timed_out:
            return f"stopped after {self.seconds:.0f} s, its time bound (--entry-timeout)"
        if self.code == -signal.SIGKILL:
            return "killed by SIGKILL (its memory bound --entry-memory, or the kernel's out-of-memory killer)"
        if self.code < 0:
            return f"ended by {_signame(-self.code)}"
        if self.code in (0, EXIT_CHECK_FAILED):
            return f"printed no JSON result ({self.last})" if self.last else "printed no JSON result"
        return self.last or f"exit {self.code}"

    @property
    def exit_code(self) -> int:
        """The code this end gives ``ctwm check``: 0/1 when it ran; 2, 3 or 4 as the entry exited; 3 when
        stopped (a signal, a timeout); 4 for an entry that printed no result."""
        if self.ran:
            return self.code
        if self.timed_out or self.code < 0:
            return EXIT_STOPPED
        if self.code in (0, EXIT_CHECK_FAILED) or self.code > EXIT_UNEXPECTED:
            return EXIT_UNEXPECTED
        return self.code


def _signame(num: int) -> str:
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"


#: The most address space an entry gets by default. Filling it takes seconds, not minutes: the OOM
#: predicate of issue 40 under the memory available on a 23 GB machine (20 GB) was stopped after 89 s,
#: under 4 GiB after a few seconds. A larger trace needs ``--entry-memory``.
DEFAULT_MEMORY = 4 << 30


def default_memory() -> int:
    """The memory ``ctwm check`` gives one entry unless told: :data:`DEFAULT_MEMORY`, or less when less is
    available (``MemAvailable``, the cgroup's limit, its own ``RLIMIT_AS``:
    :func:`ctwm_cli.common.limits.available_memory`), never below :data:`MIN_MEMORY`. Address space bounds
    resident memory, so an entry never takes more than was free."""
    from ..common.limits import available_memory

    avail = available_memory()
    return max(MIN_MEMORY, min(DEFAULT_MEMORY, DEFAULT_MEMORY if avail is None else int(avail)))


def _limit_memory(memory: int | None):
    """A ``preexec_fn`` that sets ``RLIMIT_AS`` in the child before it execs (no window without the bound)."""
    if memory is None:
        return None

    def apply() -> None:
        hard = resource.getrlimit(resource.RLIMIT_AS)[1]
        soft = memory if hard in (resource.RLIM_INFINITY, -1) else min(memory, hard)
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))

    return apply


def run_entry(argv: list[str], cwd: str, bounds: Bounds, env: dict[str, str]) -> EntryEnd:
    """Run ``ctwm ARGV`` under ``bounds`` with ``env`` added to this process's environment."""
    started = time.perf_counter()
    try:
        proc = subprocess.Popen([sys.executable, "-m", "ctwm_cli", *argv], cwd=cwd, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace",
                                start_new_session=True, env={**os.environ, **env},
                                preexec_fn=_limit_memory(bounds.memory))
    except OSError as exc:  # E2BIG: a config with more traces than one command line holds
        return EntryEnd(code=EXIT_INPUT, doc=None, last=f"cannot start the entry ({exc.strerror})", seconds=0.0)
    timed_out = False
    try:
        out, err_text = proc.communicate(timeout=bounds.seconds)
    except subprocess.TimeoutExpired:
        timed_out = True
        stop_group(proc, signal.SIGTERM)
        out, err_text = proc.communicate()
    except BaseException as exc:  # SIGINT / SIGTERM (Interrupted): the entry and its workers end first
        stop_group(proc, getattr(exc, "signum", signal.SIGINT))
        raise
    seconds = time.perf_counter() - started
    err = err_text.strip().splitlines()
    last = (err[-1] if err else "").removeprefix("ctwm: error: ")
    doc = None
    if proc.returncode in (0, EXIT_CHECK_FAILED) and not timed_out:
        with contextlib.suppress(json.JSONDecodeError):
            parsed = json.loads(out)
            doc = parsed if isinstance(parsed, dict) else None
    return EntryEnd(code=proc.returncode, doc=doc, last=last, seconds=seconds, timed_out=timed_out)


def stop_group(proc: subprocess.Popen, signum: int, grace: float = 10.0) -> None:
    """Pass the signal to the entry's process group (the entry and its pool workers), wait until every
    one of them is gone, and SIGKILL what is left after ``grace`` seconds."""
    pgid = proc.pid  # start_new_session: the entry leads its own group
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)
    deadline = time.monotonic() + grace
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=grace)
    while True:
        try:
            os.killpg(pgid, 0)  # anyone left in the group?
        except (ProcessLookupError, PermissionError):
            break
        if time.monotonic() > deadline:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, signal.SIGKILL)
            deadline = time.monotonic() + grace
        time.sleep(0.05)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=1.0)


_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12, "kib": 2**10, "mib": 2**20,
          "gib": 2**30, "tib": 2**40}


def parse_size(text: str, param: str) -> int:
    """``"4GB"``, ``"512MiB"``, ``"2e9"`` -> bytes; a usage error naming ``param`` otherwise."""
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]*)?(?:[eE][0-9]+)?)\s*([A-Za-z]*)\s*", text)
    unit = m.group(2).lower() if m else ""
    if not m or unit not in _UNITS:
        raise UsageError(f"{param} must be a size such as 4GB or 512MiB, got {text!r}", params=(param,))
    size = int(float(m.group(1)) * _UNITS[unit])
    if size < MIN_MEMORY:
        raise UsageError(f"{param} must be at least 2GiB (a ctwm process needs that much address space to start), "
                         f"got {text!r}", params=(param,))
    return size
