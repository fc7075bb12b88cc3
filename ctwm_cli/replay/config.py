"""The configuration of a replay (:class:`ReplayConfig`, stored in its manifest) and of one replayed arm
(:class:`Arm`: a memory policy, an encoding, τ); :mod:`ctwm_cli.replay.runner` runs them."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ..allocation.rank import check_tau
from ..common.checks import check_choice, check_range
from ..common.errors import UsageError
from ..common.results import ToDict, result
from ..common.vocabulary import CTWM_STORES, FLAT_RETRIEVALS, GRAPH_RETRIEVALS, TAIL_ON
from ..common.vocabulary import REPLAY_AGENTS as AGENTS
from ..common.vocabulary import WORLD_PRESETS as PRESETS
from ..common.vocabulary import WORLD_WALKS as WALKS
from ..memory.encodings import ENCODINGS
from ..memory.plugins import is_policy_spec, load_policy
from ..memory.policies import (
    DEFAULT_BUDGET,
    DEFAULT_CORE,
    DEFAULT_K,
    DEFAULT_MAX_CANDIDATES,
    MEMORY_POLICIES,
    check_policy_args,
)
from ..memory.predictor import PREDICTORS
from ..memory.tiered_params import check_tiered_args
from ..memory.tokens import DEFAULT_TOKENIZER, TOKENIZERS
from ..stats.paired import MIN_CLUSTERS
from ..world.presets import ARTIFACT_REPLAY, ARTIFACT_REPLAY_DEFAULTS, ARTIFACT_REPLAY_WORLD
from ..world.run import WorldConfig
from .agents import CLOSED_LOOP_AGENTS
from .metrics import RESAMPLES
from .recorded import read_episodes

__all__ = ["MATCH_TOKENS", "OPTIONAL_FIELDS", "Arm", "ReplayConfig"]

MATCH_TOKENS = ("graph",)
#: Fields dropped from ``to_dict()`` while ``None`` (default configs and manifests stay as they were).
OPTIONAL_FIELDS = ("tail_on", "flat_retrieval", "graph_retrieval", "ctwm_store", "walk", "preset", "episodes_from")


@result
class ReplayConfig(ToDict):
    """Everything that determines a replay (stored in its manifest)."""

    family: str = "scale-free"
    size: int = 500
    agent: str = "random-walk"
    agent_params: dict[str, Any] = dataclasses.field(default_factory=dict)
    graph_params: dict[str, Any] = dataclasses.field(default_factory=dict)
    world_params: dict[str, Any] = dataclasses.field(default_factory=dict)
    steps: int = 2000
    seeds: tuple[int, ...] = (0,)
    budget: int = DEFAULT_BUDGET
    k: int = DEFAULT_K
    core: int = DEFAULT_CORE
    max_candidates: int = DEFAULT_MAX_CANDIDATES
    tokenizer: str = DEFAULT_TOKENIZER
    predictor: str = "reader"
    predictor_params: dict[str, Any] = dataclasses.field(default_factory=dict)
    bootstrap: int = 1000
    block: int | str = "auto"  # steps per bootstrap block, or "auto": the Politis-White rule per metric
    # "steps" (circular blocks), "episodes" (cluster bootstrap; task metrics always) or "auto": episodes in
    # closed loop (step t of one arm and step t of another are different steps) and wherever >= 5 episodes exist
    resample: str = "auto"
    level: float = 0.95
    verify_tokens: bool = False
    tiered: dict[str, Any] = dataclasses.field(default_factory=dict)  # overrides of the tiered policy's parameters
    # Readings of the paper's code (see ctwm_cli.world.presets); None = ctwm's own, left out of to_dict()
    tail_on: str | None = None  # None = "current": s_t decides a tail step; "next": s_{t+1} (the paper's code)
    flat_retrieval: str | None = None  # None = "bm25"; "uniform": k stored transitions at random (the code's Flat)
    graph_retrieval: str | None = None  # None = "tiers"; "recency": latest transitions out of s_t (the code's Graph)
    ctwm_store: str | None = None  # None = "ranked"; "five-feature": the code's scored 200-entry store
    walk: str | None = None  # None = the world's own (typed; uniform-neighbour under a world preset)
    preset: str | None = None
    # a file of recorded episodes (ctwm_cli.replay.recorded) replayed instead of Synthetic Graph World ones; the
    # seeds are then the episodes' indices 0..E-1 and steps the longest episode
    episodes_from: str | None = None

    @property
    def loop(self) -> str:
        """``closed`` when the agent acts from the memory prompt, else ``open``."""
        return "closed" if self.agent in CLOSED_LOOP_AGENTS else "open"

    @property
    def resampling(self) -> str:
        """What the intervals resample: ``resample``, with ``auto`` resolved: whole episodes (the cluster
        bootstrap) in closed loop and wherever there are at least :data:`~ctwm_cli.stats.paired.MIN_CLUSTERS`
        episodes; blocks of steps only in open loop with fewer. A difference that persists for hundreds of
        steps at a few sparse steps looks uncorrelated to the block rule, and the block interval then gave
        37% false positives at a nominal 5% where the cluster bootstrap held its level (issue 45)."""
        if self.resample == "auto":
            return "episodes" if self.loop == "closed" or len(self.seeds) >= MIN_CLUSTERS else "steps"
        return self.resample

    @property
    def tail_rule(self) -> str:
        return self.tail_on or TAIL_ON[0]

    def variants(self) -> dict[str, str]:
        """The memory policies' variants (unset ones at ctwm's own)."""
        return {"flat_retrieval": self.flat_retrieval or FLAT_RETRIEVALS[0],
                "graph_retrieval": self.graph_retrieval or GRAPH_RETRIEVALS[0],
                "ctwm_store": self.ctwm_store or CTWM_STORES[0]}

    def _with_preset(self) -> ReplayConfig:
        """The preset's fields filled in wherever none was given (see :mod:`ctwm_cli.world.presets`)."""
        if self.preset is None:
            return self
        check_choice("preset", self.preset, PRESETS)
        unset = {k: v for k, v in ARTIFACT_REPLAY.items() if getattr(self, k) is None}
        at_default = {k: v for k, (d, v) in ARTIFACT_REPLAY_DEFAULTS.items() if getattr(self, k) == d}
        return dataclasses.replace(self, **unset, **at_default,
                                   world_params={**ARTIFACT_REPLAY_WORLD, **self.world_params})

    def _with_recorded(self) -> ReplayConfig:
        if self.episodes_from is None:
            return self
        if self.loop == "closed":
            raise UsageError("episodes_from replays recorded trajectories (open loop); a closed-loop agent needs a "
                             "world to act in", params=("episodes_from", "agent"))
        rec = read_episodes(self.episodes_from)
        return dataclasses.replace(self, seeds=tuple(range(len(rec.runs))), steps=max(t.size for t in rec.tids))

    def checked(self) -> ReplayConfig:
        self = self._with_preset()._with_recorded()
        for name, choices in (("tail_on", TAIL_ON), ("flat_retrieval", FLAT_RETRIEVALS),
                              ("graph_retrieval", GRAPH_RETRIEVALS), ("ctwm_store", CTWM_STORES), ("walk", WALKS)):
            if getattr(self, name) is not None:
                check_choice(name, getattr(self, name), choices)
        if self.agent not in AGENTS:
            raise UsageError(f"unknown agent {self.agent!r} (choose from: {', '.join(AGENTS)})", params=("agent",))
        check_range("steps", self.steps, lo=2)
        if not self.seeds:
            raise UsageError("at least one seed is needed", params=("seeds",))
        for s in self.seeds:
            if not isinstance(s, (int, np.integer)) or isinstance(s, bool) or s < 0:
                raise UsageError(f"seeds must be non-negative integers, got {s!r}", params=("seeds",))
        if len(set(self.seeds)) != len(self.seeds):
            raise UsageError(f"seeds must be distinct, got {list(self.seeds)}", params=("seeds",))
        if self.tokenizer not in TOKENIZERS:
            raise UsageError(f"unknown tokenizer {self.tokenizer!r} (choose from: {', '.join(TOKENIZERS)})",
                             params=("tokenizer",))
        if self.predictor not in PREDICTORS:
            raise UsageError(f"unknown predictor {self.predictor!r} (choose from: {', '.join(PREDICTORS)})",
                             params=("predictor",))
        check_range("bootstrap", self.bootstrap, lo=0)
        if self.block != "auto":
            if isinstance(self.block, bool) or not isinstance(self.block, (int, np.integer)):
                raise UsageError(f"block must be a number of steps or 'auto', got {self.block!r}", params=("block",))
            check_range("block", self.block, lo=1)
        if self.resample not in ("auto", *RESAMPLES):
            raise UsageError(f"resample must be one of auto, {', '.join(RESAMPLES)}, got {self.resample!r}",
                             params=("resample",))
        check_range("level", self.level, lo=0, hi=1, lo_open=True, hi_open=True)
        check_policy_args(budget=self.budget, k=self.k, core=self.core, tau=1.0, max_candidates=self.max_candidates)
        check_tiered_args(self.tiered)
        return dataclasses.replace(self, seeds=tuple(int(s) for s in self.seeds))

    def world_config(self, seed: int) -> WorldConfig:
        """The ``ctwm world run`` configuration of the seed's episode (closed loop: its world only)."""
        closed = self.loop == "closed"
        return WorldConfig(family=self.family, size=self.size, policy="random-walk" if closed else self.agent,
                           policy_params={} if closed else dict(self.agent_params),
                           graph_params=dict(self.graph_params), world_params=dict(self.world_params),
                           retriever="state-frequency", steps=self.steps, seed=int(seed), preset=self.preset,
                           walk=None if closed else self.walk)

    def to_dict(self) -> dict[str, Any]:
        d = ToDict.to_dict(self)
        d["predictor_params"] = {k: v for k, v in self.predictor_params.items() if k != "api_key"}
        d["agent_params"] = {k: v for k, v in self.agent_params.items() if k != "api_key"}
        for key in OPTIONAL_FIELDS:
            if d.get(key) is None:
                d.pop(key, None)
        d["loop"] = self.loop
        d["resampling"] = self.resampling
        return d


@result
class Arm(ToDict):
    """One replayed configuration: a memory policy, an encoding and (ctwm) τ."""

    memory: str
    encoding: str
    tau: float | None = None
    match_tokens: str | None = None  # ctwm: per step, the budget is what this arm spent on the same step

    @property
    def label(self) -> str:
        base = self.memory if self.tau is None else f"{self.memory}(tau={self.tau:g})"
        return base if self.match_tokens is None else f"{base}[<={self.match_tokens}]"

    @property
    def name(self) -> str:
        return f"{self.label}/{self.encoding}"

    def checked(self) -> Arm:
        if is_policy_spec(self.memory):
            load_policy(self.memory)  # a spec that does not load is refused before any work
        elif self.memory not in MEMORY_POLICIES:
            raise UsageError(f"memory: {self.memory!r} is not a known policy (choose from: "
                             f"{', '.join(MEMORY_POLICIES)})",
                             params=("memory",))
        if self.encoding not in ENCODINGS:
            raise UsageError(f"unknown encoding {self.encoding!r} (choose from: {', '.join(ENCODINGS)})",
                             params=("encoding",))
        if self.match_tokens is not None and (self.memory != "ctwm" or self.match_tokens not in MATCH_TOKENS):
            raise UsageError(f"match_tokens applies to ctwm and must be one of {', '.join(MATCH_TOKENS)}, "
                             f"got {self.match_tokens!r} for {self.memory}", params=("match_tokens",))
        if self.memory == "ctwm":
            return dataclasses.replace(self, tau=check_tau(1.0 if self.tau is None else self.tau, "tau"))
        return dataclasses.replace(self, tau=None)
