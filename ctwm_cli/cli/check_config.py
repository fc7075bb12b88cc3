"""A ``ctwm check`` config, read as untrusted input: its entries as argument lists, or a refusal (exit 2).

A config from a pull request is not the user's words. Its options are an allow-list per command, every
value is attached to its flag (``--bootstrap=200``) and traces come after ``--``; every path it names,
and every file a glob of it matches, is admitted by :mod:`ctwm_cli.runtime.confine` (inside the config's
directory, never VCS metadata, no URL unless the operator allows remote traces). The child process
that runs an entry admits again, file by file, what it actually opens.
"""

from __future__ import annotations

import dataclasses
import difflib
import glob
import re
import tomllib
from pathlib import Path
from typing import Any

from ..common.errors import InputError, UsageError
from ..runtime.confine import Confinement, admit_files, admit_name, is_remote
from .output import message

COMMANDS = ("audit", "concentration", "psd", "simulate", "health", "inspect", "replay", "replay compare",
            "replay ablation", "replay pareto", "world run", "world grid", "world ladder")
#: commands that read no trace (a config's ``traces`` must be empty); simulate's go to --trace
NO_TRACES = frozenset(c for c in COMMANDS if c.split()[0] in ("replay", "world"))
ENTRY_KEYS = {"name", "command", "traces", "options", "expect", "fail_on"}
#: Top-level keys of the ctwm table: ``junit_xml``, the ``[[check]]`` entries, and ``[columns]`` (the
#: project's column map, read by every command, not by ``ctwm check`` itself).
TOP_KEYS = ("junit_xml", "check", "columns")

# A config from a pull request is not the user's words. Its keys are the command's own flags, read off the
# click command (kebab or snake case: ``min-tail`` or ``min_tail``; a boolean pair's either side:
# ``discrete = false`` is --continuous), so a new option can be set from a config the moment it exists;
# what must never come from a config is refused by name with its reason: nothing that writes a file (--plot,
# --junit-xml: the config's top-level junit_xml is confined instead), nothing that contacts another machine
# (--scheduler, --engine dask), nothing that changes the output ctwm check itself parses (--format, --json),
# and a declared option marked ``config=False`` with its reason (:data:`.option_groups.CONFIG_REFUSED`: --scheduler,
# --engine).
# --trust-config lifts the refusals for a user's own config.
REFUSED: dict[str, str] = {
    "plot": "it writes a file",
    "junit_xml": "it writes a file (the config's top-level junit_xml is confined instead)",
    "output_format": "ctwm check reads the entry's JSON output itself",
    "output_json": "ctwm check reads the entry's JSON output itself",
    "quiet": "ctwm check reads the entry's JSON output itself",
    "fail_on": "it is the entry's own fail_on key",
    "expect": "it is the entry's own expect key",
    "trace": "it is the entry's own traces key",
}
#: The longest value a config may give an option (the longest typed --where, below the kernel's 128 KiB
#: bound on one argument).
MAX_VALUE = 65_536
#: Options whose value is a file the entry reads: admitted like its traces.
PATH_OPTIONS = frozenset({"objects"})


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Entry:
    """One ``[[check]]`` entry: its name (unique in the config), argv, and the files it names."""

    name: str
    argv: list[str]
    inputs: list[str]
    command: str = ""


def read_config(path: str | None) -> tuple[Path, dict[str, Any]]:
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
        except RecursionError:
            raise InputError(f"{p}: arrays or tables nested too deeply") from None
        table = doc.get("tool", {}).get("ctwm") if p.name == "pyproject.toml" else doc
        if table is None:
            if path:
                raise InputError(f"{p}: no [tool.ctwm] table")
            continue
        if not isinstance(table, dict):
            raise InputError(f"{p}: the ctwm table must be a table")
        _known_keys(table, p)
        return p, table
    raise InputError("no ctwm.toml and no [tool.ctwm] in pyproject.toml here (pass CONFIG)")


def _known_keys(table: dict[str, Any], path: Path) -> None:
    for key in table:
        if key not in TOP_KEYS:
            close = difflib.get_close_matches(key, TOP_KEYS, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise UsageError(f"{path}: unknown key {key!r} ({hint}known: {', '.join(TOP_KEYS)})")


class Confine:
    """Where a config may point: what :mod:`ctwm_cli.runtime.confine` admits under ``rules``; nothing when trusted."""

    def __init__(self, rules: Confinement, trusted: bool) -> None:
        self.rules, self.trusted = rules, trusted

    @property
    def base(self) -> Path:
        return Path(self.rules.root)

    def path(self, value: str, what: str) -> str:
        if self.trusted:
            return value
        try:
            admit_name(value, self.rules)
            if not is_remote(value):
                admit_files(value, [str(self.base / value)], self.rules)
        except (UsageError, InputError) as exc:
            raise type(exc)(f"{what}: {exc}") from None
        return value

    def files(self, pattern: str, hits: list[str], what: str) -> list[str]:
        """A glob's matches, each admitted (a match through a link out of the repository is refused)."""
        for h in hits:
            self.path(h, f"{what} {pattern!r}")
        return hits


def command_options(command: str) -> dict[str, tuple[Any, bool]]:
    """Every config key of ``command`` -> (its click option, the boolean its key means): each long flag
    without ``--`` in snake case, a boolean pair's second flag meaning false (``continuous`` -> discrete
    false)."""
    import typer.main  # the CLI is loaded already: ctwm check runs in it

    from .application import app_for

    words = command.split()
    click_command = typer.main.get_command(app_for(words[:1]))
    for word in words:  # "replay compare": the subcommand's own options
        click_command = click_command.commands[word]
    out: dict[str, tuple[Any, bool]] = {}
    for p in click_command.params:
        if getattr(p, "param_type_name", "") != "option":
            continue
        for flags, meaning in ((p.opts, True), (p.secondary_opts, False)):
            for flag in flags:
                if flag.startswith("--"):
                    out.setdefault(flag[2:].replace("-", "_"), (p, meaning))
    return out


def _refusal(p: Any) -> str | None:
    from .option_groups import CONFIG_REFUSED

    return REFUSED.get(p.name) or CONFIG_REFUSED.get(p.name)


def _deprecated(p: Any) -> str | None:
    """The flag a hidden deprecated spelling stands for (its help says ``Deprecated spelling of --x``)."""
    m = re.match(r"Deprecated spelling of (--[\w-]+)", p.help or "") if getattr(p, "hidden", False) else None
    return m.group(1) if m else None


def _flags(options: dict[str, Any], where: str, command: str, confine: Confine) -> list[str]:
    """``{"group_by": "run", "diagnostics": False, "event": ["a", "b"]}`` -> ``--group-by=run`` ...

    Each key is one of the command's flags (:func:`command_options`); each value is attached to its flag
    (``--flag=value``), so a value can never be read as an option."""
    if not isinstance(options, dict):
        raise UsageError(f"{where}: options must be a table of option = value")
    known = command_options(command)
    settable = sorted(k for k, (p, meaning) in known.items()
                      if meaning and not _deprecated(p) and (confine.trusted or not _refusal(p)))
    out: list[str] = []
    for key, value in options.items():
        if not isinstance(key, str) or not key.replace("_", "").replace("-", "").isalnum() or not key[:1].isalpha():
            raise UsageError(f"{where}: {key!r} is not an option name")
        name = key.replace("-", "_")
        if name not in known:
            close = difflib.get_close_matches(name, settable, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise UsageError(f"{where}: {command} has no option {key!r} ({hint}a config sets: "
                             f"{', '.join(settable)})")
        p, meaning = known[name]
        why = _refusal(p)
        if why and not confine.trusted:
            raise UsageError(f"{where}: option {key!r} is not allowed in a config: {why}; pass --trust-config "
                             "for a config of your own")
        if (new := _deprecated(p)) is not None:
            message(f"warning: {where}: option {key!r} is deprecated; use {new[2:]!r}")
        out += _option_args(p, meaning, key, value, where, confine)
    return out


def _option_args(p: Any, meaning: bool, key: str, value: Any, where: str, confine: Confine) -> list[str]:
    """One config option as its command-line arguments."""
    if getattr(p, "is_flag", False):
        if not isinstance(value, bool):
            raise UsageError(f"{where}: option {key!r} is true or false, got {value!r}")
        on = value == meaning
        if p.secondary_opts:
            return [_long(p.opts) if on else _long(p.secondary_opts)]
        if on == bool(p.default):
            return []
        if on:
            return [_long(p.opts)]
        raise UsageError(f"{where}: option {key!r} cannot be set to {str(value).lower()}")
    flag = _long(p.opts)
    values = value if isinstance(value, list) else [value]
    if isinstance(value, list) and not p.multiple and p.nargs == 1:
        raise UsageError(f"{where}: option {key!r} takes one value, not a list")
    out = []
    for v in values:
        if isinstance(v, str) and "\x00" in v:  # no argument of a process can hold one
            raise UsageError(f"{where}: option {key!r} holds a NUL character")
        if isinstance(v, str) and len(v) > MAX_VALUE:  # nor be longer than the kernel's 128 KiB
            raise UsageError(f"{where}: option {key!r} is {len(v):,} characters long; a config's value may be "
                             f"at most {MAX_VALUE:,}")
        if isinstance(v, bool) or not isinstance(v, (int, float, str)):
            raise UsageError(f"{where}: option {key!r} must be a number, text or a list of them, got {v!r}")
        text = confine.path(str(v), f"{where}: option {key!r}") if _reads_file(p.name) else str(v)
        out.append(f"{flag}={text}")
    return out


def _reads_file(name: str) -> bool:
    """Whether option ``name``'s value is a file the entry reads (admitted like its traces)."""
    from .option_groups import CONFIG_PATHS

    return name in PATH_OPTIONS or name in CONFIG_PATHS


def _long(opts: list[str]) -> str:
    return next(o for o in opts if o.startswith("--"))


def _traces(entry: dict[str, Any], where: str, confine: Confine) -> list[str]:
    patterns = entry.get("traces", [])
    if not isinstance(patterns, list) or not all(isinstance(p, str) for p in patterns):
        raise UsageError(f"{where}: traces must be a list of paths or globs")
    traces: list[str] = []
    for pattern in patterns:
        if "\x00" in pattern:
            raise UsageError(f"{where}: a trace name holds a NUL character")
        if glob.has_magic(pattern) and not is_remote(pattern):
            hits = sorted(glob.glob(pattern, root_dir=confine.base))
            if not hits:
                raise InputError(f"{where}: no file matches {pattern!r} (relative to {confine.base})")
            traces += confine.files(pattern, hits, f"{where}: trace")
        else:
            traces.append(confine.path(pattern, f"{where}: trace"))
    return traces


def entry_argv(entry: Any, index: int, confine: Confine) -> Entry:
    """One [[check]] entry as the argv of its command, or a refusal naming the entry."""
    where = f"check #{index + 1}"
    if not isinstance(entry, dict):
        raise UsageError(f"{where}: must be a table")
    if isinstance(entry.get("name"), str):
        where += f" ({entry['name']!r})"
    unknown = set(entry) - ENTRY_KEYS
    if unknown:
        known = ", ".join(sorted(ENTRY_KEYS))
        raise UsageError(f"{where}: unknown key(s) {', '.join(sorted(unknown))} (known: {known})")
    command = entry.get("command")
    if command not in COMMANDS:
        close = difflib.get_close_matches(str(command), COMMANDS, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise UsageError(f"{where}: command must be one of {', '.join(COMMANDS)}, got {command!r}{hint}")
    traces = _traces(entry, where, confine)
    if traces and command in NO_TRACES:
        raise UsageError(f"{where}: {command} reads no traces (give its options only)")
    if not traces and command != "simulate" and command not in NO_TRACES:
        raise InputError(f"{where}: traces is empty")
    options = entry.get("options", {})
    argv = [*command.split(), *_flags(options, where, command, confine)]
    if command in NO_TRACES:  # replay and world have no --expect and no --fail-on (replay: --min-effect)
        for key in ("expect", "fail_on"):
            if key in entry:
                raise UsageError(f"{where}: {command} has no --{key.replace('_', '-')}; drop {key}")
    if "expect" in entry:
        argv.append(f"--expect={entry['expect']}")
    gates = entry.get("fail_on", [])
    if not isinstance(gates, list) or not all(isinstance(g, str) and "\x00" not in g for g in gates):
        raise UsageError(f"{where}: fail_on must be a list of conditions")
    if "\x00" in str(entry.get("expect", "")):
        raise UsageError(f"{where}: expect holds a NUL character")
    argv += [f"--fail-on={gate}" for gate in gates]
    argv += ["--format=json"]
    if command == "simulate":
        argv += [f"--trace={t}" for t in traces]
    elif traces:
        argv += ["--", *traces]  # after --, a trace named like an option is still a trace
    inputs = [*traces, *[str(v) for k, v in options.items() if _reads_file(k.replace("-", "_"))]] \
        if isinstance(options, dict) else list(traces)
    name = entry.get("name") or (command if command in NO_TRACES else f"{command} {' '.join(traces)}")
    return Entry(name=str(name), argv=argv, inputs=inputs, command=command)


def entries(table: dict[str, Any], path: Path, confine: Confine) -> list[Entry]:
    """Every entry of the config, names unique (a duplicate would merge two gates in JUnit and diff)."""
    found = table.get("check", [])
    if not isinstance(found, list) or not found:
        raise InputError(f"{path}: no [[check]] entries")
    out = [entry_argv(e, i, confine) for i, e in enumerate(found)]
    seen: dict[str, int] = {}
    for i, e in enumerate(out):
        if e.name in seen:
            raise UsageError(f"{path}: check #{seen[e.name] + 1} and check #{i + 1} are both named {e.name!r}; "
                             "give each entry its own name")
        seen[e.name] = i
    return out
