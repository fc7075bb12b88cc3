"""What determines a Synthetic Graph World run: :class:`WorldConfig` (validated by ``resolved()``).

Options that follow a reading of the paper's own code (``walk``, ``order``, ``store``, ``tau``,
``preset``; see :mod:`ctwm_cli.world.presets`) are ``None`` by default, meaning ctwm's own choice,
and are left out of ``to_dict()`` and ``command()`` while unset, so default runs and their
manifests are exactly what they were before the options existed.

A run's ``seed`` is split with ``SeedSequence(seed).spawn(6)`` into independent streams for the
graph, the world (payloads, actions, transition probabilities), the environment (start state and
outcomes), the policy, the store (evictions) and the retriever, so a run is fully determined by its
configuration; ``command()`` is the ``ctwm world run`` line that repeats it.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ..common.checks import check_choice, check_range
from ..common.errors import UsageError
from ..common.limits import check_memory
from ..common.results import ToDict, result
from ..common.vocabulary import WORLD_ORDERS as ORDERS
from ..common.vocabulary import WORLD_PRESETS as PRESETS
from ..common.vocabulary import WORLD_WALKS as WALKS
from ..memory.retrievers import ALL_RETRIEVERS, DEFAULT_TAU, RETRIEVER_EVICTION
from ..memory.store import EVICTION_RULES
from .env import DEFAULT_WORLD
from .graphs import FAMILIES, graph_params
from .policies import POLICIES, policy_params
from .presets import ARTIFACT_OPTIONS, ARTIFACT_WORLD, artifact_graph_params

#: ``walk``: ctwm's typed stochastic actions, or the artifact's uniform step over neighbours.
#: ``order``: retrieval before the step's write (ctwm), or after it (the artifact, Section 3's wording).
#: The optional fields, dropped from ``to_dict()`` while ``None``.
OPTIONAL_FIELDS = ("walk", "order", "store", "tau", "preset")

#: Memory estimate of a run (checked before it starts): interpreter and libraries, per state, per event.
BASE_BYTES = 200 * 2**20
BYTES_PER_STATE = 4096
BYTES_PER_EVENT = 100


@result
class WorldConfig(ToDict):
    """Everything that determines a run (stored in its manifest)."""

    family: str = "scale-free"
    size: int = 500
    graph_params: dict[str, Any] = dataclasses.field(default_factory=dict)
    world_params: dict[str, Any] = dataclasses.field(default_factory=dict)
    policy: str = "random-walk"
    policy_params: dict[str, Any] = dataclasses.field(default_factory=dict)
    retriever: str = "state-frequency"
    k: int = 3
    capacity: int = 200
    steps: int = 100_000
    seed: int = 0
    writes: bool = True
    run: str | None = None
    walk: str | None = None  # None = "typed"
    order: str | None = None  # None = "retrieve-first"
    store: str | None = None  # None = the retriever's own eviction rule
    tau: float | None = None  # state-tau only (None = DEFAULT_TAU)
    preset: str | None = None

    @property
    def run_id(self) -> str:
        return self.run or f"{self.family}-{self.size}-{self.seed}"

    @property
    def walk_rule(self) -> str:
        return self.walk or WALKS[0]

    @property
    def order_rule(self) -> str:
        return self.order or ORDERS[0]

    @property
    def eviction(self) -> str:
        return self.store or RETRIEVER_EVICTION[self.retriever]

    def to_dict(self) -> dict[str, Any]:
        d = ToDict.to_dict(self)
        for key in OPTIONAL_FIELDS:
            if d.get(key) is None:
                d.pop(key, None)
        return d

    def _with_preset(self) -> WorldConfig:
        """The preset's options and graph/world parameters filled in wherever none was given."""
        if self.preset is None:
            return self
        check_choice("preset", self.preset, PRESETS)
        opts = {k: v for k, v in ARTIFACT_OPTIONS.items() if getattr(self, k) is None
                and (k == "store" or self.policy == "random-walk")}  # a policy reading memory retrieves first
        return dataclasses.replace(
            self, **opts,
            graph_params={**artifact_graph_params(self.family, int(self.size)), **self.graph_params},
            world_params={**ARTIFACT_WORLD, **self.world_params},
        )

    def resolved(self) -> WorldConfig:
        """Validated copy with every default filled in (what the manifest records)."""
        check_choice("family", self.family, FAMILIES)
        check_choice("retriever", self.retriever, ALL_RETRIEVERS)
        check_choice("policy", self.policy, POLICIES)
        self = self._with_preset()
        if self.walk is not None:
            check_choice("walk", self.walk, WALKS)
        if self.order is not None:
            check_choice("order", self.order, ORDERS)
        if self.store is not None:
            check_choice("store", self.store, EVICTION_RULES)
        if self.policy != "random-walk" and (self.walk_rule, self.order_rule) != (WALKS[0], ORDERS[0]):
            raise UsageError("walk and order apply to the random-walk policy only (a policy that reads memory "
                             "must retrieve before it acts)", params=("walk", "order"))
        if self.tau is not None and self.retriever != "state-tau":
            raise UsageError(f"tau applies to the state-tau retriever only, got retriever {self.retriever}",
                             params=("tau",))
        tau = self.tau if self.tau is not None or self.retriever != "state-tau" else DEFAULT_TAU
        if tau is not None:
            check_range("tau", tau, lo=0)
        for name in ("steps", "k", "capacity"):
            check_range(name, getattr(self, name), lo=1)
        if not isinstance(self.seed, (int, np.integer)) or self.seed < 0:
            raise UsageError(f"seed must be a non-negative integer, got {self.seed!r}", params=("seed",))
        unknown = sorted(set(self.world_params) - set(DEFAULT_WORLD))
        if unknown:
            raise UsageError(f"unknown world parameter(s): {', '.join(unknown)} (known: {', '.join(DEFAULT_WORLD)})",
                             params=("world_param",))
        for key, value in self.world_params.items():
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                raise UsageError(f"world parameter {key!r} must be a number, got {value!r}", params=("world_param",))
            if key != "concentration" and float(value) != int(value):
                raise UsageError(f"world parameter {key!r} must be an integer, got {value!r}", params=("world_param",))
        check_memory(f"size = {self.size:,} and steps = {self.steps:,}", self.memory_estimate(),
                     why=f"~{BYTES_PER_STATE // 1024} KiB per state, ~{BYTES_PER_EVENT} bytes per trace event")
        pp = policy_params(self.policy, self.policy_params)  # holds the key's variable name, never the key
        return dataclasses.replace(
            self,
            graph_params=graph_params(self.family, self.graph_params),
            world_params={k: (v if k == "concentration" else int(v))
                          for k, v in {**DEFAULT_WORLD, **self.world_params}.items()},
            policy_params=pp,
            seed=int(self.seed),
            tau=None if tau is None else float(tau),
        )

    def memory_estimate(self) -> int:
        """Peak bytes of one run (measured: ~3 KiB per scale-free state, ~80 bytes per event)."""
        return BASE_BYTES + BYTES_PER_STATE * max(self.size, 0) + BYTES_PER_EVENT * self.steps * (self.k + 1)

    def command(self) -> str:
        """The ``ctwm world run`` command line that repeats this run."""
        parts = ["ctwm world run", f"--family {self.family}", f"--size {self.size}", f"--policy {self.policy}",
                 f"--retriever {self.retriever}", f"--steps {self.steps}", f"--seed {self.seed}",
                 f"--k {self.k}", f"--capacity {self.capacity}"]
        parts += [f"--graph-param {k}={v}" for k, v in self.graph_params.items()]
        parts += [f"--world-param {k}={v}" for k, v in self.world_params.items()]
        parts += [f"--policy-param {k}={v}" for k, v in self.policy_params.items() if v is not None]
        parts += [f"--{key} {getattr(self, key)}" for key in OPTIONAL_FIELDS if getattr(self, key) is not None]
        if not self.writes:
            parts.append("--no-writes")
        if self.run:
            parts.append(f"--run {self.run}")
        return " ".join(parts)
