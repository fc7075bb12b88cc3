"""A matplotlib figure as inline SVG for the report page: deterministic, self-contained, accessible.

* Deterministic: ``svg.hashsalt`` fixed and no date in the metadata, so the same figure gives the same bytes
  (matplotlib's ids are hashes of the salt and the content; its default salt is a random UUID).
* Self-contained: glyphs as paths (``svg.fonttype = 'path'``, no font is looked up by the browser); the XML
  prolog and DOCTYPE (which names an external DTD) are dropped, as are comments (matplotlib copies every text
  into one, escaped) and the metadata block.
* One page holds many figures: every ``id`` and every ``#ref`` is prefixed with the figure's key, so no two
  figures share an id (the HTML standard requires unique ids; a clip path found in the wrong figure would clip
  the wrong drawing). matplotlib's ``<style>`` element is dropped too: inline, its ``*`` rule would restyle the
  whole page; :data:`FIGURE_CSS` is the same rule scoped to the figures.
* Accessible: ``role="img"``, ``aria-label`` and a ``<title>`` carrying the figure's finding (escaped).
* Colours: the Okabe–Ito palette (distinguishable under the common colour-vision deficiencies) as the colour
  cycle, so the shared figures' ``C0``, ``C1`` ... resolve to it; the figures also differ by line style and
  marker, which survives greyscale printing.
"""

from __future__ import annotations

import contextlib
import html
import io
import re
import warnings
from collections.abc import Callable, Iterator
from typing import Any

#: Okabe & Ito (2008), "Color Universal Design": blue, orange, bluish green, vermillion, reddish purple, sky blue,
#: yellow, black
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")
HASH_SALT = "ctwm-report"
_NO_METADATA = {"Date": None, "Creator": None, "Format": None, "Type": None}


@contextlib.contextmanager
def report_style() -> Iterator[None]:
    """matplotlib settings of every report figure; draw *and* save inside it (colours resolve at draw time)."""
    import matplotlib
    from cycler import cycler

    with matplotlib.rc_context({
        "svg.hashsalt": HASH_SALT, "svg.fonttype": "path", "svg.image_inline": True,
        "axes.prop_cycle": cycler(color=list(PALETTE)), "font.size": 9.0,
    }):
        yield


_ID = re.compile(r'\bid="([^"]+)"')
_REF = re.compile(r'(href=")#([^"]+)"')
_URL = re.compile(r"url\(#([^)]+)\)")
_COMMENT = re.compile(r"<!--.*?-->\s*", re.S)
_STYLE = re.compile(r"<style[^>]*>.*?</style>\s*", re.S)
#: what matplotlib's own <style> says, scoped to the figures (see :func:`inline_svg`)
FIGURE_CSS = "svg.figure-svg *{stroke-linejoin:round;stroke-linecap:butt}"


def draw_svg(draw: Callable[[], Any], *, key: str, alt: str) -> str:
    """Call ``draw()`` (returns a matplotlib Figure) in :func:`report_style` and return it as inline SVG."""
    with report_style(), warnings.catch_warnings():
        # a label the fonts cannot draw (CJK, emoji) is drawn as a box; the page's text shows it as it is
        warnings.filterwarnings("ignore", message=r"Glyph \d+ .*missing from font", category=UserWarning)
        # an empty series leaves a legend with nothing to show: the figure is drawn without it
        warnings.filterwarnings("ignore", message="No artists with labels found", category=UserWarning)
        fig = draw()
        buf = io.StringIO()
        fig.savefig(buf, format="svg", metadata=dict(_NO_METADATA))
    return inline_svg(buf.getvalue(), key=key, alt=alt)


def inline_svg(text: str, *, key: str, alt: str) -> str:
    """matplotlib's SVG document as an element for an HTML page (see the module docstring)."""
    if not re.fullmatch(r"[a-z][a-z0-9-]*", key):
        raise ValueError(f"figure key must be lower-case letters, digits and '-', got {key!r}")
    start = text.index("<svg")
    body = _COMMENT.sub("", text[start:])
    body = re.sub(r"<metadata>.*?</metadata>\s*", "", body, flags=re.S)
    body = _STYLE.sub("", body)  # inline, a <style> would apply to the whole page: the page's CSS carries it
    body = _ID.sub(lambda m: f'id="{key}-{m.group(1)}"', body)
    body = _REF.sub(lambda m: f'{m.group(1)}#{key}-{m.group(2)}"', body)
    body = _URL.sub(lambda m: f"url(#{key}-{m.group(1)})", body)
    label = html.escape(alt, quote=True)
    open_end = body.index(">") + 1
    head = body[:open_end - 1].rstrip("/")
    return (f'{head} role="img" aria-label="{label}" class="figure-svg">'
            f"<title>{label}</title>{body[open_end:].strip()}")
