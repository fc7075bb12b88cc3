"""Real-valued data sets read from a named column (``read_values``, ``ctwm audit --value-col``)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

from ctwm_cli.common.errors import InputError, UsageError
from ctwm_cli.tail import Histogram, audit, fit_power_law
from ctwm_cli.traces import ColumnMap
from ctwm_cli.traces.engine import ReadOptions
from ctwm_cli.traces.values import read_values


def _sizes(n=3000, seed=1):
    rng = np.random.default_rng(seed)
    return 3.0 * np.exp(rng.exponential(1 / 1.5, n))  # a continuous power law α = 2.5 above 3


@pytest.mark.parametrize("fmt", ["parquet", "csv", "jsonl"])
def test_the_values_are_the_column_exactly_in_every_format(tmp_path, fmt):
    x = _sizes()
    t = pa.table({"size": x, "site": np.where(np.arange(x.size) % 3 == 0, "a", "b")})
    path = tmp_path / f"sizes.{fmt}"
    if fmt == "parquet":
        pq.write_table(t, path)
    elif fmt == "csv":
        pacsv.write_csv(t, path)
    else:
        sites = t["site"].to_pylist()
        path.write_text("".join(f'{{"size": {float(v)!r}, "site": "{s}"}}\n' for v, s in zip(x, sites, strict=True)))
    (one,) = read_values([path], column="size")
    np.testing.assert_array_equal(np.sort(one.counts), np.sort(x))  # every value, bit for bit
    groups = read_values([path], column="size", group_by="site")
    assert [g.group for g in groups] == ["a", "b"]
    np.testing.assert_array_equal(np.sort(groups[0].counts), np.sort(x[::3]))


def test_the_audit_of_read_values_is_the_fit_of_the_raw_sample(tmp_path):
    x = _sizes()
    pq.write_table(pa.table({"size": x}), tmp_path / "s.parquet")
    (vals,) = read_values([tmp_path / "s.parquet"], column="size")
    r = audit(vals, discrete=False, bootstrap=0, seed=1)
    want = fit_power_law(Histogram.from_sample(x), discrete=False, min_tail=10)
    assert (r.power_law.xmin, r.power_law.alpha, r.power_law.n_tail) == (want.xmin, want.alpha, want.n_tail)
    assert r.source == str(tmp_path / "s.parquet")


def test_where_filters_before_the_values_are_checked(tmp_path):
    pq.write_table(pa.table({"size": [0.0, -1.0, 2.5, 4.0], "ok": [False, False, True, True]}), tmp_path / "s.parquet")
    with pytest.raises(InputError, match="'size' must hold positive numbers"):
        read_values([tmp_path / "s.parquet"], column="size")
    (v,) = read_values([tmp_path / "s.parquet"], ReadOptions(where="ok"), column="size")
    assert v.counts.tolist() == [2.5, 4.0]
    with pytest.raises(InputError, match="no rows match"):
        read_values([tmp_path / "s.parquet"], ReadOptions(where="size > 10"), column="size")


@pytest.mark.parametrize("values,match", [
    (pa.array(["1.5", "x"]), "must be a number|has type"),
    (pa.array([1.5, None]), "missing value in column 'size'"),
    (pa.array([1.5, float("inf")]), "must hold positive numbers"),
    (pa.array([1.5, float("nan")]), "must hold positive numbers"),
])
def test_bad_values_are_one_line_errors_naming_the_column(tmp_path, values, match):
    pq.write_table(pa.table({"size": values}), tmp_path / "s.parquet")
    with pytest.raises(InputError, match=match) as exc:
        read_values([tmp_path / "s.parquet"], column="size")
    assert "\n" not in str(exc.value) and "s.parquet" in str(exc.value)
    assert "value_col" in exc.value.params or "missing value" in str(exc.value) or "positive" in str(exc.value)


def test_a_missing_column_names_the_parameter_and_the_columns_found(tmp_path):
    pq.write_table(pa.table({"acres": [1.0, 2.0]}), tmp_path / "s.parquet")
    with pytest.raises(InputError, match=r"missing column 'size' \(columns found: acres\)") as exc:
        read_values([tmp_path / "s.parquet"], column="size")
    assert exc.value.params == ("value_col",)
    with pytest.raises(UsageError):
        read_values(str(tmp_path / "s.parquet"), column="acres")  # a string is not a list of paths


def test_a_value_column_that_a_canonical_field_names_is_read_as_values(tmp_path):
    # a counts-like file whose real-valued column is called "count": --value-col count reads it as values
    pq.write_table(pa.table({"count": [1.5, 2.25, 8.0]}), tmp_path / "s.parquet")
    (v,) = read_values([tmp_path / "s.parquet"], ColumnMap(), column="count")
    assert sorted(v.counts.tolist()) == [1.5, 2.25, 8.0]
