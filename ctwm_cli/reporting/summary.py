"""The lead paragraph of ``ctwm audit``, ``ctwm health`` and the report page: what a person reads first.

Each sentence restates a number a result already holds, says what it is, and claims no more than it shows;
nothing is computed here (DESIGN, "Report"). The tail verdict comes with its reason in plain words
(:mod:`.reasons`). Every text taken from a trace (a label, a group, a source) is made :func:`visible`, so the
paragraph carries no control character whichever output it reaches. The same paragraph is the table
format's first lines and the JSON's ``summary``.

    >>> from ctwm_cli import audit
    >>> from ctwm_cli.reporting.summary import audit_summary
    >>> audit_summary(audit(counts, seed=1))              # doctest: +SKIP
    'trace.parquet: 30,380 accesses of 1,043 items. The top 10% of items (105 items) take 71% of the accesses; ...'
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ..common.inert import visible
from ..common.labels import subject_label
from ..common.results import result
from ..common.vocabulary import INCONCLUSIVE, SUMMARY_KEY
from .reasons import KIND_WORDS, explain


@result
class Words:
    """What one audited value is: an item's access count (``ctwm audit``'s default), or one observation of a
    column (``--value-col``: city sizes, fire areas), whose sum is no count of anything."""

    item: str = "item"
    items: str = "items"
    mass: str = "accesses"  # what the values add up to; "" when their sum means nothing to say
    top: str = "most-accessed"


ACCESSES = Words()
VALUES = Words(item="value", items="values", mass="", top="largest")


def percent(share: float) -> str:
    """A share as a percentage a person reads: whole percent, one decimal when whole would say 0% or 100% of
    something that is neither (``99.6%``), and ``<0.1%`` / ``>99.9%`` beyond that."""
    if share <= 0 or share >= 1:
        return f"{share:.0%}"
    for digits in (0, 1):
        text = f"{share * 100:.{digits}f}"
        if float(text) not in (0.0, 100.0):
            return f"{text}%"
    return "<0.1%" if share < 0.5 else ">99.9%"


def _count(n: float, noun: str, plural: str | None = None) -> str:
    return f"{int(n):,} {noun if int(n) == 1 else (plural or noun + 's')}"


def concentration_sentence(k: Any, words: Words = ACCESSES) -> str:
    """How concentrated the values are: the top decile's share, and the largest against the median."""
    n = int(k.n_items)
    of = f" of the {words.mass}" if words.mass else " of the total"
    if n < 10:  # the top decile is one item: say so in those words
        head = f"The {words.top} {words.item} takes {percent(k.top10_share)}{of}"
    else:
        head = (f"The top 10% of {words.items} ({_count(k.top_decile_items, words.item, words.items)}) take "
                f"{percent(k.top10_share)}{of}")
    ratio = k.max_over_median
    if n >= 2 and math.isfinite(ratio):
        head += f"; the {words.top} {words.item} is {_times(ratio)} times the median"
    return head + "."


def _times(x: float) -> str:
    """A ratio to 3 significant digits, never in scientific notation (``1,234`` rather than ``1.23e+03``)."""
    return f"{x:,.0f}" if x >= 100 else f"{x:.3g}"


def verdict_sentence(verdict: Any, *, what: str = "The tail verdict") -> str:
    """``The tail verdict is inconclusive because <its reason in plain words>.``"""
    return f"{what} is {verdict.verdict} because {explain(verdict.reason).text}."


def audit_summary(a: Any, *, concentration: Any = None, words: Words = ACCESSES) -> str:
    """The lead of one audit (a :class:`ctwm_cli.AuditResult`, or a tail audit with its ``concentration``)."""
    k = concentration if concentration is not None else getattr(a, "concentration", None)
    label = visible(a.label) if a.label else "the data"
    if k is not None and words.mass:
        parts = [f"{label}: {k.n_events:,.0f} {words.mass} of {_count(a.n_items, words.item, words.items)}."]
    else:
        parts = [f"{label}: {_count(a.n_items, words.item, words.items)}."]
    if k is not None:
        parts.append(concentration_sentence(k, words))
    parts.append(verdict_sentence(a.verdict))
    if a.power_law is not None and a.verdict.verdict != INCONCLUSIVE:
        parts.append("Compatible is not proof: it says which family the rule finds fits the tail, not that the "
                     "data were drawn from it.")
    cal = getattr(a, "calibration", None)
    if cal is not None:
        parts.append(f"The calibrated verdict (R = {cal.replicates:,} simulated data sets per family) is "
                     f"{cal.verdict.verdict} because {explain(cal.verdict.reason).text}.")
    return " ".join(parts)


def audits_summary(audits: Sequence[Any], *, concentrations: Sequence[Any] | None = None, noun: str = "groups",
                   words: Words = ACCESSES) -> str:
    """The lead of several audits (traces, or the groups of one): the verdicts tallied, the most common reason
    of each, and the range of the top-decile share. One audit: :func:`audit_summary`."""
    if len(audits) == 1:
        return audit_summary(audits[0], concentration=(concentrations or [None])[0], words=words)
    if not audits:
        return f"No {noun} to audit."
    tally: dict[str, list[str]] = {}
    for a in audits:
        tally.setdefault(a.verdict.verdict, []).append(explain(a.verdict.reason).kind)
    order = sorted(tally, key=lambda v: (-len(tally[v]), v))
    parts = [f"{len(audits):,} {noun}: " + ", ".join(f"{len(tally[v]):,} {v}" for v in order) + "."]
    for v in order:
        kinds = tally[v]
        top = max(sorted(set(kinds)), key=kinds.count)
        most = f"all {len(kinds):,}" if kinds.count(top) == len(kinds) else f"{kinds.count(top):,} of {len(kinds):,}"
        parts.append(f"{v.capitalize()}: {most} because {KIND_WORDS[top]}.")
    ks = [k for k in (concentrations or [getattr(a, "concentration", None) for a in audits]) if k is not None]
    shares = [k.top10_share for k in ks if math.isfinite(k.top10_share)]
    if shares:
        parts.append(f"The top 10% of {words.items} take from {percent(min(shares))} to {percent(max(shares))} of "
                     f"{'the ' + words.mass if words.mass else 'the total'} across the {noun}.")
    return " ".join(parts)


def audit_summaries(audits: Sequence[Any], *, noun: str = "traces", words: Words = ACCESSES) -> dict[str, Any]:
    """``ctwm audit``'s JSON body: the lead of them all as ``summary``, and each audit's ``to_dict()`` with its own
    lead (``results[i].summary``)."""
    return {SUMMARY_KEY: audits_summary(audits, noun=noun, words=words),
            "results": [{**a.to_dict(), SUMMARY_KEY: audit_summary(a, words=words)} for a in audits]}


def dead_weight_sentence(d: Any) -> str:
    """Live memories nobody read, with the window and the tokens they hold when known."""
    span = "in the whole trace" if d.window is None else f"in the last {d.window:,g} {d.time_unit}s"
    if d.live == 0:
        return "No memory is live at the end of the trace."
    if not math.isfinite(d.dead_weight_share):  # live memories, but no read was ever logged
        return (f"{_count(d.live, 'memory', 'memories')} are live at the end, but the trace records no reads "
                "(no search, retrieve or inject rows), so it cannot tell which were used.")
    if d.live == 1:
        head = f"The one live memory was {'never read' if d.never_retrieved else 'read'}"
    elif d.never_retrieved == 0:
        head = f"All {d.live:,} live memories were read"
    else:
        verb = "was" if d.never_retrieved == 1 else "were"
        head = f"{d.never_retrieved:,} of {d.live:,} live memories {verb} never read"
    text = f"{head} (a retrieve or inject row {span} counts as a read)"
    if d.dead_token_share is not None and d.never_retrieved:
        text += f"; the never-read hold {percent(d.dead_token_share)} of the live memories' {d.live_tokens:,} tokens"
    return text + "."


def _stale_sentence(r: Any) -> str | None:
    if not r.hits:
        return None
    stale = "a memory that was superseded, invalidated, archived or expired at the time"
    if r.hits == 1:
        return f"The one {r.hit_event or 'hit'} row read {stale if r.stale_hits else 'no ' + stale[2:]}."
    what = f"{r.hits:,} {r.hit_event or 'hit'} rows"
    if not r.stale_hits:
        return f"None of the {what} read {stale}."
    return f"{r.stale_hits:,} of the {what} ({percent(r.stale_hit_share)}) read {stale}."


def _failure_sentence(f: Any) -> str | None:
    if not (f.failed_tasks and f.succeeded_tasks):
        return None
    return (f"{f.failures_attributed:,} of {_count(f.failed_tasks, 'failed task')} used a revoked or expired entry, "
            f"against {f.successes_with_revoked_use:,} of {_count(f.succeeded_tasks, 'successful task')}: an "
            "association, which cannot show that an entry caused a failure.")


def health_summary(h: Any, *, scope: str | None = None, heading: str | None = None) -> str:
    """The lead of a :class:`ctwm_cli.health.HealthReport` (``scope``: the report of one ``group_by`` scope,
    named as its gates are, ``source[user=alice]``): dead weight, stale reads, prompt use, failures against
    revoked entries, the store's growth, and the scope with the most dead weight."""
    name = heading or visible(subject_label(h.source, scope))  # heading: beside an audit of the same source
    parts = [f"{name}: {_count(h.n_rows, 'row')}" + (f" of run {visible(h.run)}" if h.run else "") + ".",
             dead_weight_sentence(h.dead_weight)]
    c = h.context
    if c.budget and math.isfinite(c.context_usage):
        parts.append(f"Prompts use {percent(c.context_usage)} of the {c.budget:,}-token budget on average "
                     f"({_count(c.context_steps, 'step')} with a context row).")
    parts += [s for s in (_stale_sentence(h.retrieval), _failure_sentence(h.failures)) if s]
    g = h.growth
    if g.classification == "insufficient data":
        parts.append(f"The store's growth cannot be classed ({g.reason}).")
    else:
        parts.append(f"The store's growth is {g.classification}: {g.reason}.")
    scoped = [s for s in h.groups if math.isfinite(s.summary.dead_weight_share)]
    if h.groups:
        head = f"Per {visible(h.group_by)}: {_count(len(h.groups), 'scope')}"
        worst = max(scoped, key=lambda s: (s.summary.dead_weight_share, s.group), default=None)
        if worst is not None and worst.summary.never_retrieved:
            w = worst.summary
            head += (f"; the largest share of never-read memories is in {visible(worst.group)} "
                     f"({w.never_retrieved:,} of {w.live:,} live)")
        elif scoped:
            head += "; in every scope each live memory was read"
        parts.append(head + ".")
    return " ".join(parts)


def health_summaries(h: Any) -> dict[str, Any]:
    """``h.to_dict()`` with its lead as ``summary`` and each scope's report with its own
    (``groups[i].report.summary``; ``groups[i].summary`` is that scope's row of the per-scope table)."""
    d = h.to_dict()
    d = {SUMMARY_KEY: health_summary(h), **d}
    for g, gd in zip(h.groups, d.get("groups", []), strict=True):
        gd["report"] = {SUMMARY_KEY: health_summary(g.report, scope=f"{h.group_by}={g.group}"), **gd["report"]}
    return d
