"""The one chat-completions client: an OpenAI-compatible ``POST {base_url}/chat/completions``.

Every part of the package that asks a model something composes a :class:`ChatClient`: the world's
``endpoint`` agent policy, the replay's ``endpoint`` predictor and closed-loop agent, and the
LongMemEval answerer and judge. Only the standard library is used (``urllib``).

* **URL**: only ``http`` and ``https`` base URLs with a host (a ``file:`` URL would serve the
  "model" from a local file).
* **Key**: from the environment variable named by ``api_key_env``, else ``CTWM_API_KEY``, else
  ``OPENAI_API_KEY``; without one no ``Authorization`` header is sent (local servers).
* **Transport failures** (refused or dropped connection, timeout, HTTP 429 or 5xx) are retried
  ``retries`` times with a linear back-off; then :class:`EndpointError` naming the URL. Other HTTP
  errors (400, 401, 403, 404) fail at once.
* **Credentials stay with their origin**: no redirect to another scheme, host or port is followed;
  a same-origin 307/308 is followed (at most three) without the ``Authorization`` header.
* **Limits**: ``timeout`` (seconds, finite and > 0) is a deadline for the whole request (connect,
  send, read: a server that drips a byte at a time is cut off at it) and is not retried; a response
  larger than ``max_response_bytes`` (default 8 MiB) is refused, so an endless stream cannot
  exhaust memory.
* **Usage**: ``calls`` and the API-reported ``prompt_tokens`` are counted.
* **Answer length**: ``max_tokens`` (sent when set) caps each completion; the predictor and the
  closed-loop agent expect one short line, and a small local model that rambles would otherwise
  generate up to its whole context (llama.cpp's server has no default cap).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import math
import os
import socket
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from ..common.checks import check_range
from ..common.errors import InputError, UsageError

KEY_ENV_VARS = ("CTWM_API_KEY", "OPENAI_API_KEY")
DEFAULT_TIMEOUT = 30.0
DEFAULT_RETRIES = 2
MAX_RESPONSE_BYTES = 8 << 20


T = TypeVar("T")


class EndpointError(InputError):
    """The endpoint could not be reached or gave no valid answer (exit code 3)."""


@dataclass(frozen=True, slots=True)
class Asked(Generic[T]):
    """What :meth:`ChatClient.ask` got: the parsed answer (``None`` if every attempt was invalid), how
    many answers were invalid, and the last answer's text."""

    value: T | None
    invalid: int
    last: str

    def snippet(self) -> str:
        """The last answer on one line, at most 80 characters (for an error message)."""
        return " ".join(self.last.split())[:80]


def check_base_url(base_url: Any, name: str = "base_url") -> str:
    """``base_url`` without a trailing slash, if it is an ``http``/``https`` URL with a host."""
    if not isinstance(base_url, str) or not base_url.strip():
        raise UsageError(f"{name} must be an http:// or https:// URL, got {base_url!r}", params=(name,))
    parsed = urllib.parse.urlsplit(base_url.strip())
    if parsed.scheme.lower() not in ("http", "https") or not parsed.netloc:
        raise UsageError(f"{name} must be an http:// or https:// URL with a host, got {base_url!r}", params=(name,))
    return base_url.strip().rstrip("/")


def check_timeout(timeout: Any, name: str = "timeout") -> float:
    """``timeout`` as a float, if it is a finite number of seconds > 0."""
    try:
        t = float(timeout)
    except (TypeError, ValueError):
        raise UsageError(f"{name} must be a number of seconds > 0, got {timeout!r}", params=(name,)) from None
    if not math.isfinite(t) or t <= 0:
        raise UsageError(f"{name} must be a finite number of seconds > 0, got {timeout!r}", params=(name,))
    return t


def check_retries(retries: Any, name: str = "retries") -> int:
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise UsageError(f"{name} must be an integer >= 0, got {retries!r}", params=(name,))
    return retries


class ChatClient:
    """A chat-completions client for one model at one server (see the module docstring)."""

    def __init__(self, *, base_url: str, model: str, timeout: float = DEFAULT_TIMEOUT,
                 retries: int = DEFAULT_RETRIES, api_key_env: str | None = None, backoff: float = 0.5,
                 max_response_bytes: int = MAX_RESPONSE_BYTES, temperature: float = 0.0,
                 max_tokens: int | None = None):
        self.base_url = check_base_url(base_url)
        if not isinstance(model, str) or not model.strip():
            raise UsageError(f"model must be a non-empty name, got {model!r}", params=("model",))
        self.url = self.base_url + "/chat/completions"
        self.model = model
        self.timeout = check_timeout(timeout)
        self.retries = check_retries(retries)
        self.api_key_env = api_key_env
        self.backoff = float(backoff)
        check_range("max_response_bytes", max_response_bytes, lo=1)
        self.max_response_bytes = int(max_response_bytes)
        self.temperature = float(temperature)
        if max_tokens is not None and (isinstance(max_tokens, bool) or not isinstance(max_tokens, int)
                                       or max_tokens < 1):
            raise UsageError(f"max_tokens must be an integer >= 1, got {max_tokens!r}", params=("max_tokens",))
        self.max_tokens = max_tokens
        self.calls = 0
        self.prompt_tokens = 0

    def _key(self) -> str | None:
        names = [self.api_key_env] if self.api_key_env else list(KEY_ENV_VARS)
        for name in names:
            value = os.environ.get(name)
            if value:
                return value
        return None

    def complete(self, messages: list[dict[str, str]]) -> str:
        """One chat completion (with transport retries); returns the message text."""
        doc: dict[str, Any] = {"model": self.model, "messages": messages, "temperature": self.temperature}
        if self.max_tokens is not None:
            doc["max_tokens"] = self.max_tokens
        body = json.dumps(doc).encode()
        headers = {"Content-Type": "application/json"}
        key = self._key()
        if key:
            headers["Authorization"] = f"Bearer {key}"
        reason = ""
        for attempt in range(self.retries + 1):
            if attempt and self.backoff:
                time.sleep(self.backoff * attempt)
            try:
                status, raw = self._post(self.url, body, headers)
            except _DeadlineError:
                raise EndpointError(f"endpoint {self.url} sent no complete answer within the {self.timeout:g} s "
                                    "timeout") from None
            except (http.client.HTTPException, ConnectionError, TimeoutError, OSError) as exc:
                reason = _reason(exc)
                continue
            if status >= 400:
                detail = _first_line(raw[:4096].decode("utf-8", "replace"))
                reason = f"HTTP {status}" + (f": {detail}" if detail else "")
                if status == 429 or status >= 500:
                    continue
                raise EndpointError(f"endpoint {self.url} refused the request ({reason})")
            if len(raw) > self.max_response_bytes:
                raise EndpointError(f"endpoint {self.url} sent a response larger than {self.max_response_bytes} bytes")
            self.calls += 1
            return self._content(raw)
        raise EndpointError(f"cannot reach endpoint {self.url} after {self.retries + 1} attempt(s): {reason}")

    def _post(self, url: str, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
        """(status, body) of one POST, following at most :data:`MAX_REDIRECTS` same-origin 307/308
        redirects without ``Authorization``; any other redirect is an :class:`EndpointError`."""
        origin = _origin(url)
        for _hop in range(MAX_REDIRECTS + 1):
            status, location, raw = _request_once(url, body, headers, self.timeout, self.max_response_bytes)
            if status not in _REDIRECTS:
                return status, raw
            target = urllib.parse.urljoin(url, location or "")
            if not location or _origin(target) != origin:
                raise EndpointError(f"endpoint {self.url} redirected (HTTP {status}) to another origin "
                                    f"{_origin(target)!r}; not followed, so credentials stay with their origin")
            if status not in (307, 308):  # 301/302/303 would turn the POST into a GET
                raise EndpointError(f"endpoint {self.url} redirected (HTTP {status}); not followed")
            url, headers = target, {k: v for k, v in headers.items() if k.lower() != "authorization"}
        raise EndpointError(f"endpoint {self.url} redirected more than {MAX_REDIRECTS} times")

    def ask(self, messages: list[dict[str, str]], parse: Callable[[str], T | None], correction: str) -> Asked[T]:
        """Up to ``retries + 1`` completions until ``parse`` accepts one; after an invalid answer the
        model sees its answer and ``correction`` and tries again."""
        last, invalid = "", 0
        for _attempt in range(self.retries + 1):
            content = self.complete(messages)
            got = parse(content)
            if got is not None:
                return Asked(value=got, invalid=invalid, last=content)
            invalid += 1
            last = content
            messages = [*messages, {"role": "assistant", "content": content}, {"role": "user", "content": correction}]
        return Asked(value=None, invalid=invalid, last=last)

    def _content(self, raw: bytes) -> str:
        try:
            doc = json.loads(raw)
            content = doc["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError, RecursionError):
            head = _first_line(raw[:4096].decode("utf-8", "replace"))[:80]
            raise EndpointError(
                f"endpoint {self.url} did not answer in the chat-completions format: {head!r}") from None
        usage = doc.get("usage") if isinstance(doc, dict) else None
        if isinstance(usage, dict) and isinstance(usage.get("prompt_tokens"), int):
            self.prompt_tokens += usage["prompt_tokens"]
        return content if isinstance(content, str) else json.dumps(content)

    def stats(self) -> dict[str, Any]:
        return {"calls": self.calls, "prompt_tokens": self.prompt_tokens}


MAX_REDIRECTS = 3
_REDIRECTS = (301, 302, 303, 307, 308)


class _DeadlineError(TimeoutError):
    """The whole request (connect, send, read) outlasted the timeout."""


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    return scheme, (parts.hostname or "").lower(), parts.port or {"http": 80, "https": 443}.get(scheme)


def _request_once(url: str, body: bytes, headers: dict[str, str], timeout: float,
                  limit: int) -> tuple[int, str | None, bytes]:
    """One HTTP exchange under a deadline: a timer shuts the socket down when ``timeout`` seconds have
    passed since the start, so a server that drips one byte at a time cannot hold the call (a socket
    timeout alone bounds each read, not the request)."""
    parts = urllib.parse.urlsplit(url)
    cls = http.client.HTTPSConnection if parts.scheme.lower() == "https" else http.client.HTTPConnection
    conn = cls(parts.hostname, parts.port, timeout=timeout)
    fired = threading.Event()
    held: list[socket.socket] = []  # the connection's socket (http.client drops its own reference early)

    def abort() -> None:
        fired.set()
        for sock in held:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    timer = threading.Timer(timeout, abort)
    timer.daemon = True
    timer.start()
    resp = None
    try:
        conn.connect()
        held.append(conn.sock)
        if fired.is_set():
            abort()
        path = parts.path or "/"
        conn.request("POST", path + (f"?{parts.query}" if parts.query else ""), body=body, headers=headers)
        resp = conn.getresponse()
        raw = resp.read(limit + 1)
        status, location = resp.status, resp.getheader("Location")
    except (OSError, http.client.HTTPException):
        if fired.is_set():
            raise _DeadlineError from None
        raise
    finally:
        timer.cancel()
        if resp is not None:
            resp.close()
        conn.close()
        for sock in held:
            sock.close()
    if fired.is_set():
        raise _DeadlineError
    return status, location, raw


def _first_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[0] if lines else ""


def _reason(exc: BaseException) -> str:
    inner = getattr(exc, "reason", None)
    if inner is not None and not isinstance(inner, str):
        exc = inner
    text = str(getattr(exc, "reason", "") or exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if type(exc).__name__ not in text else text
