"""``ctwm_cli.common.vocabulary``: the one definition of the names and defaults the library and the CLI share."""

from __future__ import annotations

import ast
from pathlib import Path

import ctwm_cli
from ctwm_cli.common import vocabulary as v

PACKAGE = Path(ctwm_cli.__file__).parent
NAMES = [n for n in dir(v) if n.isupper()]


def test_vocabulary_imports_nothing():
    """``--help`` reads it: no import may pull in the library (numpy, scipy, pyarrow)."""
    tree = ast.parse((PACKAGE / "common" / "vocabulary.py").read_text())
    imports = [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert [ast.unparse(n) for n in imports] == ["from __future__ import annotations"]


def test_no_module_restates_a_vocabulary_constant():
    """A module-level ``NAME = <literal>`` equal to a vocabulary tuple or default is a second definition."""
    values = {repr(getattr(v, n)) for n in NAMES if isinstance(getattr(v, n), tuple) and len(getattr(v, n)) > 1}
    restated = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "vocabulary.py":
            continue
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Tuple):
                try:
                    value = ast.literal_eval(node.value)
                except ValueError:
                    continue
                if repr(value) in values:
                    restated.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert restated == []


def test_the_library_uses_the_vocabulary_objects():
    from ctwm_cli.bench import longmemeval, textgames
    from ctwm_cli.diagnostics.spectrum import DEFAULT_BETA_BAND
    from ctwm_cli.memory import policies, retrievers
    from ctwm_cli.replay import runner
    from ctwm_cli.tail.verdict import VERDICTS
    from ctwm_cli.traces import engine
    from ctwm_cli.world import graphs

    assert VERDICTS is v.VERDICTS and graphs.FAMILIES is v.GRAPH_FAMILIES and runner.AGENTS is v.REPLAY_AGENTS
    assert retrievers.ALL_RETRIEVERS is v.ALL_RETRIEVERS and policies.MEMORY_POLICIES is v.MEMORY_POLICIES
    assert (policies.DEFAULT_CORE, longmemeval.DEFAULT_CORE, textgames.DEFAULT_CORE) == (v.DEFAULT_CORE,) * 3
    assert longmemeval.DEFAULT_K == textgames.DEFAULT_K == v.BENCH_K
    assert DEFAULT_BETA_BAND is v.BETA_BAND and engine.ENGINES is v.ENGINES
