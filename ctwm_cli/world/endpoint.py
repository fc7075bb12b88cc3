"""The ``endpoint`` policy: an OpenAI-compatible chat-completions model picks the actions.

One request per step: ``POST {base_url}/chat/completions`` with ``model``, ``temperature=0`` and a
prompt holding the task, the current state, the retrieved memories and the numbered actions; the
model must answer with a JSON object ``{"action": <index>}`` (a bare object or one inside text).

* **Key**: from the environment variable named by ``api_key_env``, else ``CTWM_API_KEY``, else
  ``OPENAI_API_KEY``; without one no ``Authorization`` header is sent (local servers).
* **Invalid answers** (not JSON, no integer ``action``, out of range) are retried up to
  ``retries`` times with a corrective message; then :class:`~ctwm_cli.errors.InputError`.
* **Transport failures** (refused or dropped connection, timeout, HTTP 429 or 5xx) are retried
  ``retries`` times with a short back-off; then ``InputError`` naming the URL. Other HTTP errors
  (400, 401, 403, 404) fail at once.

Only the standard library is used (``urllib``).
"""

from __future__ import annotations

import http.client
import json
import os
import re
import socket
import time
import urllib.error
import urllib.request
from typing import Any

import numpy as np

from ..errors import InputError
from .env import World
from .policies import _TaskPolicy, policy_params

KEY_ENV_VARS = ("CTWM_API_KEY", "OPENAI_API_KEY")
SYSTEM_PROMPT = (
    "You are an agent in a text world. Each turn you see your task, where you are, what you remember "
    'and the numbered actions. Reply with only a JSON object {"action": <index>}.'
)
_OBJECT = re.compile(r"\{[^{}]*\}")


class EndpointError(InputError):
    """The endpoint could not be reached or gave no valid answer."""


class EndpointPolicy(_TaskPolicy):
    """Actions chosen by a chat-completions model (see the module docstring)."""

    name = "endpoint"

    def __init__(self, *, backoff: float = 0.5, **params: Any):
        self.params = policy_params("endpoint", params)
        self.url = str(self.params["base_url"]).rstrip("/") + "/chat/completions"
        self.model = str(self.params["model"])
        self.timeout = float(self.params["timeout"])
        self.retries = int(self.params["retries"])
        self.backoff = float(backoff)
        self.calls = 0
        self.invalid_answers = 0
        self.prompt_tokens = 0

    def _key(self) -> str | None:
        names = [self.params["api_key_env"]] if self.params.get("api_key_env") else list(KEY_ENV_VARS)
        for name in names:
            value = os.environ.get(name)
            if value:
                return value
        return None

    def start(self, world: World, rng: np.random.Generator) -> None:
        super().start(world, rng)

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
        last = ""
        for _attempt in range(self.retries + 1):
            content = self.complete(messages)
            action = parse_action(content, n_act)
            if action is not None:
                return action
            self.invalid_answers += 1
            last = content
            messages = [*messages, {"role": "assistant", "content": content},
                        {"role": "user", "content": f'That is not valid. Reply with only {{"action": <index>}}, '
                                                    f"an integer from 0 to {n_act - 1}."}]
        snippet = " ".join(last.split())[:80]
        raise EndpointError(
            f"endpoint {self.url} (model {self.model}) gave no valid action after {self.retries + 1} "
            f"attempt(s) at step {step}; last answer: {snippet!r}"
        )

    def complete(self, messages: list[dict[str, str]]) -> str:
        """One chat completion (with transport retries); returns the message text."""
        body = json.dumps({"model": self.model, "messages": messages, "temperature": 0}).encode()
        headers = {"Content-Type": "application/json"}
        key = self._key()
        if key:
            headers["Authorization"] = f"Bearer {key}"
        reason = ""
        for attempt in range(self.retries + 1):
            if attempt and self.backoff:
                time.sleep(self.backoff * attempt)
            req = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                    raw = resp.read()
            except urllib.error.HTTPError as exc:
                detail = _first_line(exc.read().decode("utf-8", "replace")) if exc.fp else ""
                reason = f"HTTP {exc.code}" + (f": {detail}" if detail else "")
                if exc.code == 429 or exc.code >= 500:
                    continue
                raise EndpointError(f"endpoint {self.url} refused the request ({reason})") from None
            except (urllib.error.URLError, http.client.HTTPException, ConnectionError, socket.timeout,
                    TimeoutError, OSError) as exc:
                reason = _reason(exc)
                continue
            self.calls += 1
            return self._content(raw)
        raise EndpointError(
            f"cannot reach endpoint {self.url} after {self.retries + 1} attempt(s): {reason}"
        )

    def _content(self, raw: bytes) -> str:
        try:
            doc = json.loads(raw)
            content = doc["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise EndpointError(
                f"endpoint {self.url} did not answer in the chat-completions format: {_first_line(raw.decode('utf-8', 'replace'))[:80]!r}"
            ) from None
        usage = doc.get("usage") if isinstance(doc, dict) else None
        if isinstance(usage, dict) and isinstance(usage.get("prompt_tokens"), int):
            self.prompt_tokens += usage["prompt_tokens"]
        return content if isinstance(content, str) else json.dumps(content)

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


def _first_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[0] if lines else ""


def _reason(exc: BaseException) -> str:
    inner = getattr(exc, "reason", None)
    if inner is not None and not isinstance(inner, str):
        exc = inner
    text = str(getattr(exc, "reason", "") or exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if type(exc).__name__ not in text else text
