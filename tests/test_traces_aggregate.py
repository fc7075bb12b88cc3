"""Streaming aggregation: many batches and merges give the same counts as one pandas group-by."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctwm_cli.common.errors import InputError, UsageError
from ctwm_cli.traces import EngineOptions, item_counts, open_trace, scan_trace


def _series(counts) -> pd.Series:
    return pd.Series(counts.counts, index=counts.items.to_pylist()).sort_index()


@pytest.fixture
def big_trace(tmp_path):
    """30k events over ~2.5k Zipf-ish items, 4 runs, three event kinds, several row groups."""
    rng = np.random.default_rng(7)
    n = 30_000
    items = np.char.add("m", (rng.zipf(1.6, n) % 2500).astype(str))
    df = pd.DataFrame(
        {
            "item": items,
            "step": np.arange(n, dtype=np.int64),
            "run": rng.choice(["a", "b", "c", "d"], n),
            "event": rng.choice(["retrieve", "retrieve", "inject", "write"], n),
        }
    )
    path = tmp_path / "big.parquet"
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), path, row_group_size=7_000)
    return path, df


def test_streaming_matches_pandas_groupby(big_trace):
    path, df = big_trace
    reader = open_trace(path)
    batches = list(reader.batches(batch_rows=1_000))
    assert len(batches) >= 30  # rows stream in batches, in file order
    assert pa.concat_tables(batches).column("step").to_pylist() == list(range(len(df)))
    scan = scan_trace(open_trace(path, engine=EngineOptions(memory_limit="64MB", threads=2)))

    assert scan.n_rows == len(df)
    assert scan.n_items == df["item"].nunique()
    assert scan.events == df["event"].value_counts().to_dict()
    assert (scan.step_min, scan.step_max) == (0, len(df) - 1)
    assert scan.runs == 4
    for kind in ("retrieve", "inject", "write"):
        (got,) = item_counts(scan, [kind])
        want = df[df["event"] == kind].groupby("item").size().sort_index()
        pd.testing.assert_series_equal(_series(got), want, check_names=False, check_dtype=False)
    (both,) = item_counts(scan, ["retrieve", "inject"])
    want = df[df["event"].isin(["retrieve", "inject"])].groupby("item").size().sort_index()
    pd.testing.assert_series_equal(_series(both), want, check_names=False, check_dtype=False)


def test_streaming_grouped_matches_pandas(big_trace):
    path, df = big_trace
    got = item_counts(scan_trace(open_trace(path), group_by="run"))
    assert [c.group for c in got] == ["a", "b", "c", "d"]
    want = df[df["event"] == "retrieve"].groupby(["run", "item"]).size()
    for c in got:
        pd.testing.assert_series_equal(_series(c), want[c.group].sort_index(), check_names=False, check_dtype=False)


def test_progress_reports_rows(big_trace):
    path, df = big_trace
    seen = []
    scan_trace(open_trace(path), progress=lambda done, total: seen.append(done))
    assert seen == sorted(seen) and seen[-1] == len(df)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    counts=st.lists(st.tuples(st.sampled_from("abcdefgh"), st.integers(1, 1000)), min_size=1, max_size=40),
)
def test_counts_sorted_descending_then_by_item(counts, tmp_path_factory):
    path = tmp_path_factory.mktemp("c") / "c.jsonl"
    path.write_text("".join(json.dumps({"item": i, "count": c}) + "\n" for i, c in counts))
    (got,) = item_counts(scan_trace(open_trace(path)))
    total: Counter = Counter()
    for i, c in counts:
        total[i] += c
    assert list(zip(got.items.to_pylist(), got.counts.tolist(), strict=True)) == sorted(
        total.items(), key=lambda kv: (-kv[1], kv[0])
    )
    assert got.n_items == len(total) and got.n_events == sum(total.values())
    assert got.to_dict() == {"source": str(path), "group": None, "events": ["retrieve"],
                             "n_items": len(total), "n_events": sum(total.values())}


def test_default_event_kind_falls_back_to_inject(tmp_path):
    path = tmp_path / "i.jsonl"
    path.write_text(
        '{"item": "a", "event": "inject"}\n{"item": "b", "event": "write"}\n{"item": "a", "event": "inject"}\n'
    )
    (got,) = item_counts(scan_trace(open_trace(path)))
    assert got.events == ("inject",)
    assert dict(zip(got.items.to_pylist(), got.counts.tolist(), strict=True)) == {"a": 2}


def test_event_errors(tmp_path):
    path = tmp_path / "w.jsonl"
    path.write_text('{"item": "a", "event": "write"}\n')
    scan = scan_trace(open_trace(path))
    with pytest.raises(InputError, match=r"no retrieve or inject events to count \(kinds found: write\)"):
        item_counts(scan)
    with pytest.raises(InputError, match=r"no events of kind evict \(kinds found: write\)"):
        item_counts(scan, ["evict"])
    assert [c.n_events for c in item_counts(scan, "write")] == [c.n_events for c in item_counts(scan, ["write"])]
    with pytest.raises(UsageError, match="events must be event kinds"):  # one check for every reader (issue 24)
        item_counts(scan, ["write", ""])


def test_missing_group_by_column(tmp_path):
    path = tmp_path / "g.jsonl"
    path.write_text('{"item": "a"}\n')
    with pytest.raises(InputError, match=r"missing group-by column 'run' \(columns found: item\)"):
        scan_trace(open_trace(path), group_by="run")


def test_scan_to_dict_is_json_safe(big_trace):
    path, _ = big_trace
    d = scan_trace(open_trace(path)).to_dict()
    assert json.loads(json.dumps(d)) == d
    assert d["kind"] == "events" and d["format"] == "parquet"
