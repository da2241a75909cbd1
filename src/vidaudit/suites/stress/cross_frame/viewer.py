"""One cross-frame trial in the trace viewer (the strips shown are added by the report stage)."""

from __future__ import annotations

from vidaudit.sdk import Sample, ScoreRecord, ViewerTrial
from vidaudit.suites.stress.common import options_block
from vidaudit.suites.stress.cross_frame.report import mask_of


def viewer_trial(record: ScoreRecord, sample: Sample, raw_text: str | None) -> ViewerTrial:
    p = sample.params
    mask = mask_of(record.condition)
    return ViewerTrial(trial_id=record.trial_id, sample_id=record.sample_id, model=record.model,
                       condition=record.condition, group=f"cross_frame: {p.get('split')}", status=record.status,
                       correct=record.correct,
                       columns={"answer": str(sample.answer), "predicted": record.metrics.get("predicted"),
                                "parse": record.parse.method if record.parse else None},
                       facts=[("probe", "cross_frame"), ("split", f"{p.get('split')} ({p.get('type')})"),
                              ("abstention", "yes" if p.get("abstention") else "no"),
                              ("input", mask or "raw video"), ("question", sample.question),
                              ("options", options_block(p.get("options", []))),
                              ("source", str(p.get("source")))],
                       raw_text=raw_text or "",
                       grid_point=[p.get("split"), bool(p.get("abstention")), "masked" if mask else "raw"])
