"""``ctwm diff``."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Placeholder until the command lands."""
