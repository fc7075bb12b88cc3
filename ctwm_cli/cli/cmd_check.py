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

import glob
import json
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from ..errors import EXIT_CHECK_FAILED, CheckFailed, CtwmError, InputError
from .options import Format, FormatOpt, JsonOpt, JunitOpt, resolve_format
from .output import check_output_path, checks_table, emit, message, stdout_console, write_atomic
from .reporters import junit_xml

COMMANDS = ("audit", "concentration", "psd", "simulate", "health", "inspect")
ENTRY_KEYS = {"name", "command", "traces", "options", "expect", "fail_on"}


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


def _flags(options: dict[str, Any], where: str) -> list[str]:
    """``{"group_by": "run", "diagnostics": False, "event": ["a", "b"]}`` -> long options."""
    out: list[str] = []
    for key, value in options.items():
        flag = "--" + key.replace("_", "-")
        if isinstance(value, bool):
            out.append(flag if value else f"--no-{key.replace('_', '-')}")
        elif isinstance(value, list):
            for v in value:
                out += [flag, str(v)]
        elif isinstance(value, (int, float, str)):
            out += [flag, str(value)]
        else:
            raise InputError(f"{where}: option {key!r} must be a number, text, true/false or a list")
    return out


def _argv(entry: dict[str, Any], index: int, base: Path) -> tuple[str, list[str]]:
    where = f"check #{index + 1}"
    unknown = set(entry) - ENTRY_KEYS
    if unknown:
        known = ", ".join(sorted(ENTRY_KEYS))
        raise InputError(f"{where}: unknown key(s) {', '.join(sorted(unknown))} (known: {known})")
    command = entry.get("command")
    if command not in COMMANDS:
        raise InputError(f"{where}: command must be one of {', '.join(COMMANDS)}, got {command!r}")
    traces: list[str] = []
    for pattern in entry.get("traces", []):
        hits = sorted(glob.glob(pattern, root_dir=base)) if glob.has_magic(pattern) else [pattern]
        if not hits:
            raise InputError(f"{where}: no file matches {pattern!r} (relative to {base})")
        traces += hits
    if not traces and command != "simulate":
        raise InputError(f"{where}: traces is empty")
    argv = [command]
    if command == "simulate":
        argv += [x for t in traces for x in ("--trace", t)]
    else:
        argv += traces
    argv += _flags(entry.get("options", {}), where)
    if "expect" in entry:
        argv += ["--expect", str(entry["expect"])]
    for gate in entry.get("fail_on", []):
        argv += ["--fail-on", str(gate)]
    name = entry.get("name") or f"{command} {' '.join(traces)}"
    return name, [*argv, "--format", "json"]


def _run(name: str, argv: list[str], base: Path) -> tuple[int, list[Any], str]:
    from ..gates import CheckOutcome  # the library loads when a command runs, never for --help

    proc = subprocess.run([sys.executable, "-m", "ctwm_cli", *argv], cwd=base, capture_output=True, text=True,
                          check=False)
    err = proc.stderr.strip().splitlines()
    last = err[-1] if err else ""
    if proc.returncode not in (0, EXIT_CHECK_FAILED):
        return proc.returncode, [], last
    try:
        doc = json.loads(proc.stdout)
    except json.JSONDecodeError:
        return 4, [], f"ctwm {argv[0]} printed no JSON ({last})"
    outcomes = [CheckOutcome(**{**c, "subject": f"{name} / {c['subject']}"}) for c in doc.get("checks", [])]
    return proc.returncode, outcomes, last


def check(
    config: Annotated[str | None, typer.Argument(metavar="[CONFIG]", help="ctwm.toml or pyproject.toml [default: ./ctwm.toml, else ./pyproject.toml].")] = None,  # noqa: E501
    junit: JunitOpt = None,
    fmt: FormatOpt = Format.table,
    as_json: JsonOpt = False,
) -> None:
    """Run every check of a project's ctwm.toml (or [tool.ctwm] in pyproject.toml) and summarise them.

    Each [[check]] names a command (audit, concentration, psd, simulate, health, inspect), its traces
    (globs allowed), its options, and what must hold (expect, fail_on). Exit 1 if any check failed; an
    entry that cannot run gives its own exit code (2 usage, 3 input).

    \b
    Examples:
      ctwm check
      ctwm check ctwm.toml --junit-xml ctwm-junit.xml
      ctwm check pyproject.toml --format github
      ctwm check --format markdown >> "$GITHUB_STEP_SUMMARY"
    """
    fmt = resolve_format(fmt, as_json)
    path, table = _config(config)
    base = path.parent.resolve()
    entries = table.get("check", [])
    if not isinstance(entries, list) or not entries:
        raise InputError(f"{path}: no [[check]] entries")
    junit_path = check_output_path(junit or table.get("junit_xml"), "--junit-xml")
    runs = [_argv(e, i, base) for i, e in enumerate(entries)]
    rows, suites, all_checks, worst = [], [], [], 0
    for name, argv in runs:
        code, outcomes, last = _run(name, argv, base)
        if code not in (0, EXIT_CHECK_FAILED):
            worst = max(worst, code)
            message(f"ctwm check: {name}: exit {code}: {last}")
        failed = sum(o.failed for o in outcomes)
        status = "ok" if code == 0 else ("FAILED" if code == EXIT_CHECK_FAILED else f"ERROR (exit {code})")
        rows.append({"check": name, "command": argv[0], "checks": len(outcomes), "failed": failed, "exit_code": code,
                     "status": status, "error": last if code not in (0, EXIT_CHECK_FAILED) else None})
        suites.append((f"ctwm check: {name}", outcomes, rows[-1]["error"]))
        all_checks += outcomes
    if junit_path is not None:
        write_atomic(junit_path, junit_xml(suites))
    payload = {"config": str(path), "entries": rows}
    if fmt is Format.table:
        _table(rows)
        if all_checks:
            stdout_console().print(checks_table(all_checks))
    else:
        emit("check", payload, rows, fmt, checks=all_checks, subject_field="check")
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
        style = "green" if r["status"] == "ok" else "bold red"
        t.add_row(Text(r["check"]), r["command"], str(r["checks"]), str(r["failed"]), Text(r["status"], style=style))
    stdout_console().print(t)


def register(app: typer.Typer) -> None:
    app.command("check")(check)

