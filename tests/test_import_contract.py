"""The package's layering, as one contract read from the source.

Every ``import`` in ``ctwm_cli/`` (module level *and* inside functions, so a cycle cannot hide behind a
function-local import) becomes an arrow of a static graph. The rules of DESIGN.md are checked on that
graph; one subprocess then confirms at run time that importing every core module loads none of the
CLI or plotting libraries.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import ctwm_cli

ROOT = Path(ctwm_cli.__file__).parent
PKG = "ctwm_cli"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_package(path: Path) -> bool:
    return path.name == "__init__.py"


def _resolve(module: str, is_pkg: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".")
    if not is_pkg:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def _graph() -> dict[str, set[str]]:
    """module -> the ctwm_cli modules (and external top-level packages) it imports."""
    modules = {_module_name(p): p for p in ROOT.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(name, _is_package(path), node)
                # ``from . import x`` may name a submodule rather than an attribute; only an attribute
                # is an arrow to the package itself (``from .. import files`` does not import ``ctwm_cli``)
                subs = {f"{base}.{a.name}" for a in node.names} & modules.keys()
                targets.update(subs)
                if len(subs) < len(node.names):
                    targets.add(base)
        graph[name] = {t for t in targets if t in modules or not t.startswith(PKG)}
    return graph


GRAPH = _graph()
INTERNAL = {m for m in GRAPH}


def _area(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _is_cli(module: str) -> bool:
    return _area(module) in {"cli", "__main__"}


def _arrows(src_area: str, dst_area: str) -> list[tuple[str, str]]:
    return [
        (m, t)
        for m, ts in GRAPH.items()
        for t in ts
        if t in INTERNAL and _area(m) == src_area and _area(t) == dst_area
    ]


def test_graph_sees_the_package():
    assert "ctwm_cli.tail.audit" in GRAPH and "ctwm_cli.cli" in GRAPH
    assert any(t.startswith("ctwm_cli.tail") for t in GRAPH["ctwm_cli.tail.audit"])


def test_core_never_imports_the_cli_or_its_libraries():
    bad = [
        (m, t)
        for m, ts in GRAPH.items()
        if not _is_cli(m)
        for t in ts
        if (t in INTERNAL and _is_cli(t)) or t.split(".")[0] in {"typer", "rich", "click"}
    ]
    assert bad == []


def _readme_levels() -> dict[str, int]:
    """docs/architecture.md's Layering table: package or module -> level."""
    text = (ROOT.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("\n## Layering\n", 1)[1].split("\n#", 1)[0]
    levels: dict[str, int] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 2 and cells[0].isdigit():
            levels.update({name: int(cells[0]) for name in re.findall(r"`([A-Za-z_]+)`", cells[1])})
    return levels


LEVELS = _readme_levels()
PLUMBING = 0  # the level whose modules may import one another (cycles are still forbidden)


def _level(module: str) -> int:
    return LEVELS[_area(module) or PKG]


def test_docs_layering_table_is_read():
    assert LEVELS["traces"] == 1 and LEVELS["cli"] == LEVELS[PKG] and LEVELS["common"] == PLUMBING
    assert LEVELS["tail"] < LEVELS["diagnostics"] < LEVELS["auditing"]


def test_every_package_has_a_level():
    assert sorted({_area(m) or PKG for m in GRAPH} - LEVELS.keys()) == []


def _violations(graph: dict[str, set[str]]) -> list[str]:
    """Arrows that go up a level or sideways to another package of the same level (plumbing excepted)."""
    return [
        f"{m} (level {_level(m)}) -> {t} (level {_level(t)})"
        for m, ts in graph.items()
        for t in ts
        if t in INTERNAL and _area(m) != _area(t)
        and (_level(t) > _level(m) or (_level(t) == _level(m) != PLUMBING))
    ]


def test_no_arrow_up_or_sideways():
    """An import goes down a level (or stays inside its own package); plumbing may import plumbing."""
    assert _violations(GRAPH) == []


def test_the_rule_sees_an_arrow_up_or_sideways():
    fake = {"ctwm_cli.tail.audit": {"ctwm_cli.diagnostics.measures", "ctwm_cli.tail.verdict", "ctwm_cli.common.errors"},
            "ctwm_cli.tail.verdict": {"ctwm_cli.allocation.rank"}, "ctwm_cli.common.errors": {"ctwm_cli.common.checks"}}
    assert sorted(_violations(fake)) == ["ctwm_cli.tail.audit (level 2) -> ctwm_cli.diagnostics.measures (level 3)",
                                 "ctwm_cli.tail.verdict (level 2) -> ctwm_cli.allocation.rank (level 2)"]


@pytest.mark.parametrize(
    ("src", "dst"),
    [("tail", "diagnostics"), ("tail", "replay"), ("allocation", "memory"), ("memory", "world"),
     ("traces", "tail"), ("tail", "world")],
)
def test_no_upward_arrow(src, dst):
    assert LEVELS[src] <= LEVELS[dst]  # named cases of the rule above, in case the table is edited
    assert _arrows(src, dst) == []



def test_no_import_cycles():
    """Tarjan's strongly connected components over the internal graph; every component must be one module.

    A package ``__init__`` that re-exports its children is not an arrow *up*: the edge from a child to
    its own package's ``__init__`` (``from . import x`` inside the package) is ignored.
    """
    edges = {
        m: {t for t in ts if t in INTERNAL and not (m.startswith(t + ".") and t != PKG)} for m, ts in GRAPH.items()
    }
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for v in sorted(edges):
        if v not in index:
            visit(v)
    assert cycles == []


def test_no_private_names_across_modules():
    """``from x import _name`` across modules hides coupling; a shared helper must be public."""
    bad = []
    for path in ROOT.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith(PKG)):
                private = [a.name for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
                bad += [f"{_module_name(path)}: {name}" for name in private]
    assert bad == []


def test_core_imports_load_no_cli_or_plot_library_at_run_time():
    core = sorted(m for m in GRAPH if not _is_cli(m) and _area(m) not in {"plots", "integrations"})
    code = (
        "import importlib, json, sys\n"
        "import numpy as np\n"
        f"for m in {core!r}: importlib.import_module(m)\n"
        # Using the library (not only importing it) must not pull them in either.
        "from ctwm_cli import allocation, diagnostics\n"
        "allocation.tau_sweep(100, [0.5, 1.0], core=5, budget=10)\n"
        "diagnostics.concentration([5, 3, 1, 1])\n"
        "diagnostics.psd(np.random.default_rng(0).standard_normal(512))\n"
        "import ctwm_cli.plots\n"
        "print(json.dumps(sorted(k for k in ('typer', 'rich', 'click', 'matplotlib') if k in sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=180)
    assert json.loads(out.stdout) == []
