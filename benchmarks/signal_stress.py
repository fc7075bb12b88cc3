"""SIGTERM at random moments to a 2-job pool of many short tasks: how often the process fails to exit.

A signal handler that raises inside ``concurrent.futures``' ``submit()`` or ``wait()`` can leave a lock of
theirs held; the pool's manager thread then blocks on it and the interpreter's exit waits for that thread
forever. This counts such hangs (no exit within ``--timeout`` seconds) over ``--trials`` runs, each sent
SIGTERM after a uniform random delay, and dumps the stacks of a hung run (faulthandler) before killing it.

    python benchmarks/signal_stress.py --trials 100 --seed 3

Measured (2 cores): 4 of 100 hung before ``runtime.interrupts.signals_deferred``, 0 of 100 after (seed 3).
Exit codes other than 143 are printed: -15 is a signal that came before the run installed its handlers.
"""

from __future__ import annotations

import argparse
import collections
import os
import random
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

POOL = textwrap.dedent('''
    import faulthandler, signal, sys, time
    faulthandler.register(signal.SIGUSR1, file=open(sys.argv[1], "w"), all_threads=True)
    from ctwm_cli.runtime.interrupts import Interrupted
    from ctwm_cli.runtime.parallel import run_tasks

    def short(i):
        t = time.monotonic()
        while time.monotonic() - t < 0.002:
            pass
        return i

    print("ready", flush=True)
    try:
        run_tasks(short, range(100_000), jobs=2, progress=lambda d, t: None)
    except Interrupted as exc:
        sys.exit(exc.exit_code)
''')


def trial(script: Path, dump: Path, delay: float, timeout: float) -> int | None:
    """The run's exit code, or None if it hung (its stacks are printed, then its group killed)."""
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    proc = subprocess.Popen([sys.executable, str(script), str(dump)], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, start_new_session=True, env=env)
    proc.stdout.readline()
    proc.stdout.close()
    time.sleep(delay)
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGUSR1)
        time.sleep(1)
        print(dump.read_text())
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=100)
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--max-delay", type=float, default=0.6, help="seconds; the delay is uniform on [0, this]")
    ap.add_argument("--timeout", type=float, default=20.0, help="seconds without exit that count as a hang")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    print(f"seed {args.seed}, {args.trials} trials")
    codes: collections.Counter = collections.Counter()
    with tempfile.TemporaryDirectory() as tmp:
        script, dump = Path(tmp) / "pool.py", Path(tmp) / "stacks.txt"
        script.write_text(POOL)
        for k in range(args.trials):
            code = trial(script, dump, rng.uniform(0.0, args.max_delay), args.timeout)
            codes["hang" if code is None else code] += 1
            if code != 143:
                print(f"trial {k}: {'HANG' if code is None else f'exit {code}'}")
    print(f"exit codes {dict(codes)}; hangs {codes['hang']} of {args.trials}")


if __name__ == "__main__":
    main()
