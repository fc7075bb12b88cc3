"""``ctwm schema``: real outputs validate against the published schema; one field name per concept in every
format; seeded runs are byte-identical."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

jsonschema = pytest.importorskip("jsonschema")

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = str(ROOT / "sample_traces" / "tpl_events.parquet")
WORLD = str(ROOT / "sample_traces" / "world_semantic" / "trace.parquet")
OTEL = str(ROOT / "sample_traces" / "telemetry" / "otel_spans.json")
MEM0 = str(ROOT / "sample_traces" / "telemetry" / "mem0_history.json")
OPENINF = str(ROOT / "sample_traces" / "telemetry" / "openinference_spans.json")
LME = str(ROOT / "sample_traces" / "longmemeval" / "longmemeval_synthetic.json")


@pytest.fixture(scope="module")
def counts(tmp_path_factory):
    rng = np.random.default_rng(2)
    c = rng.zipf(2.1, 2000)
    path = tmp_path_factory.mktemp("s") / "c.parquet"
    pq.write_table(pa.table({"item": [f"m{i}" for i in range(c.size)], "run": ["a", "b"] * (c.size // 2), "count": c}),
                   path)
    return str(path)


def _schema(run_cli, command):
    res = run_cli(["schema", command])
    assert res.code == 0, res.err
    schema = json.loads(res.out)
    jsonschema.Draft202012Validator.check_schema(schema)
    return schema


CASES = {
    "audit": lambda c: ["audit", c, "--group-by", "run", "-b", "20", "--seed", "1", "--fail-on", "alpha>9"],
    "concentration": lambda c: ["concentration", c, "--group-by", "run"],
    "psd": lambda c: ["psd", WORLD],
    "finite-size": lambda c: ["finite-size", f"{c}:100", f"{SAMPLE}:500"],
    "health": lambda c: ["health", OTEL, "--budget", "1000", "--fail-on", "stale_hit_share?>0.9"],
    "inspect": lambda c: ["inspect", c, SAMPLE],
    "simulate": lambda c: ["simulate", "--trace", c, "--tau", "1"],
    "replay": lambda c: ["replay", "--size", "100", "--steps", "60", "--seeds", "1", "--seed", "3", "--bootstrap", "0"],
    "replay compare": lambda c: ["replay", "compare", "--size", "100", "--steps", "60", "--seeds", "2", "--seed", "3",
                                 "--bootstrap", "20"],
    "import otel": lambda c: ["import", "otel", OTEL, "-o", str(Path(c).with_name("otel.parquet"))],
    "world run": lambda c: ["world", "run", "--out", str(Path(c).with_name("world")), "--size", "100", "--steps", "300",
                            "--seed", "1", "--overwrite"],
    "world grid": lambda c: ["world", "grid", "--out", str(Path(c).with_name("grid")), "--family", "uniform",
                             "--size", "100", "--steps", "300", "--seed", "1", "--jobs", "1", "--overwrite"],
    "world ladder": lambda c: ["world", "ladder", "--size", "100", "--steps", "300", "--seed", "1"],
    "replay ablation": lambda c: ["replay", "ablation", "--size", "100", "--steps", "60", "--episodes", "1",
                                  "--seed", "3", "--bootstrap", "0"],
    "replay pareto": lambda c: ["replay", "pareto", "--size", "100", "--steps", "60", "--episodes", "1", "--seed", "3",
                                "--budget", "128:256:2", "--bootstrap", "0"],
    "bench longmemeval": lambda c: ["bench", "longmemeval", LME, "--seed", "1", "--bootstrap", "20", "--limit", "3"],
    "import mem0": lambda c: ["import", "mem0", MEM0, "-o", str(Path(c).with_name("mem0.parquet"))],
    "import openinference": lambda c: ["import", "openinference", OPENINF, "-o", str(Path(c).with_name("oi.parquet"))],
    "report": lambda c: ["report", c, "-o", str(Path(c).with_name("report.html")), "-b", "10", "--seed", "1"],
    "xmin-path": lambda c: ["xmin-path", "--sweep", "0.5:2:2", "--items", "300", "--events", "5000", "--replicates",
                            "1", "--seed", "1"],
}
#: commands with --json whose real output needs more than one command line here, and why
NOT_RUN = {
    "bench report": "reads saved bench results (tests/test_bench_cli.py builds them)",
    "bench textworld": "needs the textworld extra and generated games (tests/test_bench_textgames.py)",
    "check": "runs other commands from a ctwm.toml (tests/test_cli_reporters.py)",
    "diff": "compares two saved results (tests/test_cli_reporters_baseline.py)",
    "model serve": "starts a model server (tests/test_local_model.py)",
    "replay frozen": "replays a saved run directory (tests/test_replay_frozen.py)",
}


def test_every_command_with_json_output_is_validated_or_says_why_not():
    from ctwm_cli.cli.schemas import commands

    assert set(commands()) == set(CASES) | set(NOT_RUN)
    assert not set(CASES) & set(NOT_RUN)


@pytest.mark.parametrize("command", sorted(CASES))
def test_real_output_validates_against_ctwm_schema(run_cli, counts, command):
    schema = _schema(run_cli, command)
    res = run_cli([*CASES[command](counts), "--json"])
    assert res.code == 0, res.err
    doc = json.loads(res.out)
    jsonschema.validate(doc, schema, cls=jsonschema.Draft202012Validator)
    assert doc["command"] == command


def test_the_schema_can_fail(run_cli, counts):
    """A document that breaks the contract is rejected (the schema is not just {"type": "object"})."""
    schema = _schema(run_cli, "audit")
    doc = json.loads(run_cli(["audit", counts, "-b", "0", "--seed", "1", "--json"]).out)
    validator = jsonschema.Draft202012Validator(schema)
    assert validator.is_valid(doc)
    for broken in (
        {**doc, "command": "psd"},
        {k: v for k, v in doc.items() if k != "results"},
        {**doc, "results": [{**doc["results"][0], "n_items": "many"}]},
        {**doc, "results": [{**doc["results"][0], "verdict": {**doc["results"][0]["verdict"], "verdict": 3}}]},
    ):
        assert not validator.is_valid(broken)


def test_every_schema_command_prints_a_valid_schema(run_cli):
    from ctwm_cli.cli.schemas import commands

    for command in commands():
        _schema(run_cli, command)


def test_jsonl_and_csv_use_the_json_row_names(run_cli, counts):
    base = ["audit", counts, "--group-by", "run", "-b", "10", "--seed", "4"]
    lines = [json.loads(x) for x in run_cli([*base, "--format", "jsonl"]).out.splitlines()]
    assert [(row["schema_version"], row["seed"]) for row in lines] == [(3, 4), (3, 4)]
    header = next(csv.reader(io.StringIO(run_cli([*base, "--format", "csv"]).out)))
    assert header == [k for k in lines[0] if k not in ("schema_version", "seed")]
    audits = json.loads(run_cli([*base, "--json"]).out)["results"]
    for row, audit in zip(lines, audits, strict=True):
        assert row["source"] == audit["source"] and row["distinct_values"] == audit["distinct_values"]
        assert row["p_gof"] == audit["gof"]["pvalue"] and row["n_items"] == audit["n_items"]


def test_seeded_audit_json_is_byte_identical(run_cli, counts):
    args = ["audit", counts, "--group-by", "run", "-b", "30", "--seed", "9", "--calibrate", "3", "--json"]
    first, second = run_cli(args).out, run_cli(args).out
    assert first == second and '"seed": 9' in first


def test_concentration_rows_are_the_json_rows(run_cli, counts):
    base = ["concentration", counts, "--group-by", "run"]
    rows = json.loads(run_cli([*base, "--json"]).out)["results"]
    lines = [json.loads(x) for x in run_cli([*base, "--format", "jsonl"]).out.splitlines()]
    assert lines == [{"schema_version": 3, "seed": None, **r} for r in rows]


def test_seeded_replay_compare_json_is_byte_identical(run_cli):
    args = ["replay", "compare", "--size", "100", "--steps", "60", "--seeds", "2", "--seed", "3", "--bootstrap", "20",
            "--json"]
    first, second = run_cli(args).out, run_cli(args).out
    assert first == second and '"seed": 3' in first


def test_seeded_world_json_is_byte_identical_and_timings_go_to_stderr(run_cli, tmp_path):
    """Wall-clock fields (steps/s, grid seconds) stay on the objects but out of the JSON."""
    run = ["world", "run", "--size", "100", "--steps", "300", "--seed", "5", "--out", tmp_path / "r", "--json"]
    grid = ["world", "grid", "--family", "uniform", "--size", "100", "--steps", "300", "--seed", "5", "--jobs", "1",
            "--out", tmp_path / "g", "--json"]
    for args in (run, grid):
        first = run_cli(args)
        second = run_cli([*args, "--overwrite"])
        assert first.code == second.code == 0, second.err
        assert first.out == second.out and '"seed": 5' in first.out
        assert "seconds" not in first.out and "steps_per_second" not in first.out
        assert "time:" in first.err


def test_seeded_bench_longmemeval_json_is_byte_identical(run_cli):
    fixture = str(Path(__file__).resolve().parents[1] / "sample_traces" / "longmemeval" / "longmemeval_synthetic.json")
    args = ["bench", "longmemeval", fixture, "--seed", "4", "--bootstrap", "50", "--json"]
    first, second = run_cli(args), run_cli(args)
    assert first.code == second.code == 0, first.err
    assert first.out == second.out and '"seed": 4' in first.out
