"""A tiny progress protocol so the library can report progress without knowing about Rich."""

from __future__ import annotations

from collections.abc import Callable

#: ``progress(done, total)``; ``total`` may be ``None`` when unknown. Called from the main process.
ProgressCallback = Callable[[int, int | None], None]
