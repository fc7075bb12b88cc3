"""The periods of the over-time views on a trace without timestamps: up to :data:`WINDOWS` equal windows of steps,
each labelled by the steps it holds (``step 4`` or ``steps 0–2``). Shared by :mod:`.views` and
:mod:`.deadweight_time`, so the concentration and the dead weight of one trace are cut at the same steps."""

from __future__ import annotations

import numpy as np

#: windows of steps of the over-time views when the trace has no timestamps
WINDOWS = 10


def window_label(lo: float, hi: float) -> str:
    """The steps of the window ``[lo, hi)`` in words."""
    a, b = int(np.ceil(lo)), int(np.ceil(hi)) - 1
    return f"step {a}" if a == b else f"steps {a}–{b}"


def step_windows(steps: np.ndarray) -> np.ndarray:
    """The edges of up to :data:`WINDOWS` equal windows from the first step to one past the last."""
    lo, hi = int(steps.min()), int(steps.max())
    return np.linspace(lo, hi + 1, min(WINDOWS, hi - lo + 1) + 1)
