"""``ctwm schema COMMAND``: the JSON Schema of a command's ``--format json`` document."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from .option_groups import choice
from .schemas import command_schema, commands

SchemaCommand = choice("SchemaCommand", commands())


def schema(
    command: Annotated[SchemaCommand, typer.Argument(metavar="COMMAND", help="The command whose JSON to describe (quote two words: 'replay compare').")],  # type: ignore[valid-type]  # noqa: E501
) -> None:
    """Print the JSON Schema (draft 2020-12) of COMMAND's --format json output.

    The schema is derived from the result classes the command prints, so it cannot drift from them;
    the tests validate real outputs against it. JSON lines and CSV rows use the same field names.

    \b
    Examples:
      ctwm schema audit > audit.schema.json
      ctwm schema 'replay compare'
      ctwm audit trace.parquet --json | python -m jsonschema audit.schema.json
    """
    typer.echo(json.dumps(command_schema(SchemaCommand(command).value), indent=2))


def register(app: typer.Typer) -> None:
    app.command("schema")(schema)
