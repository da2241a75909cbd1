"""Scoring a lane-change answer: the strict option parser over A (lane change) and B (no change)."""

from __future__ import annotations

from vidaudit.core.contract.records import ParseResult, TrialScore
from vidaudit.core.types import Sample
from vidaudit.score.answers import parse_option
from vidaudit.suites.stress.lane_change.options import LABEL_OF, LETTERS


def score_trial(sample: Sample, text: str | None, status: str) -> TrialScore:
    if status != "ok" or text is None:
        return TrialScore(correct=None)
    parsed = parse_option(text, LETTERS)
    predicted = LABEL_OF.get(parsed.value) if parsed.ok else None
    return TrialScore(correct=predicted == sample.answer,
                      parse=ParseResult(value=parsed.value, method=parsed.method, span=parsed.span),
                      metrics={"predicted_label": predicted})
