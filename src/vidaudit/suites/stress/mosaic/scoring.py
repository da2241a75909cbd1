"""Scoring mosaic answers: the word (exact, case-insensitive) or the option letter, and recency errors.

A recency error is a wrong answer that names what the temporal mosaic's last frame shows: for text, the
letters whose pen-advance centre lies on the side of the quadrant shown last (``tasks.text_recency``);
for objects, the option that keeps the shape in the quadrant shown last and replaces the other. It is
counted under the spatial arrangements too (with the same temporal order), as their baseline.
"""

from __future__ import annotations

import re

from vidaudit.sdk import ParseResult, ScoreInput, TrialScore, parse_option
from vidaudit.suites.stress.common import LETTERS, last_boxed

_WORD = re.compile(r"[A-Za-z]+")


def parse_word(text: str | None) -> tuple[str, str, tuple[int, int] | None] | None:
    """(WORD, method, span): the only word in the last ``\\boxed{}``, else the whole answer when it is one
    word; None otherwise."""
    box = last_boxed(text)
    if box is not None:
        content = re.sub(r"\\(?:text|mathrm|textbf|mathbf)\s*\{([^{}]*)\}", r"\1", box[0])
        words = _WORD.findall(content)
        return (words[0].upper(), "boxed", box[1]) if len(words) == 1 else None
    if isinstance(text, str):
        words = _WORD.findall(text)
        if len(words) == 1:
            m = _WORD.search(text)
            if m is not None:  # findall found exactly one word
                return words[0].upper(), "bare", (m.start(), m.end())
    return None


def score_trial(trial: ScoreInput) -> TrialScore:
    sample, text = trial.sample, trial.text
    if trial.status != "ok" or text is None:
        return TrialScore(correct=None)
    p = sample.params
    if p["stimulus"] == "text":
        got = parse_word(text)
        if got is None:
            return TrialScore(
                correct=False,
                parse=ParseResult(method="unparseable"),
                metrics={"predicted": None, "recency_error": False},
            )
        correct = got[0] == str(sample.answer).upper()
        recency = not correct and got[0] == str(p["recency_answer"]).upper()
        return TrialScore(
            correct=correct,
            parse=ParseResult(value=got[0], method=got[1], span=got[2]),
            metrics={"predicted": got[0], "recency_error": recency},
        )
    parsed = parse_option(text, LETTERS[:4])
    kind = p["option_kinds"].get(parsed.value) if parsed.ok else None
    return TrialScore(
        correct=parsed.ok and parsed.value == sample.answer,
        parse=ParseResult(value=parsed.value, method=parsed.method, span=parsed.span),
        metrics={
            "predicted": parsed.value if parsed.ok else None,
            "predicted_kind": kind,
            "recency_error": kind == "recency",
        },
    )
