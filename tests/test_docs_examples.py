"""Every shell and Python example of README.md and docs/ runs, as written, as a test.

Sybil parses each page (``Document.parse``); this module runs its examples in order, page by page, in a
fresh temporary directory per page holding a copy of the repository's ``sample_traces/`` (a fresh clone
has them), so a page must create every other file it uses. The convention (docs/architecture.md, "Docs
examples"):

- ```` ```bash ```` blocks run with ``bash -e`` in the page's directory, ``ctwm`` on PATH (this
  interpreter, this checkout's ``ctwm_cli``);
- ```` ```python ```` blocks share one namespace per page and run in the same directory;
- ```` ```text ````, ```` ```toml ````, ```` ```yaml ````, ```` ```json ```` (and other languages) are not run;
  a fence without a language is refused, so nothing that looks like a command escapes the run;
- a Python block that fails to import an optional package (an extra that is not installed) skips the
  rest of its page, the way the extras' own tests skip;
- on the line before a block: ``<!-- slow -->`` marks it ``slow`` (still run in CI),
  ``<!-- skip: reason -->`` skips it, ``<!-- write: PATH -->`` writes the block (any language) to PATH
  in the page's directory.

Each example is its own test (``README.md:27``); running one runs the page's earlier examples first, so
``-k`` selects any of them and it still sees the files the page made before it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from sybil import Document, Region
from sybil.parsers.markdown.lexers import FencedCodeBlockLexer

import ctwm_cli

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
RUN = {"bash", "python"}
DIRECTIVE = re.compile(r"<!--\s*(slow|skip|write)\s*(?::\s*(.*?))?\s*-->\s*$")
#: a block that runs longer than this is stuck, not slow (the longest documented example takes ~1 min)
STUCK = 900


class Block:
    """One fenced block: its language, source, directive and where it is."""

    def __init__(self, language: str, source: str, directive: tuple[str, str] | None, line: int):
        self.language, self.source, self.directive, self.line = language, source, directive, line

    @property
    def runs(self) -> bool:
        return (self.language in RUN or self.writes is not None) and not self.skip

    @property
    def slow(self) -> bool:
        return self.directive is not None and self.directive[0] == "slow"

    @property
    def skip(self) -> str | None:
        return self.directive[1] or "skipped" if self.directive and self.directive[0] == "skip" else None

    @property
    def writes(self) -> str | None:
        return self.directive[1] if self.directive and self.directive[0] == "write" else None


def _directive(text: str, start: int) -> tuple[str, str] | None:
    """The ``<!-- ... -->`` comment on the last non-blank line before ``start``, if any."""
    before = text[:start].rstrip().rsplit("\n", 1)[-1]
    m = DIRECTIVE.match(before.strip())
    return (m.group(1), (m.group(2) or "").strip()) if m else None


class BlockParser:
    """A Sybil parser: every fenced block of a page becomes a region whose evaluator runs it."""

    lexer = FencedCodeBlockLexer(language=r"[^\n]*")

    def __call__(self, document: Document):
        for region in self.lexer(document):
            language = region.lexemes["language"].strip()
            line = document.text.count("\n", 0, region.start) + 1
            block = Block(language, str(region.lexemes["source"]), _directive(document.text, region.start), line)
            yield Region(region.start, region.end, parsed=block, evaluator=_evaluate)


def _evaluate(example) -> str | None:
    block: Block = example.parsed
    here: Path = example.namespace["__page_dir__"]
    if block.writes is not None:
        target = here / block.writes
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(block.source, encoding="utf-8")
        return None
    if block.language == "bash":
        res = subprocess.run(["bash", "-e", "-c", block.source], cwd=here, env=example.namespace["__env__"],
                             capture_output=True, text=True, timeout=STUCK)
        if res.returncode != 0:
            return f"exit {res.returncode}\n--- stdout\n{res.stdout[-3000:]}\n--- stderr\n{res.stderr[-3000:]}"
        return None
    old = os.getcwd()
    os.chdir(here)
    try:
        exec(compile(block.source, f"{example.path}:{block.line}", "exec"), example.namespace)
    finally:
        os.chdir(old)
    return None


def _parse(path: Path) -> Document:
    return Document.parse(str(path), BlockParser())


DOCUMENTS = {p: _parse(p) for p in PAGES}


def _rel(page: Path) -> str:
    return str(page.relative_to(ROOT)) if page.is_relative_to(ROOT) else page.name


def _id(page: Path, block: Block) -> str:
    return f"{_rel(page)}:{block.line}"


def _params():
    for page, doc in DOCUMENTS.items():
        for i, ex in enumerate(doc.examples()):
            block: Block = ex.parsed
            if block.language not in RUN and block.writes is None:
                continue
            marks = []
            if block.skip:
                marks.append(pytest.mark.skip(reason=block.skip))
            if block.slow:
                marks.append(pytest.mark.slow)
            yield pytest.param(page, i, id=_id(page, block), marks=marks)


def _shim(bin_dir: Path) -> None:
    """``ctwm`` on PATH as this interpreter running this checkout's package (installed or not)."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    ctwm = bin_dir / "ctwm"
    ctwm.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m ctwm_cli "$@"\n')
    ctwm.chmod(0o755)
    for name in ("python", "python3"):
        (bin_dir / name).unlink(missing_ok=True)
        (bin_dir / name).symlink_to(sys.executable)


class Pages:
    """Per page: its directory, how many examples have run, and whether one failed."""

    def __init__(self, factory):
        self.factory, self.state = factory, {}
        self.bin = factory.mktemp("docs-bin")
        _shim(self.bin)

    def env(self, home: Path) -> dict[str, str]:
        env = dict(os.environ)
        package_root = str(Path(ctwm_cli.__file__).resolve().parents[1])
        env["PATH"] = f"{self.bin}{os.pathsep}{env.get('PATH', '')}"
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
        env.update(MEM0_DIR=str(home / ".mem0"), MEM0_TELEMETRY="False")
        env.pop("CTWM_DEBUG", None)
        return env

    def run_until(self, page: Path, index: int, monkeypatch) -> None:
        doc = DOCUMENTS[page]
        if page not in self.state:
            here = self.factory.mktemp(re.sub(r"\W", "_", _rel(page)))
            shutil.copytree(ROOT / "sample_traces", here / "sample_traces")
            doc.namespace.clear()
            doc.namespace.update(__page_dir__=here, __env__=self.env(here), __name__="docs_example")
            self.state[page] = {"next": 0, "failed": None, "missing": None}
        st = self.state[page]
        # Python blocks read the same variables as the shell blocks' processes
        for key in ("MEM0_DIR", "MEM0_TELEMETRY"):
            monkeypatch.setenv(key, doc.namespace["__env__"][key])
        examples = list(doc.examples())
        while st["next"] <= index:
            ex = examples[st["next"]]
            st["next"] += 1
            if not ex.parsed.runs:
                continue
            if st["failed"] is not None:
                pytest.fail(f"an earlier example of this page failed: {st['failed']}")
            if st["missing"] is not None:
                pytest.skip(st["missing"])
            try:
                ex.evaluate()
            except ModuleNotFoundError as e:
                # an optional extra that is not installed: the rest of the page skips, as its tests do
                if (e.name or "").split(".")[0] in ("ctwm_cli", ""):
                    st["failed"] = _id(page, ex.parsed)
                    raise
                st["missing"] = f"needs {e.name} (an optional extra), from {_id(page, ex.parsed)} on"
                pytest.skip(st["missing"])
            except BaseException:
                st["failed"] = _id(page, ex.parsed)
                raise
        if st["next"] == len(examples):
            # the page is done: let go of what its Python blocks hold (a Mem0 store's local database lock)
            for key in [k for k in doc.namespace if not k.startswith("__")]:
                del doc.namespace[key]


@pytest.fixture(scope="session")
def pages(tmp_path_factory):
    return Pages(tmp_path_factory)


@pytest.mark.parametrize(("page", "index"), list(_params()))
def test_example(page, index, pages, monkeypatch):
    pages.run_until(page, index, monkeypatch)


def test_every_fence_names_its_language():
    """A bare fence would be neither run nor declared not to run: every block says what it is."""
    bare = [_id(p, ex.parsed) for p, d in DOCUMENTS.items() for ex in d.examples() if not ex.parsed.language]
    assert bare == []


def test_directives_are_ones_the_runner_knows():
    """A typo in a directive (``<!-- slwo -->``) would silently run a slow block or miss a skip."""
    bad = []
    for page in PAGES:
        for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            s = line.strip()
            looks_like_one = s.startswith("<!--") and s.endswith("-->") and re.match(r"<!--\s*[a-z]+\s*(:|-->)", s)
            if looks_like_one and not DIRECTIVE.match(s):
                bad.append(f"{_rel(page)}:{n}: {s}")
    assert bad == []


def test_the_runner_runs_what_it_says(tmp_path_factory, monkeypatch):
    """The collector itself: a failing bash block fails, a python block sees the files a bash block wrote."""
    page = tmp_path_factory.mktemp("page") / "p.md"
    page.write_text("\n\n".join([
        "```bash\necho hi > a.txt\n```",
        "```python\nfrom pathlib import Path\nassert Path('a.txt').read_text() == 'hi\\n'\nx = 1\n```",
        "<!-- write: c.toml -->\n```toml\nk = 1\n```",
        "```python\nassert x == 1 and Path('c.toml').read_text() == 'k = 1\\n'\n```",
        "<!-- skip: never -->\n```bash\nexit 1\n```",
        "```bash\nfalse\necho unreachable\n```",
    ]) + "\n")
    doc = _parse(page)
    DOCUMENTS[page] = doc
    pages = Pages(tmp_path_factory)
    try:
        n = len(list(doc.examples()))
        with pytest.raises(AssertionError, match="exit 1"):
            pages.run_until(page, n - 1, monkeypatch)
        assert pages.state[page]["next"] == n
    finally:
        del DOCUMENTS[page]
