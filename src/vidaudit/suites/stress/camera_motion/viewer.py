"""One camera-motion trial in the trace viewer (the columns of the suite's ``STRESS_VIEWER``)."""

from __future__ import annotations

from vidaudit.sdk import Sample, ScoreRecord, ViewerTrial


def viewer_trial(record: ScoreRecord, sample: Sample, raw_text: str | None) -> ViewerTrial:
    p = sample.params
    predicted = record.metrics.get("predicted_motion")
    return ViewerTrial(trial_id=record.trial_id, sample_id=record.sample_id, model=record.model,
                       condition=record.condition, group=f"camera_motion: {p.get('motion')}", status=record.status,
                       correct=record.correct,
                       columns={"answer": str(sample.answer), "predicted": predicted,
                                "parse": record.parse.method if record.parse else None},
                       facts=[("probe", str(p.get("probe"))), ("synthesis", str(p.get("synthesis"))),
                              ("content motion", str(p.get("content_motion"))),
                              ("perturbation", str(p.get("perturbation")))],
                       raw_text=raw_text or "", grid_point=[p.get("motion")])
