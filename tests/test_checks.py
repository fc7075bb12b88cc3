"""Shared parameter checks (``ctwm_cli.common.checks``) and parameter-named library errors (the CLI's mapping
from parameter names to flags is tested in ``test_param_flags.py``)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from ctwm_cli.common.checks import check_choice, check_range
from ctwm_cli.common.errors import CtwmError, UsageError
from ctwm_cli.memory.policies import check_policy_args
from ctwm_cli.replay.experiments import parse_taus
from ctwm_cli.traces import open_trace

ROOT = Path(__file__).resolve().parents[1]
AGENT_LOG = ROOT / "sample_traces" / "agent_log.jsonl"
LME = ROOT / "sample_traces" / "longmemeval" / "longmemeval_synthetic.json"


def test_check_choice_returns_the_value_or_names_the_parameter():
    assert check_choice("engine", "duckdb", ("duckdb", "dask")) == "duckdb"
    with pytest.raises(UsageError, match=r"^engine must be one of duckdb, dask, got 'spark'$") as exc:
        check_choice("engine", "spark", ("duckdb", "dask"))
    assert exc.value.params == ("engine",) and exc.value.exit_code == 2


@pytest.mark.parametrize(("kw", "value", "message"), [
    ({"lo": 1}, 0, "k must be >= 1, got 0"),
    ({"lo": 0, "lo_open": True}, 0, "k must be > 0, got 0"),
    ({"hi": 26}, 27, "k must be <= 26, got 27"),
    ({"hi": 1, "hi_open": True}, 1.0, "k must be < 1, got 1.0"),
    ({"lo": 0, "hi": 1, "lo_open": True, "hi_open": True}, 1, "k must be in (0, 1), got 1"),
    ({"lo": 0, "hi": 0.5, "hi_open": True}, -0.1, "k must be in [0, 0.5), got -0.1"),
    ({"lo": 0, "hi": 1}, math.nan, "k must be in [0, 1], got nan"),
    ({}, math.inf, "k must be a finite number, got inf"),
    ({"lo": 1, "integer": True}, 2.5, "k must be an integer >= 1, got 2.5"),
    ({"lo": 1, "integer": True}, True, "k must be an integer >= 1, got True"),
    ({"lo": 1}, "3", "k must be a number >= 1, got '3'"),
    ({"lo": 1_000_000}, 999_999, "k must be >= 1000000, got 999999"),
    ({"lo": 1e-12, "lo_open": True}, 0.0, "k must be > 1e-12, got 0.0"),
])
def test_check_range_messages(kw, value, message):
    with pytest.raises(UsageError) as exc:
        check_range("k", value, **kw)
    assert str(exc.value) == message and exc.value.params == ("k",)


def test_check_range_accepts_the_bounds_it_states():
    assert check_range("k", 1, lo=1) == 1
    assert check_range("k", 26, hi=26) == 26
    assert check_range("level", 0.95, lo=0, hi=1, lo_open=True, hi_open=True) == 0.95
    assert check_range("k", np.int64(3), lo=1, integer=True) == 3
    assert check_range("x", -1e300) == -1e300
    with pytest.raises(UsageError):
        check_range("k", 1, lo=1, lo_open=True)
    with pytest.raises(UsageError):
        check_range("k", 26, hi=26, hi_open=True)


def test_library_errors_name_parameters_not_flags():
    with pytest.raises(UsageError, match=r"^input_format must be one of") as exc:
        open_trace(AGENT_LOG, input_format="zipkin")
    assert exc.value.params == ("input_format",)
    with pytest.raises(UsageError, match=r"^tau expects a number") as exc:
        parse_taus("a,b")
    assert exc.value.params == ("tau",)
    with pytest.raises(UsageError, match=r"^max_candidates must be >= 1, got 0$"):
        check_policy_args(budget=10, k=1, core=1, tau=1.0, max_candidates=0)
    with pytest.raises(CtwmError) as exc:
        check_policy_args(budget=10, k=0, core=1, tau=1.0, max_candidates=1)
    assert "--" not in str(exc.value) and exc.value.params == ("k",)


@pytest.mark.parametrize(("args", "stdin", "message"), [
    # traces: the reader's input_format
    (["health", "-", "--input-format", "otel"], b"{}\n", "error: --input-format otel needs a file, not standard input"),
    # diagnostics: psd series, finite-size size_col
    (["psd", AGENT_LOG, "--series", "bogus"], None, "error: --series must be core, total or item:ID, got 'bogus'"),
    (["finite-size", AGENT_LOG], None, "has no size: write it as PATH:SIZE, or give --size-col"),
    # bench: check_range and the shared policy checks
    (["bench", "longmemeval", LME, "--relax-core", "0"], None, "error: --relax-core must be >= 1, got 0"),
    (["bench", "longmemeval", LME, "--k", "0"], None, "error: --k must be >= 1, got 0"),
    (["bench", "report"], None, "error: nothing to report: give saved JSON results and/or --synthetic N"),
    # tail: the audit's settings
    (["audit", AGENT_LOG, "--p-star", "1.5"], None, "error: --p-star must be in (0, 1), got 1.5"),
    # replay experiments
    (["replay", "compare", "--memory", "flat,ctwm", "--baseline", "graph", "--seed", "1"], None,
     "error: --baseline graph is not among --memory"),
])
def test_cli_shows_flags_for_parameters(run_cli, args, stdin, message):
    res = run_cli(args, stdin=stdin)
    assert res.code == 2, res.err
    assert message in res.err


def test_cli_world_config_names_the_flag(run_cli, tmp_path):
    res = run_cli(["world", "run", "-o", tmp_path / "w", "--size", "30", "--steps", "0", "--seed", "1"])
    assert res.code == 2 and "error: --steps must be >= 1, got 0" in res.err


def test_cli_output_directory_errors_name_the_flag(run_cli, tmp_path):
    out = tmp_path / "g"
    base = ["world", "grid", "--out", out, "--family", "uniform", "--size", "30", "--steps", "30",
            "--replicates", "1", "--seed", "1"]
    assert run_cli(base).code == 0
    res = run_cli(base)
    assert res.code == 2 and f"error: --out {str(out)!r}: already holds" in res.err
    assert "pass --overwrite to replace it or --resume to complete it" in res.err


def test_where_and_pareto_budget_errors_name_their_flags(run_cli):
    sample = str(Path(__file__).resolve().parents[1] / "sample_traces" / "tpl_events.parquet")
    res = run_cli(["audit", sample, "--where", "nosuchcol > 1"])
    assert res.code == 2 and res.err.startswith("ctwm: error: --where: ") and "nosuchcol" in res.err
    res = run_cli(["replay", "pareto", "--budget", "abc", "--seed", "1"])
    assert res.code == 2 and "--budget expects START:STOP:N" in res.err
