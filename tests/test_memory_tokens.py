"""Token counts: ids equal tiktoken's published ones, and a prompt's count is the sum of its lines'."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctwm_cli.common.errors import UsageError
from ctwm_cli.memory.encodings import make_encoding
from ctwm_cli.memory.policies import EpisodicMemory, make_policy
from ctwm_cli.memory.tokens import TokenCounter, count_tokens, token_counter
from ctwm_cli.replay import ReplayConfig, episode

# Token ids published by tiktoken's own tests (openai/tiktoken tests/test_encoding.py) and, for
# o200k_base, by test tables of independent tokenizer ports checked against tiktoken.
KNOWN = [
    ("cl100k_base", "hello world", [15339, 1917]),
    ("cl100k_base", "Hello, world!", [9906, 11, 1917, 0]),
    ("cl100k_base", "rer", [38149]),
    ("cl100k_base", "'rer", [2351, 81]),
    ("cl100k_base", "today\n ", [31213, 198, 220]),
    ("cl100k_base", "today\n \n", [31213, 27907]),
    ("cl100k_base", "today\n  \n", [31213, 14211]),
    ("cl100k_base", " \x850", [220, 126, 227, 15]),
    ("cl100k_base", "\U0001f44d", [9468, 239, 235]),
    ("cl100k_base", "tiktoken is great!", [83, 1609, 5963, 374, 2294, 0]),
    ("cl100k_base", "Hello World!", [9906, 4435, 0]),
    ("o200k_base", "hello world", [24912, 2375]),
    ("o200k_base", "Hello World!", [13225, 5922, 0]),
    ("o200k_base", " 日本語とEnglish 12345!\n", [17428, 40909, 5330, 28881, 220, 7633, 2548, 4175]),
    ("o200k_base", "a\n\n", [64, 279]),
    ("o200k_base", "\x1ca", [216, 64]),
]


@pytest.mark.parametrize(("name", "text", "ids"), KNOWN)
def test_ids_match_tiktoken(name, text, ids):
    c = token_counter(name)
    assert c.encode(text) == ids
    assert c.count(text) == len(ids) == count_tokens(text, name)


def test_unknown_tokenizer_is_a_usage_error():
    with pytest.raises(UsageError, match="unknown tokenizer 'p50k'"):
        TokenCounter("p50k")


def test_line_cache_gives_the_same_counts():
    c = TokenCounter("cl100k_base")
    lines = ["rank 1: s12 -> a2 -> s40; hint=x3\n",
             "Tail summary: count=3; dominant transitions=-; rare exceptions=-\n"]
    assert c.lines(lines) == c.lines(lines) == sum(len(c.encode(x)) for x in lines)


@pytest.fixture(scope="module")
def small_episode():
    return episode(ReplayConfig(family="scale-free", size=100, steps=400, seeds=(3,)), 3)


@pytest.mark.parametrize("tokenizer", ["cl100k_base", "o200k_base"])
@pytest.mark.parametrize("memory", ["full", "flat", "graph", "ctwm"])
@pytest.mark.parametrize("encoding", ["verbose", "compact"])
def test_prompt_count_is_the_sum_of_its_lines(small_episode, tokenizer, memory, encoding):
    """The per-line count (cached) equals an encoding of the whole prompt at every step."""
    ep = small_episode
    c = token_counter(tokenizer)
    mem = EpisodicMemory(ep.world)
    pol = make_policy(memory, mem, budget=512, tau=1.0)
    enc = make_encoding(encoding, ep.world)
    n = 120 if memory == "full" else 400
    for t in range(n):
        s, a = int(ep.states[t]), int(ep.actions[t])
        p = pol.render(pol.retrieve(s, a), s, a, enc, c)
        assert p.tokens == len(c.encode(p.text)), (t, p.text)
        mem.write(int(ep.tids[t]), t)


@settings(max_examples=60, deadline=None)
@given(parts=st.lists(st.text(alphabet=st.sampled_from(list("abs0123456789 ->;=,:()x")), min_size=1, max_size=30)
                      .filter(lambda x: not x[0].isspace()), min_size=1, max_size=6))
def test_lines_starting_with_a_non_space_are_additive(parts):
    c = token_counter("cl100k_base")
    o = token_counter("o200k_base")
    lines = [p + "\n" for p in parts]
    text = "".join(lines)
    assert c.lines(lines) == len(c.encode(text))
    assert o.lines(lines) == len(o.encode(text))


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_chat_overhead_is_openais_per_message_rule(name):
    """system + user messages: 3 template tokens each, their roles (one token each in both vocabularies),
    the system prompt's content, and 3 to prime the reply; the 44-token system prompt makes it 55."""
    from ctwm_cli.memory.predictor import SYSTEM_PROMPT
    from ctwm_cli.memory.tokens import token_counter

    c = token_counter(name)
    assert len(c.encode(SYSTEM_PROMPT)) == 44
    assert c.chat_overhead(SYSTEM_PROMPT) == 3 + 1 + 44 + 3 + 1 + 3 == 55
    assert c.chat_overhead("") == 11  # an empty system message still costs its template and role
