"""Text from a trace made inert for the place it is shown: a terminal, a log, a spreadsheet, Markdown, XML.

Item ids, group labels, check names and error messages quote trace contents, which are not the
user's words. Each function here neutralises one way such text could act instead of being read:

- :func:`visible`: C0 and C1 control characters (ESC starts ANSI/OSC sequences that clear a screen,
  retitle a window or plant a hyperlink; CR overwrites a log line), DEL and the Unicode bidi
  controls ("Trojan Source") become visible escapes such as ``\\x1b`` and ``\\u202e``. Newlines and
  tabs too, since one cell or one log line must stay one line.
- :func:`spreadsheet_safe`: a CSV cell that begins with ``=``, ``+``, ``-``, ``@``, tab or CR is a
  formula to Excel, LibreOffice and Google Sheets (``=cmd|' /C calc'!A0``); OWASP's remedy is a
  leading ``'``. Only text is touched: numbers stay numbers.
- :func:`markdown_text`: Markdown punctuation and HTML are escaped, so ``<img onerror=…>``, links,
  emphasis and table pipes print as typed.
- :func:`xml_text`: characters XML 1.0 forbids are dropped (after :func:`visible`, only lone
  surrogates and U+FFFE/U+FFFF remain of them), so a JUnit file always parses.
"""

from __future__ import annotations

import re

_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_UNSAFE = re.compile(f"[\x00-\x1f\x7f-\x9f{_BIDI}]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_MARKDOWN = re.compile(r"([\\`*_\[\]|~])")
# what XML 1.0 forbids (its Char is \t \n \r, U+0020-D7FF, U+E000-FFFD, U+10000-10FFFF), listed rather than
# negated: the negated class over those ranges took 11 ms to compile, at every ctwm start (issue 29)
XML_FORBIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _escape(match: re.Match[str]) -> str:
    ch = match.group(0)
    if ch in _NAMED:
        return _NAMED[ch]
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str) -> str:
    """``text`` with every control character and bidi control shown as an escape (one printable line)."""
    return _UNSAFE.sub(_escape, text) if _UNSAFE.search(text) else text


def spreadsheet_safe(value: object) -> object:
    """A CSV cell that no spreadsheet evaluates: text starting like a formula gets a leading ``'``."""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


def markdown_text(text: str) -> str:
    """``text`` as literal Markdown: control characters visible, HTML and Markdown syntax escaped."""
    text = visible(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MARKDOWN.sub(r"\\\1", text)


def xml_text(text: str) -> str:
    """``text`` fit for an XML 1.0 document: control characters visible, forbidden code points dropped."""
    return XML_FORBIDDEN.sub("", visible(text))
