"""Figures. Each module draws one figure; matplotlib is imported only inside the functions that draw.

Every ``plot_*`` function takes its result object and ``ax=`` (a matplotlib Axes to draw into, or a
sequence of them for a multi-panel figure; ``None``: a new figure) and returns the ``Figure``. Writing
files is the caller's business (the CLI calls :func:`save_figure`).

This module must stay free of matplotlib imports: it holds the helpers every figure shares.
Figures are built with the object-oriented API (``matplotlib.figure.Figure``), never pyplot, so no
display or global backend state is involved; the file type follows the suffix (.png, .svg, .pdf).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..common.errors import UsageError
from ..runtime.files import atomic_write, check_output_file

PLOT_SUFFIXES = (".png", ".svg", ".pdf")
MAX_SERIES = 12


def check_plot_path(path: str | Path | None, option: str = "--plot") -> Path | None:
    """Validate a figure path before any work is done: known suffix, existing directory."""
    if path is None:
        return None
    if Path(path).suffix.lower() not in PLOT_SUFFIXES:
        raise UsageError(f"{option}: file must end in .png, .svg or .pdf, got {str(path)!r}", params=(option,))
    return check_output_file(path, param=option)  # a directory, a missing or unwritable place


def new_figure(width: float = 7.0, height: float = 4.5, ncols: int = 1) -> tuple[Any, Any]:
    """A matplotlib ``Figure`` and its axes (one, or an array of ``ncols``), without pyplot."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    axes = fig.subplots(1, ncols)
    return fig, axes


def figure_axes(ax: Any, width: float, height: float, ncols: int = 1) -> tuple[Any, Any]:
    """``(figure, axes)``: a new figure when ``ax`` is None, else ``ax``'s figure and ``ax`` itself (a
    sequence of exactly ``ncols`` axes when the figure has several panels)."""
    if ax is None:
        return new_figure(width, height, ncols)
    if ncols == 1:
        return ax.figure, ax
    axes = list(ax) if isinstance(ax, (list, tuple)) or hasattr(ax, "shape") else []
    if len(axes) != ncols:
        raise UsageError(f"ax must be a sequence of {ncols} axes for this figure", params=("ax",))
    return axes[0].figure, axes


def save_figure(fig: Any, path: str | Path) -> Path:
    """Write ``fig`` to ``path``; the suffix chooses PNG (150 dpi), SVG or PDF."""
    p = check_plot_path(path)
    assert p is not None
    with atomic_write(p) as tmp:  # the temporary name hides the suffix: name the format
        fig.savefig(tmp, format=p.suffix.lower()[1:], dpi=150, metadata=_metadata(p.suffix.lower()))
    return p


def _metadata(suffix: str) -> dict[str, Any] | None:
    # Deterministic files: no creation date in SVG/PDF metadata.
    if suffix == ".svg":
        return {"Date": None}
    if suffix == ".pdf":
        return {"CreationDate": None}
    return None


def series_label(source: str | None, group: str | None) -> str:
    """Short legend label: the file name, plus the group when grouped."""
    name = Path(source).name if source else "series"
    return f"{name}[{group}]" if group is not None else name
