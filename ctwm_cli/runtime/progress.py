"""A tiny progress protocol so the library can report progress without knowing about Rich; and progress as
plain lines, for a log that no bar can draw in (CI, ``2> file``)."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

#: ``progress(done, total)``; ``total`` may be ``None`` when unknown. Called from the main process.
ProgressCallback = Callable[[int, int | None], None]



def group_counter(progress: ProgressCallback | None, groups: Sequence[int]) -> Callable[[int, Any], None] | None:
    """An ``on_result(i, result)`` for :func:`~ctwm_cli.runtime.parallel.run_tasks` when task i is work of group
    ``groups[i]`` (``audit --group-by``: every group's replicate chunks in one pool): each time a group's last task
    ends it tells ``progress`` how many groups have finished, through the callback's ``groups(finished, total)``
    attribute (a callback without one shows replicates only). None when there is nothing to tell."""
    tell = getattr(progress, "groups", None)
    left = Counter(groups)
    if tell is None or len(left) < 2:
        return None
    state = {"finished": 0}
    tell(0, len(left))

    def on_result(i: int, _result: Any) -> None:
        left[groups[i]] -= 1
        if left[groups[i]] == 0:
            state["finished"] += 1
            tell(state["finished"], len(left))

    return on_result


#: work shorter than this (seconds, from the start of the run) prints no line at all
QUIET_FOR = 10.0
#: a stage that goes on prints a line this often (seconds)
EVERY = 30.0


class LineProgress:
    """Progress lines for a log: nothing while the run is younger than ``after`` seconds; then a stage's
    first report prints a line (``ctwm: bootstrap replicates 420/1,000, 31 s``: the stage, done/total, its
    seconds so far), a line every ``every`` seconds after that, and a last one when a stage that printed
    ends, unless its last line said where it ended (``... done``). ``clock`` gives seconds
    (``time.monotonic``; a test passes its own); the run starts when the object is made. ``write`` takes
    one line without its newline."""

    def __init__(self, write: Callable[[str], None], *, clock: Callable[[], float] = time.monotonic,
                 after: float = QUIET_FOR, every: float = EVERY) -> None:
        self.write, self.clock, self.after, self.every = write, clock, after, every
        self.started = clock()

    def stage(self, description: str, total: int | None = None) -> Stage:
        return Stage(self, description, total)


class Stage:
    """One stage of a :class:`LineProgress`: the stage (or ``update``) is its :data:`ProgressCallback`, with a
    ``groups`` attribute (:func:`group_counter`); ``close`` ends it."""

    def __init__(self, run: LineProgress, description: str, total: int | None) -> None:
        self.run, self.description, self.total = run, description, total
        self.opened = run.clock()
        self.done: int | None = None
        self.printed: tuple[int, int | None] | None = None  # (done, total) of the last line, None: none yet
        self.last = 0.0
        self.group_count: tuple[int, int] | None = None  # (finished, total) groups, when the work has groups

    def __call__(self, done: int, total: int | None = None) -> None:
        self.update(done, total)

    def groups(self, finished: int, total: int) -> None:
        """How many groups of the work have finished (:func:`group_counter`); shown on the next line."""
        self.group_count = (finished, total)

    def line(self, now: float, suffix: str = "") -> str:
        count = f"{self.done or 0:,}" + (f"/{self.total:,}" if self.total is not None else "")
        if self.group_count is not None:
            count += f", groups {self.group_count[0]:,}/{self.group_count[1]:,}"
        return f"ctwm: {self.description} {count}{suffix}, {now - self.opened:.0f} s"

    def update(self, done: int, total: int | None = None) -> None:
        self.done = done
        if total is not None:
            self.total = total
        now = self.run.clock()
        if now - self.run.started < self.run.after:
            return
        if self.printed is None or now - self.last >= self.run.every:
            self.run.write(self.line(now))
            self.printed, self.last = (done, self.total), now

    def close(self) -> None:
        """A last line when the stage printed any and moved on since (a finished stage says it finished)."""
        if self.printed is not None and self.printed != (self.done, self.total):
            self.run.write(self.line(self.run.clock(), " done"))
