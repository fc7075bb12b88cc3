"""Tables for people (issue 24): the documented example commands (README, docs/guide) rendered at 80 columns
(a pipe, COLUMNS=80) cut no number — no ellipsis, no number split across lines: every number of the same
command rendered 400 columns wide appears whole at 80 — and no line is wider than 80. Piped output with
COLUMNS unset is 80 wide."""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ctwm_cli.cli import main

SEM = "sample_traces/world_semantic/trace.parquet"
RW = "sample_traces/world_random-walk/trace.parquet"
NUMBER = re.compile(r"[-+]?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?")


@pytest.fixture(scope="module")
def groups54(tmp_path_factory):
    """54 runs, as `ctwm world grid` writes (the grouped audit whose summary took 375 lines)."""
    rng = np.random.default_rng(0)
    items, runs = [], []
    for r in range(54):
        for i, n in enumerate(np.minimum(rng.zipf(2.0 if r % 4 else 1.7, 300), 40)):
            items += [f"m{i}"] * int(n)
            runs += [f"family={r // 9}/size={r % 9}/seed=42"] * int(n)
    path = tmp_path_factory.mktemp("g") / "grid.parquet"
    pq.write_table(pa.table({"item": items, "run": runs}), path)
    return path


#: the documented examples (README, docs/guide), with smaller bootstrap/steps so the test runs in seconds
EXAMPLES = [
    ["inspect", "sample_traces/tpl_events.parquet"],
    ["audit", SEM, "--seed", "1", "-b", "30"],
    ["audit", "{groups}", "--group-by", "run", "-b", "0", "--seed", "1"],
    ["concentration", "{groups}", "--group-by", "run"],
    ["concentration", SEM, "sample_traces/tpl_events.parquet"],
    ["psd", SEM, "--series", "core"],
    ["simulate", "--tau", "1.0", "--items", "1000", "--core", "10", "--budget", "512"],
    ["simulate", "--sweep", "0.25:2.0:7"],
    ["simulate", "--trace", "sample_traces/powerlaw_counts.parquet", "--tau", "0.25:2.0:7", "-K", "10", "-B", "64"],
    ["world", "ladder", "--seed", "42", "--steps", "2000", "--size", "100"],
    ["xmin-path", "--seed", "1"],
    ["replay", "--seed", "42", "--steps", "300", "--episodes", "2"],
    ["health", "sample_traces/telemetry/events.jsonl", "--objects", "sample_traces/telemetry/objects.jsonl",
     "--budget", "1500"],
    ["diff", RW, SEM, "--tol", "gini=0.02", "--seed", "1", "-b", "30"],
]


def _render(args, columns, capsys, monkeypatch) -> str:
    monkeypatch.setenv("COLUMNS", str(columns))
    monkeypatch.delenv("CTWM_DEBUG", raising=False)
    capsys.readouterr()
    code = main(args)
    out = capsys.readouterr().out
    assert code in (0, 1), (args, code)
    return out


def cut_numbers(wide: str, narrow: str) -> list[str]:
    """Numbers of ``wide`` that do not appear whole in ``narrow`` (an ellipsis, a fold, a wrap inside one)."""
    have = set(NUMBER.findall(narrow))
    return sorted({n for n in NUMBER.findall(wide) if n not in have})


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda a: " ".join(a[:2]))
def test_no_number_is_cut_at_80_columns(example, groups54, capsys, monkeypatch):
    args = [a.replace("{groups}", str(groups54)) for a in example]
    wide = _render(args, 400, capsys, monkeypatch)
    narrow = _render(args, 80, capsys, monkeypatch)
    assert "…" not in narrow
    assert not cut_numbers(wide, narrow)
    assert max(len(line) for line in narrow.splitlines()) <= 80


def test_the_detector_sees_a_cut_number():
    assert cut_numbers("│ 38,312 │ 0.03865 │", "│ 38,3… │ 0.03 │\n│      │ 865  │") == ["0.03865", "38,312"]


def test_grouped_outputs_summarise_first(groups54, capsys, monkeypatch):
    monkeypatch.chdir(groups54.parent)  # as `ctwm audit grid_out/` names its groups: relative to the cwd
    out = _render(["audit", groups54.name, "--group-by", "run", "-b", "0", "--seed", "1"], 80, capsys, monkeypatch)
    first = out.splitlines()[0]
    assert re.match(r"54 groups: \d+ [a-z-]+(, \d+ [a-z-]+)*\.", first), first  # the lead paragraph's tally
    assert len(out.splitlines()) < 200  # issue 24: 375 lines, its header wrapped as "verdic/t"
    assert "verdict" in out
    conc = _render(["concentration", groups54.name, "--group-by", "run"], 80, capsys, monkeypatch)
    assert conc.splitlines()[0].startswith("54 groups: Gini ")


def test_piped_tables_are_80_wide_unless_columns_says_otherwise():
    env_code = "import os; os.environ.pop('COLUMNS', None); from ctwm_cli.cli import main; main(%r)"
    args = ["concentration", SEM, "sample_traces/tpl_events.parquet"]
    out = subprocess.run([sys.executable, "-c", env_code % args], capture_output=True, text=True, timeout=300,
                         check=True).stdout
    assert max(len(line) for line in out.splitlines()) <= 80
