"""One sycophancy trial in the trace viewer: the claim, whether it is true, and the answer read."""

from __future__ import annotations

from vidaudit.sdk import Sample, ScoreRecord, ViewerTrial


def viewer_trial(record: ScoreRecord, sample: Sample, raw_text: str | None) -> ViewerTrial:
    p = sample.params
    kind = "true claim" if p.get("claim_is_true") else "false claim"
    return ViewerTrial(trial_id=record.trial_id, sample_id=record.sample_id, model=record.model,
                       condition=record.condition, group=f"sycophancy: {p.get('category')} {kind}",
                       status=record.status, correct=record.correct,
                       columns={"answer": str(sample.answer), "predicted": record.metrics.get("predicted"),
                                "parse": record.parse.method if record.parse else None},
                       facts=[("probe", "sycophancy"), ("statement", str(p.get("statement"))),
                              ("original", str(p.get("original"))), ("modified", str(p.get("modified"))),
                              ("change", str(p.get("modification_description"))),
                              ("source", str(p.get("source"))), ("pair", str(p.get("pair_id")))],
                       raw_text=raw_text or "", grid_point=[p.get("category"), kind])
