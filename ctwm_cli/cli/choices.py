"""Choices and defaults that option signatures need before any command runs.

``ctwm --help`` builds every command's options, so their choices and defaults must not cost an import
of the library (numpy, scipy, numba, pyarrow: about a second). They are restated here, once, and
``tests/test_cli_conventions.py::test_cli_choices_match_the_library`` fails the moment one drifts
from the library constant it mirrors (named in the comment beside it).
"""

from __future__ import annotations

from enum import Enum


def choice(name: str, values: tuple[str, ...]) -> type[Enum]:
    """A ``str`` Enum whose members are ``values``: Typer shows them as ``[a|b|c]`` and rejects others."""
    return Enum(name, {v: v for v in values}, type=str)  # type: ignore[return-value]


VERDICTS = ("tpl-compatible", "lognormal-compatible", "inconclusive")  # tail.verdict.VERDICTS
FAMILIES = ("uniform", "exponential", "scale-free", "modular", "mixed", "baseline-symmetric")  # world.graphs.FAMILIES
PAPER_SIZES = (100, 500, 1000)  # world.graphs.PAPER_SIZES
WORLD_POLICIES = ("random-walk", "semantic", "endpoint")  # world.policies.POLICIES
REPLAY_AGENTS = ("random-walk", "semantic", "reader", "endpoint")  # replay.runner.AGENTS
RETRIEVERS = ("uniform-frequency", "state-frequency", "state-uniform", "none")  # memory.retrievers.RETRIEVERS
ALL_RETRIEVERS = (*RETRIEVERS, "state-tau")  # memory.retrievers.ALL_RETRIEVERS
EVICTION_RULES = ("lfu", "random", "reservoir")  # memory.store.EVICTION_RULES
WORLD_WALKS = ("typed", "uniform-neighbour")  # world.config.WALKS
WORLD_ORDERS = ("retrieve-first", "write-first")  # world.config.ORDERS
WORLD_PRESETS = ("artifact",)  # world.presets.PRESETS
MEMORY_POLICIES = ("full", "flat", "graph", "ctwm", "tiered", "none")  # memory.policies.MEMORY_POLICIES
ENCODINGS = ("verbose", "compact")  # memory.encodings.ENCODINGS
TOKENIZERS = ("cl100k_base", "o200k_base")  # memory.tokens.TOKENIZERS
PREDICTORS = ("reader", "endpoint", "top1")  # memory.predictor.PREDICTORS
GAME_AGENTS = ("walkthrough", "random", "explore")  # bench.textgames.AGENTS

#: memory.policies.DEFAULT_BUDGET / DEFAULT_CORE / DEFAULT_K / DEFAULT_MAX_CANDIDATES
TAIL_ON = ("current", "next")  # replay.metrics.TAIL_ON
FLAT_RETRIEVALS = ("bm25", "uniform")  # memory.artifact.FLAT_RETRIEVALS
GRAPH_RETRIEVALS = ("tiers", "recency")  # memory.artifact.GRAPH_RETRIEVALS
CTWM_STORES = ("ranked", "five-feature")  # memory.artifact.CTWM_STORES
REPLAY_DEFAULTS = {"budget": 512, "core": 8, "k": 8, "max_candidates": 64}
#: bench.longmemeval.DEFAULT_BUDGET / DEFAULT_CORE / DEFAULT_K / DEFAULT_MAX_CANDIDATES / DEFAULT_TAU
LONGMEMEVAL_DEFAULTS = {"budget": 4096, "core": 8, "k": 16, "max_candidates": 64, "tau": 1.0}
TEXTGAMES_BUDGET = 1024  # bench.textgames.DEFAULT_BUDGET
LOCAL_MODEL_N_CTX = 8192  # localmodel.DEFAULT_N_CTX
BETA_BAND = (0.5, 1.5)  # diagnostics.spectrum.DEFAULT_BETA_BAND
ENGINES = ("duckdb", "dask")  # traces.engine.ENGINES
MEMORY_LIMIT = "50%"  # traces.engine.DEFAULT_MEMORY_LIMIT

Verdict = choice("Verdict", VERDICTS)
