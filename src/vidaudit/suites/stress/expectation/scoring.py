"""Scoring one expectation answer: an option letter (direction, gap MCQ), or a judge's verdict (the rest).

A judged task is scored only from the judge's verdict (``vidaudit run --judge SPEC``), read strictly by
``vidaudit.score.judge.read_verdict``:

- no judge in the run: ``TrialScore.unjudged`` (``correct`` None, the parse method ``NEEDS_JUDGE``: counted
  beside every figure, never scored);
- a verdict that is not the JSON the prompt asks for: ``judge_unparseable``, counted and wrong (never a pass);
- an empty answer is wrong without a judge call (``empty``).

Verdict fields: ``hallucinated_summary`` (gap summary; correct = false), ``describes_shown_order``
(reversed description; correct = true), ``score`` 1 / 0.5 / 0 (anomaly; correct = 0.5 or 1, as the paper).
The parse value of a judged trial is the verdict (``"true"``, ``"false"``, ``"1.0"``, ``"0.5"``, ``"0.0"``):
``vidaudit judge-agreement`` compares those labels.
"""

from __future__ import annotations

import re

from vidaudit.sdk import ParseResult, Sample, ScoreInput, TrialScore, parse_option, read_verdict
from vidaudit.suites.stress.common import LETTERS

MCQ_TASKS = ("direction", "gap_mcq")
#: judged task -> (verdict field, kind)
VERDICT: dict[str, tuple[str, str]] = {
    "gap_summary": ("hallucinated_summary", "bool"),
    "describe": ("describes_shown_order", "bool"),
    "anomaly": ("score", "score"),
}
_NUMBERED = re.compile(r"^[ \t*_#>]{0,8}([1-9])[.):]", re.MULTILINE)


def letters_of(sample: Sample) -> tuple[str, ...]:
    return LETTERS[: len(sample.params.get("options") or ())]


def follows_layout(text: str) -> bool:
    """Whether an anomaly answer uses the required layout: numbered answers 1., 2., 3. in that order, once each."""
    return [m.group(1) for m in _NUMBERED.finditer(text)] == ["1", "2", "3"]


def label_of(value: object) -> str:
    """A verdict as the label ``judge-agreement`` compares: ``true``/``false`` or a score with one decimal."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return f"{float(value):.1f}"  # type: ignore[arg-type]


def correct_of(task: str, value: object) -> bool:
    if task == "gap_summary":
        return value is False
    if task == "describe":
        return value is True
    return float(value) >= 0.5  # type: ignore[arg-type]


def score_trial(trial: ScoreInput) -> TrialScore:
    sample, text, judgement = trial.sample, trial.text, trial.judgement
    if trial.status != "ok" or text is None:
        return TrialScore(correct=None)
    task = str(sample.params.get("task"))
    if task in MCQ_TASKS:
        parsed = parse_option(text, letters_of(sample))
        letter = parsed.value if parsed.ok else None
        kinds = sample.params.get("option_kinds")
        kind = (
            None
            if letter is None
            else (
                kinds[letters_of(sample).index(letter)]
                if kinds
                else ("correct" if letter == sample.answer else "wrong")
            )
        )
        return TrialScore(
            correct=letter == sample.answer,
            parse=ParseResult(value=parsed.value, method=parsed.method, span=parsed.span),
            metrics={"picked": letter, "picked_kind": kind or "unparsed"},
        )
    metrics: dict[str, object] = {}
    if task == "anomaly":
        metrics["layout_ok"] = follows_layout(text)
    if not text.strip():
        return TrialScore(correct=False, parse=ParseResult(method="empty"), metrics={**metrics, "judge": "empty"})
    if judgement is None:  # the contract's "needs a judge": in no figure's denominator, counted beside it
        return TrialScore.unjudged({**metrics, "judge": "not_judged"})
    field, kind = VERDICT[task]
    v = read_verdict(judgement, field, kind=kind)
    if not v.ok:
        return TrialScore(
            correct=False,
            parse=ParseResult(method="judge_unparseable"),
            metrics={**metrics, "judge": "unparseable", "judge_why": v.why},
        )
    return TrialScore(
        correct=correct_of(task, v.value),
        parse=ParseResult(value=label_of(v.value), method="judged"),
        metrics={**metrics, "judge": "ok", "verdict": label_of(v.value), "judge_explanation": v.explanation},
    )
