"""Shared by the report tests: a real HTML parse of a page (the standard library's ``html.parser``: the elements,
their nesting and every attribute, so the tests check the structure a browser builds, not substrings of the text)
and the grid and replay outputs the pages are made from."""

from __future__ import annotations

import contextlib
import io
import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ctwm_cli.cli import main
from ctwm_cli.world.config import WorldConfig
from ctwm_cli.world.grid import run_grid

HOSTILE_IDS = ("<script>alert(1)</script>", '"><img src=x onerror=alert(2)>', "\x1b[31mred\x1b[0m", "</table><b>",
               "&amp;lt;", "]]><!--")
VOID = {"meta", "br", "img", "input", "link", "hr", "col", "area", "base", "embed", "source", "track", "wbr"}


@dataclass
class Element:
    tag: str
    attrs: dict[str, str | None]
    parent: Element | None = None
    children: list[Element] = field(default_factory=list)
    text: list[str] = field(default_factory=list)

    def iter(self, tag: str | None = None):
        for c in self.children:
            if tag is None or c.tag == tag:
                yield c
            yield from c.iter(tag)

    def all_text(self) -> str:
        return "".join(self.text) + "".join(c.all_text() for c in self.children)


class _Tree(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Element("#document", {})
        self.node = self.root
        self.comments: list[str] = []
        self.decls: list[str] = []

    def handle_starttag(self, tag, attrs):
        el = Element(tag, dict(attrs), parent=self.node)
        self.node.children.append(el)
        if tag not in VOID:
            self.node = el

    def handle_startendtag(self, tag, attrs):
        self.node.children.append(Element(tag, dict(attrs), parent=self.node))

    def handle_endtag(self, tag):
        node = self.node
        while node is not self.root and node.tag != tag:
            node = node.parent
        assert node is not self.root, f"</{tag}> closes nothing"
        assert self.node is node, f"<{self.node.tag}> left open inside <{tag}>"
        self.node = node.parent

    def handle_data(self, data):
        self.node.text.append(data)

    def handle_comment(self, data):
        self.comments.append(data)

    def handle_decl(self, decl):
        self.decls.append(decl)


def parse(page: str) -> _Tree:
    tree = _Tree()
    tree.feed(page)
    tree.close()
    assert tree.node is tree.root, f"<{tree.node.tag}> never closed"
    return tree


#: attributes through which a page can reach another document, and CSS that can fetch
URL_ATTRS = {"href", "src", "xlink:href", "srcset", "action", "formaction", "poster", "data", "background"}
CSS_URL = re.compile(r"url\(\s*['\"]?(?!#)", re.I)
IMPORT = re.compile(r"@import", re.I)


def external_references(tree: _Tree) -> list[str]:
    """Every reference that would leave the page: a URL attribute not pointing at an id on it, CSS url()/@import."""
    bad = []
    for el in tree.root.iter():
        for name, value in el.attrs.items():
            if name in URL_ATTRS and not (value or "").startswith("#"):
                bad.append(f"<{el.tag} {name}={value!r}>")
            if name == "style" and (CSS_URL.search(value or "") or IMPORT.search(value or "")):
                bad.append(f"<{el.tag} style={value!r}>")
        if el.tag == "style" and (CSS_URL.search(el.all_text()) or IMPORT.search(el.all_text())):
            bad.append("<style> with url() or @import")
    return bad


@pytest.fixture(scope="module")
def grid_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("grid") / "grid"
    run_grid(out, families=["uniform", "scale-free"], sizes=[100, 200], seeds=[1], base=WorldConfig(steps=1500),
             jobs=1)
    return str(out)


@pytest.fixture(scope="module")
def replay_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("replay") / "run"
    result = out.with_name("result.json")
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = main(["replay", "compare", "--size", "100", "--steps", "200", "--episodes", "2", "--seed", "3",
                     "--bootstrap", "30", "--block", "20", "-o", str(out), "--json"])
    assert code == 0
    (out / "result.json").write_text(buf.getvalue(), encoding="utf-8")
    result.write_text(buf.getvalue(), encoding="utf-8")
    return out


def hostile_trace(path: Path) -> None:
    """Item ids with markup, quotes and ANSI escapes; the hostile ones are the most accessed (they reach the
    core table and every label)."""
    items, steps, runs, events = [], [], [], []
    step = 0
    for i, hid in enumerate(HOSTILE_IDS):
        for _ in range(400 - 20 * i):
            items.append(hid)
            steps.append(step)
            step += 1
    for j in range(300):
        for _ in range(1 + j % 7):
            items.append(f"m{j}")
            steps.append(step)
            step += 1
    runs = ["<b>run</b>\x1b[2J"] * len(items)
    events = ["retrieve"] * len(items)
    items += ["<script>w</script>"]
    steps.append(step)
    runs.append(runs[0])
    events.append("write")
    pq.write_table(pa.table({"item": items, "step": steps, "run": runs, "event": events}), path)
