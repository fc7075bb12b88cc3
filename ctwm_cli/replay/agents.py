"""Closed-loop agents: they choose the action from the memory prompt, so each memory policy drives
its own trajectory.

At every step the runner renders a **decision prompt** for the current state: the goal, the current
state, its numbered actions and the memory policy's prompt lines for the state (its retrieval
without a particular action, :meth:`~ctwm_cli.memory.base.MemoryPolicy.retrieve_state`), then asks
the agent for an action index.

``reader`` (offline, deterministic given the seed)
    Reads only the prompt text: every serialised transition ``s<i> -> a<j> -> s<k>`` (with its
    count hint). If the goal state is reachable over the transitions the prompt shows (each
    ``(state, action)`` taken to its most often seen outcome), it takes the first action of a
    shortest such path; otherwise it explores: an action of the current state the prompt says
    nothing about, else any action (uniform, from its own seeded generator). It is deliberately
    simple, so what the memory shows is what decides.
``endpoint``
    An OpenAI-compatible chat-completions model (:class:`~ctwm_cli.models.llm.ChatClient`) answers the
    same decision prompt with ``{"action": <index>}``; invalid answers are retried with a
    corrective message. A step still unanswered takes a uniform action (counted in
    ``agent_unanswered``, as the endpoint predictor counts its own), unless none of the first
    ``UNANSWERED_LIMIT`` steps was answered: then :class:`~ctwm_cli.models.llm.EndpointError`.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections import deque
from typing import Any

import numpy as np

from ..common.errors import UsageError
from ..common.vocabulary import CLOSED_LOOP_AGENTS
from ..memory.encodings import Encoding
from ..memory.policies import MemoryPolicy
from ..memory.predictor import UNANSWERED_LIMIT, parse_transitions
from ..memory.tokens import TokenCounter
from ..models.llm import ChatClient, EndpointError
from ..world.endpoint import parse_action

__all__ = ["CLOSED_LOOP_AGENTS", "AgentDecision", "ClosedLoopAgent", "EndpointAgent", "ReaderAgent",
           "decision_prompt", "make_agent"]

ANSWER_MAX_TOKENS = 64  # one {"action": <index>} object; caps a small model that rambles
DECISION_SYSTEM_PROMPT = (
    "You are an agent in a text world. You see your goal, where you are, your numbered actions and what your memory "
    'holds about transitions (state -> action -> next state). Reply with only a JSON object {"action": <index>}.'
)
_GOAL = re.compile(r"^Goal: reach s(\d+)", re.M)
_CUR = re.compile(r"^Current state: s(\d+)", re.M)
_NACT = re.compile(r"^Actions: a0\.\.a(\d+)", re.M)


class AgentDecision:
    """Parsed header of a decision prompt."""

    __slots__ = ("goal", "n_actions", "state")

    def __init__(self, text: str):
        g, c, n = _GOAL.search(text), _CUR.search(text), _NACT.search(text)
        if g is None or c is None or n is None:
            raise UsageError("the decision prompt has no 'Goal:', 'Current state:' or 'Actions:' line", params=())
        self.goal, self.state, self.n_actions = int(g.group(1)), int(c.group(1)), int(n.group(1)) + 1


def decision_prompt(policy: MemoryPolicy, state: int, goal: int, n_actions: int, enc: Encoding,
                    counter: TokenCounter) -> tuple[str, int]:
    """The decision prompt of ``state`` (see the module docstring) and its exact token count: goal, state,
    actions, the memory lines of the policy's prompt for the state."""
    retrieval = policy.retrieve_state(state)
    prompt = policy.render(retrieval, state, 0, enc, counter)
    head = enc.header(state, 0, policy.kind)
    foot = enc.footer(policy.kind)
    body = prompt.lines[len(head): len(prompt.lines) - len(foot)]
    top = [f"Goal: reach s{goal}.\n", f"Current state: s{state}\n", f"Actions: a0..a{n_actions - 1}\n"]
    end = ['Output: {"action": <index>}\n']
    # every line ends in a newline, so a prompt's count is the sum of its lines' (memory.tokens)
    tokens = prompt.tokens - counter.lines(head) - counter.lines(foot) + counter.lines(top) + counter.lines(end)
    return "".join([*top, *body, *end]), tokens


class ClosedLoopAgent(ABC):
    """An agent that acts from the decision prompt."""

    name = "agent"

    def start(self, rng: np.random.Generator) -> None:
        self.rng = rng

    @abstractmethod
    def act(self, text: str) -> int:
        ...

    def stats(self) -> dict[str, Any]:
        return {}


class ReaderAgent(ClosedLoopAgent):
    """Goal-directed from the prompt's transitions, exploring when the prompt is silent."""

    name = "reader"

    def act(self, text: str) -> int:
        d = AgentDecision(text)
        best: dict[tuple[int, int], tuple[int, int]] = {}  # (src, action) -> (count, dst), most seen
        for src, act, dst, count in parse_transitions(text):
            got = best.get((src, act))
            if got is None or count > got[0]:
                best[(src, act)] = (count, dst)
        first = self._path(d.state, d.goal, best)
        if first is not None and first < d.n_actions:
            return first
        known = {a for (s, a) in best if s == d.state}
        silent = [a for a in range(d.n_actions) if a not in known]
        pool = silent or list(range(d.n_actions))
        return pool[int(self.rng.integers(len(pool)))] if len(pool) > 1 else pool[0]

    @staticmethod
    def _path(start: int, goal: int, best: dict[tuple[int, int], tuple[int, int]]) -> int | None:
        """First action of a shortest path from ``start`` to ``goal`` over the shown transitions."""
        succ: dict[int, list[tuple[int, int]]] = {}
        for (s, a), (_, d) in sorted(best.items()):
            succ.setdefault(s, []).append((a, d))
        seen = {start}
        queue = deque((d, a) for a, d in succ.get(start, ()))
        for d, _ in queue:
            seen.add(d)
        while queue:
            v, first = queue.popleft()
            if v == goal:
                return first
            for _, d in succ.get(v, ()):
                if d not in seen:
                    seen.add(d)
                    queue.append((d, first))
        return None


class EndpointAgent(ClosedLoopAgent):
    """A chat-completions model picks the action from the decision prompt."""

    name = "endpoint"

    def __init__(self, *, base_url: str | None = None, model: str | None = None, timeout: float = 30.0,
                 retries: int = 2, api_key_env: str | None = None, backoff: float = 0.5):
        if not base_url:
            raise UsageError("the endpoint agent needs base_url (an OpenAI-compatible server)", params=("base_url",))
        if not model:
            raise UsageError("the endpoint agent needs model", params=("model",))
        self.client = ChatClient(base_url=base_url, model=model, timeout=timeout, retries=retries,
                                 api_key_env=api_key_env, backoff=backoff, max_tokens=ANSWER_MAX_TOKENS)
        self.retries = self.client.retries
        self.invalid_answers = 0
        self.steps = 0
        self.unanswered = 0

    def act(self, text: str) -> int:
        n = AgentDecision(text).n_actions
        messages = [{"role": "system", "content": DECISION_SYSTEM_PROMPT}, {"role": "user", "content": text}]
        got = self.client.ask(messages, lambda content: parse_action(content, n),
                              f'That is not valid. Reply with only {{"action": <index>}}, an integer from 0 to '
                              f"{n - 1}.")
        self.invalid_answers += got.invalid
        self.steps += 1
        if got.value is not None:
            return got.value
        self.unanswered += 1  # as the endpoint predictor: an unanswered step explores, the run goes on
        if self.unanswered < UNANSWERED_LIMIT or self.unanswered < self.steps:
            return int(self.rng.integers(n))
        raise EndpointError(f"endpoint {self.client.url} (model {self.client.model}) gave no valid action after "
                            f"{self.retries + 1} attempt(s) at each of its first {self.steps} steps; "
                            f"last answer: {got.snippet()!r}")

    def stats(self) -> dict[str, Any]:
        return {"agent_calls": self.client.calls, "agent_invalid_answers": self.invalid_answers,
                "agent_unanswered": self.unanswered,
                "agent_api_prompt_tokens": self.client.prompt_tokens}


def make_agent(name: str, params: dict[str, Any] | None = None) -> ClosedLoopAgent:
    """The closed-loop agent called ``name`` (one of :data:`CLOSED_LOOP_AGENTS`)."""
    if name == "reader":
        if params:
            raise UsageError(f"the reader agent takes no parameters, got {', '.join(params)}", params=("agent",))
        return ReaderAgent()
    if name == "endpoint":
        return EndpointAgent(**dict(params or {}))
    raise UsageError(f"unknown closed-loop agent {name!r} (choose from: {', '.join(CLOSED_LOOP_AGENTS)})",
                     params=("agent",))
