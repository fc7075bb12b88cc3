"""CLI wiring of ``ctwm world``: every command and option documented."""

from __future__ import annotations

import typer

from ctwm_cli.cli import app


def test_world_commands_and_options_have_help():
    group = typer.main.get_command(app).commands["world"]
    assert group.help
    assert set(group.commands) == {"run", "grid", "ladder"}
    for name, cmd in group.commands.items():
        assert cmd.help, name
        for param in cmd.params:
            if param.param_type_name == "option":
                assert getattr(param, "help", None), f"world {name} {param.name}"


def test_world_help_runs(run_cli):
    for sub in ([], ["run"], ["grid"], ["ladder"]):
        res = run_cli(["world", *sub, "--help"])
        assert res.code == 0 and "Usage" in res.out
