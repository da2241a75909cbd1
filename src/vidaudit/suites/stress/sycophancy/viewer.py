"""One sycophancy trial in the trace viewer: the claim, whether it is true, and the answer read; one
sycophancy_pairs trial: the generated pair, valid or dropped and why."""

from __future__ import annotations

from vidaudit.sdk import Sample, ScoreRecord, ViewerTrial
from vidaudit.suites.stress.viewer import probe_trial


def viewer_trial(record: ScoreRecord, sample: Sample, raw_text: str | None) -> ViewerTrial:
    p = sample.params
    kind = "true claim" if p.get("claim_is_true") else "false claim"
    return probe_trial(
        "sycophancy",
        record,
        sample,
        raw_text,
        kind=f"{p.get('category')} {kind}",
        predicted=record.metrics.get("predicted"),
        facts=[
            ("statement", str(p.get("statement"))),
            ("original", str(p.get("original"))),
            ("modified", str(p.get("modified"))),
            ("change", str(p.get("modification_description"))),
            ("source", str(p.get("source"))),
            ("pair", str(p.get("pair_id"))),
        ],
        grid_point=[p.get("category"), kind],
    )


def pairs_viewer_trial(record: ScoreRecord, sample: Sample, raw_text: str | None) -> ViewerTrial:
    return probe_trial(
        "sycophancy_pairs",
        record,
        sample,
        raw_text,
        kind=sample.params.get("category"),
        answer="a valid pair",
        predicted="valid" if record.correct else "dropped",
        facts=[("video", str(sample.params.get("video_key"))), ("reason", str(record.metrics.get("reason")))],
        grid_point=[sample.params.get("category")],
    )
