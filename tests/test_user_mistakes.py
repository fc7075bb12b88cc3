"""What a newcomer does with their own agent logs, and what ctwm must answer (issue 41).

Each case builds real files (pyarrow, pandas, plain JSON lines) in a fresh directory and runs the real CLI or
notebook function. It asserts either the exact numbers, computed independently from the same rows with pandas,
or a one-line error with its documented exit code (2 usage, 3 input) and a hint that names the fix. No case may
end in exit 0 with a wrong number.
"""

from __future__ import annotations

import gzip
import json
import warnings
from collections import Counter

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.orc as orc
import pyarrow.parquet as pq
import pytest

from ctwm_cli import read_trace
from ctwm_cli.common.errors import InputError, UsageError
from ctwm_cli.traces.column_checks import CountsLikeWarning

RNG = np.random.default_rng(41)
IDS = [f"m{k}" for k in np.minimum(RNG.zipf(1.8, 400), 60)]
EVENTS = pd.DataFrame({
    "memory_id": IDS,
    "agent_step": np.arange(len(IDS)),
    "session": [f"s{i % 3}" for i in range(len(IDS))],
    "kind": ["write" if i % 10 == 0 else "retrieve" for i in range(len(IDS))],
    "position": [1 + i % 4 for i in range(len(IDS))],
    "sim": np.linspace(0.1, 0.9, len(IDS)),
})
RETRIEVED = EVENTS[EVENTS.kind == "retrieve"]
COUNTS = EVENTS.memory_id.value_counts()


def write(path, frame: pd.DataFrame):
    """``frame`` as the file ``path`` says (Parquet, JSONL, CSV, ORC)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    name = path.name
    if name.endswith(".parquet"):
        pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path)
    elif name.endswith(".orc"):
        orc.write_table(pa.Table.from_pandas(frame, preserve_index=False), str(path))
    elif name.endswith(".csv"):
        frame.to_csv(path, index=False)
    else:
        text = "".join(json.dumps(r) + "\n" for r in json.loads(frame.to_json(orient="records")))
        path.write_bytes(gzip.compress(text.encode()) if name.endswith(".gz") else text.encode())
    return path


def counts_table(series: pd.Series) -> pd.DataFrame:
    return pd.DataFrame({"item": series.index.astype(str), "n": series.to_numpy()})


def cli_counts(run_cli, *args) -> dict[str, int]:
    """Per-item counts as ``ctwm concentration --json`` reads them (n_items, n_events) plus ``inspect``'s rows."""
    res = run_cli(["inspect", *args, "--json"])
    assert res.code == 0, res.err
    (doc,) = json.loads(res.out)["results"]
    return doc


def expect_counts(run_cli, args, counts: Counter | pd.Series, rows: int | None = None):
    doc = cli_counts(run_cli, *args)
    counts = Counter(dict(counts))
    events = {k: v for k, v in doc["events"].items() if k in ("retrieve", "inject")}
    assert doc["n_items"] >= len(counts)
    assert sum(events.values()) == sum(counts.values())
    if rows is not None:
        assert doc["n_rows"] == rows
    res = run_cli(["concentration", *args, "--json"])
    assert res.code == 0, res.err
    (c,) = json.loads(res.out)["results"]
    assert (c["n_items"], c["n_events"]) == (len(counts), sum(counts.values()))
    return doc


def expect_error(run_cli, args, code: int, *needles: str):
    res = run_cli(args)
    assert res.code == code, (res.code, res.err)
    lines = [ln for ln in res.err.splitlines() if ln.startswith("ctwm: error:")]
    assert len(lines) == 1 and "Traceback" not in res.err, res.err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


# -- 1. every column flag is checked -------------------------------------------------------------------------

FLAG_TYPOS = [  # (flag, typo, the column it should have named)
    ("--step-col", "agent_stepp", "agent_step"),
    ("--run-col", "sesion", "session"),
    ("--event-col", "kindd", "kind"),
    ("--count-col", "nn", None),
]


@pytest.mark.parametrize("suffix", [".parquet", ".jsonl", ".csv"])
@pytest.mark.parametrize(("flag", "typo", "close"), FLAG_TYPOS)
def test_a_typo_in_a_column_flag_is_exit_3_naming_flag_and_column(tmp_path, run_cli, suffix, flag, typo, close):
    path = write(tmp_path / f"log{suffix}", EVENTS)
    line = expect_error(run_cli, ["concentration", path, "--item-col", "memory_id", flag, typo], 3,
                        f"{flag} {typo!r}: no such column", "'memory_id'")
    if close:
        assert f"did you mean {close!r}?" in line


@pytest.mark.parametrize(("field", "typo", "close"), [
    ("rank", "positon", "position"), ("score", "simm", "sim"), ("tokens", "tokns", None), ("ts", "time", None)])
def test_a_typo_in_col_is_exit_3(tmp_path, run_cli, field, typo, close):
    path = write(tmp_path / "log.parquet", EVENTS)
    line = expect_error(run_cli, ["inspect", path, "--item-col", "memory_id", "--col", f"{field}={typo}"], 3,
                        f"--col {field}={typo!r}: no such column")
    assert (f"did you mean {close!r}?" in line) == bool(close)


def test_item_col_typo_names_the_likely_column(tmp_path, run_cli):
    path = write(tmp_path / "log.jsonl", EVENTS)
    expect_error(run_cli, ["audit", path, "--item-col", "memory"], 3, "missing column 'memory'",
                 "--item-col memory_id")


def test_no_item_column_names_the_id_column(tmp_path, run_cli):
    expect_error(run_cli, ["inspect", write(tmp_path / "log.parquet", EVENTS)], 3, "missing column 'item'",
                 "--item-col memory_id")


@pytest.mark.parametrize(("args", "needle"), [
    (["--col", "rnak=position"], "did you mean rank?"),
    (["--col", "position"], "--col expects FIELD=SOURCE"),
    (["--col", "step=agent_step", "--step-col", "agent_step"], "give one"),
    (["--step-col", "memory_id"], "mapped to more than one trace field: memory_id"),
])
def test_contradictory_or_malformed_remapping_is_a_usage_error(tmp_path, run_cli, args, needle):
    path = write(tmp_path / "log.parquet", EVENTS)
    expect_error(run_cli, ["inspect", path, "--item-col", "memory_id", *args], 2, needle)


def test_a_misspelt_flag_is_exit_2_with_the_right_spelling(tmp_path, run_cli):
    path = write(tmp_path / "log.parquet", EVENTS)
    expect_error(run_cli, ["inspect", path, "--item-column", "memory_id"], 2, "--item-col")


def test_the_issue_cases_on_the_sample_traces(run_cli):
    expect_error(run_cli, ["concentration", "sample_traces/tpl_events.parquet", "--event-col", "evnt"], 3,
                 "--event-col 'evnt'", "did you mean 'event'?")
    expect_error(run_cli, ["concentration", "sample_traces/powerlaw_counts.parquet", "--count-col", "nope"], 3,
                 "--count-col 'nope'")


def test_the_right_flags_give_pandas_numbers(tmp_path, run_cli):
    path = write(tmp_path / "log.parquet", EVENTS)
    doc = expect_counts(run_cli, [path, "--item-col", "memory_id", "--event-col", "kind", "--step-col",
                                  "agent_step", "--run-col", "session"], RETRIEVED.memory_id.value_counts())
    assert doc["events"] == {"retrieve": len(RETRIEVED), "write": len(EVENTS) - len(RETRIEVED)}
    assert (doc["step_min"], doc["step_max"], doc["runs"]) == (0, len(EVENTS) - 1, 3)


# -- counts under another name ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["n", "hits", "freq", "count_", "access_count"])
@pytest.mark.parametrize("suffix", [".parquet", ".jsonl"])
def test_a_counts_table_under_another_name_warns_to_count_col(tmp_path, run_cli, name, suffix):
    table = counts_table(COUNTS).rename(columns={"n": name})
    path = write(tmp_path / f"counts{suffix}", table)
    with warnings.catch_warnings():
        warnings.simplefilter("always", CountsLikeWarning)  # shown on stderr, as outside the test suite
        res = run_cli(["concentration", path, "--json"])
    assert res.code == 0
    assert f"column {name!r} looks like the count per item: if so, read it with --count-col {name}" in res.err
    expect_counts(run_cli, [path, "--count-col", name], COUNTS)  # and with the flag, the right numbers


def test_an_events_table_of_once_each_items_without_a_count_column_does_not_warn(tmp_path):
    table = pa.table({"item": [f"m{i}" for i in range(50)], "step": list(range(50))})
    with warnings.catch_warnings():
        warnings.simplefilter("error", CountsLikeWarning)
        assert read_trace(table)[0].n_events == 50


def test_a_non_integer_n_column_is_no_counts_hint(tmp_path):
    table = pa.table({"item": ["a", "b", "c"], "n": [0.5, 1.5, 2.5]})
    with warnings.catch_warnings():
        warnings.simplefilter("error", CountsLikeWarning)
        assert read_trace(table)[0].n_events == 3


# -- 2. folders and globs ----------------------------------------------------------------------------------------


def rotated(root):
    """November's log as Parquet and three daily JSONL logs, same columns (the issue's folder)."""
    write(root / "2026-11.parquet", EVENTS.iloc[:7])
    for d, (lo, hi) in enumerate([(7, 140), (140, 300), (300, len(EVENTS))], 1):
        write(root / f"2026-12-0{d}.jsonl", EVENTS.iloc[lo:hi])
    return root


def test_a_folder_of_rotated_logs_in_two_formats_is_one_table(tmp_path, run_cli):
    root = rotated(tmp_path / "logs")
    doc = expect_counts(run_cli, [root, "--item-col", "memory_id", "--event-col", "kind"],
                        RETRIEVED.memory_id.value_counts(), rows=len(EVENTS))
    assert doc["format"] == "parquet-dataset+jsonl"


def test_the_same_files_as_a_glob_are_the_same_table(tmp_path, run_cli):
    root = rotated(tmp_path / "logs")
    expect_counts(run_cli, [f"{root}/2026-*", "--item-col", "memory_id", "--event-col", "kind"],
                  RETRIEVED.memory_id.value_counts(), rows=len(EVENTS))


def test_formats_with_different_columns_are_refused_naming_the_files(tmp_path, run_cli):
    write(tmp_path / "logs" / "events.parquet", EVENTS)
    write(tmp_path / "logs" / "counts.jsonl", counts_table(COUNTS).rename(columns={"item": "memory_id", "n": "count"}))
    line = expect_error(run_cli, ["audit", tmp_path / "logs", "--item-col", "memory_id"], 3,
                        "formats whose columns differ", "events.parquet", "counts.jsonl")
    assert "read each format as its own trace" in line


@pytest.mark.parametrize("other", ["README.md", "_SUCCESS", ".part-0.parquet.crc", "notes.txt", "LICENSE",
                                   "manifest.json", "_delta_log/0.json", "config.yaml"])
def test_files_of_other_kinds_are_skipped(tmp_path, run_cli, other):
    write(tmp_path / "d" / "part-0.parquet", EVENTS)
    (tmp_path / "d" / other).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / "d" / other).write_text("{}" if other.endswith(".json") else "not data")
    expect_counts(run_cli, [tmp_path / "d", "--item-col", "memory_id"], EVENTS.memory_id.value_counts())


def test_an_unknown_file_in_a_folder_is_refused_not_skipped(tmp_path, run_cli):
    write(tmp_path / "d" / "part-0.parquet", EVENTS)
    (tmp_path / "d" / "extra.xlsx").write_bytes(b"PK\x03\x04 not a trace")
    expect_error(run_cli, ["inspect", tmp_path / "d", "--item-col", "memory_id"], 3, "extra.xlsx",
                 "unknown trace format", "name the data with a glob")


def test_a_folder_of_json_files_alone_is_read_as_jsonl(tmp_path, run_cli):
    write(tmp_path / "d" / "a.json", EVENTS.iloc[:200])
    write(tmp_path / "d" / "b.json", EVENTS.iloc[200:])
    expect_counts(run_cli, [tmp_path / "d", "--item-col", "memory_id"], EVENTS.memory_id.value_counts())


def test_an_empty_folder_is_refused(tmp_path, run_cli):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "README.md").write_text("logs go here")
    expect_error(run_cli, ["inspect", tmp_path / "d"], 3, "directory holds no trace files")


def test_a_glob_that_matches_nothing(tmp_path, run_cli):
    expect_error(run_cli, ["inspect", f"{tmp_path}/*.parquet"], 3, "no files match this pattern")


# -- file shapes ----------------------------------------------------------------------------------------------


def test_a_header_less_csv_names_the_missing_item_column(tmp_path, run_cli):
    (tmp_path / "log.csv").write_text("m1,3\nm2,5\n")
    expect_error(run_cli, ["inspect", tmp_path / "log.csv"], 3, "missing column 'item'", "columns found: m1, 3")


@pytest.mark.parametrize(("name", "content"), [("log.jsonl", b""), ("log.jsonl", b"\n\n"), ("log.csv", b"item\n")])
def test_an_empty_file_is_refused(tmp_path, run_cli, name, content):
    (tmp_path / name).write_bytes(content)
    expect_error(run_cli, ["inspect", tmp_path / name], 3, "trace is empty")


def test_an_empty_parquet_file_is_refused(tmp_path, run_cli):
    pq.write_table(pa.table({"item": pa.array([], pa.string())}), tmp_path / "log.parquet")
    expect_error(run_cli, ["inspect", tmp_path / "log.parquet"], 3, "trace is empty")


def test_a_gzipped_jsonl_without_gz_suffix_is_read(tmp_path, run_cli):
    path = write(tmp_path / "log.jsonl.gz", EVENTS)
    path.rename(tmp_path / "log.jsonl")
    expect_counts(run_cli, [tmp_path / "log.jsonl", "--item-col", "memory_id"], EVENTS.memory_id.value_counts())


def test_a_parquet_file_without_suffix_is_known_by_its_magic(tmp_path, run_cli):
    path = write(tmp_path / "log.parquet", EVENTS)
    path.rename(tmp_path / "part-0000")
    expect_counts(run_cli, [tmp_path / "part-0000", "--item-col", "memory_id"], EVENTS.memory_id.value_counts())


def test_a_parquet_file_named_jsonl_is_an_input_error(tmp_path, run_cli):
    path = write(tmp_path / "log.parquet", EVENTS)
    path.rename(tmp_path / "log.jsonl")
    expect_error(run_cli, ["inspect", tmp_path / "log.jsonl", "--item-col", "memory_id"], 3, "log.jsonl")


def test_an_orc_file_is_read_through_its_registry_entry(tmp_path, run_cli):
    doc = expect_counts(run_cli, [write(tmp_path / "log.orc", EVENTS), "--item-col", "memory_id"],
                        EVENTS.memory_id.value_counts())
    assert doc["format"] == "orc"


def test_the_wrong_output_format_is_a_usage_error(tmp_path, run_cli):
    path = write(tmp_path / "log.parquet", EVENTS)
    expect_error(run_cli, ["inspect", path, "--item-col", "memory_id", "--format", "parquet"], 2, "--format")


def test_a_missing_file(tmp_path, run_cli):
    expect_error(run_cli, ["inspect", tmp_path / "nope.jsonl"], 3, "no such file or directory")


def test_a_where_on_a_column_that_does_not_exist(tmp_path, run_cli):
    path = write(tmp_path / "log.parquet", EVENTS)
    expect_error(run_cli, ["inspect", path, "--item-col", "memory_id", "--where", "stepp > 3"], 2, "--where")


def test_an_event_kind_the_trace_lacks(tmp_path, run_cli):
    path = write(tmp_path / "log.parquet", EVENTS)
    expect_error(run_cli, ["concentration", path, "--item-col", "memory_id", "--event-col", "kind", "--event",
                           "retreive"], 3, "no events of kind retreive", "kinds found: retrieve, write")


# -- 3. list columns and nested fields ----------------------------------------------------------------------------

STEPS = [
    {"step": 1, "retrieved": ["m1", "m2", "m3"], "memory": {"id": "m9", "user": "u1"}, "hits": [{"id": "m1"}]},
    {"step": 2, "retrieved": ["m2"], "memory": {"id": "m1", "user": "u2"}, "hits": [{"id": "m2"}, {"id": "m1"}]},
    {"step": 3, "retrieved": [], "memory": {"id": "m9", "user": "u1"}, "hits": []},
    {"step": 4, "retrieved": ["m3", "m2"], "memory": {"id": "m2", "user": "u1"}, "hits": [{"id": "m3"}]},
]


def agent_log(path):
    if path.name.endswith(".parquet"):
        pq.write_table(pa.Table.from_pylist(STEPS), path)
    else:
        path.write_text("".join(json.dumps(r) + "\n" for r in STEPS))
    return path


def exploded(column: str, field: str | None = None) -> pd.DataFrame:
    """The hand-exploded table: one row per list element, its 1-based position as rank."""
    rows = [{"item": (e[field] if field else e), "rank": i + 1, "step": r["step"]}
            for r in STEPS for i, e in enumerate(r[column])]
    return pd.DataFrame(rows)


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_a_list_column_is_one_retrieval_per_element(tmp_path, run_cli, suffix):
    path = agent_log(tmp_path / f"agent{suffix}")
    hand = exploded("retrieved")
    doc = expect_counts(run_cli, [path, "--item-col", "retrieved"], hand.item.value_counts(), rows=len(hand))
    assert doc["readings"] == ["item <- each element of list column 'retrieved' (one event per element, rank = "
                               "its 1-based position)"]
    assert doc["mapping"]["rank"] == "rank"


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_a_list_of_objects_reads_a_field_of_each(tmp_path, run_cli, suffix):
    path = agent_log(tmp_path / f"agent{suffix}")
    hand = exploded("hits", "id")
    expect_counts(run_cli, [path, "--item-col", "hits.id"], hand.item.value_counts(), rows=len(hand))


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_a_nested_field_is_a_dotted_path(tmp_path, run_cli, suffix):
    path = agent_log(tmp_path / f"agent{suffix}")
    hand = pd.Series([r["memory"]["id"] for r in STEPS]).value_counts()
    doc = expect_counts(run_cli, [path, "--item-col", "memory.id", "--run-col", "memory.user"], hand, rows=4)
    assert doc["runs"] == 2
    assert "item <- field 'id' of column 'memory'" in doc["readings"]


def test_list_positions_are_the_ranks_a_rank_column_too_is_refused(tmp_path, run_cli):
    rows = [{**r, "rank": 1} for r in STEPS]
    (tmp_path / "a.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    expect_error(run_cli, ["inspect", tmp_path / "a.jsonl", "--item-col", "retrieved"], 3,
                 "its positions are the ranks", "remap rank")


def test_a_list_column_for_another_field_is_refused(tmp_path, run_cli):
    path = agent_log(tmp_path / "agent.parquet")
    expect_error(run_cli, ["inspect", path, "--item-col", "memory.id", "--run-col", "retrieved"], 3, "retrieved")


def test_a_list_column_and_nested_field_audit_alike_from_cli_and_notebook(tmp_path, run_cli):
    """The issue's "done when": CLI and notebook on a JSONL agent log agree with a hand-exploded table."""
    from ctwm_cli import audit_trace

    path = agent_log(tmp_path / "agent.jsonl")
    hand = exploded("retrieved")
    res = run_cli(["audit", path, "--item-col", "retrieved", "--seed", "1", "--bootstrap", "0", "--json"])
    assert res.code == 0, res.err
    (cli,) = json.loads(res.out)["results"]
    api = audit_trace(str(path), item_col="retrieved", seed=1, bootstrap=0)
    frame = audit_trace(hand[["item", "rank", "step"]], seed=1, bootstrap=0)
    in_memory = audit_trace(pd.DataFrame(STEPS), item_col="retrieved", seed=1, bootstrap=0)
    assert cli["n_items"] == api.n_items == frame.n_items == in_memory.n_items == len(hand.item.unique())
    counts = sorted(hand.item.value_counts().tolist(), reverse=True)
    assert read_trace(str(path), item_col="retrieved")[0].counts.tolist() == counts
    assert read_trace(pd.DataFrame(STEPS), item_col="retrieved")[0].counts.tolist() == counts
    nested = pd.Series([r["memory"]["id"] for r in STEPS]).value_counts()
    got = read_trace(str(path), item_col="memory.id")[0]
    assert dict(zip(got.items.to_pylist(), got.counts.tolist(), strict=True)) == nested.to_dict()


# -- 4. the project column map ----------------------------------------------------------------------------------


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "log.jsonl", EVENTS)
    return tmp_path


def test_ctwm_toml_columns_apply_to_every_command(project, run_cli):
    (project / "ctwm.toml").write_text('[columns]\nitem = "memory_id"\nevent = "kind"\n')
    doc = expect_counts(run_cli, ["log.jsonl"], RETRIEVED.memory_id.value_counts())
    assert doc["mapping_origins"] == {"item": "ctwm.toml [columns]", "event": "ctwm.toml [columns]"}
    res = run_cli(["inspect", "log.jsonl"])
    assert "item <- memory_id (ctwm.toml [columns])" in res.out


def test_pyproject_columns_and_a_flag_overrides(project, run_cli):
    (project / "pyproject.toml").write_text('[tool.ctwm.columns]\nitem = "session"\n')
    expect_counts(run_cli, ["log.jsonl"], EVENTS.session.value_counts())
    doc = expect_counts(run_cli, ["log.jsonl", "--item-col", "memory_id"], EVENTS.memory_id.value_counts())
    assert doc["mapping_origins"]["item"] == "item_col"


@pytest.mark.parametrize(("toml", "code", "needle"), [
    ('[columns]\nitme = "memory_id"\n', 2, "unknown field 'itme'; did you mean 'item'?"),
    ('[columns]\nitem = "../../etc/passwd"\n', 2, "is not a column name"),
    ('[columns]\nitem = "s3://bucket/x"\n', 2, "is not a column name"),
    ('[columns]\nitem = 3\n', 2, "must be a column name"),
    ('[columns]\nitem = "memory_idd"\n', 3, "ctwm.toml [columns] item='memory_idd': no such column"),
    ('columns = "memory_id"\n', 2, "must be a table"),
])
def test_a_bad_column_map_is_refused(project, run_cli, toml, code, needle):
    (project / "ctwm.toml").write_text(toml)
    expect_error(run_cli, ["inspect", "log.jsonl"], code, needle)


# -- 5. the notebook -----------------------------------------------------------------------------------------------


def as_dict(tc) -> dict[str, int]:
    (c,) = tc.counts
    return dict(zip(c.items.to_pylist(), c.counts.tolist(), strict=True))


@pytest.mark.parametrize("make", [
    lambda: EVENTS.memory_id.value_counts(),
    lambda: EVENTS.groupby("memory_id").size(),
    lambda: Counter(EVENTS.memory_id),
    lambda: dict(Counter(EVENTS.memory_id)),
    lambda: list(EVENTS.memory_id),
    lambda: EVENTS.memory_id,
    lambda: EVENTS.memory_id.to_numpy(),
    lambda: pa.table({"item": list(EVENTS.memory_id)}),
    lambda: pd.DataFrame({"item": COUNTS.index, "count": COUNTS.to_numpy()}),
], ids=["value_counts", "groupby_size", "Counter", "dict", "list", "Series_of_ids", "numpy", "arrow", "counts_frame"])
def test_every_notebook_reading_gives_the_pandas_counts(make):
    assert as_dict(read_trace(make())) == COUNTS.to_dict()


def test_a_polars_frame_and_series():
    pl = pytest.importorskip("polars")
    assert as_dict(read_trace(pl.from_pandas(EVENTS), item_col="memory_id")) == COUNTS.to_dict()
    assert as_dict(read_trace(pl.Series(list(EVENTS.memory_id)))) == COUNTS.to_dict()


def test_integer_ids_value_counts_is_counts_not_ids():
    ids = pd.Series(RNG.integers(0, 30, 500), name="memory_id")
    expected = {str(k): v for k, v in ids.value_counts().items()}
    assert as_dict(read_trace(ids.value_counts())) == expected


@pytest.mark.parametrize(("make", "error", "needle"), [
    (lambda: pd.Series([3, 1, 2]), UsageError, "reads two ways"),
    (lambda: EVENTS.agent_step, UsageError, "series.astype(str)"),
    (lambda: EVENTS.memory_id.value_counts(normalize=True), InputError, "fractions, not counts"),
    (lambda: EVENTS.groupby(["session", "memory_id"]).size(), UsageError, "counted by 2 keys"),
    (lambda: pd.Series({"a": 3, "b": -1}), InputError, "count must be a positive integer"),
    (lambda: pd.DataFrame(EVENTS), InputError, "missing column 'item'"),
])
def test_ambiguous_or_wrong_notebook_sources_are_refused(make, error, needle):
    with pytest.raises(error, match=None) as info:
        read_trace(make())
    assert needle in str(info.value)


def test_notebook_column_typos_name_the_parameter():
    with pytest.raises(InputError, match=r"columns step='agent_stepp': no such column .*did you mean 'agent_step'"):
        read_trace(EVENTS, item_col="memory_id", columns={"step": "agent_stepp"})
    with pytest.raises(UsageError, match="did you mean step"):
        read_trace(EVENTS, item_col="memory_id", columns={"stpe": "agent_step"})
