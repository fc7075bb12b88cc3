"""The ``endpoint`` policy: an OpenAI-compatible chat-completions model picks the actions.

One request per step: ``POST {base_url}/chat/completions`` with ``model``, ``temperature=0`` and a
prompt holding the task, the current state, the retrieved memories and the numbered actions; the
model must answer with a JSON object ``{"action": <index>}`` (a bare object or one inside text).

* **Invalid answers** (not JSON, no integer ``action``, out of range) are retried up to
  ``retries`` times with a corrective message; then :class:`~ctwm_cli.models.llm.EndpointError`.
* **HTTP** (key lookup, URL and timeout checks, transport retries, response size cap): the shared
  :class:`~ctwm_cli.models.llm.ChatClient`.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..models.llm import KEY_ENV_VARS, ChatClient, EndpointError
from .policy_base import TaskPolicy, policy_params

__all__ = ["KEY_ENV_VARS", "SYSTEM_PROMPT", "EndpointError", "EndpointPolicy", "parse_action"]

SYSTEM_PROMPT = (
    "You are an agent in a text world. Each turn you see your task, where you are, what you remember "
    'and the numbered actions. Reply with only a JSON object {"action": <index>}.'
)
_OBJECT = re.compile(r"\{[^{}]*\}")


class EndpointPolicy(TaskPolicy):
    """Actions chosen by a chat-completions model (see the module docstring)."""

    name = "endpoint"

    def __init__(self, *, backoff: float = 0.5, **params: Any):
        self.params = policy_params("endpoint", params)
        p = self.params
        self.client = ChatClient(base_url=p["base_url"], model=str(p["model"]), timeout=p["timeout"],
                                 retries=p["retries"], api_key_env=p["api_key_env"], backoff=backoff)
        self.url = self.client.url
        self.model = self.client.model
        self.retries = self.client.retries
        self.invalid_answers = 0

    def complete(self, messages: list[dict[str, str]]) -> str:
        """One chat completion through the shared client."""
        return self.client.complete(messages)

    @property
    def calls(self) -> int:
        return self.client.calls

    @property
    def prompt_tokens(self) -> int:
        return self.client.prompt_tokens

    # ------------------------------------------------------------------ prompt
    def prompt(self, state: int, retrieved: list[int]) -> str:
        w = self.world
        target = w.state(self.target)
        here = w.state(state)
        lines = [f"Task: reach the {target.place} with {', '.join(target.entities)}.", f"You are in: {here.text()}"]
        if retrieved:
            lines.append("You remember:")
            for tid in retrieved:
                t = w.transition(tid)
                lines.append(f"- in the {w.places[t.src]}, '{t.action_name}' led to the {w.places[t.dst]} "
                             f"({', '.join(w.entities[t.dst])})")
        lines.append("Actions:")
        lines.extend(f"{i}: {name}" for i, name in enumerate(here.actions))
        lines.append('Reply with only {"action": <index>}.')
        return "\n".join(lines)

    # ------------------------------------------------------------------ act
    def act(self, state: int, retrieved: list[int], step: int) -> int:
        self._task(state)
        n_act = int(self.world.act_ptr[state + 1] - self.world.act_ptr[state])
        messages = [{"role": "system", "content": SYSTEM_PROMPT},
                    {"role": "user", "content": self.prompt(state, retrieved)}]
        got = self.client.ask(messages, lambda content: parse_action(content, n_act),
                              f'That is not valid. Reply with only {{"action": <index>}}, an integer from 0 to '
                              f"{n_act - 1}.")
        self.invalid_answers += got.invalid
        if got.value is None:
            raise EndpointError(f"endpoint {self.url} (model {self.model}) gave no valid action after "
                                f"{self.retries + 1} attempt(s) at step {step}; last answer: {got.snippet()!r}")
        return got.value

    def stats(self) -> dict[str, Any]:
        return {**super().stats(), "calls": self.calls, "invalid_answers": self.invalid_answers,
                "prompt_tokens": self.prompt_tokens}


def parse_action(content: str, n_actions: int) -> int | None:
    """The action index in a model's answer, or ``None`` if it holds no valid one."""
    candidates = [content.strip()]
    candidates.extend(m.group(0) for m in _OBJECT.finditer(content))
    for text in candidates:
        try:
            doc = json.loads(text)
        except ValueError:
            continue
        if not isinstance(doc, dict) or "action" not in doc:
            continue
        a = doc["action"]
        if isinstance(a, bool):
            continue
        if isinstance(a, str) and a.strip().isdigit():
            a = int(a.strip())
        if isinstance(a, float) and a.is_integer():
            a = int(a)
        if isinstance(a, int) and 0 <= a < n_actions:
            return a
    return None
