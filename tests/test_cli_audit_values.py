"""``ctwm audit --value-col`` (real-valued data sets) and ``--across`` (do the groups share one law?)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

from ctwm_cli.cli import main


def _run(args, capsys):
    code = main(args)
    out = capsys.readouterr()
    return code, out.out, out.err


def _reference(name: str) -> np.ndarray:
    spec = importlib.util.find_spec("powerlaw")
    if spec is None or spec.origin is None:
        pytest.skip("the powerlaw package (test extra) carries Clauset et al.'s data sets")
    return np.loadtxt(Path(spec.origin).parent / "reference_data" / f"{name}.txt")


# Clauset, Shalizi & Newman 2009, Table 6.1: x_min ± its bootstrap error, α as printed, n_tail ± error.
# quakes are shipped scaled by 1,000 (x_min 0.794 in the table); blackouts in customers (230 thousand).
PUBLISHED = {
    "cities": (52_460, 11_880, 2.37, 580, 177),
    "fires": (6_324, 3_487, 2.2, 521, 6),
    "flares": (323, 89, 1.79, 1_711, 384),
    "quakes": (794, 80_198, 1.64, 11_697, 2_159),
    "surnames": (111_920, 40_670, 2.5, 239, 215),
    "blackouts": (230_000, 90_000, 2.3, 59, 35),
}


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_clauset_continuous_data_sets_from_the_cli_give_the_published_fit(tmp_path, capsys, name):
    x = _reference(name)
    path = tmp_path / f"{name}.csv"
    pacsv.write_csv(pa.table({"size": x}), path)
    code, out, _ = _run(["audit", str(path), "--value-col", "size", "--continuous", "-b", "0", "--seed", "1",
                         "--min-tail", "10", "--json"], capsys)
    assert code == 0
    pl = json.loads(out)["results"][0]["power_law"]
    xmin, dx, alpha, n_tail, dn = PUBLISHED[name]
    assert abs(pl["xmin"] - xmin) <= dx, pl
    digits = len(str(alpha).split(".")[1])
    assert round(pl["alpha"], digits) == alpha, pl
    assert abs(pl["n_tail"] - n_tail) <= dn, pl


def test_fractions_without_continuous_and_events_with_values_are_one_line_usage_errors(tmp_path, capsys):
    pq.write_table(pa.table({"size": [1.5, 2.25, 9.0] * 50}), tmp_path / "s.parquet")
    code, _, err = _run(["audit", str(tmp_path / "s.parquet"), "--value-col", "size", "-b", "0"], capsys)
    assert code == 2 and "holds fractions" in err and "--continuous" in err and err.count("\n") == 1
    code, _, err = _run(["audit", str(tmp_path / "s.parquet"), "--value-col", "size", "-e", "write"], capsys)
    assert code == 2 and "--value-col" in err
    code, _, err = _run(["audit", str(tmp_path / "s.parquet"), "--value-col", "area", "--continuous"], capsys)
    assert code == 3 and "missing column 'area'" in err and "size" in err


def test_across_tells_a_pool_of_two_laws_from_one_law(tmp_path, capsys):
    rng = np.random.default_rng(3)
    mixed, same = tmp_path / "mixed.parquet", tmp_path / "same.parquet"
    a, b = rng.zipf(2.0, 4000), rng.zipf(3.5, 16000)
    pq.write_table(pa.table({"item": [f"m{i}" for i in range(20000)], "count": np.concatenate([a, b]),
                             "agent": ["a1"] * 4000 + ["a2"] * 16000}), mixed)
    c = rng.zipf(2.0, 8000)
    pq.write_table(pa.table({"item": [f"m{i}" for i in range(8000)], "count": c,
                             "agent": ["a1", "a2"] * 4000}), same)
    code, out, _ = _run(["audit", str(mixed), str(same), "--across", "agent", "--permutations", "199", "-b", "0",
                         "--seed", "2", "--json"], capsys)
    assert code == 0
    h = [r["heterogeneity"] for r in json.loads(out)["results"]]
    assert h[0]["heterogeneous"] and h[0]["pvalue"] == pytest.approx(1 / 200) and h[0]["groups"] == ["a1", "a2"]
    assert not h[1]["heterogeneous"] and h[1]["permutations"] == 199
    code, out, _ = _run(["audit", str(mixed), "--across", "agent", "--permutations", "99", "-b", "0", "--seed", "2"],
                        capsys)
    assert "mixes laws" in out
    code, _, err = _run(["audit", str(mixed), "--across", "agent", "--group-by", "agent"], capsys)
    assert code == 2 and "--across" in err


def test_across_shows_hostile_group_names_inert_and_says_when_it_cannot_test(tmp_path, capsys):
    rng = np.random.default_rng(3)
    agents = ["a1"] * 4000 + ["a2"] * 15997 + ["\x1b[31mEVIL[/][bold]x"] * 3
    pq.write_table(pa.table({"item": [f"m{i}" for i in range(20000)],
                             "count": np.concatenate([rng.zipf(2.0, 4000), rng.zipf(3.5, 16000)]),
                             "agent": agents}), tmp_path / "h.parquet")
    code, out, _ = _run(["audit", str(tmp_path / "h.parquet"), "--across", "agent", "--permutations", "19",
                         "-b", "0", "--seed", "1"], capsys)
    flat = "".join(ch for ch in out if not ch.isspace() and ch != "│")  # a wrapped cell, joined again
    assert code == 0 and "\x1b" not in out and "\\x1b[31mEVIL[/][bold]x" in flat
    pq.write_table(pa.table({"item": [f"m{i}" for i in range(300)], "count": rng.zipf(2.0, 300),
                             "agent": ["a"] * 295 + ["b"] * 5}), tmp_path / "few.parquet")
    code, out, err = _run(["audit", str(tmp_path / "few.parquet"), "--across", "agent", "-b", "0", "--seed", "1",
                           "--min-tail", "10"], capsys)
    assert code == 0 and "not tested (fewer than two groups" in err and "share one law" not in out
    code, _, err = _run(["audit", str(tmp_path / "few.parquet"), "--across", "agent", "--permutations", "0"], capsys)
    assert code == 2 and "--permutations" in err and "seed:" not in err  # refused before any reading
