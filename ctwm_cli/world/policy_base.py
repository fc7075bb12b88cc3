"""What every agent policy shares: the :class:`Policy` interface, parameter defaults and checks, and
the Zipf task sampler and task bookkeeping of the goal-directed policies (``semantic``, ``endpoint``).

The base of :mod:`ctwm_cli.world.policies` and :mod:`ctwm_cli.world.endpoint`, so the endpoint
policy does not import the module whose factory builds it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import numpy as np

from ..common.errors import UsageError
from ..common.vocabulary import WORLD_POLICIES as POLICIES
from ..models.llm import check_base_url, check_retries, check_timeout
from .env import World

DEFAULT_POLICY_PARAMS: dict[str, dict[str, Any]] = {
    "random-walk": {},
    "semantic": {"epsilon": 0.1, "zipf": 1.1, "memory_weight": 1.0, "revisit_penalty": 0.5, "max_task_steps": 200},
    "endpoint": {"zipf": 1.1, "max_task_steps": 200, "base_url": None, "model": None, "timeout": 30.0,
                 "retries": 2, "api_key_env": None},
}


def policy_params(name: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    """Defaults of policy ``name`` updated by ``params`` (unknown keys raise ``UsageError``)."""
    if name not in DEFAULT_POLICY_PARAMS:
        raise UsageError(f"unknown policy {name!r} (choose from: {', '.join(POLICIES)})", params=("policy",))
    out = dict(DEFAULT_POLICY_PARAMS[name])
    for key, value in (params or {}).items():
        if key not in out:
            known = ", ".join(out) or "none"
            raise UsageError(f"policy parameter {key!r} does not apply to policy {name!r} (known: {known})",
                             params=("policy_param",))
        out[key] = value
    if "epsilon" in out and not 0.0 <= float(out["epsilon"]) <= 1.0:
        raise UsageError(f"epsilon must be in [0, 1], got {out['epsilon']}", params=("policy_param",))
    if "zipf" in out and not float(out["zipf"]) >= 0.0:
        raise UsageError(f"zipf must be >= 0, got {out['zipf']}", params=("policy_param",))
    if "max_task_steps" in out and int(out["max_task_steps"]) < 1:
        raise UsageError(f"max_task_steps must be >= 1, got {out['max_task_steps']}", params=("policy_param",))
    if name == "endpoint":
        if not out["base_url"]:
            raise UsageError("the endpoint policy needs base_url (an OpenAI-compatible server)", params=("base_url",))
        if not out["model"]:
            raise UsageError("the endpoint policy needs model", params=("model",))
        out["base_url"] = check_base_url(out["base_url"])
        out["timeout"] = check_timeout(out["timeout"])
        out["retries"] = check_retries(out["retries"])
    return out


class Policy(ABC):
    """Base class. ``uses_memory`` tells the runner whether retrieved items change the actions."""

    name = "policy"
    uses_memory = True

    def start(self, world: World, rng: np.random.Generator) -> None:
        self.world = world

    @abstractmethod
    def act(self, state: int, retrieved: list[int], step: int) -> int:
        ...

    def stats(self) -> dict[str, Any]:
        return {}


class TaskSampler:
    """Target states with Zipf popularity over a seeded random order of the states."""

    def __init__(self, world: World, zipf: float, rng: np.random.Generator, block: int = 4096):
        n = world.size
        self.order = rng.permutation(n)
        w = np.arange(1, n + 1, dtype=np.float64) ** (-float(zipf))
        self.cum = np.cumsum(w / w.sum())
        self.cum[-1] = 1.0
        self._rng = rng
        self._block = block
        self._buf: list[int] = []

    def draw(self) -> int:
        if not self._buf:
            ranks = np.searchsorted(self.cum, self._rng.random(self._block), side="right")
            self._buf = self.order[np.minimum(ranks, self.cum.size - 1)].tolist()[::-1]
        return self._buf.pop()


class TaskPolicy(Policy):
    """Shared task bookkeeping for goal-directed policies."""

    def start(self, world: World, rng: np.random.Generator) -> None:
        super().start(world, rng)
        p = self.params
        self.tasks = TaskSampler(world, float(p["zipf"]), rng)
        self.max_task_steps = int(p["max_task_steps"])
        self.target = -1
        self.task_steps = 0
        self.completed = 0
        self.abandoned = 0
        self.task_visits: dict[int, int] = {}

    def _task(self, state: int) -> int:
        if self.target == state:
            self.completed += 1
            self.target = -1
        elif self.target >= 0 and self.task_steps >= self.max_task_steps:
            self.abandoned += 1
            self.target = -1
        while self.target < 0 or self.target == state:
            self.target = self.tasks.draw()
            self.task_steps = 0
            self.task_visits = {}
        self.task_steps += 1
        self.task_visits[state] = self.task_visits.get(state, 0) + 1
        return self.target

    def stats(self) -> dict[str, Any]:
        return {"tasks_completed": self.completed, "tasks_abandoned": self.abandoned}
