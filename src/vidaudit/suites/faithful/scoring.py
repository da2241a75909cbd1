"""Score one yes/no answer with the strict generic parser (never the last yes/no word anywhere).

A response is read by :func:`vidaudit.score.answers.parse_yes_no`: a ``\\boxed{yes}``, an
"Answer: No", or a leading Yes/No. Anything else is unparseable and wrong. A sample whose gold
answer is not Yes/No (an imported item kept under ``--on-invalid keep-as-wrong``) is wrong whatever
the response, and says so in its metrics (``gold_valid`` False).
"""

from __future__ import annotations

from vidaudit.sdk import ParseResult, Sample, TrialScore, parse_yes_no

YES, NO = "Yes", "No"


def gold_of(sample: Sample) -> str | None:
    """The sample's gold answer when it is valid Yes/No (None for an invalid item kept as wrong)."""
    if sample.params.get("invalid"):
        return None
    return sample.answer if sample.answer in (YES, NO) else None


def written_of(sample: Sample) -> str | None:
    """The sample's answer as the data writes it when it is Yes/No, even for an item kept as wrong."""
    return sample.answer if sample.answer in (YES, NO) else None


def score_answer(sample: Sample, text: str | None, status: str) -> TrialScore:
    if status != "ok" or text is None:
        return TrialScore(correct=None)
    p = parse_yes_no(text)
    said = None if not p.ok else (YES if p.value else NO)
    gold = gold_of(sample)
    correct = gold is not None and said == gold
    return TrialScore(
        correct=correct,
        parse=ParseResult(value=said, method=p.method, span=p.span),
        metrics={"said": said, "gold_valid": gold is not None},
    )
