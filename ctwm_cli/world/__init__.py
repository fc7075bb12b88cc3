"""Synthetic Graph World: graph families, the world, agent policies and the run machinery.

Typical use::

    from ctwm_cli.world import WorldConfig, run_world
    res = run_world(WorldConfig(family="scale-free", size=500, steps=100_000, seed=42), "out/")
"""

from .config import WorldConfig
from .env import State, Transition, World, WorldEnv, build_world
from .graphs import DEFAULT_PARAMS, FAMILIES, PAPER_SIZES, Graph, make_graph
from .grid import WorldGrid, run_grid
from .ladder import Ladder, LadderRow, run_ladder
from .policies import POLICIES, Policy, make_policy
from .run import Concentration, WorldRun, concentration, run_world
from .simulation import Simulation, simulate
from .trace import trace_table

__all__ = [
    "DEFAULT_PARAMS",
    "FAMILIES",
    "PAPER_SIZES",
    "POLICIES",
    "Concentration",
    "Graph",
    "Ladder",
    "LadderRow",
    "Policy",
    "Simulation",
    "State",
    "Transition",
    "World",
    "WorldConfig",
    "WorldEnv",
    "WorldGrid",
    "WorldRun",
    "build_world",
    "concentration",
    "make_graph",
    "make_policy",
    "run_grid",
    "run_ladder",
    "run_world",
    "simulate",
    "trace_table",
]
