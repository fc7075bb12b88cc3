"""The HTML page of a :class:`~.model.Report`: one file, inline CSS and SVG, no script, nothing fetched.

Every string that reaches the page goes through :func:`text` (``html.escape`` after
:func:`ctwm_cli.common.inert.visible`, which shows control and bidi characters as ``\\xNN`` escapes): trace contents
are hostile, and an item id like ``<script>`` or an ANSI escape must arrive as the characters it is made of.
Numbers are formatted here; the JSON keeps them raw.
"""

from __future__ import annotations

import html
import math
import re
from typing import Any

from ..common.inert import visible
from .glossary import header
from .model import Block, Card, Estimate, Figure, Report, Section, Table
from .svg import FIGURE_CSS

#: verdict -> CSS class (the card's border colour; the verdict itself is always written out, for greyscale)
VERDICT_CLASS = {"tpl-compatible": "v-tpl", "lognormal-compatible": "v-ln", "inconclusive": "v-inc"}

CSS = """
:root{--fg:#1b1b1b;--muted:#555;--rule:#c8c8c8;--bg:#fff;--card:#f4f6f8;--tpl:#0072B2;--ln:#009E73;--inc:#8a6d00}
*{box-sizing:border-box}
body{font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;color:var(--fg);
background:var(--bg);margin:0 auto;max-width:1100px;padding:1.5rem}
h1{font-size:1.6rem;margin:.2rem 0 .4rem}h2{font-size:1.3rem;margin:2rem 0 .5rem;border-bottom:2px solid var(--rule)}
h3{font-size:1.05rem;margin:1.4rem 0 .4rem}
p.meta,p.note{color:var(--muted);font-size:.9rem;margin:.2rem 0}
p.lead{font-size:1.05rem;margin:.5rem 0 .7rem;max-width:60rem}
nav ol{margin:.3rem 0 1rem;padding-left:1.4rem}
.card{background:var(--card);border-left:6px solid var(--rule);padding:.8rem 1rem;margin:.6rem 0 1rem}
.card .headline{font-size:1.15rem;font-weight:600;margin:0 0 .4rem}
.card.v-tpl{border-left-color:var(--tpl)}.card.v-ln{border-left-color:var(--ln)}.card.v-inc{border-left-color:var(--inc)}
.card dl{display:grid;grid-template-columns:max-content 1fr;gap:.15rem 1rem;margin:0}
.card dt{font-weight:600}.card dd{margin:0;overflow-wrap:break-word}
figure{margin:1rem 0 1.4rem;break-inside:avoid}
figure svg{max-width:100%;height:auto;display:block}
figcaption{font-size:.9rem;color:var(--fg);margin:.3rem 0}
details{margin:.3rem 0 .8rem}summary{cursor:pointer;color:var(--muted);font-size:.9rem}
.scroll{overflow-x:auto}
table{min-width:min(100%,34rem);border-collapse:collapse;font-size:.85rem;margin:.4rem 0;
font-variant-numeric:tabular-nums}
caption{text-align:left;font-weight:600;padding:.2rem 0}caption .sum{display:block;font-weight:400;color:var(--muted)}
th,td{border-bottom:1px solid var(--rule);padding:.15rem .5rem;text-align:right;vertical-align:top}
th:first-child,td:first-child,td.t,th.t{text-align:left}
td,th{overflow-wrap:normal;word-break:normal;hyphens:none}td.t{max-width:26rem}
td.n{white-space:nowrap}th{font-weight:600}
thead th{border-bottom:2px solid var(--fg)}
@media print{
body{max-width:none;padding:0;font-size:10.5pt;color:#000}
nav{display:none}
h2{break-before:page}section:first-of-type h2{break-before:auto}
.card{border:1px solid #000;border-left-width:6px;background:none}
details>summary{display:none}
figure,table{break-inside:avoid}
.scroll{overflow:visible}
}
@media print{details::details-content{content-visibility:visible;display:block}}
"""


def text(value: Any) -> str:
    """A string for the page: control and bidi characters made visible (:func:`ctwm_cli.common.inert.visible`), then
    HTML-escaped."""
    return html.escape(visible("" if value is None else str(value)), quote=True)


_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def _float(v: float, *, digits: int = 4) -> str:
    """A float for reading: thousands separated from 1,000 up (no exponent below 10^15), ``digits`` significant
    digits below, a power of ten (``8.53×10⁻⁵``) only under 10^-3; a real minus sign."""
    a = abs(v)
    if a >= 1e15 or (0 < a < 1e-3):
        mant, _, exp = f"{v:.{digits - 1}e}".partition("e")
        out = f"{mant}×10{str(int(exp)).translate(_SUPERSCRIPT)}"
    elif a >= 1000:
        out = f"{round(v):,}"
    else:
        out = f"{v:.{digits}g}"
    return out.replace("-", "−")


def fmt(value: Any) -> str:
    """A cell: integers with thousands separators, floats to 4 significant digits (thousands separated above
    1,000), an :class:`Estimate` as ``+0.016 [+0.010, +0.023]``, missing as an en dash."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, Estimate):
        return estimate(value)
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}".replace("-", "−")
    if isinstance(value, float):
        if math.isinf(value):
            return "∞" if value > 0 else "−∞"
        if value != 0 and float(value).is_integer() and abs(value) < 1e15:
            return f"{int(value):,}".replace("-", "−")
        return _float(value)
    if isinstance(value, (list, tuple)):
        return ", ".join(fmt(v) for v in value)
    return str(value)


def _decimals(e: Estimate) -> int:
    """Decimals that give the interval's width two significant digits (the value to the same place)."""
    width = None if e.low is None or e.high is None else abs(e.high - e.low)
    ref = width if width else abs(e.value or 0.0)
    if not ref or not math.isfinite(ref):
        return 3
    return max(0, min(6, 1 - math.floor(math.log10(ref))))


def _fixed(v: float | None, decimals: int, signed: bool) -> str:
    if v is None or not math.isfinite(v):
        return "–"
    out = f"{v:+,.{decimals}f}" if signed else f"{v:,.{decimals}f}"
    return out.replace("-", "−")


def estimate(e: Estimate) -> str:
    """``+0.016 [+0.010, +0.023]``: the value and its interval at one number of decimals (the interval's two
    significant digits); the value alone when none was formed."""
    if e.value is None or (isinstance(e.value, float) and not math.isfinite(e.value)):
        return "–"
    if e.low is None or e.high is None:  # no interval (every replicate agreed): the value alone
        return "0" if e.value == 0 else fmt(float(e.value)) if not e.signed else \
            ("+" if e.value > 0 else "") + fmt(float(e.value))
    d = _decimals(e)
    head = _fixed(e.value, d, e.signed)
    return f"{head} [{_fixed(e.low, d, e.signed)}, {_fixed(e.high, d, e.signed)}]"


_TEXT_CELL = ' class="t"'
#: where an identifier may wrap: after a separator, never inside a run of letters or digits
_BREAK_AFTER = re.compile(r"([/_.:=,-])(?=\w)")


def cell_text(value: str) -> str:
    """An escaped cell whose long identifiers may wrap after ``/ _ . : = , -`` (a ``<wbr>``), never mid-word."""
    return "<wbr>".join(text(part) for part in _BREAK_AFTER.sub("\\1\x00", visible(value)).split("\x00"))


def _cell(v: Any) -> str:
    if isinstance(v, str):
        return f"<td{_TEXT_CELL}>{cell_text(v)}</td>"
    return f'<td class="n">{text(fmt(v))}</td>'


def _head(c: str, left: bool) -> str:
    words = header(c)
    tip = f' title="{text(c)}"' if words != c else ""
    return f'<th scope="col"{_TEXT_CELL if left else ""}{tip}>{cell_text(words)}</th>'


def _rows_html(rows) -> str:
    return "".join("<tr>" + "".join(_cell(v) for v in row) + "</tr>" for row in rows)


def table_html(t: Table) -> str:
    """A table with glossary headers (the JSON key as the tooltip); ``summary`` first; past ``open_rows`` rows,
    the rest in a closed ``<details>`` under the same headers."""
    # a column of words is read from the left, its header too; a column of numbers from the right
    left = [any(isinstance(r[i], str) for r in t.rows) for i in range(len(t.columns))]
    head = "<thead><tr>" + "".join(_head(c, lf) for c, lf in zip(t.columns, left, strict=True)) + "</tr></thead>"
    lead = f'<span class="sum">{text(t.summary)}</span>' if t.summary else ""
    rows = list(t.rows)
    if t.open_rows and len(rows) > t.open_rows + 2:
        shown, rest = rows[:t.open_rows], rows[t.open_rows:]
        more = (f"<details><summary>The other {len(rest):,} rows</summary><div class=\"scroll\"><table>{head}"
                f"<tbody>{_rows_html(rest)}</tbody></table></div></details>")
    else:
        shown, more = rows, ""
    return (f'<div class="scroll"><table><caption>{text(t.caption)}{lead}</caption>{head}'
            f"<tbody>{_rows_html(shown)}</tbody></table></div>{more}")


def figure_html(f: Figure) -> str:
    return (f'<figure id="{f.key}">{f.svg}<figcaption><strong>{text(f.title)}.</strong> {text(f.alt)}</figcaption>'
            f'<details><summary>The numbers behind this figure</summary>{table_html(f.table)}</details></figure>')


def card_html(c: Card) -> str:
    cls = VERDICT_CLASS.get(c.verdict or "", "")
    rows = "".join(f"<dt>{text(k)}</dt><dd>{text(fmt(v))}</dd>" for k, v in c.fields)
    return f'<div class="card {cls}"><p class="headline">{text(c.headline)}</p><dl>{rows}</dl></div>'


def block_html(b: Block, level: int = 3) -> str:
    """A block under an ``<h{level}>`` (its parts one level down), or, ``collapsed``, a closed ``<details>`` whose
    summary is its title (no script: the browser opens it; printing shows it open)."""
    parts = [f"<p>{text(b.text)}</p>"] if b.text else []
    parts += [figure_html(f) for f in b.figures]
    parts += [table_html(t) for t in b.tables]
    parts += [block_html(p, min(level + 1, 6)) for p in b.parts]
    if b.collapsed:
        return f"<details><summary>{text(b.title)}</summary>{''.join(parts)}</details>"
    return f"<h{level}>{text(b.title)}</h{level}>" + "".join(parts)


def section_html(s: Section, index: int) -> str:
    parts = [f'<section id="s{index}" data-kind="{text(s.kind)}"><h2>{text(s.title)}</h2>',
             f'<p class="meta">source: <code>{text(s.source)}</code></p>']
    if s.summary:
        parts.append(f'<p class="lead">{text(s.summary)}</p>')
    if s.card is not None:
        parts.append(card_html(s.card))
    parts += [block_html(b) for b in s.blocks]
    parts += [f'<p class="note">note: {text(n)}</p>' for n in s.notes]
    parts.append("</section>")
    return "".join(parts)


def page_seed(report: Report) -> str:
    """The header's words on randomness: the seed this page drew with (the audits, the bootstrap), or, for a page
    of saved replay results that re-runs nothing, the seed each replay ran with (its command's ``--seed``)."""
    if report.seed is not None:
        return f"seed {report.seed} (rerun with --seed {report.seed} for the same page)"
    ran = [s.seed for s in report.sections if s.kind == "replay" and s.seed is not None]
    if ran:
        seeds = ", ".join(str(x) for x in dict.fromkeys(ran))
        return (f"the replay ran with seed {seeds} (its command's --seed reproduces it); this page re-runs nothing "
                "and draws no random numbers")
    return "no random draws"


def render(report: Report) -> str:
    """The whole page. No ``<script>``, no external ``href``/``src``: it reads the same offline and printed."""
    toc = "".join(f'<li><a href="#s{i}">{text(s.title)}</a></li>' for i, s in enumerate(report.sections))
    seed = page_seed(report)
    body = "".join(section_html(s, i) for i, s in enumerate(report.sections))
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
        "img-src data:\">"
        f'<meta name="generator" content="ctwm {text(report.version)}">'
        f"<title>{text(report.title)}</title><style>{CSS}{FIGURE_CSS}</style></head>"
        f"<body><header><h1>{text(report.title)}</h1>"
        f'<p class="meta">ctwm {text(report.version)}; {text(seed)}. Every number on this page is one a ctwm '
        "command prints; each figure's numbers are in the table under it.</p>"
        f"<nav><ol>{toc}</ol></nav></header><main>{body}</main></body></html>\n"
    )
