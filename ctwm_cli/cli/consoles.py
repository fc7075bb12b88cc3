"""The Rich consoles of the CLI's output: results on stdout (:mod:`.output`), messages and progress on stderr."""

from __future__ import annotations

import sys

from rich.console import Console

from ..common.inert import visible


class InertConsole(Console):
    """A Rich console that never writes a control character it was given as text.

    Text reaching a table or a message may quote a trace (item ids, group labels, check names); an
    ESC in it would start an ANSI/OSC sequence in the terminal or the CI log. Rich's own styling and
    cursor control are separate segments and pass; every text segment is made :func:`visible`."""

    def _render_buffer(self, buffer) -> str:
        from rich.segment import Segment

        return super()._render_buffer(
            seg if seg.control or not seg.text else Segment(_visible_lines(seg.text), seg.style, seg.control)
            for seg in buffer
        )


def _visible_lines(text: str) -> str:
    """Rich's layout newlines stay; everything else unsafe in a segment is made visible."""
    return "\n".join(visible(line) for line in text.split("\n"))


def stderr_console() -> Console:
    return InertConsole(file=sys.stderr, soft_wrap=True, markup=False, highlight=False)
