"""Predictors: the frozen model that reads a prompt and predicts the next state ŝ_{t+1}.

``reader`` (default, deterministic, no network)
    Sees **only the prompt text**. It parses the current state and action from the header and every
    serialised transition ``s<i> -> a<j> -> s<k>`` (either encoding, with its count hint if any:
    ``hint=x3``, ``count 3``, ``x3``, ``seen 3 times``; a history line counts 1). Then:

    1. among the memory lines (not the tail summary) whose source and action are the current ones,
       the destination with the largest summed count; ties go to the one written first.
       ``evidence-rank`` is that line's retrieval rank (``history`` for a history line);
    2. else the same over the tail summary's entries (``evidence-rank=tail``);
    3. else a stated guess: the first state the prompt shows leading into the current one (the
       world's edges are walkable both ways, so it is a neighbour) that is not an outcome of another
       of the current state's actions (each neighbour belongs to one action), else the current state
       itself (``evidence-rank=guess``; never right, as the world has no self-loops).

    Confidence: ``high`` when the chosen outcome holds >= 75% of at least 3 counted observations,
    ``medium`` when >= 50%, else ``low`` (always ``low`` for a guess). What an encoding or an
    allocation leaves out of the prompt is therefore really unavailable to it.
``top1`` (the paper's code's check, not a model)
    The destination of the **first** serialised transition in the prompt, whatever its source and
    action: the paper's code counts a step as predicted when its top-1 hint's destination is the real
    next state (``evidence-rank`` is that line's rank, or ``history``). No transition in the prompt:
    the current state itself (never right; ``evidence-rank=guess``). Confidence is always ``low``.
    With a history the first line is the oldest transition, which is why that code's Full History
    scores a tail error of 1.000.
``endpoint``
    An OpenAI-compatible chat-completions model, using the Appendix C output contract: it must
    answer ``next-state=s<id>; confidence=<low|medium|high>; evidence-rank=<rank or tail>``.
    An answer off the contract that names exactly one state (``The next state is s12.``) counts as
    that prediction with ``confidence=low; evidence=off-contract`` (small local models rarely keep
    the format, and this keeps what they did predict); one naming no state or several is invalid.
    Invalid answers are retried with a corrective message (``retries`` times); a step still without
    one is recorded as unanswered (``prediction=-1; evidence=invalid``, so it counts as an error and
    the run goes on), unless no step has been answered after the first ``UNANSWERED_LIMIT`` steps:
    then :class:`~ctwm_cli.models.llm.EndpointError`, as the model cannot do the task. The HTTP client (key
    lookup, URL and timeout checks, transport retries, back-off, response size cap) is the shared
    :class:`~ctwm_cli.models.llm.ChatClient`.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from typing import Any

from ..common.errors import UsageError
from ..common.results import ToDict, result
from ..common.vocabulary import PREDICTORS
from ..models.llm import ChatClient, EndpointError

_CUR = re.compile(r"^Current state: s(\d+)", re.M)
_ACT = re.compile(r"^Action: a(\d+)", re.M)
_TRIPLE = re.compile(
    r"(?:rank (\d+): )?s(\d+)(?: \([^)]*\))? -> a(\d+)(?: \([^)]*\))? -> s(\d+)(?: \([^)]*\))?"
    r"(?:; hint=x(\d+)|; rank (\d+), score [^,]*, count (\d+)| x(\d+)| seen (\d+) times)?"
)
_ANSWER = re.compile(
    r"next-state\s*=\s*s?(\d+)(?:\s*;\s*confidence\s*=\s*(\w+))?(?:\s*;\s*evidence-rank\s*=\s*(\w+))?", re.I
)
_STATE = re.compile(r"\bs(\d+)\b")
ANSWER_MAX_TOKENS = 64  # one Appendix C line; caps a small model that rambles
UNANSWERED_LIMIT = 5  # steps: a model that answers none of its first steps stops the run early
CONTRACT = "next-state=s<id>; confidence=<low|medium|high>; evidence-rank=<rank or tail>"
SYSTEM_PROMPT = (
    "You predict the next state of a text world from the memories in the prompt. Reply with exactly one line: "
    "next-state=s<id>; confidence=<low|medium|high>; evidence-rank=<rank or tail>"
)


@result
class Prediction(ToDict):
    """ŝ_{t+1} with the Appendix C fields."""

    state: int
    confidence: str
    evidence: str  # a rank, "history", "tail" or "guess"


class Predictor(ABC):
    name = "predictor"

    @abstractmethod
    def predict(self, text: str) -> Prediction:
        ...

    def stats(self) -> dict[str, Any]:
        return {}


class PromptReader(Predictor):
    """The deterministic prompt-only reader (see the module docstring)."""

    name = "reader"

    def predict(self, text: str) -> Prediction:
        cur_m, act_m = _CUR.search(text), _ACT.search(text)
        if cur_m is None or act_m is None:
            raise UsageError("the prompt has no 'Current state: s<id>' or 'Action: a<index>' line", params=())
        cur, act = cur_m.group(1), act_m.group(1)
        core: dict[str, list] = {}  # dst -> [support, first index, rank]
        tail: dict[str, list] = {}
        near: list[str] = []
        other: set[str] = set()  # outcomes of the current state's other actions
        key = f"s{cur}"
        box_of = core
        i = 0
        for line in text.split("\n"):
            if line.startswith("Tail summary"):
                box_of = tail
            if key not in line:  # no transition from or into the current state on this line
                continue
            for m in _TRIPLE.finditer(line):
                i += 1
                r1, s, a, d, c1, r2, c2, c3, c4 = m.groups()
                if s == cur and a == act:
                    c = int(c1 or c2 or c3 or c4 or 1)
                    got = box_of.get(d)
                    if got is None:
                        box_of[d] = [c, i, r1 or r2 or "history"]
                    else:
                        got[0] += c
                elif d == cur and s != cur:
                    near.append(s)
                elif s == cur:
                    other.add(d)
        for box, label in ((core, None), (tail, "tail")):
            if box:
                best, (sup, _, rank) = min(box.items(), key=lambda kv: (-kv[1][0], kv[1][1]))
                total = sum(v[0] for v in box.values())
                share = sup / total
                conf = "high" if share >= 0.75 and total >= 3 else "medium" if share >= 0.5 else "low"
                return Prediction(state=int(best), confidence=conf, evidence=label or rank)
        near = [v for v in near if v not in other]
        return Prediction(state=int(near[0] if near else cur), confidence="low", evidence="guess")


class TopHint(Predictor):
    """The paper's code's prediction: the first hint's destination (see the module docstring)."""

    name = "top1"

    def predict(self, text: str) -> Prediction:
        cur_m = _CUR.search(text)
        if cur_m is None:
            raise UsageError("the prompt has no 'Current state: s<id>' line", params=())
        m = _TRIPLE.search(text, cur_m.end())
        if m is None:
            return Prediction(state=int(cur_m.group(1)), confidence="low", evidence="guess")
        r1, _s, _a, d, _c1, r2, *_ = m.groups()
        return Prediction(state=int(d), confidence="low", evidence=r1 or r2 or "history")


class EndpointPredictor(Predictor):
    """A chat-completions model answering the Appendix C output contract."""

    name = "endpoint"

    def __init__(self, *, base_url: str | None = None, model: str | None = None, timeout: float = 30.0,
                 retries: int = 2, api_key_env: str | None = None, backoff: float = 0.5):
        if not base_url:
            raise UsageError("the endpoint predictor needs base_url (an OpenAI-compatible server)",
                             params=("base_url",))
        if not model:
            raise UsageError("the endpoint predictor needs model", params=("model",))
        self.client = ChatClient(base_url=base_url, model=model, timeout=timeout, retries=retries,
                                 api_key_env=api_key_env, backoff=backoff, max_tokens=ANSWER_MAX_TOKENS)
        self.retries = int(retries)
        self.invalid_answers = 0
        self.steps = 0
        self.unanswered = 0

    def predict(self, text: str) -> Prediction:
        self.steps += 1
        messages = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": text}]
        got = self.client.ask(messages, parse_answer, f"That is not valid. Reply with exactly one line: {CONTRACT}")
        self.invalid_answers += got.invalid
        if got.value is not None:
            return got.value
        self.unanswered += 1
        if self.unanswered < UNANSWERED_LIMIT or self.unanswered < self.steps:
            return Prediction(state=-1, confidence="low", evidence="invalid")
        raise EndpointError(f"endpoint {self.client.url} (model {self.client.model}) gave no valid next-state after "
                            f"{self.retries + 1} attempt(s) at each of its first {self.steps} steps; "
                            f"last answer: {got.snippet()!r}")

    @property
    def api_prompt_tokens(self) -> int:
        return self.client.prompt_tokens

    def stats(self) -> dict[str, Any]:
        return {"calls": self.client.calls, "invalid_answers": self.invalid_answers, "unanswered": self.unanswered,
                "api_prompt_tokens": self.client.prompt_tokens}


def parse_transitions(text: str) -> list[tuple[int, int, int, int]]:
    """Every serialised transition ``s<i> -> a<j> -> s<k>`` of ``text`` as ``(i, j, k, count)``
    (the count hint of either encoding; 1 without one)."""
    out = []
    for m in _TRIPLE.finditer(text):
        _, s, a, d, c1, _, c2, c3, c4 = m.groups()
        out.append((int(s), int(a), int(d), int(c1 or c2 or c3 or c4 or 1)))
    return out


def parse_answer(content: str) -> Prediction | None:
    """The Appendix C answer ``next-state=...; confidence=...; evidence-rank=...``; off the contract, the one
    state the answer names (``evidence="off-contract"``); ``None`` if it names none or several."""
    m = _ANSWER.search(content)
    if m is None:
        named = set(_STATE.findall(content))
        if len(named) != 1:
            return None
        return Prediction(state=int(named.pop()), confidence="low", evidence="off-contract")
    conf = (m.group(2) or "low").lower()
    return Prediction(state=int(m.group(1)), confidence=conf if conf in ("low", "medium", "high") else "low",
                      evidence=(m.group(3) or "unstated").lower())


def make_predictor(name: str, params: dict[str, Any] | None = None) -> Predictor:
    """The predictor called ``name`` (``reader``, ``top1`` or ``endpoint``; the last needs base_url and model)."""
    if name in ("reader", "top1"):
        if params:
            raise UsageError(f"the {name} predictor takes no parameters, got {', '.join(params)}",
                             params=("predictor",))
        return PromptReader() if name == "reader" else TopHint()
    if name == "endpoint":
        return EndpointPredictor(**dict(params or {}))
    raise UsageError(f"unknown predictor {name!r} (choose from: {', '.join(PREDICTORS)})", params=("predictor",))
