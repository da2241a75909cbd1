"""Scoring a cross-frame answer with the strict option parser over the sample's own letters (A-E, or A-F
with abstention): a boxed letter, "answer: X" or a leading "X."; never the last letter anywhere."""

from __future__ import annotations

from vidaudit.sdk import ParseResult, ScoreInput, TrialScore, parse_option


def score_trial(trial: ScoreInput) -> TrialScore:
    sample, text = trial.sample, trial.text
    if trial.status != "ok" or text is None:
        return TrialScore(correct=None)
    lets = list(sample.params["letters"])
    parsed = parse_option(text, lets)
    predicted = parsed.value if parsed.ok else None
    abstained = bool(sample.params.get("abstention")) and predicted == lets[-1]
    return TrialScore(
        correct=predicted == sample.answer,
        parse=ParseResult(value=parsed.value, method=parsed.method, span=parsed.span),
        metrics={"predicted": predicted, "abstained": abstained},
    )
