"""The issue-44 study scripts (benchmarks/confusion_study.py, benchmarks/calibration_level_study.py): the Simon
sampler against its closed-form count distribution, and a study run that resumes from its own log and writes
its summary with Wilson intervals."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import numpy as np
import pytest

from ctwm_cli.stats.intervals import wilson_interval

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"


def load(name: str):
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def simon_share(k: int, a: float) -> float:
    """Simon (1955): the share of items used k times is ρ B(k, ρ + 1), ρ = 1/(1 - a)."""
    rho = 1 / (1 - a)
    return rho * math.exp(math.lgamma(k) + math.lgamma(rho + 1) - math.lgamma(k + rho + 1))


def test_simon_counts_follow_simons_closed_form():
    cs = load("confusion_study")
    counts = cs.simon(20_000, 2 / 7, np.random.default_rng(3))
    assert counts.size == 20_000 and counts.min() >= 1
    for k in (1, 2, 3):
        share = float(np.mean(counts == k))
        expect = simon_share(k, 2 / 7)  # 0.583, 0.172, 0.077
        assert abs(share - expect) < 4 * math.sqrt(expect * (1 - expect) / counts.size), (k, share, expect)


def test_confusion_study_resumes_from_its_log_and_summarises(tmp_path, capsys):
    cs = load("confusion_study")
    stem = tmp_path / "cs"
    argv = ["--seeds", "2", "--n", "1500", "--bootstrap", "5", "--calibrate", "19", "--jobs", "1",
            "--only", "stretched exp ceil 5 W", "--out", str(stem)]
    cs.main(argv)
    lines = stem.with_suffix(".jsonl").read_text().splitlines()
    assert len(lines) == 2  # one per (family, seed)
    cs.main(argv)  # everything done: nothing audited again
    assert stem.with_suffix(".jsonl").read_text().splitlines() == lines
    assert "resuming from 2 data sets" in capsys.readouterr().out
    summary = json.loads(stem.with_suffix(".json").read_text())
    rows = {r["rule"]: r for r in summary["rows"]}
    recs = [json.loads(x) for x in lines]
    for rule in ("default", "calibrated"):
        wrong = sum(r[rule] in ("tpl-compatible", "lognormal-compatible") for r in recs)  # any call is wrong here
        assert rows[rule]["data_sets"] == 2 and rows[rule]["wrong"] == wrong
        assert rows[rule]["wrong_wilson95"] == pytest.approx(list(wilson_interval(wrong, 2)))
    assert "| stretched exp ceil 5 W(0.3) | default | 2 |" in stem.with_suffix(".md").read_text()


def test_calibration_level_summary_counts_rejections_at_each_level(tmp_path):
    cl = load("calibration_level_study")

    class Args:
        significance, bootstrap, calibrate, seeds, argv = 0.05, 30, 200, 4, []

    cfg = list(cl.CONFIGS[0])
    recs = [{"config": cfg, "seed": i, "p": p, "wrong": w, "seconds": 1.0}
            for i, (p, w) in enumerate([(0.01, True), (0.09, False), (0.15, False), (0.6, False), (None, False)])]
    summary, table = cl.summarise(recs, Args)
    row = summary["rows"][0]
    assert row["finite_p"] == 4
    assert row["reject_at_0.05"][:2] == [1, 4] and row["reject_at_0.1"][:2] == [2, 4]
    assert row["reject_at_0.2"][:2] == [3, 4] and row["wrong"][:2] == [1, 5]
    assert "**all log-normal rows**" in table


def test_calibration_level_summary_counts_the_rules_test_raw_and_adjusted(tmp_path):
    cl = load("calibration_level_study")

    class Args:
        significance, bootstrap, calibrate, seeds, argv = 0.05, 30, 100, 3, []

    cfg = list(cl.CONFIGS[0])
    pairs = [(0.01, 0.08, "inconclusive"), (0.04, 0.03, "tpl-compatible"), (0.3, 0.01, "inconclusive")]
    recs = [{"config": cfg, "seed": i, "p": p, "p_adjusted": q, "verdict": v, "wrong": v == "tpl-compatible",
             "seconds": 1.0} for i, (p, q, v) in enumerate(pairs)]
    row = cl.summarise(recs, Args)[0]["rows"][0]
    # the rule's test rejects when both p <= level: max(p, p_adj) = 0.08, 0.04, 0.3
    assert row["adjusted_reject_at_0.05"][:2] == [1, 3] and row["adjusted_reject_at_0.1"][:2] == [2, 3]
    assert row["reject_at_0.05"][:2] == [2, 3] and row["tpl_calls"][:2] == [1, 3]
