"""Shared fixtures: run the CLI in-process and capture what it prints."""

from __future__ import annotations

import io
import sys
from dataclasses import dataclass

import pytest

from ctwm_cli.cli import main


@dataclass
class CliResult:
    code: int
    out: str
    err: str


@pytest.fixture
def run_cli(capsys, monkeypatch):
    """``run_cli(["audit", path], stdin=b"...")`` -> CliResult(code, out, err), in-process."""

    def _run(args: list[str], stdin: bytes | None = None) -> CliResult:
        if stdin is not None:
            monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
        monkeypatch.delenv("CTWM_DEBUG", raising=False)
        monkeypatch.setenv("COLUMNS", "200")
        capsys.readouterr()
        code = main([str(a) for a in args])
        captured = capsys.readouterr()
        return CliResult(code, captured.out, captured.err)

    return _run
