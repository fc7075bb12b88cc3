"""SIGINT and SIGTERM as exceptions, so long runs stop cleanly: workers ended, completed files kept.

Python turns SIGINT into :class:`KeyboardInterrupt`, but SIGTERM's default action kills the process
at once: pool workers would be orphaned and half-written files left behind. :func:`signals_raise`
makes both raise :class:`Interrupted` (a ``KeyboardInterrupt``, so ``except Exception`` never
swallows it); ``finally`` blocks then run, and the CLI exits ``128 + signum`` (130 / 143).
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Callable, Iterator

HANDLED = (signal.SIGINT, signal.SIGTERM)


class Interrupted(KeyboardInterrupt):
    """The run was stopped by a signal; ``exit_code`` is the shell convention ``128 + signum``."""

    def __init__(self, signum: int = signal.SIGINT) -> None:
        super().__init__(f"interrupted by {signal.Signals(signum).name}")
        self.signum = int(signum)

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


def exit_code(exc: BaseException) -> int:
    """128 + the signal number for :class:`Interrupted`; 130 for a plain ``KeyboardInterrupt``."""
    return exc.exit_code if isinstance(exc, Interrupted) else 128 + signal.SIGINT


def interrupt_cause(exc: BaseException) -> KeyboardInterrupt | None:
    """The ``KeyboardInterrupt`` behind ``exc`` (Typer turns one into ``SystemExit(130)``), if any."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        if isinstance(cur, KeyboardInterrupt):
            return cur
        seen.add(id(cur))
        cur = cur.__cause__ or cur.__context__
    return None


#: the interrupts :func:`_raise` raised, newest last (:func:`last_interrupt`): a front end that hands the
#: run to a framework which turns every ``KeyboardInterrupt`` into one exit code (Typer: 130) reads the signal
RAISED: list[Interrupted] = []


_OWNER = {"pid": os.getpid()}  # the process whose signals_raise installed _raise


def _raise(signum: int, frame) -> None:
    if os.getpid() != _OWNER["pid"]:
        # a forked child that received the signal before _after_fork_in_child reset the handler (the
        # parent's terminate() can reach a worker that early): the default action, without a traceback
        if signum == signal.SIGTERM:
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
        raise KeyboardInterrupt
    exc = Interrupted(signum)
    RAISED.append(exc)
    raise exc


#: signals :func:`signals_deferred` recorded and has not raised yet, oldest first
_DEFERRED: list[int] = []


def _record(signum: int, frame) -> None:
    if os.getpid() != _OWNER["pid"]:
        _raise(signum, frame)  # a forked child: as above
    _DEFERRED.append(signum)


def _raise_deferred() -> None:
    if _DEFERRED:
        exc = Interrupted(_DEFERRED[0])
        _DEFERRED.clear()
        RAISED.append(exc)
        raise exc


def last_interrupt() -> Interrupted | None:
    """The newest interrupt a signal raised inside :func:`signals_raise` in this process, if any."""
    return RAISED[-1] if RAISED else None


@contextlib.contextmanager
def signals_raise() -> Iterator[None]:
    """Inside, SIGINT and SIGTERM raise :class:`Interrupted`; the previous handlers come back after.

    Outside the main thread (where Python cannot install handlers) it does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _OWNER["pid"] = os.getpid()
    previous = {s: signal.signal(s, _raise) for s in HANDLED}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


@contextlib.contextmanager
def signals_deferred() -> Iterator[Callable[[], None]]:
    """Inside, SIGINT and SIGTERM are only recorded; the ``check()`` it yields raises :class:`Interrupted`
    for them at a point the caller chooses, and leaving the block raises any not yet raised.

    For code that runs a library's locking internals in the calling thread: an exception raised by a
    signal handler inside ``concurrent.futures``' ``submit()`` or ``wait()`` can leave a queue's or a
    future's lock held, and the pool's manager thread then blocks on it, so the process never exits
    (measured: 4 of 100 SIGTERMs to a 2-job pool hung before this, ``benchmarks/signal_stress.py``).
    Outside the main thread it does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield lambda: None
        return
    _OWNER["pid"] = os.getpid()
    _DEFERRED.clear()
    previous = {s: signal.signal(s, _record) for s in HANDLED}
    try:
        yield _raise_deferred
    except Interrupted:
        raise
    except BaseException as exc:
        if _DEFERRED:  # a signal came while the block failed: the signal is the run's end (exit 128 + signum)
            _restore(previous)
            try:
                _raise_deferred()
            except Interrupted as interrupted:
                raise interrupted from exc
        raise
    finally:
        _restore(previous)
    _raise_deferred()


def _restore(previous: dict) -> None:
    for s, handler in previous.items():
        signal.signal(s, handler)


def _after_fork_in_child() -> None:
    """A forked child must not inherit :func:`_raise`: a SIGTERM meant to end it would raise inside
    whatever it is starting (a pool worker's initializer) instead of ending it."""
    for s in HANDLED:
        if signal.getsignal(s) in (_raise, _record):
            signal.signal(s, signal.SIG_DFL if s == signal.SIGTERM else signal.default_int_handler)


os.register_at_fork(after_in_child=_after_fork_in_child)


def worker_signals() -> None:
    """In a pool worker: ignore SIGINT (a terminal's Ctrl-C reaches the whole process group; the
    parent decides) and let SIGTERM kill (the parent's ``terminate()``)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
