"""Progress in a log (stderr not a terminal): a line per stage after 10 s, then every 30 s; --quiet: none;
stdout never changes (issue 39). The clock is injected; the audit is real."""

from __future__ import annotations

import itertools
import re

import pytest

from ctwm_cli.cli import progress_display
from ctwm_cli.runtime.progress import LineProgress

TRACE = "sample_traces/tpl_events.parquet"
LINE = re.compile(r"ctwm: (?P<stage>[a-z ]+) (?P<done>[\d,]+)(/(?P<total>[\d,]+))?( done)?, (?P<s>\d+) s")


class Clock:
    def __init__(self, step: float = 1.0) -> None:
        self.now, self.step = 0.0, step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def test_short_work_prints_nothing():
    lines: list[str] = []
    clock = Clock(0.5)
    run = LineProgress(lines.append, clock=clock)
    stage = run.stage("bootstrap replicates", 10)
    for k in range(10):  # 5 s in all
        stage.update(k + 1, 10)
    stage.close()
    assert lines == []


def test_a_stage_prints_when_it_reports_after_10_s_then_every_30_s_and_when_it_ends():
    lines: list[str] = []
    t = [0.0]
    run = LineProgress(lines.append, clock=lambda: t[0])
    idle = run.stage("calibration replicates")  # opened and never used: prints nothing
    stage = run.stage("bootstrap replicates", 1000)
    for k in range(100):  # one replicate a second
        t[0] = float(k + 1)
        stage.update(10 * (k + 1), 1000)
    stage.close()
    idle.close()
    assert lines == [
        "ctwm: bootstrap replicates 100/1,000, 10 s",   # the first report once 10 s have passed
        "ctwm: bootstrap replicates 400/1,000, 40 s",
        "ctwm: bootstrap replicates 700/1,000, 70 s",
        "ctwm: bootstrap replicates 1,000/1,000, 100 s",
    ]


def test_the_last_line_says_done_when_the_stage_moved_on_and_unknown_totals_print_the_count():
    lines: list[str] = []
    t = [20.0]
    run = LineProgress(lines.append, clock=lambda: t[0])
    t[0] = 31.0
    stage = run.stage("reading traces")
    stage.update(5, None)
    t[0] = 35.0
    stage.update(9, None)
    stage.close()
    assert lines == ["ctwm: reading traces 5, 0 s", "ctwm: reading traces 9 done, 4 s"]


def _audit(run_cli, monkeypatch, *extra):
    monkeypatch.setattr(progress_display, "CLOCK", Clock(1.0))  # every reading of the clock: one more second
    return run_cli(["audit", TRACE, "--seed", "3", "-b", "60", "-j", "1", "--json", *extra])


def test_a_long_audit_in_a_log_prints_stage_lines_at_their_cadence(run_cli, monkeypatch):
    res = _audit(run_cli, monkeypatch)
    assert res.code == 0
    lines = [ln for ln in res.err.splitlines() if ln.startswith("ctwm: ")]
    assert lines, res.err
    parsed = [LINE.fullmatch(ln) for ln in lines]
    assert all(parsed), lines
    by_stage: dict[str, list[int]] = {}
    for m in parsed:
        by_stage.setdefault(m["stage"], []).append(int(m["s"]))
    assert "bootstrap replicates" in by_stage
    for seconds in by_stage.values():  # within a stage: 30 s or more between lines (the last may be sooner)
        assert all(b - a >= 30 for a, b in itertools.pairwise(seconds[:-1])), seconds
    assert res.err.splitlines()[0] == "seed: 3"


def test_quiet_prints_no_progress_and_stdout_is_the_same_bytes(run_cli, monkeypatch):
    loud, quiet = _audit(run_cli, monkeypatch), _audit(run_cli, monkeypatch, "--quiet")
    monkeypatch.setattr(progress_display, "CLOCK", Clock(0.0))  # a clock that never moves: short work
    short = run_cli(["audit", TRACE, "--seed", "3", "-b", "60", "-j", "1", "--json", "-q"])
    assert "ctwm: " in loud.err and quiet.err == short.err == "seed: 3\n"
    assert loud.out == quiet.out == short.out


def test_short_flag_q_means_quiet_in_every_command():
    import typer.main

    from ctwm_cli.cli.application import full_app
    from ctwm_cli.cli.param_flags import all_commands

    seen = []
    for path, command in all_commands(typer.main.get_command(full_app())):
        for p in getattr(command, "params", ()):
            if "-q" in getattr(p, "opts", ()):
                assert p.name == "quiet" and "--quiet" in p.opts, (path, p.opts)
                seen.append(path)
    assert {"audit", "health", "report", "check", "replay compare", "world grid", "bench longmemeval"} <= set(seen)


def test_a_stage_name_from_a_trace_reaches_the_log_inert(capsys, monkeypatch):
    monkeypatch.setattr(progress_display, "CLOCK", Clock(20.0))
    progress_display.begin()
    with progress_display.progress_bar("reading \x1b[31mevil.parquet", total=2) as update:
        update(1, 2)
    err = capsys.readouterr().err
    assert "\x1b" not in err and "evil.parquet" in err


def test_quiet_draws_no_bar_on_a_terminal(monkeypatch):
    import io

    from ctwm_cli.cli import output

    class Tty(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setattr(output.sys, "stderr", tty := Tty())
    monkeypatch.setattr(progress_display.time, "monotonic", itertools.count(0.0, 5.0).__next__)
    progress_display.begin(quiet=True)
    try:
        with progress_display.progress_bar("bootstrap replicates", total=10) as update:
            update(5, 10)
            assert progress_display.LIVE["progress"] is None
    finally:
        progress_display.begin()
    assert tty.getvalue() == ""


def test_a_stage_that_raises_is_not_done(capsys, monkeypatch):
    monkeypatch.setattr(progress_display, "CLOCK", Clock(20.0))
    progress_display.begin()
    with pytest.raises(KeyboardInterrupt), progress_display.progress_bar("bootstrap replicates", total=4) as update:
        update(1, 4)  # printed: the first report after 10 s
        update(2, 4)  # 20 s later: not yet a line; the old code's finally printed "2/4 done" as it unwound
        raise KeyboardInterrupt
    assert capsys.readouterr().err == "ctwm: bootstrap replicates 1/4, 20 s\n"


def test_a_grouped_audit_counts_groups_as_they_finish_in_its_one_pool():
    """``audit --group-by`` (audit_many over several groups): every group's replicate chunks run in one pool and
    the stage's lines count replicates and finished groups; a plain (done, total) callback still works."""
    import numpy as np

    from ctwm_cli.tail.audit import audit_many

    rng = np.random.default_rng(48)
    print("seed", 48)
    groups = [c[c > 0].astype(float) for c in (np.bincount(rng.zipf(2.0, 400)) for _ in range(3))]
    lines: list[str] = []
    t = [0.0]

    def clock() -> float:
        t[0] += 40.0  # every reading: 40 s later, so each report prints a line
        return t[0]

    stage = LineProgress(lines.append, clock=clock, after=0.0).stage("bootstrap replicates")
    audit_many(groups, labels=["a", "b", "c"], bootstrap=20, seed=1, jobs=1, progress=stage)
    assert lines, lines
    assert all(re.fullmatch(r"ctwm: bootstrap replicates [\d,]+/[\d,]+, groups [0-3]/3, \d+ s", ln) for ln in lines)
    assert lines[-1].split(", ")[1] == "groups 3/3"
    plain: list[tuple[int, int | None]] = []
    audit_many(groups, labels=["a", "b", "c"], bootstrap=20, seed=1, jobs=1,
               progress=lambda d, n=None: plain.append((d, n)))
    assert plain[-1][0] == plain[-1][1] > 0
