"""The characters ``xml_text`` drops are exactly those XML 1.0's ``Char`` production excludes, over every
code point (the class is written as the forbidden list, which compiles in microseconds; issue 29)."""

from __future__ import annotations

from ctwm_cli.common.inert import XML_FORBIDDEN, xml_text


def _xml_char(c: int) -> bool:  # XML 1.0 (5th ed.) §2.2
    return c in (0x9, 0xA, 0xD) or 0x20 <= c <= 0xD7FF or 0xE000 <= c <= 0xFFFD or 0x10000 <= c <= 0x10FFFF


def test_forbidden_class_is_the_complement_of_xml_char():
    every = "".join(map(chr, range(0x110000)))
    expected = [chr(c) for c in range(0x110000) if not _xml_char(c)]
    assert XML_FORBIDDEN.findall(every) == expected


def test_xml_text_drops_them():
    assert "\ufffe" not in xml_text("a\ufffeb\ud800c") and "\ud800" not in xml_text("a\ud800")
