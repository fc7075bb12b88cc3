"""Presets of ``ctwm world``: named sets of the design choices that move the paper's numbers.

``artifact`` follows the paper's public code (its random-walk side: graph construction, walk,
memory store and step order), where ctwm's defaults follow the paper's text or avoid a leak:

========================  ===============================  ==========================================
choice                    ctwm default                     ``artifact``
========================  ===============================  ==========================================
walk                      ``typed``: 2-4 actions a state,  ``uniform-neighbour``: the next state is
                          Dirichlet(2) outcome              uniform over the neighbours; the action
                          probabilities                     label is fixed by the neighbour
order                     ``retrieve-first`` (no leak)      ``write-first``: e_t is written, then
                                                            retrieval for s_t sees it (Section 3's
                                                            wording)
store                     each ladder rung its own rule     ``lfu`` for every rung (the artifact's
                          (LFU or random replacement)       one store), so a rung changes the
                                                            retriever only
modular / mixed blocks    mean degree 6, mixing 0.1         absolute p_in 0.15, p_out 0.01
mixed / scale-free BA m   3                                 min(3, max(1, part // 30)): 1 for the
                                                            50-node half at |V| = 100
exponential               scale mean_degree - 0.5 = 5.5     scale 6
components                joined to the largest by an       one-way ring through one node of each
                          undirected edge                   component (``ring``)
actions per state         2-4                               1-3
========================  ===============================  ==========================================

What is counted is the same on both sides (retrieve + write events per item; ``gini_retrieve`` and
``ctwm audit -e retrieve`` count retrievals only). An option given explicitly wins over the preset.
With a policy that reads memory (``semantic``, ``endpoint``) the preset leaves walk and order alone:
such a policy must retrieve before it acts.

**Replay** (``ctwm replay|compare|ablation --preset artifact``): the world as above, and the paper's
code's memory comparison (its ``run_ctwm_comparison.py`` with the random policy) as far as ctwm
expresses it: the tail error on ``s_{t+1}`` (``tail_on="next"``), the top-1 hint check as the
predictor (``top1``), top-k 3, and its Flat, Graph and CTWM policies, which retrieve for the state
alone (their hints are fetched before the action is chosen), on its 100-state world: Flat = k stored transitions drawn
uniformly (``flat_retrieval="uniform"``), Graph = the latest transitions out of ``s_t`` then entity
co-occurrence (``graph_retrieval="recency"``), CTWM = a 200-entry store scored by five features,
3 core slots and 2 tail items drawn ∝ r^-τ (``ctwm_store="five-feature"``; see
:mod:`ctwm_cli.memory.artifact`). Its walk is not the scaling script's uniform-neighbour walk: the
comparison draws a uniform action, then a uniform neighbour of the action's share of the neighbours,
so a state's neighbours are not equally likely; the replay preset takes ctwm's typed walk with
uniform outcome probabilities within an action (``walk="typed"``, Dirichlet concentration 10^6),
whose actions share the neighbours round-robin (the code: in contiguous segments, the remainder to
the last). The memory comparison retrieves before it writes (the code's
``run_ctwm_comparison.py`` does; its world-run ``write-first`` order is the random-walk scaling
script's).
"""

from __future__ import annotations

from typing import Any

#: Run options the ``artifact`` preset sets (an explicit option wins).
ARTIFACT_OPTIONS = {"walk": "uniform-neighbour", "order": "write-first", "store": "lfu"}
ARTIFACT_WORLD = {"actions_min": 1, "actions_max": 3}


#: Replay fields the ``artifact`` preset sets where they are unset (``None``).
ARTIFACT_REPLAY = {"tail_on": "next", "flat_retrieval": "uniform", "graph_retrieval": "recency",
                   "ctwm_store": "five-feature", "walk": "typed"}
#: The replay world's parameters under the preset (given ones win): outcome probabilities uniform within an
#: action (Dirichlet(10^6): within about 0.1%), so the walk is the comparison script's: a uniform action, then
#: a uniform neighbour of that action's set.
ARTIFACT_REPLAY_WORLD = {"concentration": 1e6}
#: Replay fields the preset sets where they hold ctwm's default (a non-default value wins; giving the
#: default value itself cannot be told from not giving it).
ARTIFACT_REPLAY_DEFAULTS = {"predictor": ("reader", "top1"), "k": (8, 3), "core": (8, 3), "size": (500, 100)}


def _ba_m(nodes: int) -> int:
    return min(3, max(1, nodes // 30))


def artifact_graph_params(family: str, size: int) -> dict[str, Any]:
    """The artifact's graph parameters of ``family`` at ``size`` (they depend on the size)."""
    if family == "exponential":
        return {"scale": 6.0, "ring": 1}
    if family == "scale-free":
        return {"m": _ba_m(size), "ring": 1}
    if family == "modular":
        return {"blocks": 5 if size >= 50 else 2, "p_in": 0.15, "p_out": 0.01, "ring": 1}
    if family == "mixed":
        return {"m": _ba_m(size // 2), "blocks": 3, "p_in": 0.15, "p_out": 0.01, "bridges": 5, "ring": 1}
    return {"degree": 6}  # uniform, baseline-symmetric
