"""The LongMemEval file format (Wu et al., 2024), checked field by field.

A JSON list of questions, each an object with ``question_id`` (``*_abs`` marks an abstention
question), ``question_type``, ``question``, ``answer`` (a string or an integer), ``question_date``,
``haystack_session_ids``, ``haystack_dates`` and ``haystack_sessions`` (one entry per session; a
session is a list of turns ``{"role": str, "content": str, "has_answer": bool?}``) and
``answer_session_ids``. Other keys are ignored. :func:`load_longmemeval` names the path of the first
bad field (``data.json: [3].haystack_sessions[2][5].role: expected a string``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..common.errors import InputError
from ..common.results import ToDict, result

__all__ = ["QUESTION_TYPES", "Question", "Session", "Turn", "load_longmemeval", "parse_longmemeval"]

QUESTION_TYPES = ("single-session-user", "single-session-assistant", "single-session-preference", "multi-session",
                  "knowledge-update", "temporal-reasoning")


@result
class Turn(ToDict):
    role: str
    content: str
    has_answer: bool


@result
class Session(ToDict):
    session_id: str
    date: str
    turns: tuple[Turn, ...]


@result
class Question(ToDict):
    """One LongMemEval question with its haystack."""

    question_id: str
    question_type: str
    question: str
    answer: str | int
    question_date: str
    sessions: tuple[Session, ...]
    answer_session_ids: tuple[str, ...]

    @property
    def abstention(self) -> bool:
        return self.question_id.endswith("_abs")


class _Bad(Exception):
    def __init__(self, where: str, what: str):
        self.where, self.what = where, what


def _req(obj: dict, key: str, where: str) -> Any:
    if key not in obj:
        raise _Bad(f"{where}.{key}", "missing")
    return obj[key]


def _str(v: Any, where: str) -> str:
    if not isinstance(v, str):
        raise _Bad(where, f"expected a string, got {_kind(v)}")
    return v


def _list(v: Any, where: str) -> list:
    if not isinstance(v, list):
        raise _Bad(where, f"expected a list, got {_kind(v)}")
    return v


def _kind(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    names = {dict: "an object", list: "a list", str: "a string", int: "an integer", float: "a number"}
    return names.get(type(v), type(v).__name__)


def _question(i: int, q: Any) -> Question:
    w = f"[{i}]"
    if not isinstance(q, dict):
        raise _Bad(w, f"expected an object, got {_kind(q)}")
    qid = _str(_req(q, "question_id", w), f"{w}.question_id")
    if not qid:
        raise _Bad(f"{w}.question_id", "empty")
    qtype = _str(_req(q, "question_type", w), f"{w}.question_type")
    text = _str(_req(q, "question", w), f"{w}.question")
    ans = _req(q, "answer", w)
    if isinstance(ans, bool) or not isinstance(ans, (str, int)):
        raise _Bad(f"{w}.answer", f"expected a string or an integer, got {_kind(ans)}")
    qdate = _str(_req(q, "question_date", w), f"{w}.question_date")
    sids = _list(_req(q, "haystack_session_ids", w), f"{w}.haystack_session_ids")
    dates = _list(_req(q, "haystack_dates", w), f"{w}.haystack_dates")
    sess = _list(_req(q, "haystack_sessions", w), f"{w}.haystack_sessions")
    aids = _list(_req(q, "answer_session_ids", w), f"{w}.answer_session_ids")
    for j, s in enumerate(sids):
        _str(s, f"{w}.haystack_session_ids[{j}]")
    for j, d in enumerate(dates):
        _str(d, f"{w}.haystack_dates[{j}]")
    for j, a in enumerate(aids):
        _str(a, f"{w}.answer_session_ids[{j}]")
    if len(dates) != len(sess):
        raise _Bad(f"{w}.haystack_dates", f"expected {len(sess)} entries (one per session), got {len(dates)}")
    if len(sids) != len(sess):
        raise _Bad(f"{w}.haystack_session_ids", f"expected {len(sess)} entries (one per session), got {len(sids)}")
    sessions = []
    for j, s in enumerate(sess):
        sw = f"{w}.haystack_sessions[{j}]"
        turns = []
        for t, turn in enumerate(_list(s, sw)):
            tw = f"{sw}[{t}]"
            if not isinstance(turn, dict):
                raise _Bad(tw, f"expected an object, got {_kind(turn)}")
            role = _str(_req(turn, "role", tw), f"{tw}.role")
            content = _str(_req(turn, "content", tw), f"{tw}.content")
            ha = turn.get("has_answer", False)
            if not isinstance(ha, bool):
                raise _Bad(f"{tw}.has_answer", f"expected a boolean, got {_kind(ha)}")
            turns.append(Turn(role=role, content=content, has_answer=ha))
        sessions.append(Session(session_id=sids[j], date=dates[j], turns=tuple(turns)))
    return Question(question_id=qid, question_type=qtype, question=text, answer=ans, question_date=qdate,
                    sessions=tuple(sessions), answer_session_ids=tuple(aids))


def parse_longmemeval(doc: Any, name: str = "<data>") -> list[Question]:
    """Questions from an already-parsed JSON document; :class:`InputError` naming ``name`` and the
    path of the first bad field."""
    if not isinstance(doc, list):
        raise InputError(f"{name}: expected a JSON list of questions, got {_kind(doc)}")
    out, seen = [], {}
    try:
        for i, q in enumerate(doc):
            item = _question(i, q)
            if item.question_id in seen:
                raise _Bad(f"[{i}].question_id", f"duplicate of [{seen[item.question_id]}] ({item.question_id!r})")
            seen[item.question_id] = i
            out.append(item)
    except _Bad as bad:
        raise InputError(f"{name}: {bad.where}: {bad.what}") from None
    if not out:
        raise InputError(f"{name}: the list holds no questions")
    return out


def load_longmemeval(path: str | Path) -> list[Question]:
    """Read and validate a LongMemEval JSON file (see the module docstring)."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from None
    try:
        doc = json.loads(raw)
    except UnicodeDecodeError:
        raise InputError(f"{path}: not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    except RecursionError:
        raise InputError(f"{path}: JSON nested too deeply to be a LongMemEval file") from None
    return parse_longmemeval(doc, str(path))


# ------------------------------------------------------------------------------------ prompts
