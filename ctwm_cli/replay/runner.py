"""The replay runner: memory policies x encodings on shared Synthetic Graph World episodes.

**Open loop** (agents ``random-walk``, ``semantic``; the default). For every seed the episode is the
trajectory of ``ctwm world run`` with the same family, size, agent policy, steps and seed
(:func:`ctwm_cli.world.run.simulate`, retriever ``state-frequency``): states ``s_t``, actions
``a_t`` and next states ``s_{t+1}``. Every arm (memory policy, encoding, τ) replays the *same*
episodes, so comparisons are paired step by step and tokens are exactly comparable. The agent does
not read the replayed prompt, so the visited trajectory does not depend on the arm.

**Closed loop** (agents ``reader``, ``endpoint``; :mod:`ctwm_cli.replay.agents`). The seed's world
is the same, but the agent chooses each action from the arm's own memory prompt, so each arm drives
its own trajectory. Tasks are target states drawn with Zipf popularity (the world's task sampler,
``zipf`` 1.1) from a generator seeded by the episode seed, the environment's random numbers come
from another (the same numbers for every arm: one uniform per step), and a task ends when its
target is reached or after ``max_task_steps`` (200) steps. Success (tasks reached, steps per task)
becomes a metric beside tokens and error.

**A step** ``t``: the memory holds ``e_0 .. e_{t-1}``; the policy retrieves for ``(s_t, a_t)`` (ρ),
renders the prompt under the encoding and the budget, the predictor reads the prompt text and
predicts ŝ_{t+1}; the loss is ``1{ŝ_{t+1} != s_{t+1}}``; then ``e_t`` is written.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ..common.errors import UsageError
from ..common.vocabulary import REPLAY_AGENTS as AGENTS
from ..memory.artifact import make_variant_policy
from ..memory.core_tail import CoreTail
from ..memory.encodings import Encoding, make_encoding
from ..memory.policies import EpisodicMemory, FullHistory
from ..memory.predictor import SYSTEM_PROMPT, Predictor, make_predictor
from ..memory.tokens import TokenCounter, token_counter
from ..world.env import WorldEnv
from ..world.policy_base import TaskSampler
from ..world.run import simulate
from .agents import ClosedLoopAgent, decision_prompt
from .config import MATCH_TOKENS, OPTIONAL_FIELDS, Arm, ReplayConfig
from .recorded import read_episodes

__all__ = ["AGENTS", "MATCH_TOKENS", "MAX_TASK_STEPS", "OPTIONAL_FIELDS", "TASK_ZIPF", "Arm", "Episode", "EpisodeLog",
           "ReplayConfig", "episode", "oracle_outcomes", "run_episode", "store_coverage"]

TASK_ZIPF = 1.1
MAX_TASK_STEPS = 200

@dataclasses.dataclass
class Episode:
    """A seed's world and, in open loop, its shared trajectory (closed loop: arrays are empty)."""

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
    tids: np.ndarray  # the trajectory this arm saw (open loop: the episode's)
    states: np.ndarray
    prediction: np.ndarray
    correct: np.ndarray
    oracle_correct: np.ndarray  # argmax of the true P(s' | s_t, a_t) is right
    counts_correct: np.ndarray  # most seen past outcome of (s_t, a_t) is right (False when none was seen)
    tokens: np.ndarray
    confidence: list[str]
    evidence: list[str]
    state_evidence: np.ndarray
    transition_evidence: np.ndarray  # the step is answerable
    state_covered: np.ndarray
    transition_covered: np.ndarray  # the evidence reached the prompt
    n_injected: np.ndarray
    n_summarised: np.ndarray
    tail_count: np.ndarray
    retrieved: list[tuple[int, ...]]
    scores: list[tuple[float, ...]]
    injected: list[tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]]  # tids, ranks, tokens
    summarised: list[tuple[tuple[int, ...], tuple[int, ...]]]
    history_tokens: np.ndarray | None  # full history: tokens of the line of each past step
    api_prompt_tokens: np.ndarray | None
    request_tokens: np.ndarray | None = None  # the whole chat request: system prompt + user message + template
    # the most frequent past outcome of (s_t, a_t) reached the prompt (None: a policy with its own store)
    majority_covered: np.ndarray | None = None
    history_tids: np.ndarray | None = None  # full history: e_0 .. e_{T-1}
    mismatches: int = 0  # frozen replay: steps whose retrieval differs from the recorded one
    first_mismatch: int | None = None
    matched_over_budget: int = 0  # match_tokens: steps at which ctwm's minimal prompt exceeded the match
    # closed loop: the tasks (None in open loop); task_end_steps[t] = the length of the task reached at step t, else 0
    tasks_started: int | None = None
    tasks_reached: int | None = None
    task_lengths: list[int] | None = None
    task_end_steps: np.ndarray | None = None
    decision_tokens: np.ndarray | None = None  # closed loop: tokens of the agent's decision prompt per step
    tail: np.ndarray | None = None  # tail-step mask, set by the experiment
    # policies with their own store (tiered): entry names of the ids in retrieved/injected, the store's
    # events (step, kind, entry id, by id or -1) and its counters
    item_names: list[str] | None = None
    memory_events: list[tuple[int, str, int, int]] | None = None
    memory_stats: dict[str, Any] | None = None
    # the paper's code's coverage: of the distinct states (s_0..s_{T-1}) / transitions of the episode, the share
    # the policy's store still holds at its end (None: the store's entries are not transitions)
    store_state_coverage: float | None = None
    store_transition_coverage: float | None = None


def episode(cfg: ReplayConfig, seed: int, world=None) -> Episode:
    """The seed's world and (open loop) trajectory (``ctwm world run`` with the same settings); with
    ``episodes_from``, recorded episode number ``seed`` of the file and the file's world."""
    if cfg.episodes_from is not None:
        rec = read_episodes(cfg.episodes_from)
        w, tids = rec.world, rec.tids[seed]
        return Episode(seed=int(seed), world=w, tids=tids, states=w.tid_src[tids], actions=w.tid_local[tids],
                       next_states=w.tid_dst[tids])
    sim = simulate(cfg.world_config(seed), world=world)
    w = sim.world
    if cfg.loop == "closed":
        empty = np.zeros(0, dtype=np.int64)
        return Episode(seed=int(seed), world=w, tids=empty, states=empty, actions=empty, next_states=empty)
    tids = sim.transitions
    return Episode(seed=int(seed), world=w, tids=tids, states=w.tid_src[tids], actions=w.tid_local[tids],
                   next_states=w.tid_dst[tids])


def oracle_outcomes(world) -> list[int]:
    """Per global action: the most probable outcome (ties: the smaller transition id), as a state."""
    out_ptr, prob, dst = world.out_ptr, world.tid_prob, world.tid_dst
    best = []
    for g in range(out_ptr.size - 1):
        lo, hi = int(out_ptr[g]), int(out_ptr[g + 1])
        best.append(int(dst[lo + int(np.argmax(prob[lo:hi]))]))
    return best


def store_coverage(pol, world, tids: np.ndarray) -> tuple[float | None, float | None]:
    """The paper's code's coverage (``retained_state_ids`` / ``retained_transition_ids`` against the walk):
    of the distinct states ``s_0..s_{T-1}`` and transitions of the episode, the share its store holds at
    the end; a state is held when it is an end of a held transition."""
    held = pol.retained() if hasattr(pol, "retained") else None
    if held is None or not tids.size:
        return None, None
    walked = set(tids.tolist())
    states = set(world.tid_src[tids].tolist())
    kept = np.fromiter(held, dtype=np.int64, count=len(held))
    kept_states = set(world.tid_src[kept].tolist()) | set(world.tid_dst[kept].tolist())
    return len(kept_states & states) / len(states), len(held & walked) / len(walked)


class _Loop:
    """Where the trajectory comes from: the episode's arrays (open) or the agent and the world (closed)."""

    def __init__(self, ep: Episode, cfg: ReplayConfig, agent: ClosedLoopAgent | None):
        self.agent = agent
        self.world = ep.world
        self.n = cfg.steps if agent is not None else len(ep.tids)
        self.reached = self.started = 0
        self.lengths: list[int] = []
        self.ends = np.zeros(self.n, dtype=np.int64)
        self.decision_tokens = np.zeros(self.n, dtype=np.int64)
        if agent is None:
            self.tids = ep.tids.tolist()
            return
        root = np.random.SeedSequence(ep.seed)
        g_env, g_task, g_agent = (np.random.default_rng(s) for s in root.spawn(3))
        self.env = WorldEnv(self.world, rng=g_env)
        self.state = self.env.reset()
        self.tasks = TaskSampler(self.world, TASK_ZIPF, g_task)
        agent.start(g_agent)
        self.target, self.task_len = -1, 0
        self.nact = np.diff(self.world.act_ptr).tolist()
        self.tid_dst = self.world.tid_dst.tolist()

    def next(self, t: int, pol, enc: Encoding, counter: TokenCounter) -> int:
        """The transition of step ``t``."""
        if self.agent is None:
            return self.tids[t]
        s = self.state
        if self.target < 0:  # a new task: a target other than the current state
            target = self.tasks.draw()
            while target == s:
                target = self.tasks.draw()
            self.target, self.task_len = target, 0
            self.started += 1
        text, self.decision_tokens[t] = decision_prompt(pol, s, self.target, self.nact[s], enc, counter)
        a = self.agent.act(text)
        if not 0 <= a < self.nact[s]:
            raise UsageError(f"agent {self.agent.name} chose action {a} in state {s} with {self.nact[s]} actions",
                             params=())
        tid = self.env.step(a)
        self.task_len += 1
        self.state = self.tid_dst[tid]
        if self.state == self.target:
            self.reached += 1
            self.lengths.append(self.task_len)
            self.ends[t] = self.task_len
            self.target = -1
        elif self.task_len >= MAX_TASK_STEPS:
            self.target = -1
        return tid


def run_episode(ep: Episode, arm: Arm, cfg: ReplayConfig, *, counter: TokenCounter | None = None,
                predictor: Predictor | None = None, recorded: list[tuple[int, ...]] | None = None,
                agent: ClosedLoopAgent | None = None, budgets: np.ndarray | None = None) -> EpisodeLog:
    """Replay ``arm`` on ``ep``. With ``recorded`` (frozen replay), also compare ρ with it per step.
    With ``agent`` (closed loop) the agent chooses every action from the arm's prompt. With
    ``budgets`` (``match_tokens``), step ``t``'s ctwm budget is ``budgets[t]`` (at least its minimal prompt)."""
    # Long on purpose: the per-step body runs 10^4-10^5 times per arm and keeps its state in local names.
    arm = arm.checked()
    cfg = cfg.checked()
    counter = counter or token_counter(cfg.tokenizer)
    predictor = predictor or make_predictor(cfg.predictor, cfg.predictor_params)
    world = ep.world
    mem = EpisodicMemory(world)
    pol = make_variant_policy(arm.memory, mem, budget=cfg.budget, k=cfg.k, core=cfg.core,
                              tau=arm.tau if arm.tau is not None else 1.0, max_candidates=cfg.max_candidates,
                              tiered=cfg.tiered or None, seed=ep.seed, **cfg.variants())
    enc = make_encoding(arm.encoding, world)
    loop = _Loop(ep, cfg, agent)
    n = loop.n
    src, local, dst = world.tid_src.tolist(), world.tid_local.tolist(), world.tid_dst.tolist()
    act_ptr = world.act_ptr.tolist()
    oracle = oracle_outcomes(world)
    freq, by_action = mem.freq, mem.by_action
    tids = np.empty(n, dtype=np.int64)
    pred = np.empty(n, dtype=np.int64)
    counts_pred = np.full(n, -1, dtype=np.int64)
    oracle_pred = np.empty(n, dtype=np.int64)
    tokens = np.empty(n, dtype=np.int64)
    conf: list[str] = []
    evid: list[str] = []
    se, te, sc, tc, mc = (np.zeros(n, dtype=bool) for _ in range(5))
    n_inj, n_sum, tail_count = (np.zeros(n, dtype=np.int64) for _ in range(3))
    retrieved: list[tuple[int, ...]] = []
    scores: list[tuple[float, ...]] = []
    injected: list = []
    summarised: list = []
    api = np.zeros(n, dtype=np.int64) if hasattr(predictor, "api_prompt_tokens") else None
    history = isinstance(pol, FullHistory)
    matched = budgets is not None and isinstance(pol, CoreTail)
    over = 0
    mismatches, first = 0, None
    retrieve, render, predict, write = pol.retrieve, pol.render, predictor.predict, mem.write
    observe = getattr(pol, "observe", None)  # a policy with its own store sees every step's transition
    for t in range(n):
        tid = loop.next(t, pol, enc, counter)
        s, a = src[tid], local[tid]
        g = act_ptr[s] + a
        tids[t] = tid
        se[t] = mem.has_state(s)
        outs = by_action.get(g)
        best = -1
        if outs:
            te[t] = True
            best = max(outs, key=lambda x: freq[x])  # max keeps the first seen on ties
            counts_pred[t] = dst[best]
        oracle_pred[t] = oracle[g]
        r = retrieve(s, a)
        if recorded is not None and r.tids != recorded[t]:
            mismatches += 1
            if first is None:
                first = t
        if matched:
            pol.budget = int(budgets[t])
            floor = pol.min_tokens(r, s, a, enc, counter)
            if floor > pol.budget:
                pol.budget = floor
                over += 1
        p = render(r, s, a, enc, counter)
        text = p.text
        if cfg.verify_tokens:
            exact = counter.count(text)
            if exact != p.tokens:  # pragma: no cover - guarded by tests of line additivity
                raise UsageError(f"token count of the prompt at step {t} is {exact}, the line sum {p.tokens}",
                                 params=())
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
        if best >= 0 and p.mentions_transition and not history:  # the most seen outcome itself is shown
            mc[t] = best in p.injected or best in p.summarised
        n_inj[t] = len(p.injected)
        n_sum[t] = len(p.summarised)
        tail_count[t] = p.tail_count
        retrieved.append(r.tids)
        scores.append(r.scores)
        if not history:
            injected.append((p.injected, p.injected_rank, p.injected_tokens))
            summarised.append((p.summarised, p.summarised_rank))
        write(tid, t)
        if observe is not None:
            observe(tid, t)
    nxt = world.tid_dst[tids]
    if history:  # every past step is in the prompt
        mc = te.copy()
    hist_tokens = None
    if history:  # the line of step j costs the same at every later step (history lines never change)
        lt = pol.line_tokens
        hist_tokens = np.asarray(lt + [0] * (n - len(lt)), dtype=np.int64)[:n]
    closed = agent is not None
    store_cov = store_coverage(pol, world, tids)
    return EpisodeLog(
        store_state_coverage=store_cov[0], store_transition_coverage=store_cov[1],
        arm=arm, seed=ep.seed, tids=tids, states=world.tid_src[tids], prediction=pred, correct=pred == nxt,
        oracle_correct=oracle_pred == nxt, counts_correct=counts_pred == nxt, tokens=tokens, confidence=conf,
        evidence=evid, state_evidence=se, transition_evidence=te, state_covered=sc & se, transition_covered=tc & te,
        majority_covered=None if observe is not None else mc & te,
        n_injected=n_inj, n_summarised=n_sum, tail_count=tail_count, retrieved=retrieved, scores=scores,
        injected=injected, summarised=summarised, history_tokens=hist_tokens, api_prompt_tokens=api,
        request_tokens=tokens + counter.chat_overhead(SYSTEM_PROMPT),
        history_tids=tids if history else None, mismatches=mismatches, first_mismatch=first,
        matched_over_budget=over,
        tasks_started=loop.started if closed else None, tasks_reached=loop.reached if closed else None,
        task_lengths=loop.lengths if closed else None, task_end_steps=loop.ends if closed else None,
        decision_tokens=loop.decision_tokens if closed else None,
        item_names=getattr(pol, "item_names", None) if observe is not None else None,
        memory_events=list(getattr(pol, "events", ())) if observe is not None else None,
        memory_stats=pol.memory_stats() if observe is not None and hasattr(pol, "memory_stats") else None,
    )
