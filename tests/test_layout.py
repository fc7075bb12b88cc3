"""Package layout: plots load matplotlib only on demand; every command has help (layering: test_import_contract)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import typer.main

import ctwm_cli
from ctwm_cli.cli import app


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


LEAVES = [path for path, cmd in _commands(typer.main.get_command(app)) if path and not getattr(cmd, "commands", None)]


def _command(path):
    cmd = typer.main.get_command(app)
    for name in path:
        cmd = cmd.commands[name]
    return cmd


@pytest.mark.parametrize("path", LEAVES, ids=[" ".join(p) for p in LEAVES])
def test_every_command_help_ends_with_examples(path, run_cli):
    res = run_cli([*path, "--help"])
    assert res.code == 0, res.err
    text = res.out
    assert "Examples:" in text, f"ctwm {' '.join(path)} --help has no Examples section"
    examples = text.split("Examples:", 1)[1].split("Options:")[0].split("Arguments:")[0]
    assert f"ctwm {' '.join(path)}" in examples, "an example must run the command it documents"


def test_one_meaning_per_short_flag():
    """A short flag (-b, -B, -f, ...) names the same long option in every command that has it."""
    meaning: dict[str, set[str]] = {}
    for path in LEAVES:
        for param in _command(path).params:
            if getattr(param, "param_type_name", "") != "option" or getattr(param, "hidden", False):
                continue
            shorts = [o for o in param.opts if len(o) == 2 and o[0] == "-" and o[1] != "-"]
            longs = [o for o in param.opts if o.startswith("--")]
            for s in shorts:
                meaning.setdefault(s, set()).add(longs[0] if longs else "(no long name)")
    clashes = {s: sorted(m) for s, m in meaning.items() if len(m) > 1}
    assert clashes == {}


def test_choices_are_shown_as_choices(run_cli):
    text = run_cli(["audit", "--help"]).out
    assert "--expect <tpl-compatible|lognormal-compatible|inconclusive>" in " ".join(text.split())
    assert run_cli(["audit", "x.parquet", "--expect", "tpl"]).code == 2


def test_version_and_root_help_load_no_library():
    """Only Typer, Rich and the command modules: no numpy, scipy, numba, pyarrow or duckdb."""
    heavy = ("numpy", "scipy", "numba", "pyarrow", "duckdb", "pandas")
    for args in (["--version"], ["--help"], ["audit", "--help"], ["replay", "compare", "--help"]):
        code = (
            "import sys\nfrom ctwm_cli.cli import main\n"
            f"code = main({args!r})\n"
            f"print(code, sorted(k for k in {heavy!r} if k in sys.modules))\n"
        )
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
        assert out.stdout.strip().splitlines()[-1] == "0 []", (args, out.stdout[-300:])


def test_root_help_lists_every_command_of_the_full_application(run_cli):
    listed = run_cli(["--help"]).out.split("Commands:")[1]
    names = {line.split()[0] for line in listed.splitlines() if line.strip()}
    assert names == set(typer.main.get_command(app).commands)


PACKAGE = Path(ctwm_cli.__file__).parent
MAX_LINES = 400  # issue 43: no module over 400 lines
MAX_COMPLEXITY = 15  # issue 43: no function over McCabe 15 (ruff's C901, configured in pyproject.toml)


def test_no_module_is_over_400_lines():
    long = {str(p.relative_to(PACKAGE)): n for p in PACKAGE.rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}, f"split these along their seams: {long}"


def test_the_package_root_holds_entry_points_not_loose_plumbing():
    loose = sorted(p.stem for p in PACKAGE.glob("*.py"))
    assert loose == ["__init__", "__main__", "_version", "api", "auditing", "baseline"], loose


def test_no_function_is_over_mccabe_15():
    ruff = shutil.which("ruff")
    if ruff is None:
        pytest.skip("ruff is not installed (the test extra installs it)")
    out = subprocess.run([ruff, "check", "--select", "C901", "--config",
                          f"lint.mccabe.max-complexity={MAX_COMPLEXITY}", "--output-format", "concise", "--no-cache",
                          str(PACKAGE)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout
