"""CLI wiring of ``ctwm concentration`` and ``ctwm psd`` (numbers come from the library, checked elsewhere)."""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pytest

from ctwm_cli.diagnostics import concentration, psd


@pytest.fixture
def trace(tmp_path):
    rng = np.random.default_rng(0)
    rows = []
    for step in range(600):
        for _ in range(int(rng.poisson(2))):
            rows.append({"memory_id": f"m{int(rng.zipf(1.7)) % 150}", "t": step, "agent": "a" if step < 300 else "b"})
    path = tmp_path / "trace.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path, rows


def _counts(rows, agent=None):
    from collections import Counter

    return np.array(sorted(Counter(r["memory_id"] for r in rows if agent in (None, r["agent"])).values(), reverse=True))


def test_concentration_json_table_csv(trace, run_cli):
    path, rows = trace
    res = run_cli(["concentration", path, "--item-col", "memory_id", "--json"])
    assert res.code == 0, res.err
    doc = json.loads(res.out)
    assert doc["command"] == "concentration" and doc["events"] == ["retrieve"]
    assert "sigma_top10" in doc["definitions"]
    (row,) = doc["results"]
    ref = concentration(_counts(rows)).to_dict()
    for key in ("n_items", "n_events", "gini", "skewness", "max_over_median", "top10_share", "sigma_top10",
                "singleton_fraction"):
        assert row[key] == pytest.approx(ref[key])
    res = run_cli(["concentration", path, "--item-col", "memory_id"])
    assert res.code == 0
    for text in ("Gini", "σ_top10", "max/median", "trace.jsonl", "bias-corrected"):
        assert text in res.out
    res = run_cli(
        ["concentration", path, "--col", "item=memory_id", "--col", "run=agent", "--group-by", "run", "-f", "csv"]
    )
    assert res.code == 0, res.err
    got = list(csv.DictReader(io.StringIO(res.out)))
    assert [g["group"] for g in got] == ["a", "b"]
    assert float(got[1]["gini"]) == pytest.approx(concentration(_counts(rows, "b")).gini)


def test_concentration_errors(trace, run_cli):
    path, _ = trace
    res = run_cli(["concentration", path])
    assert res.code == 3 and "missing column 'item'" in res.err
    res = run_cli(["concentration", path, "--item-col", "memory_id", "--event", "evict"])
    assert res.code == 3 and "no events of kind evict" in res.err
    res = run_cli(["concentration", path, "--item-col", "memory_id", "--plot", "fig.gif"])
    assert res.code == 2 and ".png, .svg or .pdf" in res.err
    res = run_cli(["concentration", path, "--item-col", "memory_id", "--group-by", "nope"])
    assert res.code == 3 and "nope" in res.err


def test_psd_cli(trace, run_cli):
    path, rows = trace
    base = ["psd", path, "--item-col", "memory_id", "--step-col", "t"]
    res = run_cli([*base, "--series", "total", "--json"])
    assert res.code == 0, res.err
    doc = json.loads(res.out)
    series = np.bincount([r["t"] for r in rows], minlength=600).astype(float)
    ref = psd(series)
    assert doc["beta"] == pytest.approx(ref.beta)
    assert doc["beta_se"] == pytest.approx(ref.beta_se)
    assert doc["in_beta_band"] is False and doc["beta_band"] == [0.5, 1.5]
    res = run_cli([*base, "--series", "total", "--beta-band", "-0.5:0.5", "--band", "0.01:0.2", "--json"])
    doc = json.loads(res.out)
    assert doc["in_beta_band"] is True and doc["band"] == [0.01, 0.2]
    assert doc["beta"] == pytest.approx(psd(series, band=(0.01, 0.2)).beta)
    res = run_cli(base)
    assert res.code == 0, res.err
    assert "β" in res.out and "in 1/f band [0.5, 1.5]" in res.out and "core items" in res.out


@pytest.mark.parametrize(
    ("extra", "code", "text"),
    [
        (["--series", "bogus"], 2, "--series must be"),
        (["--band", "0.3"], 2, "--band expects LO:HI"),
        (["--beta-band", "2:1"], 2, "LO < HI"),
        (["--band", "0.3:0.9"], 2, "0 < LO < HI <= 0.5"),
        (["--detrend", "cubic"], 2, "detrend"),
        (["--series", "item:nope"], 3, "never occurs"),
    ],
)
def test_psd_cli_errors(trace, run_cli, extra, code, text):
    path, _ = trace
    res = run_cli(["psd", path, "--item-col", "memory_id", "--step-col", "t", *extra])
    assert res.code == code, res.err
    assert text in res.err
    assert res.out == ""


def test_every_command_and_option_has_help(run_cli):
    for cmd in ("concentration", "psd", "finite-size"):
        res = run_cli([cmd, "--help"])
        assert res.code == 0
        assert "--plot" in res.out and "--format" in res.out
