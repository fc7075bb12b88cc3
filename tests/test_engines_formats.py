"""DuckDB reading: every format, a glob and a hive directory give the counts computed independently
(a Counter over the rows); --where filters like a Python predicate; errors name file and line."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.feather as feather
import pyarrow.parquet as pq
import pytest

from ctwm_cli.common.errors import InputError, UsageError
from ctwm_cli.traces import EngineOptions, item_counts, open_trace, scan_trace
from ctwm_cli.traces.paths import ReadOptions, read_counts, scan_paths


def _rows(n: int = 3000, seed: int = 5) -> list[dict]:
    rng = np.random.default_rng(seed)
    items = [f"m{k:04d}" for k in rng.zipf(1.7, n) % 400] + ["007", "2024-05-01"]
    runs = [f"{'prod' if k % 3 else 'dev'}-{k % 5}" for k in range(n + 2)]
    events = rng.choice(["retrieve", "retrieve", "inject", "write"], n + 2)
    return [{"item": it, "step": i, "run": r, "event": str(e)} for i, (it, r, e) in enumerate(zip(items, runs, events,
                                                                                               strict=True))]


def _table(rows: list[dict]) -> pa.Table:
    return pa.table({k: pa.array([r[k] for r in rows], pa.int64() if k == "step" else pa.string())
                     for k in ("item", "step", "run", "event")})


def _write(fmt: str, rows: list[dict], d: Path) -> Path:
    t = _table(rows)
    if fmt == "jsonl":
        p = d / "t.jsonl"
        p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    elif fmt == "jsonl.gz":
        p = d / "t.jsonl.gz"
        p.write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in rows).encode()))
    elif fmt == "csv":
        p = d / "t.csv"
        pacsv.write_csv(t, p)
    elif fmt == "csv.gz":
        p = d / "t.csv.gz"
        buf = pa.BufferOutputStream()
        pacsv.write_csv(t, buf)
        p.write_bytes(gzip.compress(buf.getvalue().to_pybytes()))
    elif fmt == "feather":
        p = d / "t.feather"
        feather.write_feather(t, p)
    elif fmt == "parquet":
        p = d / "t.parquet"
        pq.write_table(t, p)
    elif fmt == "glob":
        (d / "parts").mkdir()
        for k in range(3):
            pq.write_table(t.slice(k * 1001, 1001), d / "parts" / f"part-{k}.parquet")
        p = d / "parts" / "part-*.parquet"
    else:  # hive
        pq.write_to_dataset(t, d / "hive", partition_cols=["run"])
        p = d / "hive"
    return p


FORMATS = ["jsonl", "jsonl.gz", "csv", "csv.gz", "feather", "parquet", "glob", "hive"]


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_counts_like_a_counter(fmt, tmp_path):
    rows = _rows()
    path = _write(fmt, rows, tmp_path)
    scan = scan_trace(open_trace(path))
    assert scan.n_rows == len(rows)
    assert scan.events == dict(Counter(r["event"] for r in rows))
    assert (scan.step_min, scan.step_max) == (0, len(rows) - 1)
    assert scan.runs == len({r["run"] for r in rows})
    for kind in ("retrieve", "inject"):
        (got,) = item_counts(scan, [kind])
        want = Counter(r["item"] for r in rows if r["event"] == kind)
        assert dict(zip(got.items.to_pylist(), got.counts.tolist(), strict=True)) == want
    grouped = read_counts([path], group_by="run", events=["retrieve"])
    want = Counter((r["run"], r["item"]) for r in rows if r["event"] == "retrieve")
    got = Counter({(c.group, i): n for c in grouped for i, n in zip(c.items.to_pylist(), c.counts.tolist(),
                                                                     strict=True)})
    assert got == want


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet", "hive"])
def test_where_filters_like_python(fmt, tmp_path):
    rows = _rows()
    path = _write(fmt, rows, tmp_path)
    read = ReadOptions(where="run LIKE 'prod-%' AND step > 1000")
    (got,) = read_counts([path], read)
    want = Counter(r["item"] for r in rows if r["run"].startswith("prod-") and r["step"] > 1000
                   and r["event"] == "retrieve")
    assert dict(zip(got.items.to_pylist(), got.counts.tolist(), strict=True)) == want
    (scan,) = scan_paths([path], read)
    assert scan.n_rows == sum(r["run"].startswith("prod-") and r["step"] > 1000 for r in rows)


def test_where_errors_are_usage_errors(tmp_path):
    path = _write("parquet", _rows(50), tmp_path)
    with pytest.raises(UsageError, match="where: not a SQL predicate"):
        ReadOptions(where="step > 1; DROP TABLE t")
    with pytest.raises(UsageError, match=r"where: .*nope.*\(columns: item, step, run, event\)"):
        scan_trace(open_trace(path, where="nope > 3"))
    with pytest.raises(InputError, match="no rows match where"):
        scan_trace(open_trace(path, where="step < 0"))
    with pytest.raises(UsageError, match="memory_limit must be a size"):
        EngineOptions(memory_limit="lots")
    with pytest.raises(UsageError, match="engine must be one of"):
        EngineOptions(engine="spark")


def test_small_memory_limit_gives_the_same_counts(tmp_path):
    rng = np.random.default_rng(2)
    items = pa.array([f"item-{k:07d}" for k in rng.integers(0, 150_000, 250_000)])
    pq.write_table(pa.table({"item": items}), tmp_path / "m.parquet")
    small = scan_trace(open_trace(tmp_path / "m.parquet", engine=EngineOptions(memory_limit="64MB", threads=1)))
    (got,) = item_counts(small)
    want = Counter(items.to_pylist())
    assert got.n_items == len(want) and dict(zip(got.items.to_pylist(), got.counts.tolist(), strict=True)) == want


def test_csv_errors_name_the_line(tmp_path):
    (tmp_path / "c.csv").write_text("item,count\na,3\nb,0\n")
    with pytest.raises(InputError, match=r"c\.csv: line 3: count must be a positive integer"):
        scan_trace(open_trace(tmp_path / "c.csv"))
    (tmp_path / "s.csv").write_text("item,step\na,1\nb,x\n")
    with pytest.raises(InputError, match=r"s\.csv: line 3: column 'step' must be an integer"):
        scan_trace(open_trace(tmp_path / "s.csv"))


def test_csv_ids_stay_text(tmp_path):
    (tmp_path / "ids.csv").write_text("item,ts\n007,2024-05-01T10:00:00\n7,\n2024-05-01,\n")
    (got,) = item_counts(scan_trace(open_trace(tmp_path / "ids.csv")))
    assert sorted(got.items.to_pylist()) == ["007", "2024-05-01", "7"]


def test_glob_without_match_and_mixed_formats(tmp_path):
    with pytest.raises(InputError, match="no files match this pattern"):
        open_trace(tmp_path / "*.parquet")
    pq.write_table(pa.table({"item": ["a"]}), tmp_path / "a.parquet")
    (tmp_path / "b.csv").write_text("item\nb\n")
    scan = scan_trace(open_trace(tmp_path / "*.*"))  # same columns: one table (issue 41)
    assert (scan.format, scan.n_rows, scan.n_items) == ("parquet+csv", 2, 2)
    (tmp_path / "b.csv").write_text("item,step\nb,1\n")
    with pytest.raises(InputError, match=r"formats whose columns differ \(Parquet: a\.parquet \(without step\); "
                       r"CSV: b\.csv \(without -\)\)"):
        open_trace(tmp_path / "*.*")


def _cli_json(run_cli, args):
    res = run_cli(args)
    assert res.code == 0, res.err
    return json.loads(res.out)


@pytest.mark.parametrize("fmt", ["csv", "feather", "glob"])
def test_cli_commands_read_csv_feather_glob_with_where(fmt, tmp_path, run_cli):
    rows = _rows()
    path = str(_write(fmt, rows, tmp_path))
    where = ["--where", "run LIKE 'prod-%'"]
    kept = [r for r in rows if r["run"].startswith("prod-")]
    (doc,) = _cli_json(run_cli, ["inspect", path, *where, "--json"])["results"]
    assert doc["n_rows"] == len(kept)
    conc = _cli_json(run_cli, ["concentration", path, *where, "--json"])
    assert conc["results"][0]["n_events"] == sum(r["event"] == "retrieve" for r in kept)
    audit = _cli_json(run_cli, ["audit", path, *where, "--bootstrap", "0", "--seed", "1", "--json"])
    assert audit["results"][0]["n_items"] == len({r["item"] for r in kept if r["event"] == "retrieve"})
    health = run_cli(["health", path, *where, "--json"])
    assert health.code == 0, health.err


def test_cli_where_error_is_exit_2_one_line(tmp_path, run_cli):
    path = str(_write("csv", _rows(20), tmp_path))
    res = run_cli(["audit", path, "--where", "colour = 'red'", "--bootstrap", "0"])
    assert res.code == 2 and res.err.count("\n") == 1 and "colour" in res.err


def test_cli_rejects_an_unknown_engine(tmp_path, run_cli):
    path = str(_write("csv", _rows(20), tmp_path))
    res = run_cli(["inspect", path, "--engine", "spark"])
    assert res.code == 2 and "Traceback" not in res.err
