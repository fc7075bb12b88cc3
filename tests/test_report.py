"""``ctwm report`` / ``ctwm_cli.report``: pages of the shipped sample traces, a grid and a replay, parsed with a
real HTML parser; every figure with its finding and its table; nothing external; hostile traces inert; the same
inputs and seed give the same bytes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from report_helpers import HOSTILE_IDS, external_references, grid_dir, hostile_trace, parse, replay_dir

import ctwm_cli
from ctwm_cli.reporting.svg import inline_svg
from ctwm_cli.world.config import WorldConfig
from ctwm_cli.world.grid import run_grid

__all__ = ["grid_dir", "replay_dir"]  # fixtures shared with the browser tests

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_traces"
TPL = str(SAMPLES / "tpl_events.parquet")
COUNTS = str(SAMPLES / "powerlaw_counts.parquet")
TELEMETRY = str(SAMPLES / "telemetry" / "events.jsonl")


@pytest.fixture(scope="module")
def tpl_report():
    return ctwm_cli.report(TPL, seed=1, bootstrap=20)


def _check_page(page: str) -> object:
    """Structure every page must have; returns the parse tree."""
    tree = parse(page)
    assert tree.decls == ["DOCTYPE html"]
    assert tree.comments == []  # matplotlib's text comments are dropped (they repeat trace strings)
    html_el = [e for e in tree.root.iter("html")]
    assert len(html_el) == 1 and html_el[0].attrs["lang"] == "en"
    assert list(tree.root.iter("script")) == []
    assert external_references(tree) == []
    ids = [e.attrs["id"] for e in tree.root.iter() if "id" in e.attrs]
    assert len(ids) == len(set(ids)), "ids must be unique on the page"
    id_set = set(ids)
    for e in tree.root.iter():  # every in-page reference resolves (a missing clip path draws the wrong thing)
        for name in ("href", "xlink:href"):
            if e.attrs.get(name, "").startswith("#") and e.tag != "a":
                assert e.attrs[name][1:] in id_set, e.attrs[name]
    figures = list(tree.root.iter("figure"))
    assert figures
    for fig in figures:
        svgs = [c for c in fig.children if c.tag == "svg"]
        assert len(svgs) == 1
        svg = svgs[0]
        assert svg.attrs["role"] == "img" and svg.attrs["aria-label"].strip()
        titles = [c for c in svg.children if c.tag == "title"]
        assert [t.all_text() for t in titles] == [svg.attrs["aria-label"]]
        caption = [c for c in fig.children if c.tag == "figcaption"]
        assert len(caption) == 1 and svg.attrs["aria-label"] in caption[0].all_text()
        details = [c for c in fig.children if c.tag == "details"]
        assert len(details) == 1
        tables = list(details[0].iter("table"))
        # its numbers: one table (a long one: its first rows, the rest folded in a second under the same headers)
        assert 1 <= len(tables) <= 2 and list(tables[0].iter("td")), "each figure has a table of its numbers"
    styles = list(tree.root.iter("style"))
    assert len(styles) == 1 and "@media print" in styles[0].all_text()
    return tree


def test_trace_page_structure_and_sections(tpl_report):
    tree = _check_page(tpl_report.html)
    heads = [h.all_text() for h in tree.root.iter("h3")]
    assert heads == ["Tail audit", "Concentration", "Temporal structure (PSD)", "Memory health",
                     "Over time and retrieval", "What a CTWM allocation would do"]
    card = next(e for e in tree.root.iter("div") if "card" in e.attrs.get("class", ""))
    audit = ctwm_cli.audit_trace(TPL, seed=1, bootstrap=20)  # the page states the audit's own verdict
    assert audit.verdict.verdict in card.all_text() and audit.verdict.reason in card.all_text()
    assert "v-inc" in card.attrs["class"] or "v-tpl" in card.attrs["class"] or "v-ln" in card.attrs["class"]
    assert f"{audit.power_law.alpha:.4f}" in card.all_text()


def test_every_figure_and_table_of_the_json_is_on_the_page(tpl_report):
    d = tpl_report.to_dict()
    figures = [f for s in d["sections"] for b in s["blocks"] for f in b["figures"]]
    # CCDF, concentration, PSD, health, τ sweep; and the sample's views: concentration and dead weight per window
    assert len(figures) == len(tpl_report.figures()) == 7
    assert [f["title"] for f in figures][4:6] == ["Concentration over time", "Dead weight over time"]
    tree = parse(tpl_report.html)
    labels = [e.attrs["aria-label"] for e in tree.root.iter("svg")]
    assert labels == [f["alt"] for f in figures]
    captions = [c.all_text() for c in tree.root.iter("caption")]
    for f in figures:
        assert f["table"]["caption"] in captions
    assert "svg" not in json.dumps(d)  # the drawings are not in the JSON, their numbers are


def test_page_numbers_are_the_commands_numbers(tpl_report):
    """The concentration table holds what ``concentration`` computes; the PSD table what ``psd`` prints."""
    from ctwm_cli.diagnostics import concentration_of_traces

    conc = concentration_of_traces([TPL]).rows[0]
    fig = next(f for f in tpl_report.figures() if f.key.endswith("-conc"))
    row = fig.table.to_dict()["rows"][0]
    assert row["gini"] == conc.gini and row["top10_share"] == conc.top10_share


def test_counts_table_page_says_what_it_cannot_show():
    rep = ctwm_cli.report(COUNTS, seed=2, bootstrap=10)
    _check_page(rep.html)
    notes = " ".join(rep.sections[0].notes)
    assert "no step column" in notes and "no memory-health events" in notes


def test_same_inputs_and_seed_give_the_same_bytes(tmp_path):
    a = ctwm_cli.report(COUNTS, seed=5, bootstrap=10, sweep="0.5:1.5:3").html
    b = ctwm_cli.report(COUNTS, seed=5, bootstrap=10, sweep="0.5:1.5:3").html
    c = ctwm_cli.report(COUNTS, seed=6, bootstrap=10, sweep="0.5:1.5:3").html
    assert a == b
    assert a != c  # the seed is on the page (and in the audit); the comparison can fail


def test_cli_writes_the_page_and_json_prints_what_it_shows(run_cli, tmp_path):
    out = tmp_path / "r.html"
    args = ["report", COUNTS, "-o", out, "-b", "10", "--seed", "3", "--sweep", "0.5:1.5:3", "--json"]
    res = run_cli(args)
    assert res.code == 0, res.err
    doc = json.loads(res.out)
    assert doc["command"] == "report" and doc["seed"] == 3 and doc["output"] == str(out)
    first = out.read_bytes()
    assert "seed: 3" in res.err and "rendering the page" in res.err and f"wrote {out}" in res.err
    text = parse(first.decode("utf-8")).root.all_text()
    for s in doc["sections"]:
        assert s["card"]["headline"] in text
        for k in s["card"]["fields"]:
            assert k in text
    assert run_cli(args).code == 0 and out.read_bytes() == first


@pytest.mark.parametrize(("args", "message"), [
    (["-o", "r.txt"], "must end in .html"),
    (["-o", "r.html", "--sweep", "2:1:3"], "--sweep"),
])
def test_cli_usage_errors(run_cli, tmp_path, args, message):
    res = run_cli(["report", COUNTS, *[str(tmp_path / a) if a.startswith("r.") else a for a in args]])
    assert res.code == 2 and message in res.err and "Traceback" not in res.err


def test_cli_never_overwrites_an_input(run_cli, tmp_path):
    src = tmp_path / "t.html"
    src.write_text("{}", encoding="utf-8")
    res = run_cli(["report", src, "-o", src])
    assert res.code == 2 and "never overwrites an input" in res.err
    assert src.read_text(encoding="utf-8") == "{}"


def test_stdin_is_refused(run_cli, tmp_path):
    res = run_cli(["report", "-", "-o", tmp_path / "r.html"], stdin=b'{"item": "a"}\n')
    assert res.code == 2 and "standard input" in res.err


def test_hostile_trace_renders_inert(tmp_path):
    d = tmp_path / "<svg onload=alert(3)>"
    d.mkdir()
    trace = d / "evil<script>.parquet"
    hostile_trace(trace)
    rep = ctwm_cli.report(str(trace), seed=1, bootstrap=10, sweep="0.5:1.5:3")
    page = rep.html
    tree = _check_page(page)
    tags = {e.tag for e in tree.root.iter()}
    assert not tags & {"script", "img", "b", "iframe", "object", "embed"}
    handlers = [(e.tag, k) for e in tree.root.iter() for k in e.attrs if k.startswith("on")]
    assert handlers == []
    assert "\x1b" not in page and "\\x1b[31mred" in page  # escapes shown, never passed through
    text = tree.root.all_text()
    assert "<script>alert(1)</script>" in text  # the id arrives as the characters it is made of
    core = next(t for f in [rep] for s in f.sections for b in s.blocks for t in b.tables if "core" in t.caption)
    assert [r[1] for r in core.rows[:3]] == list(HOSTILE_IDS[:3])


def test_inline_svg_prefixes_every_id_and_reference():
    raw = ('<?xml version="1.0"?>\n<!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" "http://www.w3.org/x.dtd">\n'
           '<svg width="1pt" xmlns="http://www.w3.org/2000/svg"><metadata>m</metadata><!-- a < b -->'
           '<defs><path id="g1"/><clipPath id="c1"/></defs><use xlink:href="#g1"/>'
           '<g clip-path="url(#c1)"/></svg>')
    out = inline_svg(raw, key="f0", alt='a "quoted" <finding>')
    assert out.startswith('<svg width="1pt" xmlns="http://www.w3.org/2000/svg" role="img" aria-label="a &quot;')
    assert 'id="f0-g1"' in out and 'xlink:href="#f0-g1"' in out and "url(#f0-c1)" in out
    assert "DOCTYPE" not in out and "metadata" not in out and "<!--" not in out
    assert "<title>a &quot;quoted&quot; &lt;finding&gt;</title>" in out
    with pytest.raises(ValueError, match="figure key"):
        inline_svg(raw, key='x" onload="y', alt="")


def test_grid_page(grid_dir):
    rep = ctwm_cli.report(grid_dir, seed=1, bootstrap=10)
    tree = _check_page(rep.html)
    s = rep.sections[0]
    assert s.kind == "grid" and s.card.headline.startswith("4 runs:")
    finite = next(f for f in rep.figures() if f.key.endswith("-finite"))
    assert [r[0] for r in finite.table.rows] == ["uniform", "scale-free"] or \
        sorted(r[0] for r in finite.table.rows) == ["scale-free", "uniform"]
    groups = next(f for f in rep.figures() if f.key.endswith("-groups"))
    assert len(groups.table.rows) == 4  # one audit per run (paper Fig. 4 layout)
    assert "Finite-size trend (paper Table 1)" in [h.all_text() for h in tree.root.iter("h3")]


@pytest.mark.slow
def test_a_54_group_grid_page_stays_under_600_kb(tmp_path):
    out = tmp_path / "g54"
    run_grid(out, sizes=[100, 500, 1000], seeds=[1, 2, 3], base=WorldConfig(steps=300), jobs=1)
    rep = ctwm_cli.report(str(out), seed=1, bootstrap=0)
    groups = next(f for f in rep.figures() if f.key.endswith("-groups"))
    assert len(groups.table.rows) == 54
    size = len(rep.html.encode("utf-8"))
    assert size < 600_000, size
    conc = next(f for f in rep.figures() if f.key.endswith("-conc"))
    assert "Drawn as the median of the 54 series" in conc.alt  # not 54 lines
    assert conc.svg.count("<path") < 400, conc.svg.count("<path")
    _check_page(rep.html)


def test_replay_page_from_the_run_directory_and_from_the_json(replay_dir):
    rep = ctwm_cli.report([str(replay_dir), str(replay_dir.with_name("result.json"))], seed=1)
    _check_page(rep.html)
    doc = json.loads((replay_dir / "result.json").read_text(encoding="utf-8"))
    for s in rep.sections:
        assert s.kind == "replay"
        block = next(b for b in s.blocks if b.title == "Paired deltas")
        # one table per comparison, a row per metric; each change with its interval read from the JSON
        pairs = list(dict.fromkeys((d["treatment"], d["baseline"]) for d in doc["comparisons"]))
        assert [t.caption.split(": ")[0] for t in block.tables] == [f"{t} against {b}" for t, b in pairs]
        assert sum(len(t.rows) for t in block.tables) == len(doc["comparisons"]) > 0
        cells = [r[t.columns.index("delta_interval")] for t in block.tables for r in t.rows]
        assert [(c.value, c.low, c.high) for c in cells] == [
            (d["delta"], (d["confidence_interval"] or {}).get("low"), (d["confidence_interval"] or {}).get("high"))
            for d in doc["comparisons"]]
        assert any(c.low is not None for c in cells)
        n_excl = [sum((d["confidence_interval"] or {}).get("low", 0) > 0 or (d["confidence_interval"] or {}).get(
            "high", 0) < 0 for d in doc["comparisons"] if (d["treatment"], d["baseline"]) == p) for p in pairs]
        assert [t.summary.split(" intervals")[0] for t in block.tables] == [
            f"{k} of {len(t.rows)}" for k, t in zip(n_excl, block.tables, strict=True)]
        arms = next(f for f in rep.figures() if f.key.startswith(f"s{rep.sections.index(s)}-arms"))
        assert [r[0] for r in arms.table.rows] == [a["arm"] for a in doc["arms"]]
    files = next(t for b in rep.sections[0].blocks for t in b.tables if t.caption == "Files")
    assert {r[0] for r in files.rows} == {"trace.parquet", "steps.parquet"}


def test_replay_directory_without_its_result_says_how_to_save_it(run_cli, replay_dir, tmp_path):
    bare = tmp_path / "bare"
    bare.mkdir()
    for name in ("manifest.json", "steps.parquet", "trace.parquet"):
        (bare / name).write_bytes((replay_dir / name).read_bytes())
    res = run_cli(["report", bare, "-o", tmp_path / "r.html"])
    assert res.code == 3 and "--json >" in res.err and "Traceback" not in res.err


def test_a_broken_replay_json_is_an_input_error(run_cli, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"command": "replay compare", "config": {"family": "<x>"}}), encoding="utf-8")
    res = run_cli(["report", bad, "-o", tmp_path / "r.html"])
    assert res.code == 3 and "not a complete replay result" in res.err


def test_hostile_strings_reach_no_terminal_as_control_characters(run_cli, tmp_path):
    trace = tmp_path / "evil\x1b[2J.parquet"
    hostile_trace(trace)
    for fmt in ("table", "json", "csv", "markdown"):
        res = run_cli(["report", trace, "-o", tmp_path / "r.html", "-b", "5", "--seed", "1", "--sweep", "none",
                       "--format", fmt])
        assert res.code == 0, res.err
        assert "\x1b" not in res.out and "\x1b" not in res.err
        assert "\\x1b[2J" in res.err  # the name is still shown, as the characters it is made of


def test_grouped_telemetry_page_has_health_per_run(tmp_path):
    """Two runs (the sample telemetry and a copy under another run id): the audit per run side by side, and
    memory health pooled plus one small multiple per run, each the numbers ``ctwm health --run`` prints."""
    from ctwm_cli.health import health_of_trace

    rows = [json.loads(line) for line in Path(TELEMETRY).read_text(encoding="utf-8").splitlines() if line.strip()]
    two = tmp_path / "two_runs.jsonl"
    two.write_text("".join(json.dumps({**r, "run": run}) + "\n" for run in ("agent-1", "agent-2") for r in rows),
                   encoding="utf-8")
    rep = ctwm_cli.report(str(two), group_by="run", seed=1, bootstrap=10, sweep=None, budget=1500)
    _check_page(rep.html)
    keys = [f.key for f in rep.figures()]
    assert "s0-groups" in keys and {"s0-health", "s0-health-0", "s0-health-1"} <= set(keys)
    per_run = next(f for f in rep.figures() if f.key == "s0-health-1")
    h = health_of_trace(str(two), budget=1500, run="agent-2")
    table = {r[0]: r[1] for r in per_run.table.rows}
    assert table["context_usage"] == h.metrics["context_usage"] and table["store_size"] == h.metrics["store_size"]
    assert "What a CTWM allocation would do" not in [b.title for b in rep.sections[0].blocks]  # sweep=None


def test_replay_pareto_page_and_mde_columns_when_the_result_carries_them(run_cli, tmp_path):
    res = run_cli(["replay", "pareto", "--size", "100", "--steps", "300", "--episodes", "1", "--seed", "3",
                   "--budget", "128:256:2", "--bootstrap", "20", "--block", "10", "--json"])
    assert res.code == 0, res.err
    doc = json.loads(res.out)
    saved = tmp_path / "pareto.json"
    saved.write_text(res.out, encoding="utf-8")
    rep = ctwm_cli.report(str(saved), seed=1)
    _check_page(rep.html)
    fig = next(f for f in rep.figures() if f.key.endswith("-pareto"))
    assert len(fig.table.rows) == len(doc["points"]) and fig.alt == doc["finding"]
    # a result that carries a minimum detectable effect per delta (replay results do, issue 28) gets the column,
    # showing the result's numbers; a result without one gets no column
    assert all("mde" in d for d in doc["comparisons"])
    deltas = next(b for b in rep.sections[0].blocks if b.title == "Paired deltas").tables
    pairs = list(dict.fromkeys((d["treatment"], d["baseline"]) for d in doc["comparisons"]))  # a table per pair
    assert [r[t.columns.index("mde")] for t in deltas for r in t.rows] == [
        d["mde"] for p in pairs for d in doc["comparisons"] if (d["treatment"], d["baseline"]) == p]
    without = {**doc, "comparisons": [{k: v for k, v in d.items() if "mde" not in k} for d in doc["comparisons"]]}
    saved.write_text(json.dumps(without), encoding="utf-8")
    rep2 = ctwm_cli.report(str(saved), seed=1)
    deltas = next(b for b in rep2.sections[0].blocks if b.title == "Paired deltas").tables
    assert deltas and not any("mde" in c for t in deltas for c in t.columns)


SHIPPED = ["tpl_events.jsonl.gz", "lognormal_events.parquet", "powerlaw_counts.jsonl", "world_semantic",
           "world_random-walk/trace.parquet", "telemetry/otel_spans.json", "telemetry/events.jsonl",
           "telemetry/mem0_history.json"]


def test_every_shipped_sample_trace_in_one_page():
    """Every reader's format (gzip JSONL, Parquet, a counts table, a world run directory, OTLP JSON spans, a Mem0
    export): one section each, a verdict card each, the health view where the trace has its events."""
    paths = [str(SAMPLES / p) for p in SHIPPED]
    rep = ctwm_cli.report(paths, seed=1, bootstrap=10, sweep="0.5:1.5:3")
    _check_page(rep.html)
    assert [s.kind for s in rep.sections] == ["trace"] * len(SHIPPED)
    verdicts = [s.card.verdict for s in rep.sections]
    assert all(v in ("tpl-compatible", "lognormal-compatible", "inconclusive") for v in verdicts[:-1])
    # a Mem0 export records no retrievals: no audit, said on its card, and its memory health all the same
    assert verdicts[-1] is None and "no retrieve or inject events" in rep.sections[-1].card.headline
    with_health = {Path(s.source).name for s in rep.sections if any(b.title == "Memory health" for b in s.blocks)}
    assert {"events.jsonl", "otel_spans.json", "mem0_history.json", "tpl_events.jsonl.gz"} <= with_health
    assert "powerlaw_counts.jsonl" not in with_health


def test_trace_page_shows_dead_weight_as_health_computes_it(run_cli):
    """The page's dead-weight table is ctwm health's own number (issue 27's metric on issue 31's page)."""
    trace = SAMPLES / "telemetry" / "events.jsonl"
    health = run_cli(["health", trace, "--json"])
    assert health.code == 0, health.err
    doc = json.loads(health.out)
    share = next(v for k, v in _walk(doc) if k == "dead_weight_share")
    rep = ctwm_cli.report(str(trace), seed=1)
    table = next(t for s in rep.sections for b in s.blocks for t in b.tables if t.caption.startswith("Dead weight"))
    from ctwm_cli.reporting.glossary import GLOSSARY

    rows = dict(table.rows)  # in the glossary's words: no raw key, no row of dashes
    assert rows[GLOSSARY["dead_weight_share"]] == pytest.approx(share)
    assert None not in rows.values() and not any("_" in k for k in rows)
    assert "Dead weight" in rep.html


def _walk(doc):
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield k, v
            yield from _walk(v)
    elif isinstance(doc, list):
        for v in doc:
            yield from _walk(v)
