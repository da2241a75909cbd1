"""Scoring wireframe answers: a boxed letter set (exact set match), a lettered side, a count."""

from __future__ import annotations

import re

from vidaudit.sdk import ParseResult, ScoreInput, TrialScore, parse_count, parse_option
from vidaudit.suites.stress.common import last_boxed
from vidaudit.suites.stress.wireframe.scene import NODES
from vidaudit.suites.stress.wireframe.tasks import SIDE_OPTIONS

_LETTER = re.compile(r"(?<![A-Za-z])([A-Fa-f])(?![A-Za-z])")


def parse_letter_set(text: str | None) -> tuple[list[str], tuple[int, int]] | None:
    """The node letters in the last ``\\boxed{...}`` (standalone letters A-F, any case and separators),
    sorted and distinct; None without a box or with no letter in it."""
    box = last_boxed(text)
    if box is None:
        return None
    content = re.sub(r"\\(?:text|mathrm|textbf|mathbf)\s*\{([^{}]*)\}", r"\1", box[0])
    content = re.sub(r"\b(?:and|or|node|nodes)\b", " ", content, flags=re.IGNORECASE)
    letters = sorted({m.upper() for m in _LETTER.findall(content)} & set(NODES))
    return (letters, box[1]) if letters else None


def score_trial(trial: ScoreInput) -> TrialScore:
    sample, text = trial.sample, trial.text
    if trial.status != "ok" or text is None:
        return TrialScore(correct=None)
    task = sample.params["task"]
    if task in ("connectivity", "window"):
        got = parse_letter_set(text)
        truth = set(sample.params["neighbours"])
        if got is None:
            return TrialScore(correct=False, parse=ParseResult(method="unparseable"), metrics={"predicted": None})
        pred = set(got[0])
        return TrialScore(
            correct=pred == truth,
            parse=ParseResult(value=", ".join(got[0]), method="boxed", span=got[1]),
            metrics={
                "predicted": ", ".join(got[0]),
                "n_hallucinated": len(pred - truth),
                "n_missed": len(truth - pred),
            },
        )
    if task == "spatial":
        parsed = parse_option(text, [k for k, _ in SIDE_OPTIONS])
        side = dict(SIDE_OPTIONS).get(parsed.value) if parsed.ok else None
        return TrialScore(
            correct=side == sample.answer,
            parse=ParseResult(value=parsed.value, method=parsed.method, span=parsed.span),
            metrics={"predicted": side},
        )
    parsed = parse_count(text)
    return TrialScore(
        correct=parsed.ok and parsed.value == int(sample.answer),
        parse=ParseResult(value=parsed.value, method=parsed.method, span=parsed.span),
        metrics={"predicted": None if not parsed.ok else str(parsed.value)},
    )
