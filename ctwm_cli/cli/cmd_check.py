"""``ctwm check``: every audit, gate and expectation of a project, from one config file, in one run.

The config is ``ctwm.toml`` or the ``[tool.ctwm]`` table of ``pyproject.toml``::

    junit_xml = "ctwm-junit.xml"          # optional: always write JUnit here

    [[check]]
    name = "sample trace is heavy-tailed"  # optional (default: command + traces); unique
    command = "audit"                      # audit, concentration, psd, simulate, health, inspect, replay, world ...
    traces = ["sample_traces/*.parquet"]   # files or globs, relative to the config file
    options = { seed = 1, bootstrap = 200, group_by = "run" }   # the command's long options
    expect = "tpl-compatible"              # audit only
    fail_on = ["p_gof<0.1", "n_tail<100"]

Each entry runs as its own ``ctwm`` process (:mod:`ctwm_cli.cli.check_entry`: ``--format json``, under a
memory and a time bound, confined to the config's directory), so an entry behaves exactly as the same
command typed by hand; ``ctwm check`` collects every entry's gate outcomes from its JSON, prints one line
per entry and one summary line (details only for what failed), writes JUnit if asked, and exits 0 only
when every entry ran and passed: 1 if a gate failed, else the worst code of an entry that could not run
(2 usage, 3 input or stopped by a signal or a bound, 4 a bug).
"""

from __future__ import annotations

import dataclasses
import os
from typing import Annotated, Any

import typer
from rich.text import Text

from ..common.errors import EXIT_CHECK_FAILED, CheckFailed, CtwmError, UsageError
from ..common.inert import visible
from ..runtime.confine import Confinement
from .check_config import Confine, entries, read_config
from .check_entry import DEFAULT_SECONDS, Bounds, EntryEnd, default_memory, parse_size, run_entry
from .options import Format, JunitOpt, output_flags
from .output import check_output_path, check_outputs, emit, message, stdout_console, write_atomic
from .registry import result
from .reporters import failure_text, junit_xml

TRUST_ENV = "CTWM_TRUST_CONFIG"

TrustOpt = Annotated[bool, typer.Option(
    "--trust-config", help=f"The config is your own: let it name paths outside its directory and any option "
    f"(default: confined, as for a config from a pull request; also {TRUST_ENV}=1).")]
RemoteOpt = Annotated[bool, typer.Option(
    "--allow-remote", help="Let the config's traces be URLs (s3://, https://, ...): an operator's decision, "
    "never the config's. Local paths stay confined.")]
MemoryOpt = Annotated[str | None, typer.Option(
    "--entry-memory", metavar="SIZE", help="Address space each entry may use (RLIMIT_AS), e.g. 8GB [default: 4GiB, "
    "or the memory available when ctwm check starts if less, at least 2GiB].")]
TimeoutOpt = Annotated[float, typer.Option(
    "--entry-timeout", metavar="SECONDS", min=1.0, help="Wall time each entry may take before it is stopped.")]


#: ``ctwm check``'s document: the config it ran and one entry per ``[[check]]`` (no result class of its own)
CHECK_SCHEMA = {
    "properties": {"config": {"type": "string"}, "entries": {"type": "array", "items": {
        "type": "object", "required": ["check", "command", "checks", "failed", "exit_code", "status", "error"],
        "properties": {"check": {"type": "string"}, "command": {"type": "string"}, "checks": {"type": "integer"},
                       "failed": {"type": "integer"}, "exit_code": {"type": "integer"},
                       "status": {"type": "string"}, "error": {"type": ["string", "null"]}}}}},
    "required": ["config", "entries"],
}


@result("check", schema=CHECK_SCHEMA)
@output_flags
def check(
    config: Annotated[str | None, typer.Argument(metavar="[CONFIG]", help="ctwm.toml or pyproject.toml [default: ./ctwm.toml, else ./pyproject.toml].")] = None,  # noqa: E501
    junit: JunitOpt = None,
    trust_config: TrustOpt = False,
    allow_remote: RemoteOpt = False,
    entry_memory: MemoryOpt = None,
    entry_timeout: TimeoutOpt = DEFAULT_SECONDS,
    fmt: Format = Format.table,
) -> None:
    """Run every check of a project's ctwm.toml (or [tool.ctwm] in pyproject.toml) and summarise them.

    Each [[check]] names a command (audit, concentration, psd, simulate, health, inspect; replay, replay
    compare|ablation|pareto and world run|grid|ladder, which read no traces), its traces
    (globs allowed), its options, and what must hold (expect, fail_on). Exit 0 only if every entry ran
    and passed; 1 if a check failed; an entry that could not run fails the run with its code (2 usage,
    3 input, also an entry stopped by a signal, --entry-memory or --entry-timeout; 4 a bug).

    The config is treated as untrusted (it may come with a pull request): every file an entry reads
    must resolve inside the config's directory and never into .git/, .hg/ or .svn/; no URL (unless
    --allow-remote) and no standard input; its options are an allow-list per command (no --plot, no
    --scheduler), its where predicates a bounded allow-list of functions, and its traces are passed
    after --. --trust-config lifts the confinement and the option list for your own config.

    \b
    Examples:
      ctwm check
      ctwm check ctwm.toml --junit-xml ctwm-junit.xml
      ctwm check pyproject.toml --format github
      ctwm check --format markdown >> "$GITHUB_STEP_SUMMARY"
    """
    path, table = read_config(config)
    trusted = trust_config or os.environ.get(TRUST_ENV) == "1"
    rules = Confinement(str(path.parent.resolve()), allow_remote=allow_remote)
    confine = Confine(rules, trusted)
    bounds = Bounds(memory=default_memory() if entry_memory is None else parse_size(entry_memory, "--entry-memory"),
                    seconds=entry_timeout)
    configured = table.get("junit_xml")
    if configured is not None and not isinstance(configured, str):
        raise UsageError(f"{path}: junit_xml must be a file name")
    if junit is None and configured is not None:  # the config's own output: confined like its inputs
        junit = str(confine.base / confine.path(configured, f"{path}: junit_xml"))
    runs = entries(table, path, confine)
    check_outputs([str(path), *(str(confine.base / f) for e in runs for f in e.inputs)], junit_xml=junit)
    junit_path = check_output_path(junit, "--junit-xml")
    env = {} if trusted else rules.env()
    rows, suites, all_checks = [], [], []
    for e in runs:
        end = run_entry(e.argv, str(confine.base), bounds, env)
        outcomes = _outcomes(end)
        if end.error is not None:
            message(f"ctwm check: {e.name}: {end.status}: {end.error}")
        rows.append({"check": e.name, "command": e.command or e.argv[0], "checks": len(outcomes),
                     "failed": sum(o.failed for o in outcomes), "exit_code": end.exit_code, "status": end.status,
                     "error": end.error})
        suites.append((f"ctwm check: {e.name}", outcomes, end.error, end.seconds))
        all_checks += [_named(o, e.name) for o in outcomes] + ([_error_outcome(e.name, end)] if end.error else [])
    if junit_path is not None:
        write_atomic(junit_path, junit_xml(suites))
    if fmt is Format.table:
        _lines(rows, all_checks)
    else:
        # no subject_field: an entry's outcomes are named "entry / subject", and its row already counts them
        emit("check", {"config": str(path), "entries": rows}, rows, fmt, checks=all_checks)
    _conclude(rows)


def _outcomes(end: EntryEnd) -> list[Any]:
    from ..common.gates import CheckOutcome  # the library loads when a command runs, never for --help

    return [CheckOutcome(**c) for c in (end.doc or {}).get("checks", [])] if end.ran else []


def _named(outcome: Any, entry: str) -> Any:
    return dataclasses.replace(outcome, subject=f"{entry} / {outcome.subject}")


def _error_outcome(entry: str, end: EntryEnd) -> Any:
    """An entry that could not run, as a gate outcome of status ``error`` (every reporter shows it failed)."""
    from ..common.gates import ERROR, CheckOutcome

    return CheckOutcome(subject=entry, check="ran", metric="ran", op="==", threshold="ran", observed=end.status,
                        status=ERROR, failed=True, note=str(end.error))


def _conclude(rows: list[dict[str, Any]]) -> None:
    errors = [r for r in rows if r["error"] is not None]
    if errors:
        raise _EntryError(max(r["exit_code"] for r in errors),
                          f"{len(errors)} of {len(rows)} check entries could not run: "
                          f"{', '.join(visible(r['check']) for r in errors)}")
    failed = [r["check"] for r in rows if r["exit_code"] == EXIT_CHECK_FAILED]
    if failed:
        raise CheckFailed(f"{len(failed)} of {len(rows)} check entries failed: {', '.join(failed)}")


class _EntryError(CtwmError):
    def __init__(self, code: int, text: str) -> None:
        super().__init__(text)
        self.exit_code = code


_STYLE = {"pass": "green", "fail": "bold red"}


def _lines(rows: list[dict[str, Any]], checks: list[Any]) -> None:
    """One line per entry (``pass  NAME  audit: 6 checks``), the failed gates and errors under their entry,
    and one summary line: a green run of N entries prints N + 1 lines."""
    console = stdout_console()
    width = max(len(visible(r["check"])) for r in rows)
    for r in rows:
        word = "pass" if r["status"] == "pass" else ("FAIL" if r["status"] == "fail" else "ERROR")
        n = r["checks"]
        what = f"{n} check{'s' if n != 1 else ''}" if r["error"] is None else r["status"]
        if r["failed"] and r["error"] is None:
            what = f"{r['failed']} of {what} failed"
        line = Text(f"{word:<5} ", style=_STYLE.get(r["status"], "bold red"))
        line.append(f"{visible(r['check']):<{width}}  {r['command']}: {what}")
        console.print(line, soft_wrap=True)
        prefix = f"{r['check']} / "
        for c in checks:
            if c.failed and c.status != "error" and c.subject.startswith(prefix):
                console.print(Text(f"      {visible(c.subject[len(prefix):])}: {visible(failure_text(c))}"),
                              soft_wrap=True)
        if r["error"] is not None:
            console.print(Text(f"      {visible(r['error'])}"), soft_wrap=True)
    passed = sum(r["status"] == "pass" for r in rows)
    failed = sum(r["status"] == "fail" for r in rows)
    errors = len(rows) - passed - failed
    console.print(Text(f"ctwm check: {len(rows)} entr{'y' if len(rows) == 1 else 'ies'}: {passed} passed, "
                       f"{failed} failed, {errors} could not run"))


def register(app: typer.Typer) -> None:
    app.command("check")(check)
