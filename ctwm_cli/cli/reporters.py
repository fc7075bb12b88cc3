"""Reporters for CI: JUnit XML, GitHub workflow-command annotations, a Markdown job summary.

Each takes gate outcomes (:class:`ctwm_cli.common.gates.CheckOutcome`: ``subject``, ``check``, ``status``,
``observed``, ``threshold``, ``note``) and renders them; none computes anything.
JUnit: one ``<testsuite>`` per command, one ``<testcase>`` per subject (trace or group) x check, a
``<failure>`` carrying the observed value and the threshold. The element and attribute names are those
of the JUnit XSD that Jenkins, GitLab and GitHub reporters read; ``tests/test_cli_reporters.py``
parses the file with ``junitparser``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ..common.inert import markdown_text, visible, xml_text


def check_status(outcomes: Sequence[Any]) -> str:
    """One word for a subject's gates, in the status vocabulary (README "Vocabulary"): ``none`` (no gates),
    ``pass`` or ``fail``."""
    if not outcomes:
        return "none"
    return "fail" if any(o.failed for o in outcomes) else "pass"


def _value(v: Any) -> str:
    if v is None:
        return "not available"
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def failure_text(c: Any) -> str:
    """``p_gof<0.1 failed: observed 0.03, threshold < 0.1`` (the same words in every reporter)."""
    if c.status == "error":  # a ctwm check entry that could not run
        return f"could not run: {c.note}"
    if c.observed is None:
        need = f": pass --{c.needs.replace('_', '-')}" if getattr(c, "needs", None) else ""
        return f"{c.check} failed: {c.metric} not available{need}"
    if isinstance(c.threshold, str):  # an expectation: --expect VERDICT
        return f"{c.check} failed: expected {c.threshold}, got {c.observed}"
    return f"{c.check} failed: observed {_value(c.observed)}, threshold {c.op} {_value(c.threshold)}"


def _seconds(t: float) -> str:
    return f"{max(t, 0.0):.3f}"


def junit_xml(suites: Sequence[tuple[str, Sequence[Any], str | None] | tuple[str, Sequence[Any], str | None, float]]
              ) -> str:
    """``suites``: (suite name, outcomes, error or None[, seconds]) -> a JUnit XML document. An error (the run
    itself failed: bad input, bad options) becomes one testcase with an ``<error>``.

    Names and times are each case's own: a gate's ``name`` is its condition and its ``classname`` the
    suite and the subject it was evaluated on (``ctwm audit.t.parquet[run-1]``); its ``time`` is its own,
    0.000 (a gate compares one number of a finished result), while the suite's ``time`` is the wall time
    of the run that produced the result (``seconds``), and an error case (the run itself failed) carries
    that run's time. The root's time is the sum over suites."""
    import xml.etree.ElementTree as ET  # here: only --format junit writes XML (every command's start, ~2.5 ms)

    x = xml_text
    root = ET.Element("testsuites", name="ctwm")
    total = failures = skipped = errors = 0
    elapsed = 0.0
    for name, outcomes, error, *timed in suites:
        seconds = float(timed[0]) if timed else 0.0
        elapsed += seconds
        own = _seconds(0.0)
        suite = ET.SubElement(root, "testsuite", name=x(name))
        n_fail = n_skip = 0
        if error is not None:
            case = ET.SubElement(suite, "testcase", name="run", classname=x(name), time=_seconds(seconds))
            ET.SubElement(case, "error", message=x(error), type="error").text = x(error)
        for c in outcomes:
            case = ET.SubElement(suite, "testcase", name=x(c.check), classname=x(f"{name}.{c.subject}"), time=own)
            if c.failed:
                n_fail += 1
                f = ET.SubElement(case, "failure", message=x(failure_text(c)), type=c.status)
                f.text = "\n".join(x(line) for line in (
                    f"subject: {c.subject}", f"check: {c.check}", f"observed: {_value(c.observed)}",
                    f"threshold: {c.op} {_value(c.threshold)}", str(c.note)))
            elif c.status == "skipped":
                n_skip += 1
                ET.SubElement(case, "skipped", message=x(c.note))
            else:
                out = ET.SubElement(case, "system-out")
                out.text = x(f"observed {_value(c.observed)}")
        n_err = int(error is not None)
        suite.set("tests", str(len(outcomes) + n_err))
        suite.set("failures", str(n_fail))
        suite.set("errors", str(n_err))
        suite.set("skipped", str(n_skip))
        suite.set("time", _seconds(seconds))
        total, failures, skipped = total + len(outcomes) + n_err, failures + n_fail, skipped + n_skip
        errors += n_err
    root.set("tests", str(total))
    root.set("failures", str(failures))
    root.set("errors", str(errors))
    root.set("skipped", str(skipped))
    root.set("time", _seconds(elapsed))
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _escape_data(s: str) -> str:
    # GitHub workflow commands: https://docs.github.com/actions/reference/workflow-commands-for-github-actions
    # (control characters from data made visible first: one annotation, no terminal escapes in the log)
    return visible(s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A"))


def _escape_property(s: str) -> str:
    return _escape_data(s).replace(":", "%3A").replace(",", "%2C")


def github_annotations(command: str, outcomes: Sequence[Any]) -> str:
    """``::error`` per failed check, ``::warning`` per skipped one, one ``::notice`` with the totals."""
    lines = []
    for c in outcomes:
        if c.failed:  # an entry of ctwm check that could not run is one too (status error)
            title = _escape_property(f"ctwm {command}: {c.subject}")
            lines.append(f"::error title={title}::{_escape_data(failure_text(c))}")
        elif c.status == "skipped":
            lines.append(f"::warning title={_escape_property(f'ctwm {command}: {c.subject}')}::{_escape_data(c.note)}")
    failed = sum(c.failed for c in outcomes)
    lines.append(f"::notice title={_escape_property(f'ctwm {command}')}::{len(outcomes)} check(s), {failed} failed")
    return "\n".join(lines) + "\n"


def _md(v: Any) -> str:
    if v is None:
        return "–"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return f"{v:.4g}" if math.isfinite(v) else "–"
    return markdown_text(str(v))


def markdown_table(rows: Sequence[dict[str, Any]]) -> list[str]:
    fields = list(dict.fromkeys(k for r in rows for k in r))
    if not fields:
        return ["_no rows_"]
    out = ["| " + " | ".join(visible(f) for f in fields) + " |", "|" + "---|" * len(fields)]
    out += ["| " + " | ".join(_md(r.get(f)) for f in fields) + " |" for r in rows]
    return out


def markdown_report(command: str, rows: Sequence[dict[str, Any]], outcomes: Sequence[Any], *, seed: int | None) -> str:
    """A Markdown section fit for ``$GITHUB_STEP_SUMMARY``: the summary rows, then the checks."""
    failed = sum(c.failed for c in outcomes)
    head = f"### ctwm {command}" + (f" (seed {seed})" if seed is not None else "")
    lines = [head, "", *markdown_table(rows), ""]
    if outcomes:
        lines += [f"**Checks:** {len(outcomes)}, **failed:** {failed}", ""]
        lines += markdown_table([
            {"subject": c.subject, "check": c.check, "status": c.status, "observed": c.observed, "detail": c.note}
            for c in outcomes
        ])
        lines.append("")
    return "\n".join(lines) + "\n"
