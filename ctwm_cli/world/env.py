"""The Synthetic Graph World: states with readable payloads, typed stochastic actions, transitions.

Built from a :class:`~ctwm_cli.world.graphs.Graph` and a seed, deterministically:

* **States.** Node ``v`` is state ``v``. Its payload is a place name (``"dusty library"``), 3-5
  entities, 1-3 relations between them (``"lamp on table"``) and 1-2 constraints
  (``"chest is locked"``). Payloads are local: ``regions`` landmark nodes (default about
  ``sqrt(size)``) are drawn, every node joins its nearest landmark's region (breadth-first), and a
  region fixes the room word and two theme entities of its nodes, so nearby states share words and
  lexical relevance carries information about graph distance. With ``identical_payloads=True``
  (the ``baseline-symmetric`` family) every state carries the same payload and action names.
* **Actions.** State ``v`` offers ``min(deg(v), A)`` actions, ``A`` uniform in
  ``[actions_min, actions_max]`` (default 2-4); each has a type (``go``, ``pickup``, ...) and a
  readable name ``"<place> -<type>-> <entity>"``. The neighbours of ``v`` are shuffled and dealt
  round-robin to the actions, so every edge is walkable both ways and each action leads to one of
  its own set of neighbours.
* **Transitions.** Taking action ``a`` in ``v`` leads to neighbour ``w`` of its set with
  probability ``P(w | v, a)`` drawn from a symmetric Dirichlet(``concentration``) (default 2.0:
  outcomes are uneven, so the next state is worth predicting, but no outcome is negligible; lower
  values make one outcome dominate). Identical payloads use uniform outcome probabilities. A
  transition ``e = (s, a, s')`` has an integer id ``tid``; transitions of a state, and of an action,
  are contiguous, so a step is one ``bisect`` on a precomputed cumulative array.
  Its trace item id is ``"s<src>-a<action>->s<dst>"`` (``a`` the action's index within its state).
"""

from __future__ import annotations

import bisect
import math
from typing import Any

import numpy as np

from ..common.checks import check_range
from ..common.errors import UsageError
from ..common.results import ToDict, result
from .arrays import TransitionArrays
from .graphs import Graph

ADJECTIVES = (
    "dusty", "quiet", "narrow", "bright", "cold", "sunlit", "hidden", "old", "damp", "grand",
    "tiny", "windy", "silent", "painted", "crooked", "golden", "shadowy", "busy", "frozen", "humid",
)
ROOMS = (
    "library", "kitchen", "cellar", "attic", "workshop", "garden", "hall", "study", "vault", "chapel",
    "forge", "pantry", "gallery", "tower", "dock", "market", "stable", "lab", "archive", "bridge",
    "cave", "greenhouse", "office", "courtyard",
)
ENTITIES = (
    "key", "lamp", "map", "rope", "chest", "book", "table", "ladder", "coin", "mirror", "barrel",
    "lever", "candle", "crate", "scroll", "bottle", "hammer", "bell", "statue", "basket", "shield",
    "clock", "painting", "compass", "anvil", "kettle", "cage", "drum", "lantern", "sword", "vase",
    "blanket", "box", "gear", "jar", "bag",
)
RELATIONS = ("on", "under", "inside", "near", "behind", "beside")
CONSTRAINTS = ("{e} is locked", "{e} is heavy", "needs a {e}", "{e} is fragile", "{e} is hidden", "{e} is broken")
ACTION_TYPES = ("go", "pickup", "open", "use", "examine", "push", "climb", "take")

WORDS: tuple[str, ...] = tuple(dict.fromkeys((*ADJECTIVES, *ROOMS, *ENTITIES)))
WORD_ID = {w: i for i, w in enumerate(WORDS)}

DEFAULT_WORLD = {"actions_min": 2, "actions_max": 4, "concentration": 2.0, "regions": 0}


@result
class State(ToDict):
    """The structured state ``s_t``: what an agent observes."""

    id: int
    place: str
    entities: tuple[str, ...]
    relations: tuple[str, ...]
    constraints: tuple[str, ...]
    actions: tuple[str, ...]

    def text(self) -> str:
        return (
            f"{self.place}; entities: {', '.join(self.entities)}; relations: {'; '.join(self.relations)}; "
            f"constraints: {'; '.join(self.constraints)}"
        )


@result
class Transition(ToDict):
    """A transition ``e = (s, a, s')`` with its probability and trace item id."""

    tid: int
    src: int
    action: int
    action_name: str
    dst: int
    probability: float
    item: str


class World(TransitionArrays):
    """A built world: payloads, actions and transition arrays (see the module docstring)."""

    def __init__(self, graph: Graph, *, seed: int | None = None, rng: np.random.Generator | None = None,
                 identical_payloads: bool | None = None, actions_min: int = 2, actions_max: int = 4,
                 concentration: float = 2.0, regions: int = 0):
        if not 1 <= actions_min <= actions_max:
            raise UsageError(f"actions_min/actions_max must satisfy 1 <= min <= max, got {actions_min}, {actions_max}",
                             params=("actions_min", "actions_max"))
        check_range("concentration", concentration, lo=0, lo_open=True)
        if regions < 0:
            raise UsageError(f"regions must be >= 0 (0 = about sqrt(size)), got {regions}", params=("regions",))
        gen = rng if rng is not None else np.random.default_rng(seed)
        if identical_payloads is None:
            identical_payloads = graph.family == "baseline-symmetric"
        self.graph = graph
        self.size = n = graph.size
        self.identical_payloads = bool(identical_payloads)
        self.params: dict[str, Any] = {
            "actions_min": actions_min, "actions_max": actions_max, "concentration": concentration,
            "regions": regions, "identical_payloads": self.identical_payloads,
        }
        self._payloads(gen, regions or max(1, round(math.sqrt(n))))
        self._actions(gen, actions_min, actions_max, concentration)

    # ---------------------------------------------------------------- construction
    def _payloads(self, gen: np.random.Generator, n_regions: int) -> None:
        n = self.size
        n_regions = min(n_regions, n)
        region = _regions(self.graph, n_regions, gen)
        room = gen.integers(len(ROOMS), size=n_regions)
        theme = [gen.choice(len(ENTITIES), size=2, replace=False) for _ in range(n_regions)]
        self.region = region
        places, ents, rels, cons = [], [], [], []
        for v in range(n if not self.identical_payloads else 1):
            r = region[v]
            place = f"{ADJECTIVES[gen.integers(len(ADJECTIVES))]} {ROOMS[room[r]]}"
            own = gen.choice(len(ENTITIES), size=int(gen.integers(1, 4)), replace=False)
            e = list(dict.fromkeys([ENTITIES[i] for i in (*theme[r], *own)]))
            rel = []
            for _ in range(int(gen.integers(1, 4))):
                a, b = gen.choice(len(e), size=2, replace=False)
                rel.append(f"{e[a]} {RELATIONS[gen.integers(len(RELATIONS))]} {e[b]}")
            con = [
                CONSTRAINTS[gen.integers(len(CONSTRAINTS))].format(e=e[gen.integers(len(e))])
                for _ in range(int(gen.integers(1, 3)))
            ]
            places.append(place)
            ents.append(tuple(e))
            rels.append(tuple(rel))
            cons.append(tuple(dict.fromkeys(con)))
        if self.identical_payloads:
            places, ents, rels, cons = places * n, ents * n, rels * n, cons * n
        self.places, self.entities, self.relations, self.constraints = places, ents, rels, cons
        #: Word set of each state as a bit mask over :data:`WORDS` (for lexical relevance).
        self.word_mask = [
            _mask(self.places[v].split()) | _mask(self.entities[v]) for v in range(n)
        ]

    def _actions(self, gen: np.random.Generator, lo: int, hi: int, concentration: float) -> None:
        g, n = self.graph, self.size
        deg = g.degrees
        act_ptr = [0]
        out_ptr = [0]
        src, act, dst, prob, names, local = [], [], [], [], [], []
        fixed_na = int(gen.integers(lo, hi + 1))
        fixed_types = gen.permutation(len(ACTION_TYPES))
        fixed_obj = gen.integers(len(self.entities[0]), size=hi)
        for v in range(n):
            nb = g.neighbors(v)
            if self.identical_payloads:
                na = min(int(deg[v]), fixed_na)
                types, objs = fixed_types, fixed_obj
            else:
                na = min(int(deg[v]), int(gen.integers(lo, hi + 1)))
                types = gen.permutation(len(ACTION_TYPES))
                objs = gen.integers(len(self.entities[v]), size=na)
            order = gen.permutation(nb)
            for a in range(na):
                outs = order[a::na]
                if self.identical_payloads:
                    p = np.full(outs.size, 1.0 / outs.size)
                else:
                    p = gen.dirichlet(np.full(outs.size, concentration)) if outs.size > 1 else np.ones(1)
                gid = len(names)
                names.append(f"{self.places[v]} -{ACTION_TYPES[types[a % len(types)]]}-> {self.entities[v][objs[a]]}")
                for w, pw in zip(outs.tolist(), p.tolist(), strict=True):
                    src.append(v)
                    act.append(gid)
                    local.append(a)
                    dst.append(w)
                    prob.append(pw)
                out_ptr.append(len(dst))
            act_ptr.append(len(names))
        self.act_ptr = np.asarray(act_ptr, dtype=np.int64)  # actions of v: act_ptr[v]..act_ptr[v+1]
        self.out_ptr = np.asarray(out_ptr, dtype=np.int64)  # transitions of action g: out_ptr[g]..
        self.tid_src = np.asarray(src, dtype=np.int64)
        self.tid_action = np.asarray(act, dtype=np.int64)  # global action id
        self.tid_local = np.asarray(local, dtype=np.int64)  # action index within its state
        self.tid_dst = np.asarray(dst, dtype=np.int64)
        self.tid_prob = np.asarray(prob, dtype=np.float64)
        self.action_names = names
        self.state_ptr = self.out_ptr[self.act_ptr]  # transitions of v: state_ptr[v]..state_ptr[v+1]
        n_act = np.diff(self.act_ptr)
        # Cumulative P(s' | s, a) within each action, and P(a, s' | s) under a uniform action choice.
        cum_a = np.empty(len(prob))
        cum_w = np.empty(len(prob))
        for gid in range(len(names)):
            lo_, hi_ = out_ptr[gid], out_ptr[gid + 1]
            c = np.cumsum(self.tid_prob[lo_:hi_])
            c[-1] = 1.0
            cum_a[lo_:hi_] = c
        w = self.tid_prob / n_act[self.tid_src]
        for v in range(n):
            lo_, hi_ = self.state_ptr[v], self.state_ptr[v + 1]
            c = np.cumsum(w[lo_:hi_])
            c[-1] = 1.0
            cum_w[lo_:hi_] = c
        self.cum_action = cum_a
        self.cum_walk = cum_w
        self.items = [f"s{s}-a{a}->s{d}" for s, a, d in zip(src, local, dst, strict=True)]

    # ---------------------------------------------------------------- queries (counts: TransitionArrays)
    def state(self, v: int) -> State:
        if not 0 <= v < self.size:
            raise UsageError(f"state must be in [0, {self.size - 1}], got {v}", params=("state",))
        return State(
            id=v, place=self.places[v], entities=self.entities[v], relations=self.relations[v],
            constraints=self.constraints[v], actions=tuple(self.actions(v)),
        )

    def transition(self, tid: int) -> Transition:
        if not 0 <= tid < self.n_transitions:
            raise UsageError(f"transition id must be in [0, {self.n_transitions - 1}], got {tid}", params=("tid",))
        g = int(self.tid_action[tid])
        return Transition(
            tid=tid, src=int(self.tid_src[tid]), action=int(self.tid_local[tid]), action_name=self.action_names[g],
            dst=int(self.tid_dst[tid]), probability=float(self.tid_prob[tid]), item=self.items[tid],
        )

    def to_dict(self) -> dict[str, Any]:
        return {"graph": self.graph.to_dict(), **self.params, "n_actions": self.n_actions,
                "n_transitions": self.n_transitions}


class WorldEnv:
    """Step through a :class:`World`: ``reset()`` then ``step(action) -> tid``; tracks visit counts."""

    def __init__(self, world: World, *, seed: int | None = None, rng: np.random.Generator | None = None,
                 block: int = 1 << 14):
        self.world = world
        self._gen = rng if rng is not None else np.random.default_rng(seed)
        self._block = block
        self._u: list[float] = []
        self._pos = 0
        self._cum = world.cum_action.tolist()
        self._out = world.out_ptr.tolist()
        self._act = world.act_ptr.tolist()
        self._dst = world.tid_dst.tolist()
        self.visits = np.zeros(world.size, dtype=np.int64)
        self.state = -1

    def _uniform(self) -> float:
        if self._pos >= len(self._u):
            self._u, self._pos = self._gen.random(self._block).tolist(), 0
        u = self._u[self._pos]
        self._pos += 1
        return u

    def reset(self, start: int | None = None) -> int:
        """Start in ``start`` (default: uniform over states); return the state."""
        s = int(self._uniform() * self.world.size) if start is None else int(start)
        if not 0 <= s < self.world.size:
            raise UsageError(f"start state must be in [0, {self.world.size - 1}], got {s}", params=("start",))
        self.state = s
        self.visits[s] += 1
        return s

    def step(self, action: int) -> int:
        """Take ``action`` (index within the current state); return the transition id."""
        s = self.state
        if s < 0:
            raise UsageError("call reset() before step()", params=())
        g = self._act[s] + action
        if not self._act[s] <= g < self._act[s + 1]:
            raise UsageError(f"action must be in [0, {self._act[s + 1] - self._act[s] - 1}] in state {s}, got {action}",
                             params=("action",))
        tid = bisect.bisect_right(self._cum, self._uniform(), self._out[g], self._out[g + 1] - 1)
        self.state = self._dst[tid]
        self.visits[self.state] += 1
        return tid


def build_world(graph: Graph, *, seed: int | None = None, rng: np.random.Generator | None = None,
                **params: Any) -> World:
    """Build the world over ``graph`` (see :class:`World` for ``params``)."""
    unknown = sorted(set(params) - set(DEFAULT_WORLD) - {"identical_payloads"})
    if unknown:
        raise UsageError(f"unknown world parameter(s): {', '.join(unknown)} (known: {', '.join(DEFAULT_WORLD)})",
                         params=("world_param",))
    return World(graph, seed=seed, rng=rng, **params)


def _mask(words) -> int:
    m = 0
    for w in words:
        i = WORD_ID.get(w)
        if i is not None:
            m |= 1 << i
    return m


def _regions(graph: Graph, k: int, gen: np.random.Generator) -> np.ndarray:
    """Multi-source BFS from ``k`` random landmarks: each node's nearest landmark (ties: first reached)."""
    n = graph.size
    landmarks = gen.choice(n, size=k, replace=False).tolist()
    region = [-1] * n
    frontier = []
    for r, v in enumerate(landmarks):
        region[v] = r
        frontier.append(v)
    ptr, nb = graph.indptr.tolist(), graph.indices.tolist()
    while frontier:
        nxt = []
        for v in frontier:
            for w in nb[ptr[v] : ptr[v + 1]]:
                if region[w] < 0:
                    region[w] = region[v]
                    nxt.append(w)
        frontier = nxt
    return np.asarray(region, dtype=np.int64)
