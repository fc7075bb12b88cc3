"""Report pages opened in a real browser: headless Chromium (Debian's ``chromium`` package), started here.

For each page: it loads with no console message (the page has no script, so any message is an error: a
Content-Security-Policy violation for something it tried to fetch, a failed load), a screenshot of the page is
not blank, and the verdict text is in the DOM the browser built. Control pages show that each check can fail:
one that logs to the console, one that is blank. Skipped, with the reason, where Chromium is not installed
(``.ci/run`` installs it).
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest
from report_helpers import grid_dir, hostile_trace, parse, replay_dir

import ctwm_cli

__all__ = ["grid_dir", "replay_dir"]  # fixtures

CHROMIUM = "/usr/bin/chromium"
pytestmark = pytest.mark.skipif(not os.access(CHROMIUM, os.X_OK),
                                reason=f"{CHROMIUM} not installed (apt-get install -y chromium; .ci/run does)")
ROOT = Path(__file__).resolve().parents[1]
TPL = str(ROOT / "sample_traces" / "tpl_events.parquet")
TELEMETRY = str(ROOT / "sample_traces" / "telemetry" / "events.jsonl")
CONSOLE = re.compile(r":CONSOLE[:(]")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
         "--enable-logging=stderr", "--v=0")


def _chromium(page: Path, tmp: Path, *mode: str) -> subprocess.CompletedProcess:
    profile = tmp / f"profile-{len(list(tmp.glob('profile-*')))}"
    return subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *mode, page.resolve().as_uri()],
                          capture_output=True, text=True, timeout=180, check=False)


def _console(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if CONSOLE.search(line)]


def _open(html: str, tmp: Path, name: str) -> tuple[str, list[str], np.ndarray]:
    """Load the page twice (DOM dump, then screenshot): the DOM, console messages of both loads, the pixels."""
    import matplotlib.image

    page = tmp / f"{name}.html"
    page.write_text(html, encoding="utf-8")
    dom = _chromium(page, tmp, "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    shot = tmp / f"{name}.png"
    pic = _chromium(page, tmp, f"--screenshot={shot}", "--window-size=1200,3000")
    assert pic.returncode == 0 and shot.is_file(), pic.stderr[-2000:]
    return dom.stdout, _console(dom.stderr) + _console(pic.stderr), matplotlib.image.imread(str(shot))


def test_control_pages_show_the_checks_can_fail(tmp_path):
    noisy = ("<!DOCTYPE html><html><head><title>c</title></head><body><p>x</p>"
             "<script>console.error('control-error')</script></body></html>")
    _, messages, _ = _open(noisy, tmp_path, "noisy")
    assert any("control-error" in m for m in messages)
    blank = "<!DOCTYPE html><html><head><title>b</title></head><body></body></html>"
    _, messages, pixels = _open(blank, tmp_path, "blank")
    assert messages == [] and float(pixels[..., :3].std()) < 0.01
    # a fetch the page's Content-Security-Policy blocks is reported on the console
    fetching = ("<!DOCTYPE html><html><head><meta http-equiv=\"Content-Security-Policy\" content=\"default-src "
                "'none'\"><title>f</title></head><body><img src=\"https://example.invalid/x.png\"></body></html>")
    _, messages, _ = _open(fetching, tmp_path, "fetching")
    assert any("Content Security Policy" in m for m in messages)


def test_trace_grid_and_replay_pages_in_chromium(tmp_path, grid_dir, replay_dir):
    rep = ctwm_cli.report([TPL, grid_dir, str(replay_dir)], seed=1, bootstrap=20)
    dom, messages, pixels = _open(rep.html, tmp_path, "report")
    assert messages == []
    assert float(pixels[..., :3].std()) > 0.05  # text and figures, not an empty page
    tree = parse(dom)
    headlines = [e.all_text() for e in tree.root.iter("p") if e.attrs.get("class") == "headline"]
    assert headlines == [s.card.headline for s in rep.sections]
    verdict = rep.sections[0].card.verdict
    assert verdict and verdict in headlines[0]
    assert len(list(tree.root.iter("figure"))) == len(rep.figures())
    assert [e.attrs["aria-label"] for e in tree.root.iter("svg")] == [f.alt for f in rep.figures()]


def test_hostile_and_telemetry_page_in_chromium(tmp_path):
    """Hostile ids run nothing in a browser either (a <script> would log; an onerror would fetch)."""
    trace = tmp_path / "evil<img src=x onerror=console.error(1)>.parquet"
    hostile_trace(trace)
    rep = ctwm_cli.report([str(trace), TELEMETRY], seed=1, bootstrap=10, group_by=None)
    dom, messages, pixels = _open(rep.html, tmp_path, "hostile")
    assert messages == []
    tree = parse(dom)
    assert not {e.tag for e in tree.root.iter()} & {"script", "img"}
    assert "<script>alert(1)</script>" in tree.root.all_text()
    assert float(pixels[..., :3].std()) > 0.05


#: opens every <details> and lists each element whose right edge passes the viewport (a probe copy of the page:
#: the page itself runs no script, so its CSP is dropped from the copy only)
OVERFLOW_PROBE = """<script>
document.querySelectorAll('details').forEach(d => d.open = true);
const w = document.documentElement.clientWidth, bad = [];
document.querySelectorAll('body *').forEach(e => {
  const r = e.getBoundingClientRect();
  if (r.right > w + 1 || (e.classList.contains('scroll') && e.scrollWidth > e.clientWidth + 1))
    bad.push(e.tagName + ' ' + Math.round(r.right) + ' ' + (e.textContent || '').slice(0, 40));
});
const o = document.createElement('pre'); o.id = 'overflow'; o.textContent = JSON.stringify(bad);
document.body.appendChild(o);
</script>"""


def _overflow(html: str, tmp: Path, name: str) -> list[str]:
    import json

    probe = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", html).replace(
        "</body>", OVERFLOW_PROBE + "</body>")
    page = tmp / f"{name}-probe.html"
    page.write_text(probe, encoding="utf-8")
    dom = _chromium(page, tmp, "--dump-dom", "--window-size=1280,2000")
    assert dom.returncode == 0, dom.stderr[-2000:]
    found = [e for e in parse(dom.stdout).root.iter("pre") if e.attrs.get("id") == "overflow"]
    assert len(found) == 1, "the probe did not run"
    return json.loads(found[0].all_text())


def test_memory_lists_page_in_chromium_fits_1280_px(tmp_path):
    """The trace page with hot, cold and stale-above-current lists per tenant (every <details> opened) has no
    element past a 1,280 px window, and loads with no console message; a page with a too-wide paragraph fails."""
    from test_report_hotlist import _workload

    trace, objects = tmp_path / "agent.jsonl", tmp_path / "objects.jsonl"
    _workload(trace, objects)
    rep = ctwm_cli.report(str(trace), objects=str(objects), group_by="user", seed=1, bootstrap=10, sweep=None)
    dom, messages, _ = _open(rep.html, tmp_path, "lists")
    assert messages == []
    captions = [e.all_text() for e in parse(dom).root.iter("caption")]
    assert any(c.startswith("Most-read memories of user=dave") for c in captions)
    assert _overflow(rep.html, tmp_path, "lists") == []
    wide = rep.html.replace("</main>", '<p style="width:2000px">a paragraph wider than the window</p></main>')
    assert _overflow(wide, tmp_path, "wide") != []


#: opens every <details>; lists each element past the window's right edge (or a .scroll box that scrolls), each
#: table cell with a word (a run of letters and digits) drawn on two lines, and each figure without alt text or
#: a numbers table
LAYOUT_PROBE = """<script>
document.querySelectorAll('details').forEach(d => d.open = true);
const w = document.documentElement.clientWidth, out = {overflow: [], broken: [], figures: [], width: w};
document.querySelectorAll('body *').forEach(e => {
  const r = e.getBoundingClientRect();
  if (r.right > w + 1 || (e.classList.contains('scroll') && e.scrollWidth > e.clientWidth + 1))
    out.overflow.push(e.tagName + ' ' + Math.round(r.right) + ' ' + (e.textContent || '').slice(0, 40));
});
document.querySelectorAll('td, th').forEach(cell => {
  const walk = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
  for (let n = walk.nextNode(); n; n = walk.nextNode()) {
    for (const m of n.data.matchAll(/[\\p{L}\\p{N}]+/gu)) {
      const range = document.createRange();
      range.setStart(n, m.index); range.setEnd(n, m.index + m[0].length);
      const tops = new Set([...range.getClientRects()].filter(x => x.width > 0).map(x => Math.round(x.top)));
      if (tops.size > 1) out.broken.push(m[0]);
    }
  }
});
document.querySelectorAll('figure').forEach(f => {
  const svg = f.querySelector('svg'), label = svg && svg.getAttribute('aria-label');
  if (!label || !label.trim() || !f.querySelector('details table td')) out.figures.push(f.id);
});
const o = document.createElement('pre'); o.id = 'layout'; o.textContent = JSON.stringify(out);
document.body.appendChild(o);
</script>"""


def _layout(html: str, tmp: Path, name: str) -> dict:
    import json

    probe = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", html).replace(
        "</body>", LAYOUT_PROBE + "</body>")
    page = tmp / f"{name}-layout.html"
    page.write_text(probe, encoding="utf-8")
    dom = _chromium(page, tmp, "--dump-dom", "--window-size=1280,2000")
    assert dom.returncode == 0, dom.stderr[-2000:]
    found = [e for e in parse(dom.stdout).root.iter("pre") if e.attrs.get("id") == "layout"]
    assert len(found) == 1, "the probe did not run"
    return json.loads(found[0].all_text())


def test_the_layout_probe_can_fail(tmp_path):
    """A cell that breaks a word, a too-wide table and a figure without a table are each reported."""
    bad = ('<!DOCTYPE html><html><head><title>b</title></head><body><table><tr><td style="width:3em;max-width:3em;'
           'overflow-wrap:anywhere">abcdefghijklmnopqrstuvwxyz</td></tr></table><div class="scroll" '
           'style="overflow-x:auto"><table style="width:3000px"><tr><td>x</td></tr></table></div>'
           '<figure id="f"><svg aria-label="a"></svg></figure></body></html>')
    out = _layout(bad, tmp_path, "bad")
    assert out["width"] == 1280
    assert out["broken"] and out["overflow"] and out["figures"] == ["f"]


@pytest.fixture(scope="module")
def diff_page(tmp_path_factory):
    LOGNORMAL = str(ROOT / "sample_traces" / "lognormal_events.parquet")
    return ctwm_cli.report([TPL, LOGNORMAL], diff=True, tol={"gini": 0.02}, diff_bootstrap=20, seed=1)


@pytest.mark.parametrize("kind", ["trace", "replay", "grid", "diff"])
def test_each_page_kind_reads_at_1280_px(tmp_path, grid_dir, replay_dir, diff_page, kind):
    """Each page kind at a 1,280 px window: nothing overflows, no cell breaks a word, every figure has its alt
    text and its numbers table, no console message (no script ran, nothing was fetched), no external reference."""
    from report_helpers import external_references

    rep = {"trace": lambda: ctwm_cli.report(TPL, seed=1, bootstrap=20),
           "replay": lambda: ctwm_cli.report(str(replay_dir.with_name("result.json"))),
           "grid": lambda: ctwm_cli.report(grid_dir, seed=1, bootstrap=10),
           "diff": lambda: diff_page}[kind]()
    assert {s.kind for s in rep.sections} == {kind}
    dom, messages, _ = _open(rep.html, tmp_path, kind)
    assert messages == []
    tree = parse(dom)
    assert list(tree.root.iter("script")) == [] and external_references(tree) == []
    out = _layout(rep.html, tmp_path, kind)
    assert out["width"] == 1280
    assert out["overflow"] == [] and out["broken"] == [] and out["figures"] == [], out


def _store_trace(path: Path) -> None:
    """Two tenants over 30 steps and three days: writes, retrieves with rank, score and tokens, injects, a
    supersede; prompt tokens per step from 24 to 4,800 (a log axis)."""
    import json

    rng = np.random.default_rng(46)
    with path.open("w", encoding="utf-8") as fh:
        for step in range(30):
            ts = f"2026-03-0{1 + step // 10}T{step % 10 + 8:02d}:00:00Z"
            for tenant in ("alice", "bob"):
                base = {"step": step, "run": tenant, "user": tenant, "ts": ts}
                fh.write(json.dumps({**base, "item": f"{tenant}-m{step}", "event": "write", "tokens": 12}) + "\n")
                for rank in range(1, 6):
                    item = f"{tenant}-m{int(rng.integers(0, step + 1))}"
                    fh.write(json.dumps({**base, "item": item, "event": "retrieve", "rank": rank,
                                         "score": float(rng.uniform(0.1, 0.9)), "tokens": 12}) + "\n")
                    if rank <= 2:
                        fh.write(json.dumps({**base, "item": item, "event": "inject",
                                             "tokens": 12 * (1 + 199 * (step > 20))}) + "\n")
                if step == 15:
                    fh.write(json.dumps({**base, "item": f"{tenant}-m0", "event": "supersede"}) + "\n")


def test_over_time_and_retrieval_figures_read_at_1280_px(tmp_path):
    """A trace with tenants, ranks, scores, tokens, timestamps and a store: its over-time and retrieval figures
    (dead weight included) each carry alt text and a numbers table, fit 1,280 px and keep the page inert."""
    from report_helpers import external_references

    path = tmp_path / "store.jsonl"
    _store_trace(path)
    rep = ctwm_cli.report(str(path), seed=1, bootstrap=10, sweep=None, group_by="user")
    block = next(b for s in rep.sections for b in s.blocks if b.title == "Over time and retrieval")
    assert [f.title for f in block.figures] == ["Concentration over time", "Dead weight over time",
                                                "Injection rate by rank", "Score distribution",
                                                "Tokens per step over time"]
    dom, messages, _ = _open(rep.html, tmp_path, "views")
    assert messages == []
    tree = parse(dom)
    assert list(tree.root.iter("script")) == [] and external_references(tree) == []
    out = _layout(rep.html, tmp_path, "views")
    assert out["overflow"] == [] and out["broken"] == [] and out["figures"] == [], out
