"""Judged accuracy of LongMemEval answers (only with an endpoint; :mod:`ctwm_cli.bench.longmemeval`).

**Accuracy** (only with an endpoint): the model answers each prompt; a judge call (same endpoint,
``judge_model`` or the same model) gets a yes/no prompt per question type (:data:`JUDGE_RULES`;
the official protocol's shape, our own wording) and the answer counts as correct on "yes".
"""

from __future__ import annotations

import re

from .lme_format import Question

__all__ = ["ANSWER_SYSTEM", "JUDGE_RULES", "JUDGE_TEMPLATE", "judge_prompt", "parse_verdict"]

JUDGE_RULES = {
    "default": "Say yes if the response gives the correct answer or something equivalent to it; say no if it gives "
               "a different answer or only part of the answer.",
    "temporal-reasoning": "Say yes if the response gives the correct answer or something equivalent to it; an error "
                          "of one in a count of days, weeks or months is still correct. Say no otherwise.",
    "knowledge-update": "Say yes if the response gives the updated (most recent) answer, even when it also mentions "
                        "older information as superseded; say no if it gives only the outdated answer.",
    "single-session-preference": "The correct answer describes what a good personalised response should do. Say yes "
                                 "if the response follows it and uses the user's own information; say no otherwise.",
    "abstention": "The chat history does not hold the answer to this question. Say yes if the response says it "
                  "cannot answer or that the information is missing; say no if it states an answer.",
}
JUDGE_TEMPLATE = ("You grade answers to questions about a user's past conversations.\n{rule}\n\nQuestion: {question}\n"
                  "Correct answer: {answer}\nResponse: {response}\n\nIs the response correct? Answer yes or no only.")
ANSWER_SYSTEM = ("You are a chat assistant with memories of your past conversations with the user. Answer the "
                 "user's question briefly from those memories.")
_YESNO = re.compile(r"\b(yes|no)\b")


def judge_prompt(q: Question, response: str) -> str:
    """The yes/no judge prompt for ``response`` to ``q`` (rule by question type; ``_abs``: abstention)."""
    rule = JUDGE_RULES["abstention"] if q.abstention else JUDGE_RULES.get(q.question_type, JUDGE_RULES["default"])
    return JUDGE_TEMPLATE.format(rule=rule, question=q.question, answer=q.answer, response=response)


def parse_verdict(text: str) -> bool:
    """``True`` when the judge's first yes/no word is "yes" (no yes/no word: ``False``)."""
    m = _YESNO.search(text.lower())
    return bool(m and m.group(1) == "yes")
