"""Trace readers: every format reads back to the counts computed independently, errors name the spot."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctwm_cli.common.errors import InputError, UsageError
from ctwm_cli.traces import ColumnMap, guard, item_counts, open_trace, scan_trace

# ---------------------------------------------------------------------------------------------
# Generated event tables and independent writers

# Item ids chosen to trip type inference: digit strings, ISO-date-like strings, unicode, spaces.
ITEM_POOL = ["m000001", "m000002", "m17", "42", "007", "2024-05-01", "2024-05-01T10:00:00", "é ü", "a b", "true"]
item_ids = st.one_of(st.sampled_from(ITEM_POOL), st.text(min_size=1, max_size=6))

EVENT_KINDS = ["retrieve", "inject", "write"]


@st.composite
def event_tables(draw):
    """A list of event dicts (item, run, step, optional event) and whether the event column exists."""
    n = draw(st.integers(1, 60))
    items = draw(st.lists(item_ids, min_size=1, max_size=12, unique=True))
    n_runs = draw(st.integers(1, 3))
    with_event = draw(st.booleans())
    rows = []
    step = draw(st.integers(0, 5))
    for _ in range(n):
        step += draw(st.integers(0, 2))
        row = {"item": draw(st.sampled_from(items)), "run": f"r{draw(st.integers(0, n_runs - 1))}", "step": step}
        if with_event:
            kind = draw(st.sampled_from([*EVENT_KINDS, None]))  # None: event missing -> retrieve
            if kind is not None:
                row["event"] = kind
        rows.append(row)
    return rows, with_event


def expected_counts(rows, kind=None, by_run=False):
    """Counter of events of ``kind`` (missing event = retrieve), keyed by item or (run, item)."""
    out: Counter = Counter()
    for r in rows:
        if kind is None or r.get("event", "retrieve") == kind:
            out[(r["run"], r["item"]) if by_run else r["item"]] += 1
    return out


def as_counter(counts_list, by_run=False):
    out: Counter = Counter()
    for c in counts_list:
        for item, n in zip(c.items.to_pylist(), c.counts.tolist(), strict=True):
            assert n >= 1
            out[(c.group, item) if by_run else item] += n
    return out


def write_jsonl(rows, path: Path) -> Path:
    text = "".join(json.dumps(r) + "\n" for r in rows).encode()
    if path.name.endswith(".gz"):
        path.write_bytes(gzip.compress(text))
    else:
        path.write_bytes(text)
    return path


def _arrow_table(rows, with_event: bool) -> pa.Table:
    cols = {
        "item": pa.array([r["item"] for r in rows], pa.string()),
        "run": pa.array([r["run"] for r in rows], pa.string()),
        "step": pa.array([r["step"] for r in rows], pa.int64()),
    }
    if with_event:
        cols["event"] = pa.array([r.get("event") for r in rows], pa.string())
    return pa.table(cols)


def write_parquet(rows, with_event: bool, path: Path) -> Path:
    pq.write_table(_arrow_table(rows, with_event), path)
    return path


def write_hive(rows, with_event: bool, path: Path) -> Path:
    pq.write_to_dataset(_arrow_table(rows, with_event), path, partition_cols=["run"])
    return path


WRITERS = {
    "jsonl": lambda rows, ev, d: write_jsonl(rows, d / "t.jsonl"),
    "jsonl.gz": lambda rows, ev, d: write_jsonl(rows, d / "t.jsonl.gz"),
    "ndjson": lambda rows, ev, d: write_jsonl(rows, d / "t.ndjson"),
    "parquet": lambda rows, ev, d: write_parquet(rows, ev, d / "t.parquet"),
    "hive": lambda rows, ev, d: write_hive(rows, ev, d / "hive"),
}


@pytest.mark.parametrize("fmt", sorted(WRITERS))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(table=event_tables())
def test_event_tables_round_trip(fmt, table, tmp_path_factory):
    rows, with_event = table
    path = WRITERS[fmt](rows, with_event, tmp_path_factory.mktemp(fmt.replace(".", "_")))
    scan = scan_trace(open_trace(path))
    assert scan.n_rows == len(rows)
    assert scan.kind == "events"
    assert scan.n_items == len({r["item"] for r in rows})
    assert scan.runs == len({r["run"] for r in rows})
    assert (scan.step_min, scan.step_max) == (min(r["step"] for r in rows), max(r["step"] for r in rows))
    kinds = Counter(r.get("event", "retrieve") for r in rows)
    assert scan.events == dict(kinds)
    for kind in kinds:
        assert as_counter(item_counts(scan, [kind])) == expected_counts(rows, kind)
    # Default: retrieve when present, else inject.
    default = "retrieve" if "retrieve" in kinds else "inject" if "inject" in kinds else None
    if default is None:
        with pytest.raises(InputError, match="no retrieve or inject events"):
            item_counts(scan)
    else:
        assert as_counter(item_counts(scan)) == expected_counts(rows, default)
    # Grouped by run: one ItemCounts per run, each with that run's counts.
    grouped = scan_trace(open_trace(path), group_by="run")
    got = item_counts(grouped, list(kinds))
    assert [c.group for c in got] == sorted({r["run"] for r in rows})
    want = Counter()
    for kind in kinds:
        want += expected_counts(rows, kind, by_run=True)
    assert as_counter(got, by_run=True) == want


@st.composite
def counts_tables(draw):
    items = draw(st.lists(item_ids, min_size=1, max_size=15))  # duplicates allowed: they add up
    return [{"item": it, "count": draw(st.integers(1, 10**12))} for it in items]


@pytest.mark.parametrize("fmt", ["jsonl", "jsonl.gz", "parquet"])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=counts_tables())
def test_counts_tables_round_trip(fmt, rows, tmp_path_factory):
    d = tmp_path_factory.mktemp("counts")
    if fmt == "parquet":
        path = d / "c.parquet"
        pq.write_table(pa.table({"item": [r["item"] for r in rows], "count": [r["count"] for r in rows]}), path)
    else:
        path = write_jsonl(rows, d / f"c.{fmt}")
    scan = scan_trace(open_trace(path))
    assert scan.kind == "counts"
    assert scan.n_rows == len(rows)
    want: Counter = Counter()
    for r in rows:
        want[r["item"]] += r["count"]
    (got,) = item_counts(scan)
    assert as_counter([got]) == want
    # Sorted by count descending, ties by item ascending.
    assert list(zip(got.items.to_pylist(), got.counts.tolist(), strict=True)) == sorted(
        want.items(), key=lambda kv: (-kv[1], kv[0])
    )


def test_stdin_reads_jsonl(run_cli):
    rows = [{"item": f"m{i % 7}", "step": i, "run": f"r{i % 2}"} for i in range(50)]
    data = "".join(json.dumps(r) + "\n" for r in rows).encode()
    res = run_cli(["inspect", "-", "--json"], stdin=data)
    assert res.code == 0, res.err
    (doc,) = json.loads(res.out)["results"]
    assert doc["source"] == "<stdin>"
    assert (doc["n_rows"], doc["n_items"], doc["runs"]) == (50, 7, 2)
    assert (doc["step_min"], doc["step_max"]) == (0, 49)


def test_mixed_type_items_read(tmp_path):
    # item a number on one line, a string on another, in the same block.
    lines = ['{"item": 5, "step": 1}', '{"item": "m5", "step": 2}', '{"item": 5, "step": 3}',
             '{"item": "5", "step": 4}']
    path = tmp_path / "mixed.jsonl"
    path.write_text("\n".join(lines) + "\n")
    (got,) = item_counts(scan_trace(open_trace(path)))
    assert as_counter([got]) == Counter({"5": 3, "m5": 1})


def test_numeric_item_ids_everywhere_read_as_text(tmp_path):
    path = tmp_path / "num.jsonl"
    path.write_text("".join(json.dumps({"item": i % 3, "step": i}) + "\n" for i in range(10)))
    (got,) = item_counts(scan_trace(open_trace(path)))
    assert as_counter([got]) == Counter({"0": 4, "1": 3, "2": 3})


def test_date_like_ids_are_not_turned_into_timestamps(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text('{"item": "2024-05-01", "ts": "2024-05-01T10:00:00"}\n{"item": "2024-05-01T10:00:00"}\n')
    (got,) = item_counts(scan_trace(open_trace(path)))
    assert sorted(got.items.to_pylist()) == ["2024-05-01", "2024-05-01T10:00:00"]


def test_column_remapping(tmp_path):
    path = tmp_path / "remap.parquet"
    pq.write_table(pa.table({"memory_id": ["a", "b", "a"], "agent_step": [3, 4, 9], "item": ["x", "x", "x"]}), path)
    cmap = ColumnMap.from_overrides({"item": "memory_id", "step": "agent_step"})
    scan = scan_trace(open_trace(path, cmap))
    assert scan.mapping == {"item": "memory_id", "step": "agent_step"}
    assert (scan.step_min, scan.step_max) == (3, 9)
    assert as_counter(item_counts(scan)) == Counter({"a": 2, "b": 1})


def test_keep_carries_extra_column_as_text(tmp_path):
    path = write_jsonl([{"item": "a", "session": 1}, {"item": "b", "session": 2}, {"item": "a", "session": 2}],
                       tmp_path / "k.jsonl")
    got = item_counts(scan_trace(open_trace(path, keep=("session",)), group_by="session"))
    assert as_counter(got, by_run=True) == Counter({("1", "a"): 1, ("2", "a"): 1, ("2", "b"): 1})


# ---------------------------------------------------------------------------------------------
# Errors: InputError (exit 3) or UsageError (exit 2), one line, naming file/line/column


def read_all(path, cmap=None, keep=()):
    return scan_trace(open_trace(path, cmap, keep=keep))


def test_malformed_line_far_into_file_names_line(tmp_path, monkeypatch):
    monkeypatch.setattr(guard, "BLOCK_BYTES", 256)
    lines = [json.dumps({"item": f"m{i}", "step": i}) for i in range(2000)]
    lines[1733] = '{"item": "m1733", "step": '
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match=r"bad\.jsonl: line 1734: malformed JSON"):
        read_all(path)


def test_many_small_blocks_read_everything(tmp_path, monkeypatch):
    monkeypatch.setattr(guard, "BLOCK_BYTES", 100)
    rows = [{"item": f"m{i % 13}", "step": i} for i in range(3000)]
    path = write_jsonl(rows, tmp_path / "blocks.jsonl.gz")
    (got,) = item_counts(read_all(path))
    assert as_counter([got]) == expected_counts(rows)


def test_missing_column_lists_columns_found(tmp_path):
    path = write_jsonl([{"memory_id": "a", "step": 1}], tmp_path / "m.jsonl")
    with pytest.raises(InputError, match=r"m\.jsonl: missing column 'item' \(columns found: memory_id, step\)"):
        read_all(path)
    pq.write_table(pa.table({"memory_id": ["a"]}), tmp_path / "m.parquet")
    with pytest.raises(InputError, match=r"missing column 'item' \(columns found: memory_id\)"):
        open_trace(tmp_path / "m.parquet")


def test_missing_kept_column_is_input_error(tmp_path):
    path = write_jsonl([{"item": "a"}], tmp_path / "k.jsonl")
    with pytest.raises(InputError, match=r"missing column 'session' \(columns found: item\)"):
        read_all(path, keep=("session",))


@pytest.mark.parametrize("content", [b"", b"\n\n  \n"])
def test_empty_jsonl(tmp_path, content):
    path = tmp_path / "e.jsonl"
    path.write_bytes(content)
    with pytest.raises(InputError, match=r"e\.jsonl: trace is empty"):
        read_all(path)


def test_empty_parquet(tmp_path):
    pq.write_table(pa.table({"item": pa.array([], pa.string())}), tmp_path / "e.parquet")
    with pytest.raises(InputError, match="trace is empty"):
        read_all(tmp_path / "e.parquet")


@pytest.mark.parametrize("bad", [2.5, "x", True, None])
def test_non_integer_count_jsonl(tmp_path, bad):
    path = write_jsonl([{"item": "a", "count": 3}, {"item": "b", "count": bad}], tmp_path / "c.jsonl")
    with pytest.raises(InputError, match=r"c\.jsonl: line 2: .*'count'"):
        read_all(path)


@pytest.mark.parametrize("bad", [0, -1])
def test_non_positive_count_jsonl(tmp_path, bad):
    path = write_jsonl([{"item": "a", "count": 3}, {"item": "b", "count": bad}], tmp_path / "c.jsonl")
    with pytest.raises(InputError, match=rf"line 2: count must be a positive integer, got {bad}"):
        read_all(path)


@pytest.mark.parametrize(
    ("values", "message"),
    [([1, 2.5], "must hold integers, found a fraction"), ([1, 0], "count must be a positive integer"),
     ([1, -1], "count must be a positive integer"), (["1", "x"], "has type string, expected integers")],
)
def test_bad_count_parquet(tmp_path, values, message):
    pq.write_table(pa.table({"item": ["a", "b"], "count": values}), tmp_path / "c.parquet")
    # Errors name the row (or, for a column of the wrong type, the column).
    with pytest.raises(InputError, match=rf"c\.parquet: (row 2: )?.*{message}"):
        read_all(tmp_path / "c.parquet")


def test_missing_file(tmp_path):
    with pytest.raises(InputError, match=r"nope\.jsonl: no such file or directory"):
        open_trace(tmp_path / "nope.jsonl")


def test_unreadable_parquet(tmp_path):
    (tmp_path / "x.parquet").write_bytes(b"this is not parquet at all" * 10)
    with pytest.raises(InputError, match=r"x\.parquet: not a readable Parquet file"):
        read_all(tmp_path / "x.parquet")


def test_corrupt_gzip(tmp_path):
    data = gzip.compress(b'{"item": "a"}\n' * 5000)
    (tmp_path / "z.jsonl.gz").write_bytes(data[:30] + b"\xff" * 40 + data[70:])
    with pytest.raises(InputError, match=r"z\.jsonl\.gz: "):
        read_all(tmp_path / "z.jsonl.gz")


def test_unknown_extension(tmp_path):
    (tmp_path / "t.txt").write_text("item\na\n")
    with pytest.raises(InputError, match=r"t\.txt: unknown trace format"):
        open_trace(tmp_path / "t.txt")


def test_unknown_remap_field():
    with pytest.raises(UsageError, match=r"unknown trace column.*colour"):
        ColumnMap.from_overrides({"colour": "x"})


def test_remap_to_one_source_twice():
    with pytest.raises(UsageError, match="more than one trace field: step"):
        ColumnMap.from_overrides({"item": "step"})


def test_json_array_line_is_rejected(tmp_path):
    (tmp_path / "a.jsonl").write_text('{"item": "a"}\n[1, 2]\n')
    with pytest.raises(InputError, match="line 2: expected a JSON object"):
        read_all(tmp_path / "a.jsonl")


def test_missing_item_value_names_line(tmp_path):
    (tmp_path / "n.jsonl").write_text('{"item": "a"}\n{"item": "b"}\n{"step": 3}\n')
    with pytest.raises(InputError, match="line 3: missing value in column 'item'"):
        read_all(tmp_path / "n.jsonl")


# ---------------------------------------------------------------------------------------------
# Sample traces shipped in sample_traces/ (written by sample_traces/generate.py)

SAMPLES = Path(__file__).resolve().parent.parent / "sample_traces"


@pytest.mark.parametrize(("a", "b"), [("tpl_events.parquet", "tpl_events.jsonl.gz"),
                                      ("powerlaw_counts.parquet", "powerlaw_counts.jsonl")])
def test_sample_trace_copies_agree(a, b):
    if not (SAMPLES / a).exists():
        pytest.skip("sample traces not generated")
    scan_a, scan_b = read_all(SAMPLES / a), read_all(SAMPLES / b)
    assert scan_a.to_dict() | {"source": "", "format": ""} == scan_b.to_dict() | {"source": "", "format": ""}
    assert as_counter(item_counts(scan_a)) == as_counter(item_counts(scan_b))


def test_sample_traces_total_under_2mb():
    files = [p for p in SAMPLES.iterdir() if p.suffix in (".parquet", ".gz", ".jsonl")]
    assert sum(p.stat().st_size for p in files) < 2 * 2**20


def _generator():
    import importlib.util

    spec = importlib.util.spec_from_file_location("sample_generate", SAMPLES / "generate.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _check_pmf(sample, pmf, kmax):
    """Chi-square over x = 1..kmax plus the rest; 0.1 % critical value, so a wrong sampler fails."""
    import numpy as np
    from scipy import stats

    n = sample.size
    observed = [int((sample == k).sum()) for k in range(1, kmax + 1)]
    expected = [n * pmf(k) for k in range(1, kmax + 1)]
    observed.append(n - sum(observed))
    expected.append(n - sum(expected))
    chi2 = sum((o - e) ** 2 / e for o, e in zip(observed, expected, strict=True))
    assert chi2 < stats.chi2.ppf(0.999, kmax), (chi2, observed[:5], np.round(expected[:5]))


def test_sample_generators_follow_their_pmfs():
    import math

    import numpy as np
    from scipy.special import zeta

    gen = _generator()
    rng = np.random.default_rng(3)
    alpha, lam = 1.8, 0.05
    norm = sum(k**-alpha * math.exp(-lam * k) for k in range(1, 5000))
    _check_pmf(gen.discrete_truncated_power_law(rng, alpha, lam, 40_000),
               lambda k: k**-alpha * math.exp(-lam * k) / norm, 12)
    _check_pmf(gen.discrete_power_law(rng, 2.5, 40_000), lambda k: k**-2.5 / zeta(2.5), 12)
    mu, sigma = 2.0, 1.2
    phi = lambda z: 0.5 * (1 + math.erf(z / math.sqrt(2)))  # noqa: E731
    # ceil(Y), Y ~ LogNormal(mu, sigma): p(k) = Phi((ln k - mu)/sigma) - Phi((ln(k-1) - mu)/sigma), ln 0 = -inf
    lower = lambda k: 0.0 if k == 1 else phi((math.log(k - 1) - mu) / sigma)  # noqa: E731
    _check_pmf(gen.discrete_lognormal(rng, mu, sigma, 40_000),
               lambda k: phi((math.log(k) - mu) / sigma) - lower(k), 25)


def test_empty_directory(tmp_path):
    (tmp_path / "d").mkdir()
    with pytest.raises(InputError, match=r"d: directory holds no trace files \(Parquet, JSONL"):
        open_trace(tmp_path / "d")


def test_bad_file_inside_dataset_is_named(tmp_path):
    pq.write_to_dataset(pa.table({"item": ["a", "b"], "count": [1, 0], "run": ["x", "y"]}), tmp_path / "ds",
                        partition_cols=["run"])
    with pytest.raises(InputError, match=r"ds: run=y/[^:]+\.parquet: row 1: count must be a positive integer"):
        read_all(tmp_path / "ds")


def test_dataset_directory_ignores_non_parquet_files(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ctwm_cli.traces import item_counts, open_trace, scan_trace

    (tmp_path / "run=a").mkdir()
    pq.write_table(pa.table({"item": ["x", "y", "x"]}), tmp_path / "run=a" / "part-0.parquet")
    (tmp_path / "manifest.json").write_text("{}")
    (tmp_path / "README.md").write_text("a run directory")
    scan = scan_trace(open_trace(tmp_path))
    assert scan.n_rows == 3 and scan.runs == 1
    assert sorted(item_counts(scan)[0].counts.tolist()) == [1, 2]
