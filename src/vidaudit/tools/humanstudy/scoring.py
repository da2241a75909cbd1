"""Human answers scored into ``ScoreRecord``s, with the suite's own ``score()``.

- a choice answer (an option letter) is given to the suite's scorer as ``\\boxed{L}``, the answer
  format every lettered prompt asks for; the record keeps that text's parse;
- a free-text answer goes to the run's judge when one is configured (``judging.judge_for_run``);
  without one it is scored by the suite's own parser when that parser reads it (a count typed as a
  number), and otherwise counted as "not judged": no record, and the report says how many;
- a data-quality answer (yes / no) is right when it matches ``params.claim_is_true`` (yes = the
  statement describes something that does not occur); with no claim truth recorded it gets no record
  and counts for agreement only.

Each record: ``model`` = ``human:ANNOTATOR``, ``model_role`` = ``human``, ``condition`` = the item's
condition (see ``items.item_condition``), trial id = sha256 of (study, item, annotator), and metrics
naming the study, its kind, the item and the annotator.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from vidaudit.core.contract.records import ParseResult, ScoreRecord, TrialScore
from vidaudit.core.contract.suite import ScoreInput, Suite
from vidaudit.core.hashing import sha256_json
from vidaudit.core.types import Sample
from vidaudit.tools.humanstudy.answers import AnswerSheet, StudyManifest
from vidaudit.tools.humanstudy.items import StudyItem
from vidaudit.tools.humanstudy.judging import Judge

HUMAN_ROLE = "human"


def human_model(annotator: str) -> str:
    return f"human:{annotator}"


@dataclass
class Scoring:
    records: list[ScoreRecord] = field(default_factory=list)
    not_judged: list[tuple[str, str]] = field(default_factory=list)  # (annotator, item id)
    no_truth: list[tuple[str, str]] = field(default_factory=list)


def _score_choice(suite: Suite, sample: Sample, letter: str) -> TrialScore:
    return suite.score(ScoreInput(sample, f"\\boxed{{{letter}}}", "ok"))


def _score_text(suite: Suite, sample: Sample, text: str, judge: Judge | None) -> TrialScore | None:
    if judge is not None:
        return judge(suite, sample, text)
    if suite.capabilities.judges and suite.judge_prompt(sample, text) is not None:
        return None  # the suite would send this answer to a judge, and the run has none
    ts = suite.score(ScoreInput(sample, text, "ok"))
    return ts if ts.parse is not None and ts.parse.ok and ts.correct is not None else None


def _score_quality(item: StudyItem, answer: str) -> TrialScore | None:
    if item.correct is None:
        return None
    return TrialScore(correct=answer == item.correct, parse=ParseResult(value=answer, method="human"))


def score_sheets(
    suite: Suite, manifest: StudyManifest, sheets: list[AnswerSheet], samples: dict[str, Sample], judge: Judge | None
) -> Scoring:
    out = Scoring()
    for sheet in sheets:
        for item_id, answer in sheet.answers.items():
            item = manifest.items[item_id]
            sample = samples[item.sample_id]
            if item.kind == "quality":
                ts = _score_quality(item, answer)
                if ts is None:
                    out.no_truth.append((sheet.annotator, item_id))
                    continue
            elif item.kind == "choice":
                ts = _score_choice(suite, sample, answer)
            else:
                ts = _score_text(suite, sample, answer, judge)
                if ts is None:
                    out.not_judged.append((sheet.annotator, item_id))
                    continue
            params = suite.record_params(sample) if item.kind != "quality" else {"probe": item.probe}
            metrics = {
                **ts.metrics,
                "study": manifest.study,
                "study_kind": manifest.kind,
                "item_id": item_id,
                "annotator": sheet.annotator,
                "human_answer": answer,
            }
            out.records.append(
                ScoreRecord(
                    trial_id=sha256_json(["human", manifest.study, item_id, sheet.annotator]),
                    sample_id=sample.sample_id,
                    suite=suite.name,
                    model=human_model(sheet.annotator),
                    model_role=HUMAN_ROLE,
                    condition=item.condition,
                    group_id=sample.group_id,
                    status="ok",
                    correct=ts.correct,
                    parse=ts.parse,
                    params=params,
                    metrics=metrics,
                )
            )
    return out
