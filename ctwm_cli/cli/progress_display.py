"""Progress on stderr: a live Rich display on a terminal, plain lines in a log, nothing with ``--quiet``.

On a terminal, one live display serves the whole run: progress bars opened while another is active (a
bootstrap and a calibration, a reader and an audit) become extra lines of the same display, each with its
own ETA, instead of fighting for one line. When stderr is not a terminal (CI, ``2> log``) no bar can be
drawn, and a long audit used to print only ``seed: N`` for minutes: work that has run for 10 s prints a line
per stage and then one every 30 s (:class:`ctwm_cli.runtime.progress.LineProgress`); shorter work prints nothing.
``--quiet`` (every command's output options) turns both off. :func:`begin` starts a command's run: the
output options call it as the command starts, so the 10 s are the command's own.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

from ..common.inert import visible
from ..runtime.progress import LineProgress, ProgressCallback
from .consoles import stderr_console

#: the clock of the log lines (a test sets its own, to make a short audit look long)
CLOCK: Callable[[], float] = time.monotonic

LIVE: dict[str, Any] = {"progress": None, "users": 0}
#: this command's settings: quiet, and the log lines' run (made by :func:`begin`)
RUN: dict[str, Any] = {"quiet": False, "lines": None}


def _write(line: str) -> None:
    sys.stderr.write(visible(line) + "\n")  # a stage may name a trace: no control character reaches the log
    sys.stderr.flush()


def begin(*, quiet: bool = False) -> None:
    """A command starts: ``quiet`` or not, and the log lines count their 10 s from now."""
    RUN["quiet"] = quiet
    RUN["lines"] = LineProgress(_write, clock=CLOCK)


def quiet() -> bool:
    return bool(RUN["quiet"])


def note(text: str) -> None:
    """A progress note on stderr (``ctwm report``'s stages), unless ``--quiet``."""
    if not quiet():
        stderr_console().print(visible(text))


def _live_progress() -> Any:
    from rich.progress import (  # Rich's progress machinery loads only when a bar is drawn
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    if LIVE["progress"] is None:
        bar = Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
            TextColumn("ETA"), TimeRemainingColumn(), console=stderr_console(), transient=True,
        )
        bar.start()
        LIVE["progress"] = bar
    return LIVE["progress"]


@contextlib.contextmanager
def progress_bar(description: str, total: int | None = None) -> Iterator[ProgressCallback]:
    """A progress callback: a line of the shared display once work has run for a second on a terminal, log
    lines when stderr is not one (see the module docstring), nothing with ``--quiet``."""
    if quiet():
        yield lambda done, total=None: None
        return
    if not sys.stderr.isatty():
        if RUN["lines"] is None:  # the library driven without a command (a test, a notebook): the run starts now
            begin()
        stage = RUN["lines"].stage(description, total)
        yield stage
        stage.close()  # only when the work finished: a stage that raised is not "done"
        return
    with _bar(description, total) as update:
        yield update


@contextlib.contextmanager
def _bar(description: str, total: int | None) -> Iterator[ProgressCallback]:
    started = time.monotonic()
    state: dict[str, Any] = {"task": None}
    LIVE["users"] += 1

    def update(done: int, tot: int | None = total) -> None:
        if state["task"] is None:
            if time.monotonic() - started < 1.0:
                return
            state["task"] = _live_progress().add_task(description, total=tot)
        LIVE["progress"].update(state["task"], completed=done, total=tot, description=state.get("label", description))

    def groups(finished: int, tot: int) -> None:  # audit --group-by: groups finished (runtime.progress.group_counter)
        state["label"] = f"{description} (groups {finished:,}/{tot:,})"

    update.groups = groups  # type: ignore[attr-defined]
    try:
        yield update
    finally:
        LIVE["users"] -= 1
        bar = LIVE["progress"]
        if bar is not None and state["task"] is not None:
            bar.remove_task(state["task"])
        if bar is not None and LIVE["users"] == 0:
            bar.stop()
            LIVE["progress"] = None
