"""Every library error about an argument names its parameter (``params=``), and every parameter named
resolves to a flag through the options of the commands themselves (``ctwm_cli.cli.param_flags``)."""

from __future__ import annotations

import ast
import pickle
import re
from pathlib import Path

import pytest
import typer.main

from ctwm_cli.cli.application import full_app
from ctwm_cli.cli.param_flags import all_commands, command_flags, flag_message, option_flags
from ctwm_cli.common.errors import InputError, UsageError

ROOT = Path(__file__).resolve().parents[1]
AGENT_LOG = ROOT / "sample_traces" / "agent_log.jsonl"
LME = ROOT / "sample_traces" / "longmemeval" / "longmemeval_synthetic.json"

PACKAGE = Path(__file__).resolve().parents[1] / "ctwm_cli"
ERRORS = {"UsageError", "InputError", "WriteError", "CtwmError"}
CHECKS = {"check_range", "check_choice"}  # they set params=(name,) from their first argument

_ENV = "GraphWorld's step API (notebooks, the replay engine); a world comes from --world-param/--family"
_WRITER = "TraceWriter's arguments (the integrations write traces; no command takes them)"
_KEY = "a key inside --graph-param/--world-param KEY=VALUE, named by its key"
_NOTEBOOK = "a library function's input that the CLI builds itself (never a value the user typed)"
_KNOB = "an internal setting the CLI fixes (no flag on purpose)"
_WRAPPER = "an integration wrapper's argument (TracedStore, TracedMemory, a task and its outcome); no command takes it"
#: parameters the library names that no command has a flag for, each with the reason
LIBRARY_ONLY = {
    "action": _ENV, "state": _ENV, "tid": _ENV, "start": _ENV,
    "flush_rows": _WRITER, "flush_seconds": _WRITER, "format": _WRITER, "item": _WRITER, "kind": _WRITER,
    "path": _WRITER, "score": _WRITER,
    "bridges": _KEY, "scale": _KEY, "concentration": _KEY, "regions": _KEY, "actions_min": _KEY,
    "actions_max": _KEY,
    "arms": _NOTEBOOK, "ax": _NOTEBOOK, "counts": _NOTEBOOK, "quotas": _NOTEBOOK, "shares": _NOTEBOOK,
    "total": _NOTEBOOK, "read": _NOTEBOOK, "source": _NOTEBOOK, "volumes": _NOTEBOOK, "outcomes": _NOTEBOOK,
    "times": _NOTEBOOK, "taus": _NOTEBOOK, "paths": _NOTEBOOK, "settings": _NOTEBOOK, "extra_columns": _NOTEBOOK,
    "labels": _NOTEBOOK, "scan": _NOTEBOOK, "seeds": _NOTEBOOK, "sizes": _NOTEBOOK,
    "bins": _KNOB, "max_bins": _KNOB, "min_change": _KNOB, "backend": _KNOB, "eviction": _KNOB, "pool": _KNOB,
    "max_response_bytes": _KNOB, "max_tokens": _KNOB,
    "outcome": _WRAPPER, "scope_keys": _WRAPPER, "task": _WRAPPER,
}


def _calls():
    """(file:line, call node) of every ``raise <Error>(...)`` and check_* call outside cli/."""
    for path in sorted(PACKAGE.rglob("*.py")):
        if "cli" in path.relative_to(PACKAGE).parts[:1]:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            where = f"{path.relative_to(PACKAGE)}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
                fn = node.exc.func
                name = fn.id if isinstance(fn, ast.Name) else getattr(fn, "attr", None)
                if name in ERRORS:
                    yield where, name, node.exc
            elif isinstance(node, ast.Call):
                fn = node.func
                if (fn.id if isinstance(fn, ast.Name) else getattr(fn, "attr", None)) in CHECKS:
                    yield where, "check", node


def _named(call) -> list[str]:
    """The parameter names a raise site or check call states as literals."""
    if not isinstance(call.func, ast.Name) or call.func.id not in CHECKS:
        for kw in call.keywords:
            if kw.arg == "params" and isinstance(kw.value, (ast.Tuple, ast.List)):
                return [e.value for e in kw.value.elts if isinstance(e, ast.Constant)]
        return []
    first = call.args[0] if call.args else None
    return [first.value] if isinstance(first, ast.Constant) else []


def test_every_usage_error_states_its_params():
    """``params=`` on every ``raise UsageError``: the parameters it is about, or ``()`` for none (state,
    a missing package, a bad file's content) -- so no raise site forgets to name its argument."""
    missing = [where for where, name, call in _calls()
               if name == "UsageError" and not any(kw.arg == "params" for kw in call.keywords)]
    assert missing == []


def test_every_named_parameter_is_a_flag_of_some_command():
    root = typer.main.get_command(full_app())
    options = {name for _, command in all_commands(root) for name in option_flags(command)}
    named = {p: where for where, _, call in _calls() for p in _named(call)}
    unknown = sorted(f"{p} ({where})" for p, where in named.items() if p not in options and p not in LIBRARY_ONLY)
    assert unknown == [], "\n".join(unknown)
    assert sorted(p for p in LIBRARY_ONLY if p not in named) == []  # no stale exemption


def test_flag_message_rewrites_only_the_named_parameters_as_whole_words():
    flags = {"run": "--run", "out": "--out", "overwrite": "--overwrite", "baseline": "--baseline",
             "memories": "--memory", "step_col": "--step-col"}
    exc = UsageError("run 'r1' is not in /data/run/steps.parquet (runs: r2, run.parquet)", params=("run",))
    assert flag_message(exc, flags) == "--run 'r1' is not in /data/run/steps.parquet (runs: r2, run.parquet)"
    named = UsageError("out 'out': already holds x; pass overwrite to replace it", params=("out", "overwrite"))
    assert flag_message(named, flags) == "--out 'out': already holds x; pass --overwrite to replace it"
    both = UsageError("baseline graph is not among memories flat,ctwm", params=("baseline", "memories"))
    assert flag_message(both, flags) == "--baseline graph is not among --memory flat,ctwm"
    assert flag_message(UsageError("run must be >= 1", params=()), flags) == "run must be >= 1"  # not named
    assert flag_message(UsageError("x_unknown must be > 0", params=("x_unknown",)), flags) == "x_unknown must be > 0"
    assert flag_message(InputError("a: no step column (remap with step_col)", params=("step_col",)), flags).endswith(
        "(remap with --step-col)")


def test_params_survive_a_process_boundary():
    """Workers (world grid, tail bootstrap) send errors back pickled: the CLI still sees the parameters."""
    back = pickle.loads(pickle.dumps(UsageError("run 'x' is not in a", params=("run",))))
    assert type(back) is UsageError and back.params == ("run",)
    assert flag_message(back, {"run": "--run"}) == "--run 'x' is not in a"


def test_flags_come_from_the_command_the_arguments_select():
    root = typer.main.get_command(full_app())
    flags = command_flags(root, ["replay", "compare", "--steps", "10"])
    assert flags["memories"] == "--memory" and flags["budget"] == "--budget" and flags["output_format"] == "--format"
    assert command_flags(root, ["report", "x.jsonl"])["output"] == "--out"
    assert command_flags(root, ["finite-size", "a.jsonl"])["traces"] == "TRACES"
    assert "memories" not in command_flags(root, ["audit", "x.jsonl"])  # another command's option


@pytest.mark.parametrize(("args", "flag_text"), [
    (["audit", AGENT_LOG, "--scan-floor", "1"], "--scan-floor must be >= 2, got 1"),
    (["psd", AGENT_LOG, "--nperseg", "3"], "--nperseg must be an integer >= 16, got 3"),
    (["replay", "compare", "--memory", "flat", "--baseline", "ctwm", "--steps", "50"],
     "--baseline ctwm is not among --memory flat"),
    (["bench", "longmemeval", LME, "--memory", ","], "--memory needs at least one policy"),
    (["world", "run", "-o", "{tmp}/w", "--graph-param", "degree=1", "--family", "uniform", "--steps", "10"],
     "degree must be in [2, size - 1], got 1"),
])
def test_bad_values_print_the_flag_not_the_python_name(run_cli, tmp_path, args, flag_text):
    res = run_cli([str(a).replace("{tmp}", str(tmp_path)) for a in args])
    assert res.code == 2, res.err
    line = res.err.strip().splitlines()[-1]
    assert line.startswith("ctwm: error: ") and flag_text in line, res.err
    for python_name in ("scan_floor", "nperseg", "memories", "graph_param"):
        assert re.search(rf"(?<![-\w]){python_name}\b", line) is None
