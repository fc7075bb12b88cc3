"""The simulation loop of the Synthetic Graph World: :func:`simulate` a :class:`WorldConfig` in memory.

**Step order.** At step ``t`` in state ``s_t``: the retriever returns up to ``k`` stored transitions
for ``s_t`` (events ``retrieve``, ranks 1..k); the policy picks ``a_t``; the world draws ``s_{t+1}``;
the transition ``e_t = (s_t, a_t, s_{t+1})`` is written to the store (event ``write``, no rank).
Policies that ignore memory (``random-walk``) walk first and replay the memory afterwards, which
gives the same events faster.

**Options after the paper's code** (random-walk only; see :mod:`ctwm_cli.world.presets`):
``walk="uniform-neighbour"`` draws ``s_{t+1}`` uniformly among the neighbours of ``s_t`` (each
neighbour is one transition of ``s_t``, so the action is the one the neighbour was dealt to), instead
of a uniform action and then its outcome distribution; on an undirected connected graph the visit
frequencies are then proportional to degree and every directed edge is equally frequent.
``order="write-first"`` writes ``e_t`` before retrieving for ``s_t``, so the retriever may return
``e_t`` itself (the leak retrieve-first avoids).
"""

from __future__ import annotations

import bisect
import itertools
import time
from typing import Any

import numpy as np

from ..common.errors import UsageError
from ..common.results import ToDict, result
from ..memory.retrievers import make_retriever, make_store
from .config import WorldConfig
from .env import World, build_world
from .graphs import make_graph
from .policies import make_policy


@result
class Simulation(ToDict):
    """The raw outcome of a run: the trajectory and the retrieved items, as arrays."""

    config: WorldConfig
    world: World
    transitions: np.ndarray  # tid of e_t, t = 0..steps-1
    retrieved: np.ndarray  # tids of all retrieve events, in order
    retrieved_step: np.ndarray
    retrieved_rank: np.ndarray
    visits: np.ndarray  # visits per state (s_0 .. s_steps)
    policy_stats: dict[str, Any]
    seconds: float

    def access_counts(self, *, writes: bool = True) -> np.ndarray:
        """Per-transition counts of retrieve (+ write) events (zeros included)."""
        n = self.world.n_transitions
        c = np.bincount(self.retrieved, minlength=n)
        if writes:
            c = c + np.bincount(self.transitions, minlength=n)
        return c

    def to_dict(self) -> dict[str, Any]:
        return {"config": self.config.to_dict(), "steps": int(self.transitions.size),
                "retrieve_events": int(self.retrieved.size)}  # no wall-clock time: same seed, same JSON


def simulate(config: WorldConfig, *, world: World | None = None, policy_backoff: float | None = None) -> Simulation:
    """Run ``config`` in memory (no files). ``world`` reuses an already built world of the same config."""
    cfg = config.resolved()
    ss = np.random.SeedSequence(cfg.seed)
    g_graph, g_world, g_env, g_policy, g_store, g_retr = (np.random.default_rng(s) for s in ss.spawn(6))
    if world is None:
        graph = make_graph(cfg.family, cfg.size, params=cfg.graph_params, rng=g_graph)
        world = build_world(graph, rng=g_world, **cfg.world_params)
    retriever = make_retriever(cfg.retriever, cfg.k, rng=g_retr, **({"tau": cfg.tau} if cfg.tau is not None else {}))
    store = make_store(retriever, cfg.capacity, world.n_transitions, world.size, rng=g_store, eviction=cfg.store)
    params = dict(cfg.policy_params)
    if cfg.policy == "endpoint" and policy_backoff is not None:
        params["backoff"] = policy_backoff
    policy = make_policy(cfg.policy, params)
    started = time.perf_counter()
    env_u = g_env.random
    start = int(env_u() * world.size)
    if not policy.uses_memory:
        walk = _walk_neighbours if cfg.walk_rule == "uniform-neighbour" else _walk
        tids = walk(world, start, cfg.steps, g_env)
        per_step = _replay_memory(tids, world, store, retriever, write_first=cfg.order_rule == "write-first")
        policy_stats: dict[str, Any] = {}
    else:
        policy.start(world, g_policy)
        tids, per_step = _interact(world, start, cfg.steps, store, retriever, policy, g_env)
        policy_stats = policy.stats()
    lengths = np.fromiter(map(len, per_step), dtype=np.int64, count=len(per_step))
    total = int(lengths.sum())
    flat = np.fromiter(itertools.chain.from_iterable(per_step), dtype=np.int64, count=total)
    steps_of = np.repeat(np.arange(cfg.steps, dtype=np.int64), lengths)
    offsets = np.cumsum(lengths) - lengths
    ranks = np.arange(total, dtype=np.int64) - np.repeat(offsets, lengths) + 1
    visits = np.bincount(world.tid_dst[tids], minlength=world.size)
    visits[start] += 1
    seconds = time.perf_counter() - started
    return Simulation(config=cfg, world=world, transitions=tids, retrieved=flat, retrieved_step=steps_of,
                      retrieved_rank=ranks, visits=visits, policy_stats=policy_stats, seconds=seconds)


def _walk(world: World, start: int, steps: int, gen: np.random.Generator) -> np.ndarray:
    """Random-walk trajectory: one uniform per step over the state's transitions (cum_walk)."""
    cum = world.cum_walk.tolist()
    ptr = world.state_ptr.tolist()
    dst = world.tid_dst.tolist()
    out = [0] * steps
    s = start
    br = bisect.bisect_right
    block = 1 << 16
    for lo in range(0, steps, block):
        u = gen.random(min(block, steps - lo)).tolist()
        for j, x in enumerate(u, lo):
            t = br(cum, x, ptr[s], ptr[s + 1] - 1)
            out[j] = t
            s = dst[t]
    return np.asarray(out, dtype=np.int64)


def _walk_neighbours(world: World, start: int, steps: int, gen: np.random.Generator) -> np.ndarray:
    """Uniform-neighbour trajectory: one uniform per step, uniform over the state's transitions
    (one per neighbour: every neighbour is dealt to exactly one action)."""
    ptr = world.state_ptr.tolist()
    dst = world.tid_dst.tolist()
    out = [0] * steps
    s = start
    block = 1 << 16
    for lo in range(0, steps, block):
        u = gen.random(min(block, steps - lo)).tolist()
        for j, x in enumerate(u, lo):
            a = ptr[s]
            t = a + int(x * (ptr[s + 1] - a))
            out[j] = t
            s = dst[t]
    return np.asarray(out, dtype=np.int64)


def _replay_memory(tids: np.ndarray, world: World, store, retriever, *, write_first: bool = False) -> list[list[int]]:
    src = world.tid_src[tids].tolist()
    dst = world.tid_dst[tids].tolist()
    retrieve = retriever.retrieve
    write = store.write
    out: list[list[int]] = []
    append = out.append
    if retriever.name == "none":
        for t, s, d in zip(tids.tolist(), src, dst, strict=True):
            write(t, s, d)
        return [[]] * len(src)
    if write_first:
        for t, s, d in zip(tids.tolist(), src, dst, strict=True):
            write(t, s, d)
            append(retrieve(store, s))
        return out
    for t, s, d in zip(tids.tolist(), src, dst, strict=True):
        append(retrieve(store, s))
        write(t, s, d)
    return out


def _interact(world: World, start: int, steps: int, store, retriever, policy, gen: np.random.Generator):
    cum = world.cum_action.tolist()
    out_ptr = world.out_ptr.tolist()
    act_ptr = world.act_ptr.tolist()
    dst = world.tid_dst.tolist()
    br = bisect.bisect_right
    tids = [0] * steps
    per_step: list[list[int]] = []
    s = start
    u: list[float] = []
    for t in range(steps):
        if not u:
            u = gen.random(1 << 14).tolist()[::-1]
        got = retriever.retrieve(store, s)
        per_step.append(got)
        a = policy.act(s, got, t)
        g = act_ptr[s] + a
        if not act_ptr[s] <= g < act_ptr[s + 1]:
            n_actions = act_ptr[s + 1] - act_ptr[s]
            raise UsageError(f"policy {policy.name} chose action {a} in state {s} with {n_actions} actions", params=())
        tid = br(cum, u.pop(), out_ptr[g], out_ptr[g + 1] - 1)
        tids[t] = tid
        d = dst[tid]
        store.write(tid, s, d)
        s = d
    return np.asarray(tids, dtype=np.int64), per_step
