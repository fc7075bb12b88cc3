"""The replay runner: memory policies x encodings on shared Synthetic Graph World episodes.

**Episodes.** For every seed the episode is the trajectory of ``ctwm world run`` with the same
family, size, agent policy, steps and seed (:func:`ctwm_cli.world.run.simulate`, retriever
``state-frequency``): states ``s_t``, actions ``a_t`` and next states ``s_{t+1}``. Every arm (memory
policy, encoding, τ) replays the *same* episodes, so comparisons are paired step by step. The agent
does not read the replayed prompt, so the visited trajectory does not depend on the arm.

**A step** ``t``: the memory holds ``e_0 .. e_{t-1}``; the policy retrieves for ``(s_t, a_t)`` (ρ),
renders the prompt under the encoding and the budget, the predictor reads the prompt text and
predicts ŝ_{t+1}; the loss is ``1{ŝ_{t+1} != s_{t+1}}``; then ``e_t`` is written.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import numpy as np

from ..errors import UsageError
from ..memory.encodings import ENCODINGS, make_encoding
from ..memory.policies import (
    DEFAULT_BUDGET, DEFAULT_CORE, DEFAULT_K, DEFAULT_MAX_CANDIDATES, MEMORY_POLICIES, EpisodicMemory,
    check_policy_args, make_policy,
)
from ..memory.predictor import PREDICTORS, Predictor, make_predictor
from ..memory.tokens import DEFAULT_TOKENIZER, TOKENIZERS, TokenCounter, token_counter
from ..results import ToDict, result

AGENTS = ("random-walk", "semantic")


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
    block: int = 50
    level: float = 0.95
    verify_tokens: bool = False

    def checked(self) -> ReplayConfig:
        if self.agent not in AGENTS:
            raise UsageError(f"unknown agent {self.agent!r} (choose from: {', '.join(AGENTS)})")
        if self.steps < 2:
            raise UsageError(f"steps must be >= 2, got {self.steps}")
        if not self.seeds:
            raise UsageError("at least one seed is needed")
        for s in self.seeds:
            if not isinstance(s, (int, np.integer)) or isinstance(s, bool) or s < 0:
                raise UsageError(f"seeds must be non-negative integers, got {s!r}")
        if len(set(self.seeds)) != len(self.seeds):
            raise UsageError(f"seeds must be distinct, got {list(self.seeds)}")
        if self.tokenizer not in TOKENIZERS:
            raise UsageError(f"unknown tokenizer {self.tokenizer!r} (choose from: {', '.join(TOKENIZERS)})")
        if self.predictor not in PREDICTORS:
            raise UsageError(f"unknown predictor {self.predictor!r} (choose from: {', '.join(PREDICTORS)})")
        if self.bootstrap < 0:
            raise UsageError(f"bootstrap must be >= 0, got {self.bootstrap}")
        if self.block < 1:
            raise UsageError(f"block must be >= 1, got {self.block}")
        if not 0 < self.level < 1:
            raise UsageError(f"level must be in (0, 1), got {self.level}")
        check_policy_args(budget=self.budget, k=self.k, core=self.core, tau=1.0, max_candidates=self.max_candidates)
        return dataclasses.replace(self, seeds=tuple(int(s) for s in self.seeds))

    def world_config(self, seed: int):
        from ..world.run import WorldConfig

        return WorldConfig(family=self.family, size=self.size, policy=self.agent, policy_params=dict(self.agent_params),
                           graph_params=dict(self.graph_params), world_params=dict(self.world_params),
                           retriever="state-frequency", steps=self.steps, seed=int(seed))

    def to_dict(self) -> dict[str, Any]:
        d = ToDict.to_dict(self)
        d["predictor_params"] = {k: v for k, v in self.predictor_params.items() if k != "api_key"}
        return d


@result
class Arm(ToDict):
    """One replayed configuration: a memory policy, an encoding and (ctwm) τ."""

    memory: str
    encoding: str
    tau: float | None = None

    @property
    def label(self) -> str:
        return self.memory if self.tau is None else f"{self.memory}(tau={self.tau:g})"

    @property
    def name(self) -> str:
        return f"{self.label}/{self.encoding}"

    def checked(self) -> Arm:
        if self.memory not in MEMORY_POLICIES:
            raise UsageError(f"unknown memory policy {self.memory!r} (choose from: {', '.join(MEMORY_POLICIES)})")
        if self.encoding not in ENCODINGS:
            raise UsageError(f"unknown encoding {self.encoding!r} (choose from: {', '.join(ENCODINGS)})")
        if self.memory == "ctwm":
            from ..allocation.rank import check_tau

            return dataclasses.replace(self, tau=check_tau(1.0 if self.tau is None else self.tau, "tau"))
        return dataclasses.replace(self, tau=None)


@dataclasses.dataclass
class Episode:
    """A seed's shared trajectory."""

    seed: int
    world: Any
    tids: np.ndarray  # e_t, t = 0..T-1
    states: np.ndarray
    actions: np.ndarray  # index within the state
    next_states: np.ndarray


@dataclasses.dataclass
class EpisodeLog:
    """Per-step record of one arm on one episode (arrays of length T) and its memory events."""

    arm: Arm
    seed: int
    prediction: np.ndarray
    correct: np.ndarray
    tokens: np.ndarray
    confidence: list[str]
    evidence: list[str]
    state_evidence: np.ndarray
    transition_evidence: np.ndarray
    state_covered: np.ndarray
    transition_covered: np.ndarray
    n_injected: np.ndarray
    n_summarised: np.ndarray
    tail_count: np.ndarray
    retrieved: list[tuple[int, ...]]
    scores: list[tuple[float, ...]]
    injected: list[tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]]  # tids, ranks, tokens
    summarised: list[tuple[tuple[int, ...], tuple[int, ...]]]
    history_tokens: np.ndarray | None  # full history: tokens of the line of each past step
    api_prompt_tokens: np.ndarray | None
    history_tids: np.ndarray | None = None  # full history: e_0 .. e_{T-1}
    mismatches: int = 0  # frozen replay: steps whose retrieval differs from the recorded one
    first_mismatch: int | None = None
    seconds: float = 0.0
    # policies with their own store (tiered): entry names of the ids in retrieved/injected, the store's
    # events (step, kind, entry id, by id or -1) and its counters
    item_names: list[str] | None = None
    memory_events: list[tuple[int, str, int, int]] | None = None
    memory_stats: dict[str, Any] | None = None


def episode(cfg: ReplayConfig, seed: int, world=None) -> Episode:
    """The seed's trajectory (``ctwm world run`` with the same settings)."""
    from ..world.run import simulate

    sim = simulate(cfg.world_config(seed), world=world)
    w = sim.world
    tids = sim.transitions
    return Episode(seed=int(seed), world=w, tids=tids, states=w.tid_src[tids], actions=w.tid_local[tids],
                   next_states=w.tid_dst[tids])


def run_episode(ep: Episode, arm: Arm, cfg: ReplayConfig, *, counter: TokenCounter | None = None,
                predictor: Predictor | None = None,
                recorded: list[tuple[int, ...]] | None = None) -> EpisodeLog:
    """Replay ``arm`` on ``ep``. With ``recorded`` (frozen replay), also compare ρ with it per step."""
    arm = arm.checked()
    counter = counter or token_counter(cfg.tokenizer)
    predictor = predictor or make_predictor(cfg.predictor, cfg.predictor_params)
    world = ep.world
    mem = EpisodicMemory(world)
    pol = make_policy(arm.memory, mem, budget=cfg.budget, k=cfg.k, core=cfg.core,
                      tau=arm.tau if arm.tau is not None else 1.0, max_candidates=cfg.max_candidates)
    enc = make_encoding(arm.encoding, world)
    n = len(ep.tids)
    states, actions = ep.states.tolist(), ep.actions.tolist()
    tids, nxt = ep.tids.tolist(), ep.next_states.tolist()
    act_ptr = world.act_ptr.tolist()
    pred = np.empty(n, dtype=np.int64)
    tokens = np.empty(n, dtype=np.int64)
    conf: list[str] = []
    evid: list[str] = []
    se = np.zeros(n, dtype=bool)
    te = np.zeros(n, dtype=bool)
    sc = np.zeros(n, dtype=bool)
    tc = np.zeros(n, dtype=bool)
    n_inj = np.zeros(n, dtype=np.int64)
    n_sum = np.zeros(n, dtype=np.int64)
    tail_count = np.zeros(n, dtype=np.int64)
    retrieved: list[tuple[int, ...]] = []
    scores: list[tuple[float, ...]] = []
    injected: list = []
    summarised: list = []
    api = np.zeros(n, dtype=np.int64) if hasattr(predictor, "api_prompt_tokens") else None
    history = arm.memory == "full"
    mismatches, first = 0, None
    started = time.perf_counter()
    retrieve, render, predict, write = pol.retrieve, pol.render, predictor.predict, mem.write
    observe = getattr(pol, "observe", None)  # a policy with its own store sees every step's transition
    for t in range(n):
        s, a = states[t], actions[t]
        se[t] = mem.has_state(s)
        te[t] = mem.has_action(act_ptr[s] + a)
        r = retrieve(s, a)
        if recorded is not None and r.tids != recorded[t]:
            mismatches += 1
            if first is None:
                first = t
        p = render(r, s, a, enc, counter)
        text = p.text
        if cfg.verify_tokens:
            exact = counter.count(text)
            if exact != p.tokens:  # pragma: no cover - guarded by tests of line additivity
                raise UsageError(f"token count of the prompt at step {t} is {exact}, the line sum {p.tokens}")
        before = predictor.api_prompt_tokens if api is not None else 0
        guess = predict(text)
        if api is not None:
            api[t] = predictor.api_prompt_tokens - before
        pred[t] = guess.state
        conf.append(guess.confidence)
        evid.append(guess.evidence)
        tokens[t] = p.tokens
        sc[t] = p.mentions_state
        tc[t] = p.mentions_transition
        n_inj[t] = len(p.injected)
        n_sum[t] = len(p.summarised)
        tail_count[t] = p.tail_count
        retrieved.append(r.tids)
        scores.append(r.scores)
        if not history:
            injected.append((p.injected, p.injected_rank, p.injected_tokens))
            summarised.append((p.summarised, p.summarised_rank))
        write(tids[t], t)
        if observe is not None:
            observe(tids[t], t)
    hist_tokens = None
    if history:
        # the line of step j costs the same at every later step (history lines never change)
        hist_tokens = np.asarray(pol._tokens + [0] * (n - len(pol._tokens)), dtype=np.int64)[:n]
    correct = pred == np.asarray(nxt, dtype=np.int64)
    return EpisodeLog(
        arm=arm, seed=ep.seed, prediction=pred, correct=correct, tokens=tokens, confidence=conf, evidence=evid,
        state_evidence=se, transition_evidence=te, state_covered=sc & se, transition_covered=tc & te,
        n_injected=n_inj, n_summarised=n_sum, tail_count=tail_count, retrieved=retrieved, scores=scores,
        injected=injected, summarised=summarised, history_tokens=hist_tokens, api_prompt_tokens=api, history_tids=ep.tids if history else None,
        mismatches=mismatches, first_mismatch=first, seconds=time.perf_counter() - started,
        item_names=pol.item_names if observe is not None else None,
        memory_events=list(pol.events) if observe is not None else None,
        memory_stats=pol.memory_stats() if observe is not None else None,
    )
