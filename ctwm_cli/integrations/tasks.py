"""Tasks and outcomes on every row a wrapper writes, so the article's section-8 metrics (net new entries
per task, failure attribution, success against store volume) come from wrapper traces.

    memory = TracedMemory(Memory.from_config(config), "trace.jsonl")
    with memory.task("T-2291") as t:
        memory.search("what does alice drink?", filters={"user_id": "alice"})
        memory.add("alice drinks green tea", user_id="alice", infer=False)
        t.outcome("success")

Every row written inside the ``with`` carries ``task="T-2291"``; ``t.outcome(...)`` writes one
``task_outcome`` row per scope the task's rows touched (so each tenant's report of ``ctwm health
--group-by user`` sees the outcome), or one row with ``run`` when given. A wrapper built with
``task=`` tags every row outside a ``with`` by that task. The current task lives in a
:class:`contextvars.ContextVar`: threads and asyncio tasks each have their own.
"""

from __future__ import annotations

import contextvars
import datetime as _dt
import itertools
from collections.abc import Callable
from typing import Any

from ..common.errors import UsageError
from ..health.accumulators import FAILURE, SUCCESS
from ..traces.writer import TraceWriter

_ids = itertools.count()


def iso(t: float) -> str:
    """A time in seconds since the epoch as the ISO-8601 UTC text the wrappers write."""
    return _dt.datetime.fromtimestamp(t, _dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class TaskRun:
    """One task in progress (``with tracer.task(...) as t``): ``t.outcome("success")`` records its result."""

    def __init__(self, tagger: TaskTagger, name: str) -> None:
        if not isinstance(name, str) or not name:
            raise UsageError(f"task must be a non-empty string, got {name!r}", params=("task",))
        self.name = name
        self.scopes: dict[str | None, None] = {}
        self._tagger = tagger
        self._token: contextvars.Token | None = None

    def outcome(self, value: Any, *, run: str | None = None) -> None:
        """Write the task's outcome: success / failure (or pass/fail, ok/error, true/false, 1/0)."""
        text = str(value).strip().lower() if isinstance(value, (str, bool, int)) else None
        if text not in SUCCESS | FAILURE:
            raise UsageError(f"outcome must be success or failure (or pass/fail, ok/error, true/false, 1/0), got "
                             f"{value!r}", params=("outcome",))
        if self._tagger.closed:
            return
        runs = [run] if run is not None else (list(self.scopes) or [None])
        for r in runs:
            self._tagger.writer.event("task_outcome", self.name, run=r, task=self.name, outcome=text,
                                      ts=self._tagger.stamp())

    def __enter__(self) -> TaskRun:
        self._token = self._tagger._current.set(self)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._token is not None:
            self._tagger._current.reset(self._token)
            self._token = None


class TaskTagger:
    """What a wrapper uses to tag its rows: :meth:`emit` adds the current task (a ``with`` block's,
    else ``default``), remembers each scope the task's rows touched, and stamps ``ts`` from ``clock``
    (seconds since the epoch) when one is given, so that rows and expiries share one clock."""

    def __init__(self, writer: TraceWriter, default: str | None = None, clock: Callable[[], float] | None = None):
        if default is not None and (not isinstance(default, str) or not default):
            raise UsageError(f"task must be a non-empty string, got {default!r}", params=("task",))
        self.writer = writer
        self.default = default
        self.clock = clock
        self.closed = False  # the wrapper was closed: its calls pass through to the store untraced
        self._current: contextvars.ContextVar[TaskRun | None] = contextvars.ContextVar(
            f"ctwm_task_{next(_ids)}", default=None)

    def task(self, name: str) -> TaskRun:
        return TaskRun(self, name)

    def stamp(self) -> str | None:
        return None if self.clock is None else iso(self.clock())

    def emit(self, kind: str, item: Any, **fields: Any) -> None:
        if self.closed:
            return
        if fields.get("ts") is None:
            fields["ts"] = self.stamp()
        current = self._current.get()
        if current is not None:
            current.scopes.setdefault(fields.get("run"))
        name = current.name if current is not None else self.default
        self.writer.event(kind, item, task=name, **fields)
