"""The output options (--format/-f, --json) are declared once (``cli.options.output_flags``) and resolved once:
every command that prints a result takes them from that group, and --json means --format json everywhere."""

from __future__ import annotations

import json

import typer.main

from ctwm_cli.cli import app
from ctwm_cli.cli.options import OUTPUT_FLAGS


def _leaves(cmd, path=()):
    subs = getattr(cmd, "commands", None)
    if path:
        yield path, cmd
    for name, sub in sorted((subs or {}).items()):
        yield from _leaves(sub, (*path, name))


GROUP = {p.name for p in OUTPUT_FLAGS}


def test_every_format_option_comes_from_the_one_group():
    """A command that declared its own --format or --json (the 20 declarations issue 24 counted) fails here."""
    with_format = []
    for path, cmd in _leaves(typer.main.get_command(app)):
        for param in cmd.params:
            flags = set(getattr(param, "opts", ())) | set(getattr(param, "secondary_opts", ()))
            if flags & {"--format", "-f", "--json"}:
                assert param.name in GROUP, (path, param.name, flags)
                with_format.append(path)
    names = {" ".join(p) for p in with_format}
    # each command that prints results has both options
    assert {"audit", "diff", "check", "replay", "replay compare", "bench longmemeval", "world grid",
            "import otel", "xmin-path", "inspect"} <= names, sorted(names)
    assert all(with_format.count(p) == 2 for p in with_format)


def test_json_wins_over_format_in_every_spelling(run_cli):
    base = ["inspect", "sample_traces/tpl_events.parquet"]
    docs = [run_cli([*base, *extra]) for extra in (["--json"], ["-f", "json"], ["--format", "csv", "--json"])]
    assert all(r.code == 0 for r in docs), [r.err for r in docs]
    assert docs[0].out == docs[1].out == docs[2].out and json.loads(docs[0].out)["command"] == "inspect"
    assert run_cli([*base, "-f", "csv"]).out.startswith("source,")
