"""Package layout: the library core imports neither Typer, Rich nor matplotlib; every command has help."""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys

import pytest
import typer.main

import ctwm_cli
from ctwm_cli.cli import app

FORBIDDEN = ("typer", "rich", "matplotlib")


def core_modules() -> list[str]:
    """Every importable module of the package except the CLI (and ``__main__``, which runs it)."""
    names = ["ctwm_cli"]
    for mod in pkgutil.walk_packages(ctwm_cli.__path__, prefix="ctwm_cli."):
        if mod.name == "ctwm_cli.cli" or mod.name.startswith("ctwm_cli.cli.") or mod.name == "ctwm_cli.__main__":
            continue
        if mod.name.startswith("ctwm_cli.plots"):
            continue  # plots import matplotlib by design; they must only be imported on demand
        names.append(mod.name)
    return names


def test_core_imports_no_cli_or_plot_libraries():
    modules = core_modules()
    assert "ctwm_cli.traces" in modules and "ctwm_cli.traces.readers" in modules
    code = (
        "import importlib, json, sys\n"
        f"for m in {modules!r}: importlib.import_module(m)\n"
        f"print(json.dumps(sorted(k for k in {list(FORBIDDEN)!r} if k in sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert json.loads(out.stdout) == []


def test_plots_do_not_import_matplotlib_at_package_import():
    code = (
        "import sys, importlib, pkgutil\n"
        "import ctwm_cli\n"
        "try:\n    import ctwm_cli.plots\nexcept ImportError:\n    pass\n"
        "print('matplotlib' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.strip() == "False"


def _commands(cmd, path=()):
    """(path, command) for every command and group under ``cmd``, recursively."""
    yield path, cmd
    for name, sub in sorted(getattr(cmd, "commands", {}).items()):
        yield from _commands(sub, (*path, name))


ALL = [path for path, _ in _commands(typer.main.get_command(app)) if path]


def test_there_are_commands():
    assert ("inspect",) in ALL


@pytest.mark.parametrize("path", ALL, ids=[" ".join(p) for p in ALL])
def test_every_command_has_help(path, run_cli):
    root = typer.main.get_command(app)
    cmd = root
    for name in path:
        cmd = cmd.commands[name]
    assert (cmd.help or cmd.short_help or "").strip(), f"ctwm {' '.join(path)} has no help text"
    for param in cmd.params:
        # Duck-typed: recent Typer releases vendor click, so no isinstance against click classes.
        if getattr(param, "param_type_name", "") == "option" and not getattr(param, "hidden", False):
            assert (param.help or "").strip(), f"ctwm {' '.join(path)}: option {param.opts} has no help text"
    res = run_cli([*path, "--help"])
    assert res.code == 0, res.err
    assert "Usage:" in res.out
