"""Agent policies: ``random-walk``, ``semantic`` (goal-directed, no network) and ``endpoint``.

A policy is started on a world with its own generator (:meth:`Policy.start`), then asked at every
step for an action index in the current state given the transitions the retriever returned
(:meth:`Policy.act`, retrieval happens before the action and before the step's write).

``random-walk``
    A uniformly random action. The runner draws the whole trajectory in one pass instead (one
    uniform number per step over the state's transitions, weighted ``P(a) P(s' | s, a)`` with
    ``P(a) = 1 / #actions``): the same process, and the trajectory does not depend on the
    retriever, so the retriever ladder compares retrievers on paired trajectories.
``semantic``
    Goal-directed over the payloads, needing no network. Tasks are target states drawn with Zipf
    popularity: the states are put in a seeded random order and the one at rank ``r`` is drawn
    with probability proportional to ``r^-zipf`` (default ``zipf=1.1``). A task's query is the set of
    words of its target's payload (place words and entities). In state ``s`` each action ``a`` is
    scored by lexical relevance of where it leads: ``sum_{s'} P(s' | s, a) |W(s') & Q|`` (shared
    words between the outcome's payload and the query), plus, for every retrieved memory
    ``(s, a, s'')`` taken from this state, ``memory_weight * |W(s'') & Q|`` (what the agent remembers
    the action led to), minus ``revisit_penalty`` times the expected number of visits to the
    outcome during the current task (so it does not circle). With probability ``epsilon``
    (default 0.1) the action is uniform instead; ties are broken uniformly. A task ends when the
    target is reached or after ``max_task_steps`` steps (default 200); the next task is drawn then.
``endpoint``
    An OpenAI-compatible chat-completions model (see :mod:`ctwm_cli.world.endpoint`), with the same
    tasks as ``semantic``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..common.errors import UsageError
from ..memory.store import UniformStream
from .endpoint import EndpointPolicy
from .env import World
from .policy_base import DEFAULT_POLICY_PARAMS, POLICIES, Policy, TaskPolicy, TaskSampler, policy_params

__all__ = ["DEFAULT_POLICY_PARAMS", "POLICIES", "EndpointPolicy", "Policy", "RandomWalk", "Semantic", "TaskPolicy",
           "TaskSampler", "make_policy", "policy_params"]


class RandomWalk(Policy):
    """A uniformly random action (the runner draws random-walk trajectories in one pass)."""

    name = "random-walk"
    uses_memory = False

    def start(self, world: World, rng: np.random.Generator) -> None:
        super().start(world, rng)
        self._u = UniformStream(rng)
        self._nact = np.diff(world.act_ptr).tolist()

    def act(self, state: int, retrieved: list[int], step: int) -> int:
        return int(self._u.next() * self._nact[state])


class Semantic(TaskPolicy):
    """Goal-directed by lexical relevance, guided by retrieved memories (see the module docstring)."""

    name = "semantic"

    def __init__(self, **params: Any):
        self.params = policy_params("semantic", params)

    def start(self, world: World, rng: np.random.Generator) -> None:
        super().start(world, rng)
        p = self.params
        self.epsilon = float(p["epsilon"])
        self.memory_weight = float(p["memory_weight"])
        self.revisit_penalty = float(p["revisit_penalty"])
        self._u = UniformStream(rng)
        self._act_ptr = world.act_ptr.tolist()
        self._out_ptr = world.out_ptr.tolist()
        self._src = world.tid_src.tolist()
        self._local = world.tid_local.tolist()
        self._dst = world.tid_dst.tolist()
        self._prob = world.tid_prob.tolist()
        self._mask = world.word_mask
        self._base: dict[tuple[int, int], list[float]] = {}

    def _relevance(self, target: int, state: int) -> list[float]:
        key = (target, state)
        base = self._base.get(key)
        if base is None:
            q = self._mask[target]
            mask, dst, prob, out = self._mask, self._dst, self._prob, self._out_ptr
            base = []
            for g in range(self._act_ptr[state], self._act_ptr[state + 1]):
                base.append(sum(prob[t] * (mask[dst[t]] & q).bit_count() for t in range(out[g], out[g + 1])))
            if len(self._base) > 200_000:
                self._base.clear()
            self._base[key] = base
        return base

    def act(self, state: int, retrieved: list[int], step: int) -> int:
        target = self._task(state)
        nxt = self._u.next
        n_act = self._act_ptr[state + 1] - self._act_ptr[state]
        if nxt() < self.epsilon:
            return int(nxt() * n_act)
        score = list(self._relevance(target, state))
        q = self._mask[target]
        for r in retrieved:
            if self._src[r] == state:
                score[self._local[r]] += self.memory_weight * (self._mask[self._dst[r]] & q).bit_count()
        if self.revisit_penalty and self.task_visits:
            visits, dst, prob, out = self.task_visits, self._dst, self._prob, self._out_ptr
            g0 = self._act_ptr[state]
            for a in range(n_act):
                pen = sum(prob[t] * visits.get(dst[t], 0) for t in range(out[g0 + a], out[g0 + a + 1]))
                score[a] -= self.revisit_penalty * pen
        best = max(score)
        ties = [a for a, s in enumerate(score) if s >= best - 1e-12]
        return ties[int(nxt() * len(ties))] if len(ties) > 1 else ties[0]


def make_policy(name: str, params: dict[str, Any] | None = None) -> Policy:
    """The policy called ``name`` (one of :data:`POLICIES`) with ``params`` over its defaults."""
    if name == "random-walk":
        policy_params(name, params)
        return RandomWalk()
    if name == "semantic":
        return Semantic(**(params or {}))
    if name == "endpoint":
        return EndpointPolicy(**(params or {}))
    raise UsageError(f"unknown policy {name!r} (choose from: {', '.join(POLICIES)})", params=("policy",))
