"""``ctwm schema``: real outputs validate against the published schema; one field name per concept in every
format; seeded runs are byte-identical."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ctwm_cli.world.ladder import LadderRow

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


_REPLAYS = ("replay", "replay ablation", "replay compare", "replay pareto")
_KEY_VALUE = ("a component's own parameters by their own names (the tiered policy's --tiered KEY=VALUE, the graph "
              "family's, the world builder's, an endpoint's settings), checked where they are set")
#: maps keyed by data, not by field names (their keys are family, event, column or policy names a run brings): the
#: allow-list does not look their keys up in the glossary, only the keys inside their values. A path is the JSON
#: path (``[]`` a list's items, ``*`` a data key); each must occur in its command's real output (so the list stays
#: true)
DATA_KEYED: dict[tuple[str, str], str] = {
    ("audit", "results[].alternatives"): "one entry per alternative family fitted (the --families names)",
    ("audit", "results[].alternatives.*.params"): "the family's own parameter names (lambda, mu, kappa, alpha1, ...)",
    ("audit", "results[].alternatives.*.se"): "the family's own parameter names",
    ("audit", "results[].alternatives.*.at_bound"): "the family's own parameter names",
    ("audit", "results[].fit_checks"): "one entry per family whose fit was checked",
    ("audit", "results[].fit_checks.*.null_quantiles"): "quantile levels of a null distribution (q50, q90, q99)",
    ("audit", "results[].gof.null_quantiles"): "quantile levels of a null distribution (q50, q90, q99)",
    ("bench longmemeval", "question_types"): "one entry per question type of the data set",
    ("concentration", "definitions"): "one definition (a string) per concentration metric, by the metric's name",
    ("health", "retrieval.stale_by_reason"): "one count per reason a hit was stale (superseded, archived, ...)",
    ("import mem0", "events"): "rows written per event kind",
    ("import otel", "events"): "rows written per event kind",
    ("import openinference", "events"): "rows written per event kind",
    ("import openinference", "id_sources"): "the span attribute an item id was read from (metadata, output.value)",
    ("inspect", "results[].events"): "rows per event kind",
    ("inspect", "results[].mapping"): "one entry per column role the trace holds (item, step, run, ...)",
    ("inspect", "results[].mapping_origins"): "one entry per column role the trace holds",
    ("replay pareto", "tokens_non_decreasing"): "one entry per policy label (ctwm(tau=1), graph, ...)",
    ("report", "sections[].card.fields"): "the card's display labels (α ± se, bootstrap B, ...)",
    ("report", "sections[].blocks[].figures[].table.rows[]"): "a table row keyed by its table's columns",
    ("report", "sections[].blocks[].tables[].rows[]"): "a table row keyed by its table's columns",
    **{(c, f"config.{k}"): _KEY_VALUE for c in _REPLAYS
       for k in ("tiered", "agent_params", "graph_params", "world_params", "predictor_params")},
}
#: field names the real output prints that are not glossed, by name, with why: a synonym of a canonical name
#: (tests/test_vocabulary.py's FORBIDDEN) or a key with two meanings. Renaming them is a JSON change (issue 43);
#: the list may only shrink. (Issue-43a renames the audit's ``label``, ``n`` and status ``interval`` meanwhile: those
#: are glossed today and left to it.)
NOT_GLOSSED: dict[tuple[str, str], str] = {
    ("report", "rows"): "a report table's rows: the banned synonym rows (results, or n_rows)",
    ("health", "hot"): "two meanings: the hot-list section (an object) and its list of hot items",
}
#: keys that hold two kinds of value across the real outputs beyond tests/test_vocabulary.py's TWO_MEANINGS (which
#: walks the schemas): found by this walk, glossed or not; the list may only shrink
REAL_TWO_MEANINGS = {
    "core_items": "psd: how many top-decile items the core series counts (a number); simulate: their ids (a list)",
    "failures": "health: the failure-attribution section (an object); simulate: the τ where a check failed (a list)",
    "hot": "health: the hot-list section (an object) and its hot items (a list)",
}

_DOCS: dict[str, dict] = {}  # command -> its real --json document, one run per command per test process


def _real(run_cli, counts, command: str) -> dict:
    if command not in _DOCS:
        res = run_cli([*CASES[command](counts), "--json"])
        assert res.code == 0, res.err
        _DOCS[command] = json.loads(res.out)
    return _DOCS[command]


def _walk(command: str, doc: Any, seen: set[str] | None = None) -> Iterator[tuple[str, str]]:
    """(path, key) of every key of a real document outside a data-keyed map's own keys; ``seen`` collects the
    data-keyed paths met."""
    stack: list[tuple[str, Any]] = [("", doc)]
    while stack:
        path, node = stack.pop()
        if isinstance(node, list):
            stack += [(f"{path}[]", v) for v in node]
        elif isinstance(node, dict):
            keyed = (command, path) in DATA_KEYED
            if keyed and seen is not None:
                seen.add(path)
            for key, value in node.items():
                if not keyed:
                    yield path, key
                stack.append((f"{path}.{'*' if keyed else key}".lstrip("."), value))


def unglossed_real_keys(command: str, doc: Any, terms: dict[str, str]) -> set[tuple[str, str]]:
    """The allow-list on a real document: (path, key) pairs no glossary entry explains, outside data-keyed maps and
    the NOT_GLOSSED list."""
    from ctwm_cli.cli.schemas import meaning

    return {(p, k) for p, k in _walk(command, doc) if meaning(k, terms) is None and (command, k) not in NOT_GLOSSED}


@pytest.mark.parametrize("command", sorted(CASES))
def test_real_output_validates_against_ctwm_schema(run_cli, counts, command):
    """The real document validates against ``ctwm schema``, and every key it prints is glossed (the allow-list over
    what the command really prints, including keys only a hand-written to_dict() writes)."""
    from ctwm_cli.cli.schemas import glossary

    schema = _schema(run_cli, command)
    doc = _real(run_cli, counts, command)
    jsonschema.validate(doc, schema, cls=jsonschema.Draft202012Validator)
    assert doc["command"] == command
    bad = sorted(unglossed_real_keys(command, doc, glossary()))
    assert not bad, (f"ctwm {command} --json prints keys no glossary entry explains (path, key): {bad}; add a "
                     "one-line meaning to ctwm_cli/common/glossary.tsv, or declare a data-keyed map in DATA_KEYED")


def test_the_real_output_allow_list_can_fail():
    """A throwaway key fails wherever it sits, a data key passes only inside a declared data-keyed map, and a
    throwaway command has no data-keyed map at all."""
    from ctwm_cli.cli.schemas import glossary

    terms = glossary()
    doc = {"command": "audit", "frobnicity": 1, "results": [{"alternatives": {"lognormal": {"wibble": 2}},
                                                             "gof": {"lognormal": 3}}]}
    assert unglossed_real_keys("audit", doc, terms) == {("", "frobnicity"), ("results[].alternatives.*", "wibble"),
                                                         ("results[].gof", "lognormal")}
    assert ("results[].alternatives", "lognormal") in unglossed_real_keys("throwaway", doc, terms)
    assert unglossed_real_keys("throwaway", {"rows": [], "wibbles": 0}, terms) == {("", "rows"), ("", "wibbles")}


def _kind(value: Any) -> str | None:
    kinds = ((bool, "boolean"), ((int, float), "number"), (str, "string"), (list, "array"), (dict, "object"))
    return next((name for tp, name in kinds if isinstance(value, tp)), None)  # None: null, any kind


def _real_kinds(command: str, doc: Any, kinds: dict[str, set[str]]) -> None:
    """Add the kind of value each key holds in a real document (keys of data-keyed maps left out)."""
    stack: list[tuple[str, Any]] = [("", doc)]
    while stack:
        path, node = stack.pop()
        if isinstance(node, list):
            stack += [(f"{path}[]", v) for v in node]
        elif isinstance(node, dict):
            keyed = (command, path) in DATA_KEYED
            for key, value in node.items():
                if not keyed and _kind(value):
                    kinds.setdefault(key, set()).add(_kind(value))
                stack.append((f"{path}.{'*' if keyed else key}".lstrip("."), value))


def _schema_keys(schema: Any) -> Iterator[str]:
    if isinstance(schema, dict):
        for key, sub in schema.get("properties", {}).items():
            yield key
            yield from _schema_keys(sub)
        for sub in [schema.get("items"), schema.get("additionalProperties"), *schema.get("anyOf", []),
                    *schema.get("prefixItems", [])]:
            yield from _schema_keys(sub)


@pytest.mark.slow
def test_the_real_output_lists_and_the_glossary_are_current(run_cli, counts):
    """Every DATA_KEYED path and NOT_GLOSSED key still occurs in its command's real output, every glossary entry is
    printed by some command (in its schema or its real output), and no key holds two kinds of value in the real
    outputs beyond the known lists: the lists only shrink, the glossary holds no stale entry. Reuses the documents
    the validation test ran (one run per command)."""
    from ctwm_cli.cli.schemas import command_schema, commands, glossary

    from test_vocabulary import TWO_MEANINGS

    seen: set[tuple[str, str]] = set()
    kinds: dict[str, set[str]] = {}
    printed = {k for c in commands() for k in _schema_keys(command_schema(c))}
    for command in CASES:
        paths: set[str] = set()
        keys = {k for _, k in _walk(command, _real(run_cli, counts, command), paths)}
        seen |= {(command, p) for p in paths} | {(command, k) for k in keys}
        printed |= keys
        _real_kinds(command, _real(run_cli, counts, command), kinds)
    two = {k for k, v in kinds.items() if len(v) > 1}
    new = two - TWO_MEANINGS - set(REAL_TWO_MEANINGS)
    assert new == set(), f"a key holds one kind of value: name the new one otherwise: {sorted(new)}"
    assert set(REAL_TWO_MEANINGS) - two == set(), "fixed, so remove from REAL_TWO_MEANINGS"
    assert set(DATA_KEYED) - seen == set(), "not printed any more: remove from DATA_KEYED"
    assert set(NOT_GLOSSED) - seen == set(), "renamed or gone: remove from NOT_GLOSSED"
    stale = {k for k in glossary() if not k.startswith("*_") and k not in printed}
    assert stale == set(), f"no command prints these: remove them from the glossary: {sorted(stale)}"


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



@dataclasses.dataclass(frozen=True)
class _Hidden:  # a throwaway result with its own to_dict() and a non-scalar field
    rows: tuple[LadderRow, ...]
    n: int

    def to_dict(self):
        return {}


@dataclasses.dataclass(frozen=True)
class _Declared(_Hidden):  # the same, naming the field its to_dict() writes as typed
    json_fields: ClassVar[tuple[str, ...]] = ("rows",)

    def to_dict(self):
        return {}


def test_a_non_scalar_field_of_an_own_to_dict_result_is_published_when_declared():
    """A result with its own to_dict() publishes only its scalar fields, plus the non-scalar ones it names in
    ``json_fields``: ``world ladder``'s per-rung list was dropped, so the ban on ``rows`` never saw it."""
    from ctwm_cli.cli.schemas import _object_schema, command_schema

    assert set(_object_schema(_Hidden, set())["properties"]) == {"n"}
    declared = _object_schema(_Declared, set())["properties"]
    assert set(declared) == {"n", "rows"} and "gini_vs_state_frequency" in declared["rows"]["items"]["properties"]
    ladder = command_schema("world ladder")["properties"]
    assert "results" in ladder and "rows" not in ladder
