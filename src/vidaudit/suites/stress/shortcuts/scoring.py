"""Scoring one shortcut answer: the option letter, and what kind of option it was (correct, y_LP, ...)."""

from __future__ import annotations

from vidaudit.sdk import ParseResult, Sample, ScoreInput, TrialScore, parse_option
from vidaudit.suites.stress.shortcuts.questions import LETTERS


def picked_kind(sample: Sample, letter: str | None) -> str:
    """correct | lp | abstain | distractor | unparsed (abstain is correct on blank / unrelated)."""
    p = sample.params
    if letter is None:
        return "unparsed"
    if letter == sample.answer:
        return "correct"
    if letter == p.get("option_lp"):
        return "lp"
    if letter == p.get("option_abstain"):
        return "abstain"
    return "distractor"


def score_trial(trial: ScoreInput) -> TrialScore:
    sample, text = trial.sample, trial.text
    if trial.status != "ok" or text is None:
        return TrialScore(correct=None)
    parsed = parse_option(text, LETTERS)
    letter = parsed.value if parsed.ok else None
    return TrialScore(
        correct=letter == sample.answer,
        parse=ParseResult(value=parsed.value, method=parsed.method, span=parsed.span),
        metrics={"picked": letter, "picked_kind": picked_kind(sample, letter)},
    )
