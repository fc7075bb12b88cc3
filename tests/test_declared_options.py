"""Issue 43: options declared once. A settings field generates its flag, its check, its config key and its row
of the docs' option table; the audit's defaults are declared in one place; choices come from the vocabulary."""

from __future__ import annotations

import dataclasses
import inspect
import re
from pathlib import Path

import pytest
import typer
import typer.main
from typer.testing import CliRunner

import ctwm_cli
from ctwm_cli.cli.check_config import Confine, _flags
from ctwm_cli.cli.declared import declared_flags, option_table
from ctwm_cli.cli.param_flags import flag_message, option_flags
from ctwm_cli.cli.replay_options import ReplaySettings
from ctwm_cli.common import vocabulary
from ctwm_cli.common.errors import UsageError
from ctwm_cli.common.settings import AuditRun, AuditSettings, Declared, in_range, option
from ctwm_cli.runtime.confine import Confinement

PACKAGE = Path(ctwm_cli.__file__).parent


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Throwaway(Declared):
    """A settings class with one new option: all it takes to add one."""

    WHAT = "throwaway option"

    widgets: int = option(3, flags=("--widgets",), check=in_range(lo=1), help="How many widgets to make.")


def _throwaway_app() -> typer.Typer:
    app = typer.Typer()

    @app.command("make")
    @declared_flags(Throwaway)
    def make(*, settings: Throwaway) -> None:
        print(f"widgets={settings.widgets}")

    @app.command("other")
    def other() -> None:  # a second command, so "make" is a subcommand as in ctwm
        pass

    return app


def test_a_throwaway_option_reaches_the_flag_the_check_the_error_and_the_docs_table():
    app = _throwaway_app()
    run = CliRunner().invoke(app, ["make", "--widgets", "5"])
    assert run.exit_code == 0 and run.output.strip() == "widgets=5"
    assert CliRunner().invoke(app, ["make"]).output.strip() == "widgets=3"  # the declared default
    with pytest.raises(UsageError) as exc:
        Throwaway.checked(widgets=0)
    command = typer.main.get_command(app).commands["make"]
    assert flag_message(exc.value, option_flags(command)) == "--widgets must be >= 1, got 0"
    with pytest.raises(UsageError, match=r"unknown throwaway option 'widget' \(did you mean 'widgets'\?\)"):
        Throwaway.checked(widget=2)
    assert "| `--widgets` | `3` |  | yes | How many widgets to make. |" in option_table(Throwaway)


def test_a_throwaway_audit_option_reaches_the_config(monkeypatch):
    """A new AuditSettings-like field is a config key under its flag's name, kebab or snake, with no allow-list
    edit: the config mapping reads the command's options."""
    app = typer.Typer()

    @app.command("audit")
    @declared_flags(Throwaway)
    def audit(*, settings: Throwaway) -> None:
        pass

    app.command("other")(lambda: None)
    import ctwm_cli.cli.application as application

    monkeypatch.setattr(application, "app_for", lambda args: app)
    confine = Confine(Confinement(".", allow_remote=False), False)
    assert _flags({"widgets": 4}, "check #1", "audit", confine) == ["--widgets=4"]
    with pytest.raises(UsageError, match=r"has no option 'widgest' \(did you mean 'widgets'\?"):
        _flags({"widgest": 4}, "check #1", "audit", confine)


def test_bootstrap_and_min_tail_are_declared_once():
    """``bootstrap=1000`` and ``min_tail=100`` are written once (the declaration); validate() said 0 before."""
    literal = re.compile(r"\b(bootstrap: int = 1000|min_tail: int = 100|bootstrap=1000|min_tail=100)\b")
    # files on other branches of this wave (reporting, audit_many, the bootstrap, LongMemEval): the lead's merge
    elsewhere = {"reporting/assemble.py", "reporting/trace.py", "reporting/grid.py", "tail/audit.py",
                 "tail/bootstrap.py", "bench/longmemeval.py",
                 # a bootstrap of another kind (the replicates of a replay's or a benchmark's paired intervals)
                 "replay/config.py", "bench/report.py", "bench/textgames.py"}
    found = [str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
             if str(p.relative_to(PACKAGE)) not in elsewhere and literal.search(p.read_text(encoding="utf-8"))]
    assert found == []
    assert AuditSettings.checked(seed=1).bootstrap == 1000 and AuditSettings.checked(seed=1).min_tail == 100
    from ctwm_cli.tail.powerlaw import fit_power_law

    assert inspect.signature(fit_power_law).parameters["min_tail"].default == AuditSettings.checked().min_tail


def test_the_audit_command_is_a_screen_long():
    """172 lines and 37 parameters before; now its options are declarations and its body a screen."""
    import ast

    tree = ast.parse((PACKAGE / "cli" / "cmd_audit.py").read_text(encoding="utf-8"))
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "audit")
    params = fn.args.args + fn.args.kwonlyargs
    assert len(params) <= 12
    doc = ast.get_docstring(fn) or ""
    assert fn.end_lineno - fn.lineno + 1 - len(doc.splitlines()) <= 70


def test_every_audit_flag_is_declared_with_help_and_a_check_where_it_has_a_range(run_cli):
    decls = AuditSettings.declarations() + AuditRun.declarations()
    assert {d.name for d in decls} >= {"bootstrap", "min_tail", "discrete", "level", "calibrate", "jobs"}
    assert all(d.spec.help for d in decls)
    text = " ".join(run_cli(["audit", "--help"]).out.split())
    for d in decls:
        assert d.flag in text


CLI_CHOICES = {
    # CLI Enum (module, name) -> the library's vocabulary
    ("ctwm_cli.cli.cmd_audit", "AuditFlags.expect_rule"): vocabulary.EXPECT_RULES,
    ("ctwm_cli.common.settings", "AuditSettings.cross_check"): vocabulary.CROSS_CHECK_PACKAGES,
    ("ctwm_cli.cli.cmd_diagnostics", "Detrend"): vocabulary.DETRENDS,
    ("ctwm_cli.cli.cmd_diagnostics", "LogBase"): vocabulary.LOG_BASES,
    ("ctwm_cli.cli.cmd_diagnostics", "SigmaVariant"): vocabulary.SIGMA_VARIANTS,
    ("ctwm_cli.cli.replay_options", "ReplaySettings.resample"): vocabulary.RESAMPLES,
    ("ctwm_cli.cli.cmd_health", "HealthFlags.input_format"): vocabulary.INPUT_FORMATS,
    ("ctwm_cli.cli.cmd_simulate", "SimulateSettings.ranking"): vocabulary.RANKINGS,
}


@pytest.mark.parametrize(("where", "library"), list(CLI_CHOICES.items()), ids=lambda v: str(v))
def test_each_cli_choice_list_is_the_librarys(where, library):
    import importlib

    module, name = where
    owner = importlib.import_module(module)
    if "." in name:
        cls, field = name.split(".")
        decl = next(d for d in getattr(owner, cls).declarations() if d.name == field)
        values = decl.spec.choices
    else:
        values = tuple(m.value for m in getattr(owner, name))
    assert values == library


def test_the_library_reads_the_same_choice_lists():
    from ctwm_cli.allocation.trace import RANKINGS
    from ctwm_cli.diagnostics.finite_size import LOG_BASES
    from ctwm_cli.diagnostics.measures import SIGMA_VARIANTS
    from ctwm_cli.replay.metrics import RESAMPLES
    from ctwm_cli.tail.crosscheck import PACKAGES
    from ctwm_cli.traces.engine import INPUT_FORMATS
    from ctwm_cli.traces.telemetry import TELEMETRY_FORMATS

    assert RANKINGS == vocabulary.RANKINGS and SIGMA_VARIANTS == vocabulary.SIGMA_VARIANTS
    assert tuple(LOG_BASES) == vocabulary.LOG_BASES and PACKAGES == vocabulary.CROSS_CHECK_PACKAGES
    assert ("auto", *RESAMPLES) == vocabulary.RESAMPLES
    assert INPUT_FORMATS == vocabulary.INPUT_FORMATS == ("auto", *TELEMETRY_FORMATS)  # the drift: openinference


def test_input_format_openinference_is_accepted(run_cli):
    spans = Path(__file__).parents[1] / "sample_traces" / "telemetry" / "openinference_spans.json"
    res = run_cli(["health", str(spans), "--input-format", "openinference", "--json"])
    assert res.code == 0, res.err


@pytest.mark.parametrize(
    ("args", "text"),
    [
        (["--xmin", "2.5"], "--xmin must be an integer for a discrete fit, got 2.5 (a continuous fit takes "
                            "real-valued cutoffs: --continuous)"),
        (["--xmin-range", "5:1"], "--xmin-range needs 0 < low <= high, got low 5 and high 1"),
        (["--xmax", "5", "--uncertainty", "3"], "--xmax supports only the doubly truncated power-law fit, "
                                                "not --uncertainty"),
        (["--xmax", "5", "--calibrate", "2"], "not --calibrate"),
    ],
)
def test_audit_errors_leak_no_python(run_cli, args, text):
    res = run_cli(["audit", "x.parquet", *args])
    assert res.code == 2 and text in res.err, res.err
    assert "=False" not in res.err and "(lo, hi)" not in res.err


def test_library_errors_keep_the_library_names():
    with pytest.raises(UsageError, match=r"discrete=False\)$"):
        AuditSettings.checked(xmin=2.5)
    with pytest.raises(UsageError, match=r"not uncertainty$") as exc:
        AuditSettings.checked(xmax=5, uncertainty=3)
    assert exc.value.params == ("xmax", "uncertainty")


CONFINE = Confine(Confinement(".", allow_remote=False), False)


def test_config_keys_are_the_flags_of_the_command():
    opts = {"discrete": False, "significance": 0.1, "fit-level": 0.1, "fit_check": False, "check_all_families": True,
            "value_col": "v", "across": "run", "permutations": 9, "min-tail": 50, "event": ["a", "b"]}
    assert _flags(opts, "check #1", "audit", CONFINE) == [
        "--continuous", "--significance=0.1", "--fit-level=0.1", "--no-fit-check", "--check-all-families",
        "--value-col=v", "--across=run", "--permutations=9", "--min-tail=50", "--event=a", "--event=b"]
    assert _flags({"continuous": True, "diagnostics": False}, "c", "audit", CONFINE) == ["--continuous",
                                                                                         "--no-diagnostics"]


def test_config_deprecated_names_warn_and_unsafe_keys_say_why(capsys):
    assert _flags({"level": 0.1}, "check #1", "audit", CONFINE) == ["--level=0.1"]
    assert "option 'level' is deprecated; use 'significance'" in capsys.readouterr().err
    with pytest.raises(UsageError, match=r"'scheduler' is not allowed in a config: it contacts another machine"):
        _flags({"scheduler": "tcp://x:1"}, "check #1", "audit", CONFINE)
    for command in ("audit", "concentration", "psd", "simulate", "health"):
        with pytest.raises(UsageError, match=r"'plot' is not allowed in a config: it writes a file"):
            _flags({"plot": "a.png"}, "check #1", command, CONFINE)
    trusted = Confine(Confinement(".", allow_remote=False), True)
    assert _flags({"plot": "a.png"}, "check #1", "audit", trusted) == ["--plot=a.png"]


def test_every_option_of_a_checked_command_is_settable_or_refused_and_outputs_are_refused():
    from ctwm_cli.cli.check_config import COMMANDS, _refusal, command_options

    writes = re.compile(r"plot|junit|^out$|^output|html|figure|save|scheduler|json")
    for command in COMMANDS:
        for key, (p, _) in command_options(command).items():
            if writes.search(p.name):
                assert _refusal(p), (command, key)


@pytest.mark.parametrize("args", [["replay", "compare", "--memory", "full,foo", "--steps", "5"],
                                  ["replay", "compare", "--memory", "foo", "--steps", "5"]])
def test_an_unknown_memory_policy_names_the_flag(run_cli, args):
    res = run_cli(args)
    assert res.code == 2 and "ctwm: error: --memory: 'foo' is not a known policy (choose from: full," in res.err


def test_the_docs_option_table_is_generated_and_current():
    from ctwm_cli.cli.options_page import options_page

    page = (Path(__file__).parents[1] / "docs" / "options.md").read_text(encoding="utf-8")
    assert page == options_page(), "docs/options.md is stale: regenerate it from options_page.options_page()"
    assert "| `--bootstrap`, `-b` | `1000` |" in page and "| `--min-tail` | `100` |" in page
    for command in ("audit", "health", "simulate", "replay", "replay compare", "replay pareto", "replay frozen",
                    "world", "world run", "world grid", "world ladder"):
        assert f"`ctwm {command}`" in page, command
    assert "| `--episodes` |  |  | yes |" in page and "| `--out`, `-o` | required |  | no (it writes files) |" in page


def test_a_throwaway_command_without_a_registered_result_fails():
    """Printing JSON needs a registered result class: ``rows``, ``audits``, ``ci_low`` under a new command name
    passed the schema and vocabulary tests before (they walked a table, not the commands)."""
    from ctwm_cli.cli.options import Format
    from ctwm_cli.cli.output import UnregisteredCommand, emit

    app = typer.Typer()

    @app.command("throwaway")
    def throwaway() -> None:
        emit("throwaway", {"rows": [], "audits": 1, "ci_low": 0.1}, [], Format.json)

    app.command("other")(lambda: None)
    res = CliRunner().invoke(app, ["throwaway"])
    assert isinstance(res.exception, UnregisteredCommand) and "'throwaway'" in str(res.exception)


def test_every_command_that_prints_json_has_a_registered_result():
    """Walks the commands that exist: each with --json is in the schema registry (ctwm schema describes it)."""
    from ctwm_cli.cli.application import full_app
    from ctwm_cli.cli.param_flags import all_commands
    from ctwm_cli.cli.schemas import commands

    printing = {path for path, command in all_commands(typer.main.get_command(full_app()))
                if path and any(p.name == "output_json" for p in command.params)}
    assert printing and printing == set(commands()), "a registration names a command that does not exist, or back"


def test_a_registration_is_checked_where_it_is_written():
    """Two different results under one name, or none, fail at import (beside the command), not in a table."""
    from ctwm_cli.cli.registry import REGISTRY, result

    with pytest.raises(ValueError, match="'audit' is registered twice"):
        result("audit", "ctwm_cli.auditing.AuditResult")
    with pytest.raises(TypeError, match="exactly one"):
        result("throwaway")
    assert "throwaway" not in REGISTRY


@pytest.mark.parametrize("spelling", ["./sample_traces/tpl_events.parquet", "file://sample_traces/tpl_events.parquet",
                                      "file://./sample_traces/tpl_events.parquet", "sample_traces/../sample_traces/"
                                      "tpl_events.parquet", "{root}/sample_traces/tpl_events.parquet"])
def test_read_trace_names_a_path_as_the_cli_does(monkeypatch, run_cli, spelling):
    """One name at the edge (common.labels.trace_name) for the library and the CLI: read_trace('./x') kept ./x, and
    read_trace('file://x') kept file://x, while ctwm audit said x."""
    import json

    from ctwm_cli import read_trace

    root = Path(__file__).resolve().parents[1]
    monkeypatch.chdir(root)
    path = spelling.format(root=root)
    counts = read_trace(path)
    assert counts.source == "sample_traces/tpl_events.parquet"
    doc = json.loads(run_cli(["audit", path, "-b", "0", "--seed", "1", "--json"]).out)
    assert doc["results"][0]["source"] == counts.source


def _intervals(doc, path="$"):
    if isinstance(doc, dict):
        if "low" in doc and "high" in doc:
            yield path, doc
        for k, v in doc.items():
            yield from _intervals(v, f"{path}.{k}")
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _intervals(v, f"{path}[{i}]")


def test_uncertainty_intervals_carry_their_level(run_cli):
    """--uncertainty wrote {low, high} through a second Interval class: now the vocabulary's {low, high, level}."""
    import json

    trace = str(Path(__file__).parents[1] / "sample_traces" / "tpl_events.parquet")
    doc = json.loads(run_cli(["audit", trace, "-b", "0", "--seed", "1", "--uncertainty", "20", "--json"]).out)
    found = list(_intervals(doc))
    assert any(".uncertainty.interval.alpha" in p for p, _ in found)
    assert any(p.endswith(".uncertainty.alpha_band") for p, _ in found)
    assert [p for p, d in found if "level" not in d] == []


def test_the_read_options_are_declared_and_their_config_refusals_come_from_the_declaration():
    from ctwm_cli.cli.options import ReadFlags

    decls = {d.name: d for d in ReadFlags.declarations()}
    assert decls["scheduler"].spec.config is False and decls["engine"].spec.choices == vocabulary.ENGINES
    assert _flags({"item-col": "memory.id", "memory_limit": "1GB"}, "check #1", "inspect", CONFINE) == [
        "--item-col=memory.id", "--memory-limit=1GB"]
    with pytest.raises(UsageError, match=r"'engine' is not allowed in a config: --engine dask starts or contacts"):
        _flags({"engine": "dask"}, "check #1", "inspect", CONFINE)


def test_ctwm_check_runs_an_entry_with_discrete_false_and_significance(run_cli, tmp_path, monkeypatch):
    """`discrete = false` was --no-discrete (exit 2, no such option) and `significance` was refused."""
    import shutil

    shutil.copy(Path(__file__).parents[1] / "sample_traces" / "tpl_events.parquet", tmp_path / "t.parquet")
    (tmp_path / "ctwm.toml").write_text(
        '[[check]]\nname = "tail"\ncommand = "audit"\ntraces = ["t.parquet"]\n'
        'options = { discrete = false, significance = 0.1, bootstrap = 0, seed = 1, fit-level = 0.1 }\n',
        encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    res = run_cli(["check", "ctwm.toml", "--format", "json"])
    assert res.code == 0, res.err
    import json

    assert json.loads(res.out)["entries"][0]["status"] == "pass"


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ThrowawayReplay(ReplaySettings):
    """The replay settings with one new option."""

    widgets: int = option(3, flags=("--widgets",), check=in_range(lo=1), help="How many widgets to make.")


def test_a_throwaway_replay_option_reaches_the_flag_the_config_the_error_and_the_docs_table(monkeypatch):
    """One field added to the replay settings is a flag of the command, a ctwm.toml key, a checked value whose
    error names the flag, and a row of the option table; the declared replay options come with it."""
    app = typer.Typer()

    @app.command("replay")
    @declared_flags(ThrowawayReplay, name="opts")
    def replay(*, opts: ThrowawayReplay) -> None:
        print(f"widgets={opts.widgets} steps={opts.steps}")

    app.command("other")(lambda: None)
    run = CliRunner().invoke(app, ["replay", "--widgets", "5", "--steps", "7"])
    assert run.exit_code == 0 and run.output.strip() == "widgets=5 steps=7", run.output
    bad = CliRunner().invoke(app, ["replay", "--widgets", "0"])
    command = typer.main.get_command(app).commands["replay"]
    assert isinstance(bad.exception, UsageError)
    assert flag_message(bad.exception, option_flags(command)) == "--widgets must be >= 1, got 0"
    import ctwm_cli.cli.application as application

    monkeypatch.setattr(application, "app_for", lambda args: app)
    assert _flags({"widgets": 4, "max-candidates": 9}, "check #1", "replay", CONFINE) == [
        "--widgets=4", "--max-candidates=9"]
    with pytest.raises(UsageError, match=r"has no option 'widgest' \(did you mean 'widgets'\?"):
        _flags({"widgest": 4}, "check #1", "replay", CONFINE)
    table = option_table(ThrowawayReplay)
    assert "| `--widgets` | `3` |  | yes | How many widgets to make. |" in table
    assert "| `--base-url` |  |  | no (it contacts another machine, a model server) |" in table


@pytest.mark.parametrize(("command", "typo", "meant"), [
    ("replay", "stpes", "steps"), ("replay compare", "encodng", "encoding"), ("replay pareto", "budgt", "budget"),
    ("world ladder", "retreiver", "retriever")])
def test_a_typod_replay_or_world_config_key_gets_a_did_you_mean(command, typo, meant):
    with pytest.raises(UsageError, match=rf"{command} has no option '{typo}' \(did you mean '{meant}'\?"):
        _flags({typo: 1}, "check #1", command, CONFINE)
