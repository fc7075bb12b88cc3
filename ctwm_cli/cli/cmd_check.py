"""``ctwm check``: every audit, gate and expectation of a project, from one config file, in one run.

The config is ``ctwm.toml`` or the ``[tool.ctwm]`` table of ``pyproject.toml``::

    junit_xml = "ctwm-junit.xml"          # optional: always write JUnit here

    [[check]]
    name = "sample trace is heavy-tailed"  # optional (default: command + traces)
    command = "audit"                      # audit | concentration | psd | simulate | health | inspect
    traces = ["sample_traces/*.parquet"]   # files or globs, relative to the config file
    options = { seed = 1, bootstrap = 200, group_by = "run" }   # the command's long options
    expect = "tpl-compatible"              # audit only
    fail_on = ["p_gof<0.1", "n_tail<100"]

Each entry runs as its own ``ctwm`` process (``python -m ctwm_cli ... --format json``), so an entry
behaves exactly as the same command typed by hand; ``ctwm check`` collects every entry's gate
outcomes from its JSON, prints one summary, writes JUnit if asked and exits 1 if any check failed
(2, 3 or 4 if an entry could not run: its own exit code, the worst one).
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from ..errors import EXIT_CHECK_FAILED, CheckFailed, CtwmError, InputError, UsageError
from .options import Format, JunitOpt, output_flags
from .output import (
    check_output_path, check_outputs, checks_table, emit, message, show, stdout_console, write_atomic,
)
from ..inert import visible
from .reporters import junit_xml

COMMANDS = ("audit", "concentration", "psd", "simulate", "health", "inspect")
ENTRY_KEYS = {"name", "command", "traces", "options", "expect", "fail_on"}
TRUST_ENV = "CTWM_TRUST_CONFIG"

# The options a config may set, per command: reading and analysis only. A config from a pull request
# is not the user's words, so this is an allow-list (a new option is refused until it is added here):
# nothing that writes a file (--plot, --junit-xml: the config's top-level junit_xml is confined instead),
# nothing that contacts another machine (--scheduler, --engine dask), nothing that changes the output
# ctwm check itself parses (--format, --json). --trust-config lifts it for a user's own config.
_READING = ("item_col", "step_col", "run_col", "event_col", "count_col", "col", "where", "memory_limit")
ALLOWED_OPTIONS: dict[str, frozenset[str]] = {
    "audit": frozenset({*_READING, "event", "group_by", "details", "seed", "bootstrap", "jobs", "xmin", "xmin_range",
                        "xmax", "discrete", "continuous", "min_tail", "scan_floor", "p_star", "z_star", "level",
                        "calibrate", "uncertainty", "power", "cross_check", "diagnostics", "expect_rule"}),
    "concentration": frozenset({*_READING, "event", "group_by", "details"}),
    "psd": frozenset({*_READING, "event", "series", "run", "nperseg", "detrend", "band", "beta_band"}),
    "simulate": frozenset({*_READING, "event", "tau", "sweep", "budget", "core", "items", "ranking", "show"}),
    "health": frozenset({*_READING, "run", "budget", "task_col", "outcome_col", "by_col", "input_format"}),
    "inspect": frozenset(_READING),
}
#: Options whose value is a file the entry reads: confined to the config's directory like its traces.
PATH_OPTIONS = frozenset({"objects"})
ALLOWED_OPTIONS["health"] |= PATH_OPTIONS


def _config(path: str | None) -> tuple[Path, dict[str, Any]]:
    """(file, the ctwm table) of the given config, else ./ctwm.toml, else ./pyproject.toml's [tool.ctwm]."""
    candidates = [Path(path)] if path else [Path("ctwm.toml"), Path("pyproject.toml")]
    for p in candidates:
        if not p.is_file():
            if path:
                raise InputError(f"{path}: no such file")
            continue
        try:
            doc = tomllib.loads(p.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise InputError(f"{p}: {exc}") from None
        table = doc.get("tool", {}).get("ctwm") if p.name == "pyproject.toml" else doc
        if table is None:
            if path:
                raise InputError(f"{p}: no [tool.ctwm] table")
            continue
        return p, table
    raise InputError("no ctwm.toml and no [tool.ctwm] in pyproject.toml here (pass CONFIG)")


class _Confine:
    """Where a config may point: inside its own directory (symlinks resolved), unless trusted."""

    def __init__(self, base: Path, trusted: bool) -> None:
        self.base, self.trusted = base, trusted

    def path(self, value: str, what: str) -> str:
        if self.trusted:
            return value
        real = Path(os.path.realpath(self.base / value))
        if real != self.base and self.base not in real.parents:
            raise UsageError(f"{what}: {value!r} resolves outside the config's directory {str(self.base)!r}; "
                             "pass --trust-config for a config of your own")
        return value


def _flags(options: dict[str, Any], where: str, command: str, confine: _Confine) -> list[str]:
    """``{"group_by": "run", "diagnostics": False, "event": ["a", "b"]}`` -> ``--group-by=run`` ...

    Each value is attached to its flag (``--flag=value``), so a value can never be read as an option."""
    if not isinstance(options, dict):
        raise UsageError(f"{where}: options must be a table of option = value")
    out: list[str] = []
    allowed = ALLOWED_OPTIONS[command]
    for key, value in options.items():
        if not confine.trusted and key not in allowed:
            raise UsageError(f"{where}: option {key!r} is not allowed in a config for {command} (allowed: "
                             f"{', '.join(sorted(allowed))}); pass --trust-config for a config of your own")
        if not key.replace("_", "").isalnum() or not key[:1].isalpha():
            raise UsageError(f"{where}: {key!r} is not an option name")
        flag = "--" + key.replace("_", "-")
        values = value if isinstance(value, list) else [value]
        for v in values:
            if isinstance(v, bool) and not isinstance(value, list):
                out.append(flag if v else f"--no-{key.replace('_', '-')}")
            elif isinstance(v, (int, float, str)) and not isinstance(v, bool):
                text = confine.path(str(v), f"{where}: option {key!r}") if key in PATH_OPTIONS else str(v)
                out.append(f"{flag}={text}")
            else:
                raise UsageError(f"{where}: option {key!r} must be a number, text, true/false or a list")
    return out


def _traces(entry: dict[str, Any], where: str, base: Path, confine: _Confine) -> list[str]:
    patterns = entry.get("traces", [])
    if not isinstance(patterns, list) or not all(isinstance(p, str) for p in patterns):
        raise UsageError(f"{where}: traces must be a list of paths or globs")
    traces: list[str] = []
    for pattern in patterns:
        hits = sorted(glob.glob(pattern, root_dir=base)) if glob.has_magic(pattern) else [pattern]
        if not hits:
            raise InputError(f"{where}: no file matches {pattern!r} (relative to {base})")
        traces += [confine.path(h, f"{where}: trace") for h in hits]
    return traces


def _argv(entry: dict[str, Any], index: int, base: Path, confine: _Confine) -> tuple[str, list[str], list[str]]:
    """(name, argv, the entry's input files) of one [[check]] entry."""
    where = f"check #{index + 1}"
    if not isinstance(entry, dict):
        raise UsageError(f"{where}: must be a table")
    unknown = set(entry) - ENTRY_KEYS
    if unknown:
        known = ", ".join(sorted(ENTRY_KEYS))
        raise UsageError(f"{where}: unknown key(s) {', '.join(sorted(unknown))} (known: {known})")
    command = entry.get("command")
    if command not in COMMANDS:
        raise UsageError(f"{where}: command must be one of {', '.join(COMMANDS)}, got {command!r}")
    traces = _traces(entry, where, base, confine)
    if not traces and command != "simulate":
        raise InputError(f"{where}: traces is empty")
    options = entry.get("options", {})
    argv = [command, *_flags(options, where, command, confine)]
    if "expect" in entry:
        argv.append(f"--expect={entry['expect']}")
    gates = entry.get("fail_on", [])
    if not isinstance(gates, list):
        raise UsageError(f"{where}: fail_on must be a list of conditions")
    argv += [f"--fail-on={gate}" for gate in gates]
    argv += ["--format=json"]
    if command == "simulate":
        argv += [f"--trace={t}" for t in traces]
    else:
        argv += ["--", *traces]  # after --, a trace named like an option is still a trace
    inputs = [*traces, *[str(v) for k, v in options.items() if k in PATH_OPTIONS]] if isinstance(options, dict) \
        else list(traces)
    name = entry.get("name") or f"{command} {' '.join(traces)}"
    return str(name), argv, inputs


def _run(name: str, argv: list[str], base: Path) -> tuple[int, list[Any], str]:
    from ..gates import CheckOutcome  # the library loads when a command runs, never for --help

    proc = subprocess.Popen([sys.executable, "-m", "ctwm_cli", *argv], cwd=base, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err_text = proc.communicate()
    except BaseException as exc:  # SIGINT / SIGTERM (Interrupted): the entry and its workers end first
        _stop_group(proc, getattr(exc, "signum", signal.SIGINT))
        raise
    err = err_text.strip().splitlines()
    last = err[-1] if err else ""
    if proc.returncode not in (0, EXIT_CHECK_FAILED):
        return proc.returncode, [], last
    try:
        doc = json.loads(out)
    except json.JSONDecodeError:
        return 4, [], f"ctwm {argv[0]} printed no JSON ({last})"
    outcomes = [CheckOutcome(**{**c, "subject": f"{name} / {c['subject']}"}) for c in doc.get("checks", [])]
    return proc.returncode, outcomes, last


def _stop_group(proc: subprocess.Popen, signum: int, grace: float = 10.0) -> None:
    """Pass the signal to the entry's process group (the entry and its pool workers), wait until every
    one of them is gone, and SIGKILL what is left after ``grace`` seconds."""
    pgid = proc.pid  # start_new_session: the entry leads its own group
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)
    deadline = time.monotonic() + grace
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=grace)
    while True:
        try:
            os.killpg(pgid, 0)  # anyone left in the group?
        except (ProcessLookupError, PermissionError):
            break
        if time.monotonic() > deadline:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, signal.SIGKILL)
            deadline = time.monotonic() + grace
        time.sleep(0.05)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=1.0)


TrustOpt = Annotated[bool, typer.Option(
    "--trust-config", help=f"The config is your own: let it name paths outside its directory and any option "
    f"(default: confined, as for a config from a pull request; also {TRUST_ENV}=1).")]


@output_flags
def check(
    config: Annotated[str | None, typer.Argument(metavar="[CONFIG]", help="ctwm.toml or pyproject.toml [default: ./ctwm.toml, else ./pyproject.toml].")] = None,  # noqa: E501
    junit: JunitOpt = None,
    trust_config: TrustOpt = False,
    fmt: Format = Format.table,
) -> None:
    """Run every check of a project's ctwm.toml (or [tool.ctwm] in pyproject.toml) and summarise them.

    Each [[check]] names a command (audit, concentration, psd, simulate, health, inspect), its traces
    (globs allowed), its options, and what must hold (expect, fail_on). Exit 1 if any check failed; an
    entry that cannot run gives its own exit code (2 usage, 3 input).

    The config is treated as untrusted (it may come with a pull request): every path it names must
    resolve inside its own directory, its options are an allow-list per command (no --plot, no
    --scheduler), and its traces are passed after --. --trust-config lifts this for your own config.

    \b
    Examples:
      ctwm check
      ctwm check ctwm.toml --junit-xml ctwm-junit.xml
      ctwm check pyproject.toml --format github
      ctwm check --format markdown >> "$GITHUB_STEP_SUMMARY"
    """
    path, table = _config(config)
    base = path.parent.resolve()
    confine = _Confine(base, trust_config or os.environ.get(TRUST_ENV) == "1")
    entries = table.get("check", [])
    if not isinstance(entries, list) or not entries:
        raise InputError(f"{path}: no [[check]] entries")
    configured = table.get("junit_xml")
    if configured is not None and not isinstance(configured, str):
        raise UsageError(f"{path}: junit_xml must be a file name")
    if junit is None and configured is not None:  # the config's own output: confined like its inputs
        junit = str(base / confine.path(configured, f"{path}: junit_xml"))
    runs = [_argv(e, i, base, confine) for i, e in enumerate(entries)]
    inputs = [str(path), *(str(base / f) for _name, _argv_, files in runs for f in files)]
    check_outputs(inputs, junit_xml=junit)
    junit_path = check_output_path(junit, "--junit-xml")
    rows, suites, all_checks, worst = [], [], [], 0
    for name, argv, _files in runs:
        started = time.perf_counter()
        code, outcomes, last = _run(name, argv, base)
        seconds = time.perf_counter() - started
        if code not in (0, EXIT_CHECK_FAILED):
            worst = max(worst, code)
            message(f"ctwm check: {name}: exit {code}: {last}")
        failed = sum(o.failed for o in outcomes)
        status = "pass" if code == 0 else ("fail" if code == EXIT_CHECK_FAILED else f"error (exit {code})")
        rows.append({"check": name, "command": argv[0], "checks": len(outcomes), "failed": failed, "exit_code": code,
                     "status": status, "error": last if code not in (0, EXIT_CHECK_FAILED) else None})
        suites.append((f"ctwm check: {name}", outcomes, rows[-1]["error"], seconds))
        all_checks += outcomes
    if junit_path is not None:
        write_atomic(junit_path, junit_xml(suites))
    payload = {"config": str(path), "entries": rows}
    if fmt is Format.table:
        _table(rows)
        if all_checks:
            show(stdout_console(), checks_table(all_checks))
    else:
        # no subject_field: an entry's outcomes are named "entry / subject", and its row already counts them
        emit("check", payload, rows, fmt, checks=all_checks)
    if worst:
        bad = sum(r["error"] is not None for r in rows)
        raise _EntryError(worst, f"{bad} of {len(rows)} check entries could not run")
    failed = [r["check"] for r in rows if r["exit_code"] == EXIT_CHECK_FAILED]
    if failed:
        raise CheckFailed(f"{len(failed)} of {len(rows)} check entries failed: {', '.join(failed)}")


class _EntryError(CtwmError):
    def __init__(self, code: int, text: str) -> None:
        super().__init__(text)
        self.exit_code = code


def _table(rows: list[dict[str, Any]]) -> None:
    t = Table(title="ctwm check", title_justify="left")
    for col in ("check", "command", "checks", "failed", "status"):
        t.add_column(col, justify="right" if col in ("checks", "failed") else "left")
    for r in rows:
        style = "green" if r["status"] == "pass" else "bold red"
        t.add_row(Text(visible(r["check"])), r["command"], str(r["checks"]), str(r["failed"]),
                  Text(r["status"], style=style))
    show(stdout_console(), t)


def register(app: typer.Typer) -> None:
    app.command("check")(check)

