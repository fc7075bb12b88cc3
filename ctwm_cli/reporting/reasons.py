"""A verdict's reason in plain words: why the tail audit decided what it did, for the lead paragraph.

The rule (:mod:`ctwm_cli.tail.verdict`, :mod:`ctwm_cli.tail.audit`) writes each reason from one template.
Each template has a pattern here, and :func:`explain` rewrites the reason in plain words that keep its numbers
exactly as the reason prints them (``z = 2.31``, ``p_gof = 0.030 < 0.1``). A reason no pattern knows is quoted
as it is (``tests/test_summary.py`` drives every branch of the rule, so a new template without a pattern
fails there). Parts the rule appends after ``"; "`` (the constrained cutoff, the preferred family's own fit)
are explained the same way, or quoted.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from ..common.results import result

#: a family as the reasons abbreviate it -> the words a reader knows
FAMILY_WORDS = {"TPL": "a truncated power law", "log-normal": "a log-normal"}
_FAM = r"(?P<fam>TPL|log-normal)"
_OTHER = r"(?P<other>TPL|log-normal)"
_PREFERS = rf"{_FAM} preferred over {_OTHER} \(z = (?P<z>\S+)\)"


@result
class Reason:
    """A reason explained: ``kind`` (the template it came from, e.g. ``gof-rejected``; ``other`` when no
    pattern knew it) and ``text``, plain words that can follow "because"."""

    kind: str
    text: str


def _leans(g: dict[str, str]) -> str:
    return f"the likelihood-ratio test prefers {FAMILY_WORDS[g['fam']]} over {FAMILY_WORDS[g['other']]} (z = {g['z']})"


def _own(g: dict[str, str]) -> str:
    return FAMILY_WORDS[g["fam"]].replace("a ", "the ", 1)


#: (kind, pattern of the reason's head, plain words from the pattern's groups); the first match wins
PATTERNS: tuple[tuple[str, str, Callable[[dict[str, str]], str]], ...] = (
    ("no-cutoff", r"no x_min leaves (?P<min>\d+) observations with two distinct values in the tail",
     lambda g: f"no tail cutoff leaves {g['min']} observations with two distinct values, so there is no tail to "
               "test"),
    ("short-tail", r"tail of (?P<n>\d+) points < (?P<min>\d+) \(Assumption 3\.3 fails\)",
     lambda g: f"the tail above x_min holds {g['n']} points, fewer than the {g['min']} the test needs "
               "(Assumption 3.3)"),
    ("few-values", r"the tail has (?P<d>\d+) distinct values: fewer than 3 cannot tell the families apart",
     lambda g: f"the tail holds only {g['d']} distinct values, and fewer than 3 cannot tell the families apart"),
    ("fit-failed", r"the (?P<name>\w+) fit failed on the tail \(no finite likelihood\)",
     lambda g: f"the {g['name']} fit failed on the tail (no finite likelihood)"),
    ("fit-at-bound", r"the (?P<name>\w+) fit stops at its bound (?P<where>.+): Λ does not compare two maxima",
     lambda g: f"the {g['name']} fit stops at its bound ({g['where']}), so the likelihood ratio does not compare "
               "two best fits"),
    ("no-sigma", r"Assumption 3\.3 fails: sigma_LR is not in \(0, inf\)",
     lambda g: "the spread σ of the likelihood-ratio test is not in (0, inf), so Assumption 3.3 fails"),
    ("no-preference", r"no significant preference between TPL and log-normal \(\|z\| = (?P<z>\S+) < (?P<zs>\S+)\)",
     lambda g: f"the likelihood-ratio test prefers neither a truncated power law nor a log-normal "
               f"(|z| = {g['z']} < {g['zs']})"),
    ("lognormal", r"log-normal preferred \(z = (?P<z>\S+)\)",
     lambda g: f"the likelihood-ratio test prefers a log-normal (z = {g['z']})"),
    ("no-bootstrap", r"TPL preferred \(z = (?P<z>\S+)\) but p_gof was not computed \(bootstrap of 0 replicates\)",
     lambda g: f"p_gof was not computed (a bootstrap of 0 replicates), although the likelihood-ratio test prefers "
               f"a truncated power law (z = {g['z']})"),
    ("gof-rejected", r"TPL preferred \(z = (?P<z>\S+)\) but the power-law tail is rejected by the bootstrap "
                     r"\(p_gof = (?P<p>\S+) < (?P<ps>\S+)\)",
     lambda g: f"the power-law tail is rejected by the bootstrap (p_gof = {g['p']} < {g['ps']}), although the "
               f"likelihood-ratio test prefers a truncated power law (z = {g['z']})"),
    ("tpl", r"TPL preferred \(z = (?P<z>\S+)\) and the tail passes the bootstrap \(p_gof = (?P<p>\S+)\)",
     lambda g: f"the likelihood-ratio test prefers a truncated power law (z = {g['z']}) and the power-law tail "
               f"passes the bootstrap (p_gof = {g['p']})"),
    ("own-fit-unchecked", rf"{_PREFERS} but its own fit was not checked \(bootstrap of 0 replicates\)",
     lambda g: f"{_own(g)}'s own fit was not checked (a bootstrap of 0 replicates), although {_leans(g)}"),
    ("own-fit-rejected", rf"{_PREFERS} but rejected itself: (?P<stat>p_gof_\w+) = (?P<p>\S+) < (?P<lv>\S+)",
     lambda g: f"{_own(g)} fails its own goodness-of-fit test ({g['stat']} = {g['p']} < {g['lv']}), although "
               f"{_leans(g)}"),
    ("mixture", rf"{_PREFERS} but a mixture of two power laws fits better than either \(z = (?P<zm>\S+) against "
                r"the (?P<against>TPL|log-normal)\)",
     lambda g: f"a mixture of two power laws fits better (z = {g['zm']} against {_own(g)}), although {_leans(g)}"),
)

#: parts the rule appends after "; " (the head's explanation comes first)
APPENDED: tuple[tuple[str, Callable[[dict[str, str]], str]], ...] = (
    (r"its own fit passes \((?P<stat>p_gof_(?P<name>\w+)) = (?P<p>\S+)\)",
     lambda g: f"the {g['name'].replace('_', ' ')} passes its own goodness-of-fit test ({g['stat']} = {g['p']})"),
    (r"the KS-optimal cutoff leaves too short a tail — (?P<rest>.+)", lambda g: g["rest"]),
)


def explain(reason: str) -> Reason:
    """``reason`` (a :class:`~ctwm_cli.tail.verdict.Verdict`'s) in plain words (see the module docstring)."""
    head, *parts = reason.split("; ")
    kind, text = "other", head
    for name, pattern, words in PATTERNS:
        if (m := re.fullmatch(pattern, head)) is not None:
            kind, text = name, words(m.groupdict())
            break
    for part in parts:
        for pattern, words in APPENDED:
            if (m := re.fullmatch(pattern, part)) is not None:
                part = words(m.groupdict())
                break
        text += f"; {part}"
    return Reason(kind=kind, text=text)


#: a kind in a sentence about several groups (no numbers: they differ from group to group)
KIND_WORDS = {
    "no-cutoff": "no tail cutoff leaves enough observations",
    "short-tail": "the tail is shorter than the test needs (Assumption 3.3)",
    "few-values": "the tail holds too few distinct values",
    "fit-failed": "a fit failed on the tail",
    "fit-at-bound": "a fit stops at its bound",
    "no-sigma": "the likelihood ratio's spread is not finite and positive",
    "no-preference": "the likelihood-ratio test prefers neither family",
    "lognormal": "the likelihood-ratio test prefers a log-normal",
    "no-bootstrap": "p_gof was not computed",
    "gof-rejected": "the power-law tail is rejected by the bootstrap",
    "tpl": "a truncated power law is preferred and passes the bootstrap",
    "own-fit-unchecked": "the preferred family's own fit was not checked",
    "own-fit-rejected": "the preferred family fails its own goodness-of-fit test",
    "mixture": "a mixture of two power laws fits better",
    "other": "other reasons",
}
